"""The open contradictions in the conflicts page's order (memories.writes.conflicts: oldest
first, a page after the last one shown), on a partial index of their own: the page reads the
open ones, not every contradiction ever resolved (issue 32). Built CONCURRENTLY, so writes go
on meanwhile."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("memories", "0050_hot_set_copies")]

    operations = [
        AddIndexConcurrently(
            model_name="memoryrelationship",
            index=models.Index(
                condition=models.Q(("relation_type", "contradicts"),
                                   models.Q(("metadata__has_key", "resolution"), _negated=True)),
                fields=["org", "created_at", "id"], name="relationships_open_contradicts"),
        ),
    ]
