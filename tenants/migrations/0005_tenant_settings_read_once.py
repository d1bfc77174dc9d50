"""The tenant policies read app.current_org_id and app.service_account once per statement.

Written as plain calls, current_setting() was evaluated for every row a statement read; in a
subquery it is an InitPlan, evaluated once. The same rows pass. See memory_platform/schema.py
and memories migration 0010, which does the same for the memory tables.
"""

from django.db import migrations

from memory_platform.schema import tenant_settings_read_once


class Migration(migrations.Migration):
    dependencies = [("tenants", "0004_operator_membership_policies")]

    operations = [
        tenant_settings_read_once("organizations", column="id"),
        *(tenant_settings_read_once(table) for table in ("agents", "sessions", "api_keys", "memberships")),
    ]
