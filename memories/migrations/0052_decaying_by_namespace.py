"""The live decaying memories' index keyed by namespace as well as organisation: a namespace's
weak list and strength bands read its range of the index, not every decaying memory of the
organisation filtered by namespace (issue 32: at 1M memories, a namespace of 10,000 read 700,000
entries). The organisation's own reads take the same entries as before, all of its range. Built
CONCURRENTLY before the old one is dropped, so writes and reads go on meanwhile."""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("memories", "0051_open_contradictions")]

    operations = [
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(
                condition=models.Q(("deleted_at__isnull", True), ("status", "active"), ("decay_rate__gt", 0)),
                fields=["org", "namespace"], opclasses=["uuid_ops", "varchar_pattern_ops"],
                include=("id", "created_at", "reinforced_at", "decay_rate", "importance", "expires_at"),
                name="memories_decaying_namespaces"),
        ),
        RemoveIndexConcurrently(model_name="memory", name="memories_decaying"),
    ]
