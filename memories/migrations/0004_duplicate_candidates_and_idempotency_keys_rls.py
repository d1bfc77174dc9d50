from django.db import migrations

from memory_platform.schema import TenantReference, enable_tenant_rls, tenant_foreign_key, tenant_keys

TABLES = ("memory_duplicate_candidates", "idempotency_records")


class Migration(migrations.Migration):
    dependencies = [("memories", "0003_duplicate_candidates_and_idempotency")]

    operations = [
        *(tenant_keys(table) for table in TABLES),
        tenant_foreign_key("memory_duplicate_candidates", TenantReference(("memory_id",), "memories")),
        tenant_foreign_key("memory_duplicate_candidates", TenantReference(("candidate_id",), "memories")),
        tenant_foreign_key("idempotency_records", TenantReference(("agent_id",), "agents")),
        *(enable_tenant_rls(table) for table in TABLES),
    ]
