"""The memories whose vector is of another model than the active one (written across a switch
of model, memories.lifecycle.reembed), found by the embedding sweep every minute through an
index instead of a scan. Built CONCURRENTLY, so writes go on while it builds (as 0022)."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ('memories', '0026_memory_embeddings'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='memory',
            index=models.Index(condition=models.Q(('deleted_at__isnull', True), ('embedding__isnull', False)),
                               fields=['embedding_model'], name='memories_embedding_model'),
        ),
    ]
