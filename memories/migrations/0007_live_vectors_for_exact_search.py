"""A covering index of each tenant's live vectors, for exact search.

A search over few rows (up to EXACT_SCAN_ROWS) ranks them all by true distance. Read from
heap rows that costs ~3 µs a row (a tenant's rows are spread over the table); from this index,
sorted by org_id and holding the vector, ~1 µs (an index-only scan). Measured at 1M memories:
a 10,000-row tenant's exact search went from 28.6 to 10.9 ms p50, which moved the exact/index
boundary from 2,500 to 12,000 rows (docs/adr/0035). The price is a second copy of the live
vectors (~2 GB per million rows, like the HNSW index).

Built CONCURRENTLY: on a large table the build takes minutes and must not block writes.
"""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("memories", "0006_keep_vectors_in_the_row")]

    operations = [
        AddIndexConcurrently(
            model_name="memory",
            index=models.Index(
                condition=models.Q(("deleted_at__isnull", True), ("status", "active"), ("embedding__isnull", False)),
                fields=["org"], include=("id", "embedding", "expires_at"), name="memories_live_vectors",
            ),
        ),
    ]
