"""Let a signed-in operator see their own memberships, and the organisations they belong to,
before any organisation is chosen (the console's organisation switch).

Two SELECT-only policies, widening reads to the rows keyed by app.current_user_id, which the
console sets from the authenticated session (tenants/context.py, activate_user). Policies are
permissive, so nothing else becomes visible: not another member's row, not an organisation
the user does not belong to, and never a write.
"""

from django.db import migrations

USER_PREDICATE = "nullif(current_setting('app.current_user_id', true), '')::bigint"


class Migration(migrations.Migration):
    dependencies = [("tenants", "0003_api_key_lookup_policy")]

    operations = [
        migrations.RunSQL(
            f"""
            CREATE POLICY memberships_own_rows ON memberships FOR SELECT
                USING (user_id = {USER_PREDICATE});
            CREATE POLICY organizations_of_member ON organizations FOR SELECT
                USING (EXISTS (SELECT 1 FROM memberships
                               WHERE memberships.org_id = organizations.id
                                 AND memberships.user_id = {USER_PREDICATE}));
            """,
            """
            DROP POLICY organizations_of_member ON organizations;
            DROP POLICY memberships_own_rows ON memberships;
            """,
        ),
    ]
