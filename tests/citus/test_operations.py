"""Operating the cluster while the product serves (issue 31): a worker added and the shard
groups rebalanced onto it, and a large organisation moved to a shard group of its own and then
to a node of its own, while agents keep writing and searching through the API. Nothing
acknowledged is lost, and no request fails for more than a few seconds. Skipped on a single
PostgreSQL.

The extra worker is started for this module (local_services.add_worker), registered for the
test database only, and drained, removed and stopped at its end, so later tests see the usual
cluster of MEMORY_PLATFORM_CITUS_WORKERS workers."""

from __future__ import annotations

import io
import os
import json
import threading
import time
import uuid
from dataclasses import dataclass, field

import pytest
from django.core.management import CommandError, call_command
from django.db import connections
from django.test import Client

from memories.models import Memory
from memory_platform import database, distribution, local_services
from tenants.context import tenant_context
from tests import factories

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "owner"])
# Logical replication: writes to a moving shard group go on while it is copied, and wait only
# for the switch at its end (every tenant table has a replica identity, so "auto" is logical).
TRANSFER_MODE = os.environ.get("MEMORY_PLATFORM_TEST_TRANSFER_MODE", "auto")
# The longest a door may keep failing, and the longest it may go without one answer at all.
# The split holds writes about a second on a quiet machine; it took 3.1 s once with the suite
# sharing two cores with another suite (load 6), which is still the "few seconds" promised.
LONGEST_FAILING_SECONDS = 5.0
LONGEST_STALL_SECONDS = 30.0


@pytest.fixture(autouse=True)
def cluster(db):
    if not database.citus_present():
        pytest.skip("not a Citus cluster (scripts/test --citus runs these)")


@pytest.fixture(scope="module")
def extra_worker(django_db_setup, django_db_blocker):
    """worker N+1, started and known to the test database; drained, removed and stopped after."""
    with django_db_blocker.unblock():
        if not database.citus_present():
            pytest.skip("not a Citus cluster (scripts/test --citus runs these)")
    if local_services.citus_workers() == 0:
        pytest.skip("a Citus cluster not started by this project: no worker can be added here")
    name = connections["default"].settings_dict["NAME"]
    node = local_services.add_worker()
    local_services.add_worker_to_database(node, name)
    yield node
    with django_db_blocker.unblock():
        for alias in ("default", "owner"):
            connections[alias].close()
    local_services.remove_worker_from_database(node, name)
    local_services.stop_worker(node, delete=True)


@dataclass
class Door:
    """One kind of request sent again and again: when each answered, and whether it succeeded."""

    name: str
    answers: list[tuple[float, bool, str]] = field(default_factory=list)

    def record(self, started: float, ok: bool, detail: str = "") -> None:
        self.answers.append((started, ok, detail))

    def longest_failing(self) -> float:
        """Seconds from a first failure to the next success (or the end)."""
        longest, since = 0.0, None
        for at, ok, _ in self.answers:
            if not ok and since is None:
                since = at
            elif ok and since is not None:
                longest, since = max(longest, at - since), None
        if since is not None:
            longest = max(longest, time.monotonic() - since)
        return longest

    def longest_stall(self) -> float:
        """The longest time between two successes."""
        times = [at for at, ok, _ in self.answers if ok]
        return max((b - a for a, b in zip(times, times[1:])), default=0.0)

    def failures(self) -> list[str]:
        return [detail for _, ok, detail in self.answers if not ok]

    def summary(self) -> str:
        return (f"{self.name}: {sum(ok for _, ok, _ in self.answers)} ok, {len(self.failures())} failed, "
                f"longest failing {self.longest_failing():.2f} s, longest stall {self.longest_stall():.2f} s")


class Traffic:
    """Agents of several organisations writing memories and searching through the API, each
    door in a thread of its own (its own database connection, closed at its end), until stopped."""

    def __init__(self, keys: dict[uuid.UUID, str]):
        self.keys = keys
        self.acknowledged: dict[uuid.UUID, list[tuple[str, str]]] = {org_id: [] for org_id in keys}
        self.writes, self.searches = Door("writes"), Door("searches")
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(door,), daemon=True)
                        for door in (self.writes, self.searches)]

    def _run(self, door: Door) -> None:
        clients = {org_id: Client(headers={"Authorization": f"Bearer {key}"}) for org_id, key in self.keys.items()}
        orgs = list(clients)
        number = 0
        try:
            while not self.stopping.is_set():
                org_id = orgs[number % len(orgs)]
                number += 1
                started = time.monotonic()
                try:
                    if door is self.writes:
                        content = f"Operations note {number} of {org_id.hex[:8]}: the rebalance keeps serving"
                        response = clients[org_id].post("/api/v1/memories", {"content": content},
                                                        content_type="application/json")
                        ok = response.status_code == 201
                        if ok:
                            self.acknowledged[org_id].append((response.json()["memory"]["id"], content))
                    else:
                        response = clients[org_id].post("/api/v1/search", {"query": "rebalance keeps serving",
                                                                            "limit": 5},
                                                        content_type="application/json")
                        ok = response.status_code == 200
                    door.record(started, ok, "" if ok else f"{response.status_code} {response.content[:200]!r}")
                except Exception as exc:  # a failed request is counted, not fatal to the traffic
                    door.record(started, False, f"{type(exc).__name__}: {exc}"[:300])
                    time.sleep(0.05)
        finally:
            connections.close_all()

    def __enter__(self) -> Traffic:
        for thread in self.threads:
            thread.start()
        time.sleep(1.0)  # both doors served before the operation starts
        return self

    def __exit__(self, *exc) -> None:
        time.sleep(1.0)  # and after it ends
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=60)

    def assert_served_and_nothing_lost(self) -> None:
        print(self.writes.summary())
        print(self.searches.summary())
        for door in (self.writes, self.searches):
            assert sum(ok for _, ok, _ in door.answers) >= 5, (door.summary(), door.failures()[:3])
            assert door.longest_failing() < LONGEST_FAILING_SECONDS, (door.summary(), door.failures()[:5])
            assert door.longest_stall() < LONGEST_STALL_SECONDS, door.summary()
        for org_id, written in self.acknowledged.items():
            with tenant_context(org_id):
                stored = dict(Memory.objects.filter(org_id=org_id).values_list("id", "content"))
            assert {uuid.UUID(memory_id): content for memory_id, content in written}.items() <= \
                {memory_id: content for memory_id, content in stored.items()}.items(), org_id


def organisations_with_keys(count: int, *, memories_of_first: int = 0) -> dict[uuid.UUID, str]:
    keys = {}
    for number in range(count):
        org = factories.organization(f"Operations {number}")
        agent = factories.agent(org=org, name="operations agent")
        _, keys[org.id] = factories.api_key(agent=agent)
        if number == 0:
            for index in range(memories_of_first):
                factories.memory(org=org, agent=agent, content=f"A large organisation's memory {index}")
    return keys


def shard_groups_by_node() -> dict[str, int]:
    with connections["owner"].cursor() as cursor:
        cursor.execute("SELECT nodename, count(*) FROM citus_shards WHERE table_name = 'memories'::regclass "
                       "GROUP BY 1")
        return dict(cursor.fetchall())


def warm(keys: dict[uuid.UUID, str]) -> None:
    """The query model loaded, the first request's costs paid, before anything is timed."""
    client = Client(headers={"Authorization": f"Bearer {next(iter(keys.values()))}"})
    assert client.post("/api/v1/search", {"query": "warm up", "limit": 1},
                       content_type="application/json").status_code == 200


def test_the_runtime_role_may_not_move_shards_its_row_security_would_empty():
    """As the application's role (held by the tenant policies), a move would copy no row:
    refused. The owner, which the policies no longer hold on a cluster, may."""
    with connections["default"].cursor() as cursor, pytest.raises(PermissionError, match="row-level security"):
        distribution.rebalance(cursor)
    with connections["owner"].cursor() as cursor:
        assert distribution.rebalance(cursor) == 0  # balanced already: nothing to move


def test_a_worker_added_and_rebalanced_while_agents_write_and_search(extra_worker):
    keys = organisations_with_keys(6)
    warm(keys)
    worker = str(extra_worker.endpoint.socket_dir)
    assert shard_groups_by_node().get(worker, 0) == 0
    out = io.StringIO()
    with Traffic(keys) as traffic:
        # As the tables' owner, as an operator runs it.
        call_command("cluster_rebalance", "--transfer-mode", TRANSFER_MODE, stdout=out)
    assert out.getvalue().split()[0].isdigit() and int(out.getvalue().split()[0]) > 0, out.getvalue()
    spread = shard_groups_by_node()
    assert spread[worker] > 0 and max(spread.values()) - min(spread.values()) <= 1, spread
    traffic.assert_served_and_nothing_lost()


def test_a_large_organisation_gets_a_shard_group_then_a_node_of_its_own(extra_worker):
    keys = organisations_with_keys(3, memories_of_first=200)
    large = next(iter(keys))
    warm(keys)
    worker = str(extra_worker.endpoint.socket_dir)
    with Traffic(keys) as traffic:
        # The split holds the organisation's writes while it copies (its non-blocking form
        # crashed a worker: docs/adr/0042); the move to the added worker lets them go on. As
        # the tables' owner, as an operator runs it.
        call_command("cluster_isolate", str(large), "--node", f"{worker}:{local_services.POSTGRES_PORT}",
                     stdout=io.StringIO())
    with connections["owner"].cursor() as cursor:
        cursor.execute("SELECT get_shard_id_for_distribution_column('memories', %s)", [str(large)])
        shard = cursor.fetchone()[0]
    traffic.assert_served_and_nothing_lost()
    with connections["owner"].cursor() as cursor:
        # Every one of its tables in a shard of one hash value, and nobody else's rows there.
        cursor.execute("SELECT count(*), count(*) FILTER (WHERE shardminvalue = shardmaxvalue) FROM pg_dist_shard "
                       "WHERE shardid IN (SELECT get_shard_id_for_distribution_column(logicalrelid, %s) "
                       "FROM pg_dist_partition WHERE partmethod = 'h')", [str(large)])
        tables, alone = cursor.fetchone()
    assert tables == alone > 20
    out = io.StringIO()
    call_command("cluster_status", "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert {"org_id": str(large), "shard": shard, "node": f"{worker}:{local_services.POSTGRES_PORT}"} in \
        report["isolated_organizations"]
    memories = next(table for table in report["tables"] if table["table"] == "memories")
    assert memories["rows_by_node"][f"{worker}:{local_services.POSTGRES_PORT}"] >= 200


def test_isolating_says_what_is_wrong_and_changes_nothing():
    org = factories.organization("Solo")
    before = distribution.isolated_organizations()
    for args, message in ((["not-an-id"], "organization: not an id"),
                          ([str(uuid.uuid4())], "organization: no organisation"),
                          ([str(org.id), "--node", "nowhere:5432"], "node: no worker 'nowhere:5432'")):
        with pytest.raises(CommandError, match=message):
            call_command("cluster_isolate", *args)
    assert distribution.isolated_organizations() == before


def test_health_lists_every_node_by_name_alone(client, extra_worker):
    """/health answers anyone: each node's name, role and state, never its socket's path."""
    body = client.get("/health").json()
    nodes = body["database"]["nodes"]
    expected = ["coordinator", *(f"worker-{n}" for n in range(1, local_services.citus_workers() + 1)),
                extra_worker.name]
    assert [node["name"] for node in nodes] == expected
    assert [node["role"] for node in nodes] == ["coordinator"] + ["worker"] * (len(expected) - 1)
    assert all(node["active"] for node in nodes)
    assert str(local_services.data_dir()) not in json.dumps(body)
