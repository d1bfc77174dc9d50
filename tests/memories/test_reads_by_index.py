"""LangGraph's list_namespaces, a walk of the store's distinct namespaces on an index
(docs/adr/0051, 0060), equals the distinct namespaces of every item computed in full, and crosses no
organisation's or key's namespaces."""

import importlib
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from memories.access import KeyReach
from memories.lifecycle import decay, export, importing, strength, tallies
from memories.lifecycle.export import ExportScope
from memories.models import Memory
from memories.retrieval import events, hot
from memories.store import reads
from memory_platform.config import config
from tenants.context import tenant_context
from tests import factories
from tests.console.conftest import remember
from tests.markers import committing
from tests.plans import explained, plan_nodes

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
    from memories.lifecycle import erasure

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


def usage_read_whole_per_memory(plan: dict) -> bool:
    """Whether the plan reads memory_usage inside a nested loop other than by its key: the
    organisation's whole usage again for each memory."""
    for node in plan_nodes(explained(plan)):
        if node["Node Type"] == "Nested Loop":
            for inner in plan_nodes(node["Plans"][1]):
                if inner.get("Relation Name") == "memory_usage" and "memory_id" not in inner.get("Index Cond", ""):
                    return True
    return False


def many(tenant, count: int, *, used: int, old: int | None = None) -> list[Memory]:
    """`count` decaying memories in three namespaces, every `used`th one retrieved (400 days
    ago) and every `old`th one written 400 days ago."""
    then = timezone.now() - timedelta(days=400)
    with tenant_context(tenant.org.id):
        made = Memory.objects.bulk_create(
            Memory(org=tenant.org, agent=tenant.agent, content=f"fact {n}", content_hash=f"{n:064x}",
                   memory_type="semantic", category="factual", decay_rate=0.05, namespace=f"users/u{n % 3}")
            for n in range(count))
        retrieved = made[::used]
        with connection.cursor() as cursor:  # as searches are counted (bulk_create's COPY fails on Citus)
            cursor.execute(events.REINFORCE_SQL, [[memory.pk for memory in retrieved], [1] * len(retrieved),
                                                  [then] * len(retrieved), tenant.org.id])
        if old:
            Memory.objects.filter(pk__in=[memory.pk for memory in made[::old]]).update(created_at=then)
    return made


@committing  # the statistics are of committed rows
def test_usage_is_read_by_key_or_by_a_join_when_the_statistics_do_not_know_the_organisation(tenant_b):
    """An organisation the planner's statistics have not seen yet (an import just committed and
    autovacuum has not analysed the tables) has its rows costed at one. Every read of memories
    with their usage (strength for the bands, the weak list and the nightly job; the hot score)
    then still reads each memory's usage once: the whole organisation's joined by hash or merge,
    a namespace's, the kept weakest or an agent's memories probed by key; never a nested loop
    reading the organisation's usage again for each memory (62 s for 20,000 memories, past 12
    minutes after an import of 1M). And the answers are right."""
    tables = ("memories", "memory_usage")
    many(tenant_b, 5_000, used=1)  # the statistics know this organisation, and its usage's size
    with connections["owner"].cursor() as cursor:
        for table in tables:
            cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
            cursor.execute(f"ANALYZE {table}")
    try:
        new = factories.populated_tenant(factories.organization("Gamma", beside=tenant_b.org))
        many(new, 600, used=2, old=10)
        plans = []

        def explained_first(execute, sql, params, many_rows, context):
            if "memory_usage" in sql and sql.lstrip().upper().startswith("SELECT"):
                context["cursor"].execute("EXPLAIN (FORMAT JSON) " + sql, params)
                plans.append((sql, context["cursor"].fetchone()[0]))
            return execute(sql, params, many_rows, context)

        with tenant_context(new.org.id), connection.execute_wrapper(explained_first):
            counted = decay.count_organisation_bands(org_id=new.org.id)
            kept = decay.weak_page(org_id=new.org.id)
            bands = decay.strength_bands(org_id=new.org.id, namespace="users/u1")
            weak, weak_count = decay.weak_memories(org_id=new.org.id, namespace="users/u1")
            decayed = decay.decay_organisation(org_id=new.org.id)
            hottest = hot.hot_memories(org_id=new.org.id, agent_id=new.agent.id, limit=5)  # the newest, scored
            scored = hot.rebuild_hot_set(org_id=new.org.id, agent_id=new.agent.id)  # all of the agent's
        with tenant_context(new.org.id):
            now, held = timezone.now(), [memory for memory in Memory.objects.filter(org_id=new.org.id, decay_rate__gt=0)]
            faded = {memory.pk for memory in held if strength.of(memory, now) < 0.05}
            archived = set(Memory.objects.filter(org_id=new.org.id, status="archived").values_list("pk", flat=True))
    finally:
        with connections["owner"].cursor() as cursor:
            for table in tables:
                cursor.execute(f"ALTER TABLE {table} RESET (autovacuum_enabled)")
    assert len(plans) >= 6, [sql for sql, _ in plans]
    assert not [sql for sql, plan in plans if usage_read_whole_per_memory(plan)]
    assert counted["faded"] == len(faded) == 60 and sum(counted.values()) == len(held) > 600
    assert kept.as_of is not None and kept.count == 60
    assert bands["faded"] == weak_count == len(weak) == 20 and sum(bands.values()) == 200
    assert decayed["archived"] == 60 and archived == faded
    assert len(hottest) == 5 and scored == config().hot_cache_size  # the best of the 542 still live


def test_the_function_that_analyses_after_an_import_names_every_table_an_import_writes():
    migration = importlib.import_module("memories.migrations.0058_analyse_imported_tables")
    assert set(migration.TABLES) == set(importing.TABLES)


@committing  # the statistics are of committed rows
def test_an_import_leaves_the_statistics_knowing_the_organisation(tenant_a, tenant_b, tmp_path):
    """An import of a thousand rows and more has the tables it wrote analysed once it commits
    (memories migration 0058's function, which the runtime role may call but no other): the
    planner counts the organisation's memories as they are, not as one row, before autovacuum
    gets to them."""
    made = many(tenant_a, 1_200, used=4)
    with connections["owner"].cursor() as cursor:
        cursor.execute("ALTER TABLE memories SET (autovacuum_enabled = false)")
        cursor.execute("ANALYZE memories")  # tenant_a's memories known, tenant_b's one
    try:
        with tenant_context(tenant_a.org.id):
            (tmp_path / "a.jsonl").write_text("".join(export.memories_export(org=tenant_a.org, scope=ExportScope())))
        with tenant_context(tenant_b.org.id):
            with (tmp_path / "a.jsonl").open("rb") as exported:
                report = importing.memories_import(org_id=tenant_b.org.id, file=exported)
        with tenant_context(tenant_b.org.id):  # once the import's transaction has committed
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (FORMAT JSON) SELECT id FROM memories WHERE org_id = %s", [tenant_b.org.id])
                plan = cursor.fetchone()[0]
    finally:
        with connections["owner"].cursor() as cursor:
            cursor.execute("ALTER TABLE memories RESET (autovacuum_enabled)")
    assert report.created["memories"] >= len(made)
    estimated = [node["Plan Rows"] for node in plan_nodes(explained(plan)) if node.get("Relation Name") == "memories"]
    assert estimated and min(estimated) > len(made) / 2, plan
    with connections["owner"].cursor() as cursor:
        cursor.execute("SELECT has_function_privilege(%s, 'analyse_imported_tables()', 'EXECUTE'), "
                       "has_function_privilege('public', 'analyse_imported_tables()', 'EXECUTE')",
                       [connection.settings_dict["USER"]])
        assert cursor.fetchone() == (True, False)  # the runtime role may, nobody else
