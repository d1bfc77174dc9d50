"""Tenant isolation, tried the way an attacker or a buggy view would: through the
application's own connection (the runtime role), by ORM and by raw SQL, on every tenant table."""

import uuid

import pytest
from django.apps import apps
from django.db import (
    DatabaseError,
    IntegrityError,
    NotSupportedError,
    ProgrammingError,
    connection,
    transaction,
)

from memories.models import Artifact, MemoryArtifact, MemoryRelationship
from memories.lifecycle import tallies
from memories.retrieval import hot
from memories.understanding import lexicon
from memory_platform.database import on_citus
from tenants.context import service_account, tenant_context
from tenants.models import Organization, TenantModel
from tests.plans import explained, plan_nodes

TENANT_MODELS = sorted(
    (model for model in apps.get_models() if issubclass(model, TenantModel)), key=lambda m: m._meta.db_table
)
APPEND_ONLY = {"memory_versions", "retrieval_events"}
# Tenant tables no model maps: each organisation's word statistics (migration 0018), its
# memories' tallies and strength bands (migrations 0035, 0037, 0049), its agents' hot sets as
# last scored (migration 0050).
STATISTICS_TABLES = set(lexicon.TABLES) | set(tallies.TABLES) | {"memory_strength_bands", hot.TABLE}
# A tenant policy's test as PostgreSQL prints it when the settings are read for each row: on a
# Citus cluster, where `distribute` rewrites the policies so (tenant_predicate(per_row=True) in
# memory_platform.schema), as Citus refuses a subquery in the policy of a distributed table.
PER_ROW_ORG = "(NULLIF(current_setting('app.current_org_id'::text, true), ''::text))::uuid"
PER_ROW_SERVICE_ACCOUNT = "(current_setting('app.service_account'::text, true) = 'on'::text)"
# Citus refuses any UPDATE that sets the distribution column to another value, before it reads a row.
CITUS_REFUSES_MOVING_ROWS = "modifying the partition value of rows is not allowed"


def table(model) -> str:
    return model._meta.db_table


def raw(sql, params=()):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description else cursor.rowcount


# --------------------------------------------------------------------------- the catalog


def tables_with_org_id() -> set[str]:
    rows = raw(
        """
        SELECT c.relname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
          AND a.attname = 'org_id' AND NOT a.attisdropped
        """
    )
    return {name for (name,) in rows}


@pytest.mark.django_db
def test_every_table_with_org_id_is_a_tenant_model_and_vice_versa():
    assert tables_with_org_id() == {table(model) for model in TENANT_MODELS} | STATISTICS_TABLES
    assert len(TENANT_MODELS) == 21


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted({table(m) for m in TENANT_MODELS} | STATISTICS_TABLES | {"organizations"}))
def test_tenant_table_has_forced_row_level_security_and_a_policy(name):
    [(enabled, forced)] = raw(
        "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = %s::regclass", [name]
    )
    # Forced on the owner too on one node; on a Citus cluster the owner must read and write
    # every row for shard moves to replicate into it (docs/adr/0042, Operations).
    assert enabled and forced == (not on_citus())
    policies = {row[0]: row[1:] for row in raw(
        "SELECT policyname, cmd, permissive, qual, with_check FROM pg_policies WHERE tablename = %s", [name]
    )}
    cmd, permissive, qual, with_check = policies.pop(f"{name}_tenant_isolation")
    assert cmd == "ALL" and permissive == "PERMISSIVE"
    column = "id" if name == "organizations" else "org_id"
    for expression in (qual, with_check):
        assert "current_setting('app.current_org_id'::text, true)" in expression
        assert "NULLIF" in expression  # an unset tenant reads as NULL, never as a cast error
        assert "app.service_account" in expression
        if on_citus():
            # The same test, with each setting read for every row (docs/adr/0042).
            assert expression == f"(({column} = {PER_ROW_ORG}) OR {PER_ROW_SERVICE_ACCOUNT})"
        else:
            # Each setting in a subquery: read once per statement, not once per row.
            assert "( SELECT (NULLIF(current_setting('app.current_org_id'::text, true)" in expression
            assert "( SELECT (current_setting('app.service_account'::text, true)" in expression
    if name == "api_keys":
        # The one other policy: authentication reads the single key whose hash it holds.
        cmd, permissive, qual, with_check = policies.pop("api_keys_lookup_by_hash")
        assert cmd == "SELECT" and with_check is None
        assert "key_hash" in qual and "app.api_key_hash" in qual
    if name == "memberships":
        # The console's organisation switch: an operator reads their own memberships.
        cmd, permissive, qual, with_check = policies.pop("memberships_own_rows")
        assert cmd == "SELECT" and with_check is None and qual.startswith("(user_id = ")
        assert "app.current_user_id" in qual and "NULLIF" in qual
    if name == "organizations":
        # ...and the organisations those memberships name, with no subquery (Citus refuses one).
        cmd, permissive, qual, with_check = policies.pop("organizations_of_member")
        assert cmd == "SELECT" and with_check is None
        assert "app.member_org_ids" in qual and "SELECT" not in qual.upper()
    assert policies == {}


def test_a_statement_reads_the_tenant_settings_once_on_one_node_and_per_row_on_citus(tenant_a):
    """On one node the policy's settings are InitPlans: a scan's per-row filter compares org_id
    with their value and calls no current_setting() itself. On a Citus cluster, which refuses
    them, the scan of each shard on its worker calls the settings in its filter, for every row:
    the same rows pass, at about 0.3 ms more per 1,000 rows read (measured in docs/adr/0042)."""
    with tenant_context(tenant_a.org.id):
        [(plan,)] = raw("EXPLAIN (VERBOSE, FORMAT JSON) SELECT id FROM memories WHERE importance >= 0")
    nodes = list(plan_nodes(explained(plan)))
    filters = [node["Filter"] for node in nodes if "Filter" in node]
    subplans = {node.get("Subplan Name", "") for node in nodes}
    if on_citus():
        assert filters and all(PER_ROW_ORG in text and "InitPlan" not in text for text in filters)
        assert not any(subplan.startswith("InitPlan") for subplan in subplans)
    else:
        assert filters and all("InitPlan" in text and "current_setting" not in text for text in filters)
        assert subplans >= {"InitPlan 1", "InitPlan 2"}


@pytest.mark.django_db
def test_runtime_role_is_not_superuser_cannot_bypass_rls_and_owns_nothing():
    [(role, superuser, bypass, createrole)] = raw(
        "SELECT rolname, rolsuper, rolbypassrls, rolcreaterole FROM pg_roles WHERE rolname = current_user"
    )
    assert (superuser, bypass, createrole) == (False, False, False)
    assert raw("SELECT count(*) FROM pg_class WHERE relowner = (SELECT oid FROM pg_roles WHERE rolname = %s)",
               [role]) == [(0,)]
    # ...and the tables do have an owner, one that is not the runtime role.
    [(owner,)] = raw("SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'memories'::regclass")
    assert owner != role


@pytest.mark.django_db
def test_runtime_role_cannot_disable_rls_or_truncate():
    for statement in ("ALTER TABLE memories DISABLE ROW LEVEL SECURITY", "TRUNCATE memories", "SET ROLE memory_owner"):
        with pytest.raises(ProgrammingError), transaction.atomic():
            raw(statement)


# --------------------------------------------------------------------------- reads


@pytest.mark.parametrize("model", TENANT_MODELS, ids=table)
def test_with_a_set_no_row_of_b_is_visible_by_orm_or_raw_sql(model, tenant_a, tenant_b):
    with tenant_context(tenant_a.org.id):
        assert not model.objects.filter(org_id=tenant_b.org.id).exists()
        assert not model.objects.filter(pk=tenant_b.rows()[model].pk).exists()
        assert set(model.objects.values_list("org_id", flat=True)) == {tenant_a.org.id}
        assert raw(f"SELECT count(*) FROM {table(model)} WHERE org_id = %s", [tenant_b.org.id]) == [(0,)]
        assert raw(f"SELECT DISTINCT org_id FROM {table(model)}") == [(tenant_a.org.id,)]


@pytest.mark.parametrize("model", [*TENANT_MODELS, Organization], ids=table)
def test_with_no_organisation_set_every_tenant_table_reads_empty(model, tenant_a, tenant_b):
    assert model.objects.count() == 0
    assert raw(f"SELECT count(*) FROM {table(model)}") == [(0,)]


def test_organisations_table_shows_only_the_current_organisation(tenant_a, tenant_b):
    with tenant_context(tenant_a.org.id):
        assert list(Organization.objects.all()) == [tenant_a.org]
        assert Organization.objects.filter(pk=tenant_b.org.pk).update(name="taken over") == 0


# --------------------------------------------------------------------------- writes


def moving_a_row_refused():
    """An UPDATE giving a row another organisation fails: on one node the policy's WITH CHECK
    refuses the new row; on a Citus cluster Citus refuses the statement itself, as it does any
    change of the distribution column (docs/adr/0042)."""
    if on_citus():
        return pytest.raises(NotSupportedError, match=CITUS_REFUSES_MOVING_ROWS)
    return pytest.raises(ProgrammingError, match="row-level security")


def row_copy_for(model, row, org):
    """A new row shaped like `row` but claiming organisation `org`."""
    copy = model.objects.model(**{
        f.attname: getattr(row, f.attname) for f in model._meta.concrete_fields if not f.generated
    })
    copy.pk = uuid.uuid4()
    copy.org_id = org.id
    return copy


@pytest.mark.parametrize("model", TENANT_MODELS, ids=table)
def test_inserting_a_row_for_b_while_a_is_set_fails(model, tenant_a, tenant_b):
    intruder = row_copy_for(model, tenant_a.rows()[model], tenant_b.org)
    with tenant_context(tenant_a.org.id):
        with pytest.raises(ProgrammingError, match="row-level security"), transaction.atomic():
            intruder.save(force_insert=True)
    with service_account():
        assert not model.objects.filter(pk=intruder.pk).exists()


@pytest.mark.parametrize("model", TENANT_MODELS, ids=table)
def test_updating_or_deleting_b_rows_while_a_is_set_affects_nothing(model, tenant_a, tenant_b):
    victim = tenant_b.rows()[model]
    with tenant_context(tenant_a.org.id):
        if table(model) in APPEND_ONLY:
            # History tables: the runtime role may not UPDATE them at all.
            with pytest.raises(ProgrammingError, match="permission denied"), transaction.atomic():
                raw(f"UPDATE {table(model)} SET org_id = org_id WHERE id = %s", [victim.pk])
        else:
            if on_citus():
                with pytest.raises(NotSupportedError, match=CITUS_REFUSES_MOVING_ROWS), transaction.atomic():
                    model.objects.filter(pk=victim.pk).update(org_id=tenant_a.org.id)
            else:  # the policy shows a's context no row of b's to update
                assert model.objects.filter(pk=victim.pk).update(org_id=tenant_a.org.id) == 0
            assert raw(f"UPDATE {table(model)} SET org_id = org_id WHERE id = %s", [victim.pk]) == 0
        assert model.objects.filter(pk=victim.pk).delete()[0] == 0
        assert raw(f"DELETE FROM {table(model)} WHERE org_id = %s", [tenant_b.org.id]) == 0
    with tenant_context(tenant_b.org.id):
        assert model.objects.filter(pk=victim.pk).exists()


@pytest.mark.parametrize("model", [m for m in TENANT_MODELS if table(m) not in APPEND_ONLY], ids=table)
def test_moving_a_row_of_a_to_b_fails(model, tenant_a, tenant_b):
    row = tenant_a.rows()[model]
    with tenant_context(tenant_a.org.id):
        with moving_a_row_refused(), transaction.atomic():
            model.objects.filter(pk=row.pk).update(org_id=tenant_b.org.id)
        with moving_a_row_refused(), transaction.atomic():
            raw(f"UPDATE {table(model)} SET org_id = %s WHERE id = %s", [tenant_b.org.id, row.pk])
        assert model.objects.get(pk=row.pk).org_id == tenant_a.org.id
    with tenant_context(tenant_b.org.id):
        assert not model.objects.filter(pk=row.pk).exists()


# --------------------------------------------------------------------------- references


def test_a_relationship_cannot_point_at_another_organisations_memory(tenant_a, tenant_b):
    """Foreign-key checks ignore row-level security; the composite (org_id, id) keys do not."""
    with tenant_context(tenant_a.org.id):
        with pytest.raises(IntegrityError), transaction.atomic():
            MemoryRelationship.objects.create(
                org=tenant_a.org, source=tenant_a.memory, target_id=tenant_b.memory.id, relation_type="contradicts"
            )


def test_an_artifact_can_only_be_linked_to_a_memory_of_the_same_namespace(tenant_a):
    with tenant_context(tenant_a.org.id):
        elsewhere = Artifact.objects.create(
            org=tenant_a.org, namespace="projects/other", sha256="b" * 64, storage_uri="s3://b/c", artifact_type="log"
        )
        for namespace in ("projects/other", "memories/user-1"):
            with pytest.raises(IntegrityError), transaction.atomic():
                MemoryArtifact.objects.create(org=tenant_a.org, memory=tenant_a.memory, artifact=elsewhere,
                                              namespace=namespace)


def test_a_memory_linked_to_artifacts_cannot_change_namespace_alone(tenant_a):
    with tenant_context(tenant_a.org.id):
        with pytest.raises(IntegrityError), transaction.atomic():
            type(tenant_a.memory).objects.filter(pk=tenant_a.memory.pk).update(namespace="memories/user-2")


def test_errors_inside_a_tenant_context_do_not_leak_it(tenant_a):
    with pytest.raises(DatabaseError):
        with tenant_context(tenant_a.org.id):
            raw("SELECT 1/0")
    assert type(tenant_a.memory).objects.count() == 0
