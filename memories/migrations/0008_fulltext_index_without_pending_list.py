"""The full-text index takes new entries at once, with no pending list (fastupdate off).

With fastupdate on (PostgreSQL's default), a GIN index collects new entries in an unsorted
pending list until VACUUM or a 4 MB limit merges them, and every search reads that whole list.
Memories are updated often after they are written (retrieval counts, flushed every 30 s;
status, tags...), and a full page makes each update a new row version with new index entries.
At 1M memories, ~10,000 such updates left 266 pages pending, and each GIN scan of a search
paid for reading them: full text took 21 / 20 / 10 ms p50 for the 10% / 1% / 50% tenants,
13 / 8 / 4 ms once the list was merged (docs/adr/0035). Writes now pay for their entries as
they happen, which a write path that already embeds and indexes a vector hardly notices.

The index is altered in place (no rebuild), and what is pending now is merged.
"""

from django.contrib.postgres.indexes import GinIndex
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("memories", "0007_live_vectors_for_exact_search")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL("ALTER INDEX memories_fts SET (fastupdate = off)",
                                  "ALTER INDEX memories_fts RESET (fastupdate)"),
                migrations.RunSQL("SELECT gin_clean_pending_list('memories_fts')", migrations.RunSQL.noop),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="memory", name="memories_fts"),
                migrations.AddIndex(
                    model_name="memory",
                    index=GinIndex(fields=["search_vector"], condition=models.Q(("deleted_at__isnull", True)),
                                   name="memories_fts", fastupdate=False),
                ),
            ],
        ),
    ]
