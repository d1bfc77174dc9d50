"""Exact dedup holds within one namespace: the unique index of live unkeyed memories becomes
(org, agent, scope, content_hash) instead of (org, agent, content_hash).

Before, the same sentence remembered by one agent for ["users", "alice"] and then for
["users", "bob"] came back as alice's memory: bob's write kept nothing of his, and deleting
"his" memory deleted hers (namespaces are user boundaries: docs/architecture.md,
"Namespaces"). No row changes: every set of rows the old index allowed, the new one allows
too.

The new index is built CONCURRENTLY under a temporary name, so writes go on meanwhile and the
old one guards them until the new one is ready; then the old one goes and the new one takes
its name (the services recognise a duplicate by it).

Backwards, the old index cannot be built once one agent keeps the same sentence in two
namespaces (which is the point of this change): delete or merge such pairs first.
"""

from django.db import migrations, models

LIVE_UNKEYED = "deleted_at IS NULL AND status = 'active' AND key IS NULL"
NAME = "memories_content_hash_live_unique"
BUILDING = "memories_content_hash_live_unique_new"


def swap_to(columns: str) -> list[str]:
    return [
        f"DROP INDEX CONCURRENTLY IF EXISTS {BUILDING}",  # what a cancelled build left, invalid
        f"CREATE UNIQUE INDEX CONCURRENTLY {BUILDING} ON memories ({columns}) WHERE {LIVE_UNKEYED}",
        f"DROP INDEX CONCURRENTLY IF EXISTS {NAME}",
        f"ALTER INDEX {BUILDING} RENAME TO {NAME}",
    ]


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("memories", "0014_near_duplicates_within_a_namespace"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(swap_to("org_id, agent_id, scope, content_hash"),
                                  swap_to("org_id, agent_id, content_hash")),
            ],
            state_operations=[
                migrations.RemoveConstraint(model_name="memory", name=NAME),
                migrations.AddConstraint(
                    model_name="memory",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("deleted_at__isnull", True), ("status", "active"), ("key__isnull", True)),
                        fields=("org", "agent", "scope", "content_hash"), name=NAME,
                    ),
                ),
            ],
        ),
    ]
