"""Composite (org_id, id) keys, database-owned references, triggers, row-level security and
the vector index for the memory tables.

See memory_platform/schema.py, memories/vectors/index.py and docs/adr/0032.
"""

from django.db import migrations

from memories.vectors import index as vector_index
from memory_platform.schema import (
    FORBID_REWRITE_FUNCTION,
    TenantReference,
    append_only,
    enable_tenant_rls,
    maintain_updated_at,
    tenant_foreign_key,
    tenant_keys,
    user_foreign_key,
)

TENANT_TABLES = (
    "memories",
    "memory_versions",
    "memory_relationships",
    "memory_tags",
    "artifacts",
    "memory_artifacts",
    "retrieval_events",
    "provenance",
)

REFERENCES = {
    "memories": [
        TenantReference(("agent_id",), "agents"),
        TenantReference(("session_id",), "sessions", on_delete="SET NULL"),
        TenantReference(("superseded_by",), "memories", on_delete="SET NULL"),
        TenantReference(("merged_into",), "memories", on_delete="SET NULL"),
    ],
    "memory_versions": [
        TenantReference(("memory_id",), "memories"),
        TenantReference(("changed_by_agent_id",), "agents", on_delete="SET NULL"),
    ],
    "memory_relationships": [
        TenantReference(("source_id",), "memories"),
        TenantReference(("target_id",), "memories"),
    ],
    "memory_tags": [TenantReference(("memory_id",), "memories")],
    # The link's scope must equal the memory's and the artifact's: both keys carry it, so a
    # link across scopes cannot exist, and neither end can change scope while linked.
    "memory_artifacts": [
        TenantReference(("memory_id", "scope"), "memories", parent_columns=("id", "scope"), on_update="CASCADE"),
        TenantReference(("artifact_id", "scope"), "artifacts", parent_columns=("id", "scope"), on_update="CASCADE"),
    ],
    "retrieval_events": [
        TenantReference(("agent_id",), "agents", on_delete="SET NULL"),
        TenantReference(("replay_of",), "retrieval_events", on_delete="SET NULL"),
    ],
    "provenance": [
        TenantReference(("memory_id",), "memories"),
        TenantReference(("artifact_id",), "artifacts"),
        TenantReference(("retrieval_event_id",), "retrieval_events"),
    ],
}


def create_vector_index(apps, schema_editor):
    schema_editor.execute(vector_index.create_sql(vector_index.configured_kind()))


def drop_vector_index(apps, schema_editor):
    schema_editor.execute(vector_index.DROP_SQL)


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0001_initial"),
        ("tenants", "0002_tenant_keys_and_row_level_security"),
    ]

    operations = [
        # Only when missing: on a Citus cluster even CREATE EXTENSION IF NOT EXISTS is sent to
        # the workers, where the superuser, not the owner, created it.
        migrations.RunSQL(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'vector') "
            "THEN CREATE EXTENSION vector; END IF; END $$",
            migrations.RunSQL.noop,
        ),
        *(tenant_keys(table) for table in TENANT_TABLES),
        migrations.RunSQL(
            """
            ALTER TABLE memories ADD CONSTRAINT memories_org_id_scope_unique UNIQUE (org_id, id, scope);
            ALTER TABLE artifacts ADD CONSTRAINT artifacts_org_id_scope_unique UNIQUE (org_id, id, scope);
            """,
            """
            ALTER TABLE artifacts DROP CONSTRAINT artifacts_org_id_scope_unique;
            ALTER TABLE memories DROP CONSTRAINT memories_org_id_scope_unique;
            """,
        ),
        *(
            tenant_foreign_key(table, reference)
            for table, references in REFERENCES.items()
            for reference in references
        ),
        user_foreign_key("memory_versions", "changed_by_user_id", on_delete="SET NULL"),
        user_foreign_key("retrieval_events", "user_id", on_delete="SET NULL"),
        maintain_updated_at("memories"),
        FORBID_REWRITE_FUNCTION,
        append_only("memory_versions", "changed_by_agent_id", "changed_by_user_id"),
        append_only("retrieval_events", "agent_id", "user_id", "replay_of"),
        *(enable_tenant_rls(table) for table in TENANT_TABLES),
        migrations.RunPython(create_vector_index, drop_vector_index),
    ]
