"""A memory's usage (retrieval_count, last_retrieved_at) moves out of its row into memory_usage.

Retrieval counts are written back every 30 s for every memory a search returned. In the
memory's own row each such write was a new row version: an entry in each of its ~20 indexes
(HNSW and GIN included), and a page whose all-visible bit is cleared, so exact searches,
which read the covering index of live vectors, went back to the heap for it. At 1M memories
a 10,000-row tenant's exact search took 10.6 ms p50 after VACUUM and 17 ms after ~25,000
written-back retrievals (docs/adr/0035). In a narrow table of its own, a count is one small
row (one index), and memory rows change only when memories do. The API shows both values as
before (spec §0 has them as columns of memories; they are read through Memory's manager).

Counts already recorded are copied over, as the service account (row-level security is
forced on the owner too).
"""

import uuid

import django.db.models.deletion
from django.db import migrations, models

from memory_platform.schema import TenantReference, enable_tenant_rls, tenant_foreign_key, tenant_keys

COPY = """
    SELECT set_config('app.service_account', 'on', true);
    INSERT INTO memory_usage (id, org_id, memory_id, retrieval_count, last_retrieved_at)
    SELECT gen_random_uuid(), org_id, id, retrieval_count, last_retrieved_at FROM memories
    WHERE retrieval_count > 0 OR last_retrieved_at IS NOT NULL;
    SELECT set_config('app.service_account', '', true);
"""
COPY_BACK = """
    SELECT set_config('app.service_account', 'on', true);
    UPDATE memories m SET retrieval_count = u.retrieval_count, last_retrieved_at = u.last_retrieved_at
    FROM memory_usage u WHERE u.org_id = m.org_id AND u.memory_id = m.id;
    SELECT set_config('app.service_account', '', true);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0008_fulltext_index_without_pending_list"),
        ("tenants", "0004_operator_membership_policies"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="memory",
            options={"base_manager_name": "objects", "ordering": ["-created_at"], "verbose_name_plural": "memories"},
        ),
        migrations.CreateModel(
            name="MemoryUsage",
            fields=[
                ("id", models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ("retrieval_count", models.PositiveIntegerField(default=0)),
                ("last_retrieved_at", models.DateTimeField(blank=True, null=True)),
                ("memory", models.ForeignKey(db_constraint=False, db_index=False,
                                             on_delete=django.db.models.deletion.DO_NOTHING, related_name="+",
                                             to="memories.memory")),
                ("org", models.ForeignKey(db_column="org_id", db_constraint=False, db_index=False,
                                          on_delete=django.db.models.deletion.DO_NOTHING, related_name="+",
                                          to="tenants.organization")),
            ],
            options={
                "db_table": "memory_usage",
                "constraints": [models.UniqueConstraint(fields=("org", "memory"), name="memory_usage_unique")],
            },
        ),
        tenant_keys("memory_usage"),
        tenant_foreign_key("memory_usage", TenantReference(("memory_id",), "memories")),
        enable_tenant_rls("memory_usage"),
        migrations.RunSQL(COPY, COPY_BACK),
        migrations.RemoveField(model_name="memory", name="last_retrieved_at"),
        migrations.RemoveField(model_name="memory", name="retrieval_count"),
    ]
