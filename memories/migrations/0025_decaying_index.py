# The index of decaying live memories (memories.lifecycle.decay reads only it), built without
# locking writes out of the table.

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ('memories', '0024_context_retrieval_events'),
        ('tenants', '0008_sessions_consolidation'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='memory',
            index=models.Index(condition=models.Q(('deleted_at__isnull', True), ('status', 'active'), ('decay_rate__gt', 0)), fields=['org'], include=('id', 'created_at', 'reinforced_at', 'decay_rate', 'importance', 'expires_at', 'scope'), name='memories_decaying'),
        ),
    ]
