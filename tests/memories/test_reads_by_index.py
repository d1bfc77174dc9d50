"""LangGraph's list_namespaces, a walk of the store's distinct namespaces on an index
(docs/adr/0051, 0060), equals the distinct namespaces of every item computed in full, and crosses no
organisation's or key's namespaces."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.access import KeyReach
from memories.lifecycle import tallies
from memories.models import Memory
from memories.store import reads
from tenants.context import tenant_context
from tests.console.conftest import remember
from tests.markers import committing

pytestmark = pytest.mark.django_db

NAMESPACES = [("users", "alice"), ("users", "alice", "prefs"), ("users", "alice2"), ("users", "bob", "prefs"),
              ("users-x", "carol"), ("users0",), ("users",), ("a", "b", "c"), ("a", "b"), ("a", "c", "f"),
              ("ünï", "cödé"), ("Users", "Zed")]


def put(api, namespace, key, **extra):
    response = api.put("/api/v1/store/items", {"namespace": list(namespace), "key": key, "value": {"v": 1},
                                               "index": False, **extra})
    assert response.status_code == 204, response.content


def full_listing(org_id, *, prefix=(), suffix=(), max_depth=None, limit=100, offset=0, within=()) -> list:
    """list_namespaces computed from every item of the organisation, in Python."""
    now = timezone.now()
    with tenant_context(org_id):
        scopes = {memory.namespace for memory in Memory.objects.filter(org_id=org_id, key__isnull=False,
                                                                         deleted_at__isnull=True)
                  if memory.namespace and (memory.expires_at is None or memory.expires_at > now)}

    def matches(labels, path, from_end):
        if len(labels) < len(path):
            return False
        part = labels[len(labels) - len(path):] if from_end else labels[:len(path)]
        return all(want in ("*", have) for want, have in zip(path, part))

    listed = set()
    for scope in scopes:
        labels = tuple(scope.split("/"))
        if within and not any(scope == w or scope.startswith(w + "/") for w in within):
            continue
        if matches(labels, prefix, False) and matches(labels, suffix, True):
            listed.add(labels[:max_depth] if max_depth is not None else labels)
    return [list(labels) for labels in sorted(listed)][offset:offset + limit]


LISTINGS = [{}, {"prefix": ("users",)}, {"prefix": ("users", "alice")}, {"prefix": ("users", "*", "prefs")},
            {"suffix": ("prefs",)}, {"prefix": ("*",), "max_depth": 1}, {"max_depth": 1},
            {"max_depth": 2, "limit": 3, "offset": 2}, {"prefix": ("a", "b")}, {"prefix": ("users-x",)},
            {"prefix": ("ünï",)}, {"prefix": ("nothing",)}, {"prefix": ("users",), "within": ("users/alice",)},
            {"within": ("users/bob", "a/c")}]


@pytest.mark.parametrize("chunk", [reads.CHUNK, 1, 3])
def test_list_namespaces_equals_the_distinct_namespaces_of_every_item(tenant_a, tenant_b, api_a, api_b, chunk,
                                                                       monkeypatch):
    """Read a chunk of namespaces at a time (CHUNK, and chunks that end inside a namespace's
    cut labels), half of them folded into the tallies, the rest new since the last fold."""
    monkeypatch.setattr(reads, "CHUNK", chunk)
    for number, namespace in enumerate(NAMESPACES):
        if number == len(NAMESPACES) // 2:
            tallies.fold()
        put(api_a, namespace, "k")
        put(api_a, namespace, "k2")
        put(api_b, ("beta",) + namespace, "k")  # another organisation's, under similar names
    put(api_a, ("gone", "deleted"), "k")
    put(api_a, ("gone", "expired"), "k", ttl=5)
    put(api_a, ("users", "dave"), "k", ttl=5)  # one expired item, one live one, in one namespace
    put(api_a, ("users", "dave"), "k2")
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(namespace="gone/deleted").update(deleted_at=timezone.now())
        Memory.objects.filter(namespace__in=["gone/expired", "users/dave"], key="k").update(
            expires_at=timezone.now() - timedelta(minutes=1))
        remember(tenant_a, "not a store item", namespace="plain/memory")

    for listing in LISTINGS:
        within = listing.get("within", ())
        arguments = {name: value for name, value in listing.items() if name != "within"}
        with tenant_context(tenant_a.org.id):
            found = reads.store_namespaces(org_id=tenant_a.org.id, reach=KeyReach(within), **arguments)
        assert found == full_listing(tenant_a.org.id, within=within, **arguments), listing
    with tenant_context(tenant_a.org.id):
        everything = reads.store_namespaces(org_id=tenant_a.org.id, limit=1000)
    assert ["gone", "deleted"] not in everything and ["gone", "expired"] not in everything
    assert ["users", "dave"] in everything and ["plain", "memory"] not in everything
    assert not any(labels[0] == "beta" for labels in everything)
    with tenant_context(tenant_b.org.id):
        assert all(labels[0] == "beta" for labels in reads.store_namespaces(org_id=tenant_b.org.id, limit=1000))


@committing  # the planner costs the index by the statistics of committed rows
def test_a_namespace_is_one_range_of_the_index_under_row_level_security(tenant_a):
    """A namespace's memories are read as one range of an index on the namespace, [prefix,
    prefix + "0"), with the exact test inside it (memories.access.namespace_sql): not an OR that
    made PostgreSQL read every entry of the organisation's and filter them. The same rows as the
    prefix's meaning: the namespace, those under it, not a sibling that sorts inside the range."""
    from django.db import connection, connections

    from memories.lifecycle import erasure
    from tests.plans import explained, plan_nodes

    names = ["users/dana", "users/dana/trips", "users/dana-x", "users/dan", "users/danb", "users/dana0"]
    with tenant_context(tenant_a.org.id):
        Memory.objects.bulk_create(
            Memory(org=tenant_a.org, agent=tenant_a.agent, content=f"fact {n}", content_hash=f"{n:064x}",
                   memory_type="semantic", category="factual",
                   namespace=names[n % len(names)] if n % 20 == 0 else f"users/u{n % 97}")
            for n in range(3_000))
    with connections["owner"].cursor() as cursor:
        cursor.execute("ANALYZE memories")
    with tenant_context(tenant_a.org.id):
        counted = erasure.memory_count(tenant_a.org.id, erasure.ErasureScope(namespace="users/dana"))
        expected = Memory.objects.filter(org_id=tenant_a.org.id).filter(
            namespace__in=["users/dana", "users/dana/trips"]).count()
        where, params = erasure.ErasureScope(namespace="users/dana").memories("m")
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (FORMAT JSON) SELECT count(*) FROM memories m WHERE m.org_id = %s AND " + where,
                           [tenant_a.org.id, *params])
            plan = cursor.fetchone()[0]
    assert counted == expected > 0
    conditions = [node.get("Index Cond", "") for node in plan_nodes(explained(plan))]
    # The range starts at the namespace itself (an OR's index conditions start at "users/dana/").
    assert any("~>=~ 'users/dana'::text" in condition and "~<~ 'users/dana0'::text" in condition
               for condition in conditions), plan


@committing  # the planner costs the index by the statistics of committed rows
def test_a_namespace_s_decaying_memories_are_one_range_of_their_index(tenant_a):
    """A namespace's weak list and strength bands read the namespace's range of the decaying
    memories' index (memories migration 0052), not the organisation's every entry filtered; and
    find the namespace's memories, those under it, not a sibling's."""
    from django.db import connection, connections

    from memories.lifecycle import decay
    from tests.plans import explained, plan_nodes

    names = ["users/dana", "users/dana/trips", "users/dana-x", "users/danb"]
    old = timezone.now() - timedelta(days=400)
    with tenant_context(tenant_a.org.id):
        Memory.objects.bulk_create(
            Memory(org=tenant_a.org, agent=tenant_a.agent, content=f"fact {n}", content_hash=f"{n:064x}",
                   memory_type="semantic", category="factual", decay_rate=0.05,
                   namespace=names[n // 20 % len(names)] if n % 20 == 0 else f"users/u{n % 97}")
            for n in range(3_000))
        Memory.objects.filter(org_id=tenant_a.org.id, content__in=[f"fact {n}" for n in range(0, 3_000, 60)]).update(
            created_at=old)
    with connections["owner"].cursor() as cursor:
        cursor.execute("ANALYZE memories")
    with tenant_context(tenant_a.org.id):
        bands = decay.strength_bands(org_id=tenant_a.org.id, namespace="users/dana")
        weak, count = decay.weak_memories(org_id=tenant_a.org.id, namespace="users/dana", limit=1000)
        statement, params = decay.decaying(tenant_a.org.id, *decay.narrowing("users/dana", KeyReach()))
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (FORMAT JSON) SELECT count(*) FROM ({statement}) d", params)
            plan = cursor.fetchone()[0]
        expected = Memory.objects.filter(org_id=tenant_a.org.id, namespace__in=["users/dana", "users/dana/trips"])
        held, faded = expected.count(), expected.filter(created_at=old).count()
    assert sum(bands.values()) == held == 76 and bands["faded"] == faded and 0 < faded < held
    assert count == faded and {fading.memory.namespace for fading in weak} == {"users/dana", "users/dana/trips"}
    nodes = plan_nodes(explained(plan))
    assert any(node.get("Index Name") == "memories_decaying_namespaces"
               and "~>=~ 'users/dana'::text" in node.get("Index Cond", "") for node in nodes), plan


def test_a_namespace_s_list_by_a_tag_common_elsewhere_asks_each_of_its_memories(tenant_a):
    """A tag with more rows across the organisation than the namespace holds memories is matched
    by a probe per memory of the namespace (bounded by the namespace); a rarer one by its rows.
    Both list the same memories: the namespace's, those under it, carrying the tag."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memories import keyset
    from memories.models import MemoryTag
    from memories.reads import selectors

    with tenant_context(tenant_a.org.id):
        made = Memory.objects.bulk_create(
            Memory(org=tenant_a.org, agent=tenant_a.agent, content=f"fact {n}", content_hash=f"{n:064x}",
                   memory_type="semantic", category="factual",
                   namespace=("users/dana", "users/dana/trips", "users/dana-x")[n % 3] if n < 30 else f"users/u{n % 7}")
            for n in range(200))
        MemoryTag.objects.bulk_create(MemoryTag(org=tenant_a.org, memory=memory, tag="travel") for memory in made
                                      if memory.namespace.startswith("users/u") or int(memory.content.split()[1]) % 2 == 0)
        MemoryTag.objects.bulk_create(MemoryTag(org=tenant_a.org, memory=memory, tag="rare") for memory in made[:6])

        def listed(tag: str) -> tuple[list[str], str]:
            with CaptureQueriesContext(connection) as queries:
                page = keyset.page(selectors.memory_list(org_id=tenant_a.org.id, namespace="users/dana", tag=[tag]),
                                   order=keyset.NEWEST_FIRST, limit=50)
            listing = next(q["sql"] for q in queries.captured_queries
                           if q["sql"].startswith('SELECT "memories"') and "memory_tags" in q["sql"])
            return sorted(memory.content for memory in page.items), listing

        travel, travel_sql = listed("travel")
        rare, rare_sql = listed("rare")
    assert travel == sorted(f"fact {n}" for n in range(30) if n % 3 != 2 and n % 2 == 0)
    assert rare == sorted(f"fact {n}" for n in range(6) if n % 3 != 2)
    assert "OFFSET 0" in travel_sql and "OFFSET 0" not in rare_sql  # 185 rows of travel, 20 memories: probes
