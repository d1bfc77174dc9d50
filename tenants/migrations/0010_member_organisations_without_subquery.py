"""The organisations an operator belongs to are opened by the ids their memberships name, not
by a subquery in the policy.

Citus refuses a policy with a subquery on a distributed table (docs/adr/0042), and
organizations_of_member was one: EXISTS (SELECT 1 FROM memberships ...). The console now reads
the operator's own memberships first (app.current_user_id, memberships_own_rows), then sets
app.member_org_ids to the organisations those rows name (tenants/context.py,
activate_member_orgs) and reads those. The same rows are open as before, and only for reads.
"""

from django.db import migrations

USER_PREDICATE = "nullif(current_setting('app.current_user_id', true), '')::bigint"
MEMBER_ORGS_PREDICATE = "string_to_array(nullif(current_setting('app.member_org_ids', true), ''), ',')::uuid[]"


class Migration(migrations.Migration):
    dependencies = [("tenants", "0009_session_namespace")]

    operations = [
        migrations.RunSQL(
            f"""
            DROP POLICY organizations_of_member ON organizations;
            CREATE POLICY organizations_of_member ON organizations FOR SELECT
                USING (id = ANY ({MEMBER_ORGS_PREDICATE}));
            """,
            f"""
            DROP POLICY organizations_of_member ON organizations;
            CREATE POLICY organizations_of_member ON organizations FOR SELECT
                USING (EXISTS (SELECT 1 FROM memberships
                               WHERE memberships.org_id = organizations.id
                                 AND memberships.user_id = {USER_PREDICATE}));
            """,
        ),
    ]
