"""The product on a Citus cluster (`scripts/test --citus`): every table placed where ADR-0042
says, and an organisation's rows kept on the node that holds its shard group, behind the same
row-level security on every node. Skipped on a single PostgreSQL."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection, connections, transaction

from memories.models import EntityAlias, Memory
from memory_platform import database, distribution, local_services
from tenants.context import tenant_context
from tests import factories
from tests.markers import committing

pytestmark = pytest.mark.django_db(databases=["default", "owner"])


@pytest.fixture(autouse=True)
def cluster(db):
    if not database.citus_present():
        pytest.skip("not a Citus cluster (scripts/test --citus runs these)")


def placement_of(table: str, org_id) -> tuple[str, str]:
    """The node (its socket folder) holding the organisation's shard of `table`, and the shard."""
    with connections["owner"].cursor() as cursor:
        cursor.execute("SELECT nodename, shard_name FROM citus_shards WHERE table_name = %s::regclass "
                       "AND shardid = get_shard_id_for_distribution_column(%s, %s)", [table, table, str(org_id)])
        return cursor.fetchone()


def worker_of(table: str, org_id) -> str:
    return placement_of(table, org_id)[0]


@pytest.fixture
def tenants_on_two_workers():
    """Two populated organisations whose shard groups sit on different workers."""
    first = factories.populated_tenant(factories.organization("First"))
    for number in range(40):
        second = factories.populated_tenant(factories.organization(f"Second {number}"))
        if worker_of("memories", second.org.id) != worker_of("memories", first.org.id):
            return first, second
    pytest.fail("40 organisations all landed on one worker")


def test_every_tenant_table_is_distributed_by_org_id_and_colocated():
    placements = distribution.placed()
    planned = distribution.plan()
    for placement in planned:
        if placement.kind == "local":
            assert placement.table not in placements
        else:
            assert placements[placement.table] == placement, placement.table
    distributed = [p.table for p in planned if p.kind == "distributed"]
    assert {"memories", "memory_versions", "agents", "api_keys", "retrieval_events"} <= set(distributed)
    with connections["owner"].cursor() as cursor:
        cursor.execute("SELECT count(DISTINCT colocationid) FROM pg_dist_partition WHERE logicalrelid::text = ANY(%s)",
                       [distributed])
        assert cursor.fetchone()[0] == 1
    references = {p.table for p in planned if p.kind == "reference"}
    assert references == {"organizations", "auth_user", "embedding_models"}


def test_a_tenant_sees_its_rows_on_every_worker_and_never_anothers(tenants_on_two_workers):
    first, second = tenants_on_two_workers
    for tenant, other in ((first, second), (second, first)):
        with tenant_context(tenant.org.id):
            assert set(Memory.objects.values_list("org_id", flat=True)) == {tenant.org.id}
            with connection.cursor() as cursor:
                cursor.execute("SELECT DISTINCT org_id FROM memories UNION SELECT DISTINCT org_id FROM memory_versions")
                assert {row[0] for row in cursor.fetchall()} == {tenant.org.id}
                cursor.execute("SELECT count(*) FROM memories WHERE org_id = %s", [other.org.id])
                assert cursor.fetchone()[0] == 0


@committing
def test_the_policies_hold_on_the_workers_own_shards(tenants_on_two_workers):
    """Straight to the worker holding the second organisation's shard, as the runtime role:
    the shard shows its rows to that organisation only, and nothing with no tenant set."""
    first, second = tenants_on_two_workers
    node, shard = placement_of("memories", second.org.id)
    url = local_services.PostgresEndpoint(socket_dir=node, port=local_services.POSTGRES_PORT).url(
        user=local_services.APP_ROLE, database=connection.settings_dict["NAME"])
    seen = {}
    with psycopg.connect(url) as conn:
        for name, org_id in (("none", ""), ("first", str(first.org.id)), ("second", str(second.org.id))):
            with conn.transaction():
                conn.execute(f"SET LOCAL app.current_org_id = '{org_id}'")
                seen[name] = {row[0] for row in conn.execute(f"SELECT org_id FROM {shard}")}
    assert seen == {"none": set(), "first": set(), "second": {second.org.id}}


def test_a_tenants_join_is_a_router_query_to_one_node(tenants_on_two_workers):
    """An organisation's statement, with a join along a tenant reference, runs as one task."""
    first, _ = tenants_on_two_workers
    query = EntityAlias.objects.filter(org_id=first.org.id, entity__namespace="users/alice").select_related("entity")
    with tenant_context(first.org.id), connection.cursor() as cursor:
        sql, params = query.query.sql_with_params()
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0][0]["Plan"]
    assert plan["Node Type"] == "Custom Scan" and plan["Custom Plan Provider"] == "Citus Adaptive"
    assert plan["Distributed Query"]["Job"]["Task Count"] == 1


def task_count(sql: str, params) -> int:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0][0]["Plan"]
    assert plan["Custom Plan Provider"] == "Citus Adaptive", plan
    return plan["Distributed Query"]["Job"]["Task Count"]


def test_finding_an_api_key_asks_the_one_node_of_its_organisation(tenants_on_two_workers, api_client_for):
    from memory_platform.database import set_local
    from tenants import authentication, context, services

    first, _ = tenants_on_two_workers
    client = api_client_for(first.agent)
    key_hash = services.api_key_hash(client.key)
    with transaction.atomic(), connection.cursor() as cursor:
        set_local(cursor, {context.API_KEY_HASH_SETTING: key_hash})
        assert task_count(authentication.ORG_KEY_SQL, [services.api_key_org(client.key), key_hash]) == 1
    assert client.get("/api/v1/memories").status_code == 200


STATEMENTS = {"SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "COPY"}


@pytest.fixture
def workers_reached():
    """The workers each block's statements were sent to, read from Citus's log of the commands
    it sends (citus.log_remote_commands), which reaches the client as notices."""
    reached: list[str] = []

    def heard(diagnostic):
        command = (diagnostic.message_primary or "").removeprefix("issuing ").lstrip()
        # Statements that read or write rows; not the SET LOCALs and savepoints Citus also
        # sends to every worker already in the (test's own, longer) transaction.
        if command.split(" ", 1)[0].upper() in STATEMENTS and diagnostic.message_detail:
            reached.append(diagnostic.message_detail.split("@", 1)[-1].split(" ")[0])

    connection.ensure_connection()
    raw = connection.connection
    with connection.cursor() as cursor:
        cursor.execute("SET citus.log_remote_commands = on; SET client_min_messages = log")
    raw.add_notice_handler(heard)
    yield reached
    raw.remove_notice_handler(heard)
    with connection.cursor() as cursor:
        cursor.execute("RESET citus.log_remote_commands; RESET client_min_messages")


REQUESTS = {
    "write": ("post", "/api/v1/memories", {"content": "Alice keeps bees on the roof", "namespace": ["users", "alice"]}),
    "list": ("get", "/api/v1/memories", None),
    "search": ("post", "/api/v1/search", {"query": "who keeps bees"}),
    "context": ("post", "/api/v1/context", {"query": "bees"}),
    "store put": ("put", "/api/v1/store/items", {"namespace": ["users", "alice"], "key": "hives", "value": {"n": 2}}),
    "store get": ("get", "/api/v1/store/items", {"namespace": "users.alice", "key": "hives"}),
    "erase": ("post", "/api/v1/erase", {"namespace": ["users", "alice"]}),
}


@pytest.mark.parametrize("name", REQUESTS)
def test_each_request_of_an_organisation_goes_to_the_one_worker_holding_it(tenants_on_two_workers, api_client_for,
                                                                          workers_reached, name):
    """Every statement a request sends to a worker goes to the organisation's own (reference
    tables are read where the query runs)."""
    first, _ = tenants_on_two_workers
    home = worker_of("memories", first.org.id) + ":5432"
    api = api_client_for(first.agent)
    api.post("/api/v1/memories", {"content": "Alice keeps bees", "namespace": ["users", "alice"]}, format="json")
    api.put("/api/v1/store/items", {"namespace": ["users", "alice"], "key": "hives", "value": {"n": 1}}, format="json")
    # The one multi-shard read a search makes, at most hourly per process: every shard's row
    # estimate, which sizes the HNSW candidate list (memories.retrieval.size._rows_beside).
    api.post("/api/v1/search", {"query": "bees"}, format="json")
    method, path, body = REQUESTS[name]
    workers_reached.clear()
    response = getattr(api, method)(path, body, **({"format": "json"} if method != "get" else {}))
    assert response.status_code < 300, (response.status_code, response.content[:300])
    assert set(workers_reached) <= {home}, set(workers_reached)
