"""The tenant references a migration may declare (memory_platform.schema): never SET NULL
again, which a Citus cluster distributed by org_id refuses on a key carrying org_id; the
migrations before memories 0030 still generate the SQL they always did."""

import pytest

from memory_platform.schema import HISTORICAL_SET_NULL, TenantReference, tenant_foreign_key, tenant_reference_replaced


def test_a_new_tenant_reference_cannot_be_set_null_or_set_default():
    with pytest.raises(ValueError, match="cannot be ON DELETE SET NULL"):
        tenant_foreign_key("memory_tags", TenantReference(("tagged_by_agent_id",), "agents", on_delete="SET NULL"))
    for action in ("SET DEFAULT", "SET NULL (agent_id)", "RESTRICT"):
        with pytest.raises(ValueError, match="CASCADE or NO ACTION"):
            TenantReference(("agent_id",), "agents", on_delete=action)


def test_the_migrations_before_0030_still_declare_their_set_null_references_as_they_did():
    [sql] = [tenant_foreign_key("sessions", TenantReference(("agent_id",), "agents", on_delete="SET NULL")).sql]
    assert sql == """
        ALTER TABLE sessions ADD CONSTRAINT sessions_agent_id_fkey
            FOREIGN KEY (org_id, agent_id) REFERENCES agents (org_id, id)
            ON DELETE SET NULL (agent_id) ON UPDATE NO ACTION;
        CREATE INDEX IF NOT EXISTS sessions_agent_id_fkey_idx ON sessions (org_id, agent_id);
        """
    assert len(HISTORICAL_SET_NULL) == 8


def test_a_reference_is_replaced_in_place_and_back():
    operation = tenant_reference_replaced(
        "memories", before=TenantReference(("superseded_by",), "memories", on_delete="SET NULL"),
        after=TenantReference(("superseded_by",), "memories", on_delete="NO ACTION"))
    assert operation.sql == (
        "ALTER TABLE memories DROP CONSTRAINT memories_superseded_by_fkey, ADD CONSTRAINT memories_superseded_by_fkey "
        "FOREIGN KEY (org_id, superseded_by) REFERENCES memories (org_id, id) ON DELETE NO ACTION ON UPDATE NO ACTION;")
    assert operation.reverse_sql == operation.sql.replace("NO ACTION ON UPDATE", "SET NULL (superseded_by) ON UPDATE")
