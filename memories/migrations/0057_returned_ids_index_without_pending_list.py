"""The index of the memories each search returned takes new entries at once, with no pending
list (fastupdate off), as the full-text indexes do (migrations 0008, 0013, 0045, 0047).

Migration 0043 built `retrieval_events_returned` with PostgreSQL's default, fastupdate on: a
search's event went into an unsorted pending list (up to 4 MB) until VACUUM or the limit merged
it, and every scan of the index read the whole list. Its readers scan it once per memory (an
erasure's events and its dry run's count: one lookup per memory of the scope; explain's searches
of a memory), so the list was read ten thousand times to count a namespace of 10,000: at 1M
memories, with 19 pages pending after the benchmark's own searches, that count's events took
450-460 ms and 23 buffers a lookup, and 135-160 ms and 7 once the list was merged
(benchmarks/scale/README.md; docs/adr/0052). A search now pays for its event's entries as it
writes them, a dozen ids.

The index is altered in place (no rebuild), and what is pending now is merged (on a Citus
cluster, ALTER INDEX reaches every shard; what a shard has pending merges at its next VACUUM).
"""

from django.contrib.postgres.indexes import GinIndex
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("memories", "0056_lexemes_emptied")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL("ALTER INDEX retrieval_events_returned SET (fastupdate = off)",
                                  "ALTER INDEX retrieval_events_returned RESET (fastupdate)"),
                migrations.RunSQL("SELECT gin_clean_pending_list('retrieval_events_returned')", migrations.RunSQL.noop),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="retrievalevent", name="retrieval_events_returned"),
                migrations.AddIndex(
                    model_name="retrievalevent",
                    index=GinIndex(fields=["returned_memory_ids"], name="retrieval_events_returned", fastupdate=False),
                ),
            ],
        ),
    ]
