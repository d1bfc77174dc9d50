"""The index of a session's memories (docs/adr/0054): one namespace, one event time, live rows,
which the session signal (memories.retrieval.sessions) reads for the sessions of a search's
best results. Built CONCURRENTLY, so writes go on while it builds (as 0036)."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ('memories', '0045_entity_name_tails'),
        ('tenants', '0011_sessions_paged_by_key'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='memory',
            index=models.Index(condition=models.Q(('deleted_at__isnull', True), ('status', 'active')),
                               fields=['org', 'namespace', 'event_time'], name='memories_namespace_event_time'),
        ),
    ]
