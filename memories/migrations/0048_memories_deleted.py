"""The deleted memories of an organisation, on a partial index of their own: with the tallies of
those not deleted they give every memory an organisation holds (the export page's count, an
erasure of everything's) without reading the others (memories.lifecycle.tallies.memories_held,
docs/adr/0056), and the org-wide stats leave out the relationships touching one (their ids, read
from the index alone). Only deleted rows are in it, a few percent of an organisation; built
CONCURRENTLY, so writes go on meanwhile."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models
from django.db.models import Q


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [("memories", "0047_event_query_tails")]

    operations = [
        AddIndexConcurrently("memory", models.Index(fields=["org", "id"], condition=Q(deleted_at__isnull=False),
                                                    name="memories_deleted")),
    ]
