"""The eight tenant references that were ON DELETE SET NULL (x) become ON DELETE NO ACTION.

A Citus cluster distributed by org_id refuses SET NULL (and SET DEFAULT) on a foreign key
that carries the distribution column. Each constraint keeps its name, its columns and its
index: the database still refuses a reference to a row that does not exist in the same
organisation, and whoever deletes the row empties the references to it first, in the same
transaction (memory_platform.references), so the row that referred stays with its reference
empty, as before. Reversed, they are SET NULL (x) again.
"""

from django.db import migrations

from memory_platform.schema import TenantReference, tenant_reference_replaced

# (table, column, parent): spelled out here, as history, whatever the code later calls them.
REFERENCES = (
    ("sessions", "agent_id", "agents"),
    ("memories", "session_id", "sessions"),
    ("memories", "superseded_by", "memories"),
    ("memories", "merged_into", "memories"),
    ("memory_versions", "changed_by_agent_id", "agents"),
    ("retrieval_events", "agent_id", "agents"),
    ("retrieval_events", "replay_of", "retrieval_events"),
    ("erasures", "requested_by_agent_id", "agents"),
)


class Migration(migrations.Migration):

    dependencies = [
        ("memories", "0029_namespace_fields"),
        ("tenants", "0010_member_organisations_without_subquery"),
    ]

    operations = [
        tenant_reference_replaced(
            table,
            before=TenantReference((column,), parent, on_delete="SET NULL"),
            after=TenantReference((column,), parent, on_delete="NO ACTION"),
        )
        for table, column, parent in REFERENCES
    ]
