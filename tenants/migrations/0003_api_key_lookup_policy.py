"""Let authentication find one API key by its hash before the tenant is known.

A second, SELECT-only policy on api_keys: a row is visible when the transaction has set
app.api_key_hash to that row's key_hash, which only a holder of the key can compute.
Policies are permissive, so this widens reads of that one row and nothing else.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("tenants", "0002_tenant_keys_and_row_level_security")]

    operations = [
        migrations.RunSQL(
            """
            CREATE POLICY api_keys_lookup_by_hash ON api_keys FOR SELECT
                USING (key_hash = nullif(current_setting('app.api_key_hash', true), ''));
            """,
            "DROP POLICY api_keys_lookup_by_hash ON api_keys;",
        ),
    ]
