"""Composite (org_id, id) keys, database-owned references and row-level security for tenancy.

See memory_platform/schema.py and docs/adr/0032.
"""

from django.db import migrations

from memory_platform.schema import (
    SET_UPDATED_AT_FUNCTION,
    TenantReference,
    enable_tenant_rls,
    maintain_updated_at,
    tenant_foreign_key,
    tenant_keys,
    tenant_policy_sql,
    user_foreign_key,
)

TENANT_TABLES = ("agents", "sessions", "api_keys", "memberships")

# An organisation is visible as a tenant to itself (and to the service account).
ORGANIZATION_POLICY = tenant_policy_sql("organizations", column="id")


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        *(tenant_keys(table) for table in TENANT_TABLES),
        tenant_foreign_key("sessions", TenantReference(("agent_id",), "agents", on_delete="SET NULL")),
        tenant_foreign_key("api_keys", TenantReference(("agent_id",), "agents")),
        user_foreign_key("api_keys", "created_by_id", on_delete="SET NULL"),
        user_foreign_key("memberships", "user_id", on_delete="CASCADE"),
        SET_UPDATED_AT_FUNCTION,
        maintain_updated_at("organizations"),
        maintain_updated_at("agents"),
        migrations.RunSQL(*ORGANIZATION_POLICY),
        *(enable_tenant_rls(table) for table in TENANT_TABLES),
    ]
