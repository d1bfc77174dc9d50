"""EXPLAIN (ANALYZE) of the vector search query, through the runtime role with row-level
security on, shows the approximate index in use: HNSW (the default) and IVFFlat."""

import numpy as np
import pytest
from django.db import connection, connections, transaction
from pgvector.django import CosineDistance

from memories.models import EMBEDDING_DIMENSIONS, Memory
from memories.retrieval import fulltext, size, vector
from memories.retrieval.filters import SearchFilters
from memories.vectors import index as vector_index
from memory_platform.database import set_local
from tenants.context import tenant_context
from tests import factories
from tests.knobs import with_search_knobs
from tests.markers import committing
from tests.plans import explained, plan_nodes, task_count

ROWS_PER_TENANT = 3000


def bulk_memories(org, agent, count, seed, said: str = "", items: bool = False):
    """count memories with random unit vectors; items: the store's items (a key each), in ten
    users' namespaces."""
    vectors = np.random.default_rng(seed).normal(size=(count, EMBEDDING_DIMENSIONS))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = []
    for i, embedding in enumerate(vectors):
        content = f"memory {seed}-{i}{said}"
        rows.append(Memory(
            org=org, agent=agent, content=content, content_hash=f"{seed:032x}{i:032x}"[-64:],
            category="factual", embedding=embedding, embedding_model="all-MiniLM-L6-v2",
            embedding_dimensions=EMBEDDING_DIMENSIONS,
            **({"key": f"item-{seed}-{i}", "namespace": f"users/u{i % 10}"} if items else {}),
        ))
    with tenant_context(org.id):
        Memory.objects.bulk_create(rows, batch_size=1000)


def read_plan(result) -> tuple[dict, list[dict]]:
    """The top node of an EXPLAIN (FORMAT JSON) result and all its nodes. On a Citus cluster a
    statement of one organisation is one task, and the nodes are those of the plan its worker
    ran on the organisation's shard (tests.plans)."""
    plan = explained(result)
    assert task_count(plan) in (None, 1), f"{task_count(plan)} tasks"
    return plan, list(plan_nodes(plan))


def explain_search(org_id, query_vector, knob_sql):
    with tenant_context(org_id), connection.cursor() as cursor:
        cursor.execute(knob_sql)
        cursor.execute(
            """
            EXPLAIN (ANALYZE, FORMAT JSON)
            SELECT id, 1 - (embedding <=> %s::vector) AS similarity
            FROM memories
            WHERE org_id = %s AND status = 'active' AND deleted_at IS NULL
            ORDER BY embedding <=> %s::vector
            LIMIT 10
            """,
            [str(query_vector), org_id, str(query_vector)],
        )
        plan, nodes = read_plan(cursor.fetchone()[0])
    return nodes, plan["Actual Rows"]


def analyze():
    with connections["owner"].cursor() as cursor:
        cursor.execute("ANALYZE memories")


@pytest.fixture
def org_b(org_a):
    """B in A's shard on a Citus cluster: there each worker plans for its shard, and these tests
    are about a tenant's search in a table other tenants' rows share, as on one PostgreSQL. Alone
    in a shard, a tenant of a few thousand rows is the whole table, which a scan rightly reads."""
    return factories.organization("Beta Corp", beside=org_a)


@pytest.fixture
def populated(org_a, org_b):
    agent_a = factories.agent(org=org_a, name="big")
    agent_b = factories.agent(org=org_b, name="big")
    with connections["owner"].cursor() as cursor:
        cursor.execute(vector_index.DROP_SQL)  # loading is faster without it; the test builds one
    bulk_memories(org_a, agent_a, ROWS_PER_TENANT, seed=1)
    bulk_memories(org_b, agent_b, ROWS_PER_TENANT, seed=2)
    yield org_a
    with transaction.atomic(using="owner"):
        vector_index.rebuild("hnsw")


@committing
@pytest.mark.parametrize(
    ("kind", "knob_sql"),
    [("hnsw", "SET LOCAL hnsw.ef_search = 40"), ("ivfflat", "SET LOCAL ivfflat.probes = 10")],
)
def test_vector_search_uses_the_index(populated, kind, knob_sql, settings):
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "IVFFLAT_LISTS": 50}
    with transaction.atomic(using="owner"):
        vector_index.rebuild(kind)  # after the rows exist: IVFFlat trains its lists on them
    assert vector_index.current_kind() == kind
    analyze()

    nodes, returned = explain_search(populated.id, factories.unit_vector(7), knob_sql)
    scans = [n for n in nodes if n.get("Index Name") == vector_index.INDEX_NAME]
    assert scans and scans[0]["Node Type"] == "Index Scan", [n["Node Type"] for n in nodes]
    assert returned == 10


# --------------------------------------------------------------------------- the search's own query


def hnsw_searching_with(settings, *, exact_scan_rows: int) -> None:
    """An HNSW index over the rows present, searched with these knobs. A small table: a modest
    ef_search, or the planner rightly finds sorting a few thousand rows cheaper."""
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "SEARCH": {
        **settings.MEMORY_PLATFORM["SEARCH"], "EXACT_SCAN_ROWS": exact_scan_rows, "HNSW_EF_SEARCH": 40}}
    with transaction.atomic(using="owner"):
        vector_index.rebuild("hnsw")
    analyze()
    vector.reset_caches()


def search_plan(org_id, embedding, filters, k):
    with tenant_context(org_id), connection.cursor() as cursor:
        query = vector.statement(cursor, org_id, embedding, filters, k)
        set_local(cursor, query.knobs)
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + query.sql, query.params)
        _, nodes = read_plan(cursor.fetchone()[0])
    return query.method, nodes


@committing
def test_the_search_uses_the_index_for_a_large_tenant_and_an_exact_scan_for_a_small_one(populated, org_b, settings):
    hnsw_searching_with(settings, exact_scan_rows=1000)
    small = factories.organization("Small tenant", beside=populated)
    small_agent = factories.agent(org=small, name="tiny")
    bulk_memories(small, small_agent, 20, seed=9)
    query = factories.unit_vector(11)

    method, nodes = search_plan(populated.id, query, SearchFilters(), 10)
    assert method == "hnsw"
    assert any(n.get("Index Name") == vector_index.INDEX_NAME for n in nodes)

    method, nodes = search_plan(small.id, query, SearchFilters(), 10)
    assert method == "exact"
    assert not any(n.get("Index Name") == vector_index.INDEX_NAME for n in nodes)


@committing
def test_an_exact_search_reads_only_the_covering_index_of_live_vectors(populated, settings):
    """Below EXACT_SCAN_ROWS, the tenant's vectors come from memories_live_vectors (org_id,
    holding id, vector, expiry and the columns the ranking reads) by an index-only scan, not
    from the heap rows."""
    hnsw_searching_with(settings, exact_scan_rows=1000)
    small = factories.organization("Mid-size tenant", beside=populated)
    bulk_memories(small, factories.agent(org=small, name="mid"), 300, seed=20)
    with connections["owner"].cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memories")  # marks pages all-visible, as autovacuum does
    method, nodes = search_plan(small.id, factories.unit_vector(21), SearchFilters(), 10)
    assert method == "exact"
    scans = [n for n in nodes if "Scan" in n["Node Type"] and n.get("Relation Name") == "memories"]
    assert [(n["Node Type"], n.get("Index Name")) for n in scans] == [("Index Only Scan", "memories_live_vectors")]
    assert scans[0]["Actual Rows"] == 300 and scans[0].get("Heap Fetches", 0) == 0


@committing
def test_an_exact_search_reads_the_covering_index_even_where_its_tenant_fills_the_table(org_a, settings):
    """One organisation's deployment, or a Citus shard one tenant nearly fills: pricing the
    covering index's pages as random reads from disk, the planner would read the heap by a
    sequential scan there (every column, row-level security tested on every row), 3-4x slower
    on a cluster's worker (benchmarks/cluster). The exact path prices them as the cached pages
    they are, and that setting ends with its statement."""
    hnsw_searching_with(settings, exact_scan_rows=5000)
    # Rows as agents write them: a sentence or two beside the vector, so the heap is wider than
    # the covering index, as it is in any real table.
    said = ": the user prefers window seats on long flights and asks for vegetarian meals" * 8
    bulk_memories(org_a, factories.agent(org=org_a, name="alone"), 3000, seed=30, said=said)
    with connections["owner"].cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memories")
    method, nodes = search_plan(org_a.id, factories.unit_vector(31), SearchFilters(), 10)
    assert method == "exact"
    scans = [n for n in nodes if "Scan" in n["Node Type"] and n.get("Relation Name") == "memories"]
    assert [(n["Node Type"], n.get("Index Name")) for n in scans] == [("Index Only Scan", "memories_live_vectors")]

    with tenant_context(org_a.id), connection.cursor() as cursor:
        cursor.execute("SHOW random_page_cost")
        before = cursor.fetchone()[0]
        hits, method = vector.search(org_a.id, factories.unit_vector(31), SearchFilters(), 10)
        cursor.execute("SHOW random_page_cost")
        assert (method, len(hits), cursor.fetchone()[0]) == ("exact", 10, before)
    assert before != vector.EXACT_PATH_SETTINGS["random_page_cost"]


@committing
def test_a_tiny_tenant_gets_k_results_even_through_the_index(populated, settings):
    """Force the approximate path for a tenant holding 0.3% of the rows: the iterative scan
    keeps going past the other tenants' rows until it has k of this one's."""
    hnsw_searching_with(settings, exact_scan_rows=0)
    tiny = factories.organization("Tiny tenant", beside=populated)
    agent = factories.agent(org=tiny, name="tiny")
    bulk_memories(tiny, agent, 20, seed=12)
    with tenant_context(tiny.id):
        hits, method = vector.search(tiny.id, factories.unit_vector(13), SearchFilters(), 10)
        exact = list(Memory.objects.filter(org=tiny).order_by(
            CosineDistance("embedding", factories.unit_vector(13))).values_list("pk", flat=True)[:10])
    assert method == "hnsw" and len(hits) == 10
    assert len({h.memory_id for h in hits} & set(exact)) >= 9  # recall@10 >= 0.9 on this small sample


@pytest.mark.django_db
def test_searches_leave_no_prepared_statement_whose_generic_plan_could_drop_the_index(tenant_a):
    """Parameters are bound on the client, so PostgreSQL never plans a search once for all
    values (a generic plan can trade the vector index for a sequential scan)."""
    for seed in range(6):  # PostgreSQL switches a prepared statement to a generic plan after 5 runs
        with tenant_context(tenant_a.org.id):
            vector.search(tenant_a.org.id, factories.unit_vector(seed), SearchFilters(), 5)
            fulltext.search(tenant_a.org.id, ["tea"], SearchFilters(), 5)
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]  # reads by key may be (docs/adr/0063)
    assert not [statement for statement in prepared if "<=>" in statement or "@@" in statement]


@committing
def test_full_text_reads_only_its_own_tenants_posting_lists_under_row_level_security(tenant_a, tenant_b):
    """The GIN index holds each tenant's lexemes apart (tenant_lexemes, migration 0013): a word
    thousands of B's memories hold costs A's search nothing. And tsvector @@ tsquery is marked
    LEAKPROOF, or RLS would keep the index out of the search altogether."""
    def notes(tenant, content, count, start=0):
        with tenant_context(tenant.org.id):
            Memory.objects.bulk_create([
                Memory(org=tenant.org, agent=tenant.agent, content=content.format(i), content_hash=f"{start + i:064x}",
                       category="factual") for i in range(count)])

    notes(tenant_b, "Planning note {} for the quarterly planning", 3000)
    notes(tenant_a, "Routine note {} about the weekly review", 3000, start=3000)
    notes(tenant_a, "The zeppelin planning meeting moved to day {}", 3, start=6000)
    analyze()
    with tenant_context(tenant_a.org.id):
        sql, params = fulltext.statement(tenant_a.org.id, ["planning"], SearchFilters(), 5)
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
            _, nodes = read_plan(cursor.fetchone()[0])
        hits = fulltext.search(tenant_a.org.id, ["planning"], SearchFilters(), 5)
    scans = [node for node in nodes if node.get("Index Name") == "memories_tenant_fts"]
    assert scans and all(node["Actual Rows"] == 3 for node in scans if node["Actual Loops"])
    assert len(hits) == 3


@pytest.mark.django_db
def test_the_hnsw_candidate_list_grows_for_a_tenant_holding_a_small_share_of_the_table(tenant_a, settings,
                                                                                      monkeypatch):
    """One pass over the index keeps only the tenant's share of what it visits: the list is
    long enough for k of its rows in one pass, within pgvector's limit of 1000."""
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, HNSW_EF_SEARCH=500)
    org = str(tenant_a.org.id)

    def measured(share: float, rows: int) -> None:  # the tenant as tenant_size would have counted it
        monkeypatch.setattr(size, "tenant_size", lambda org_id: size.TenantSize(rows=rows, share=share))

    for share, k, expected in [(0.5, 50, 500), (0.1, 50, 600), (0.1, 10, 500), (0.02, 50, 1000), (1.0, 800, 960)]:
        measured(share, rows=int(share * 1000))
        assert vector.hnsw_ef_search(org, k) == expected, (share, k)
    measured(0.1, rows=100)
    with tenant_context(org), connection.cursor() as cursor:  # the search runs with it
        query = vector.statement(cursor, org, factories.unit_vector(3), SearchFilters(), 50, small=False)
    assert query.method == "hnsw" and query.knobs["hnsw.ef_search"] == 600


# --------------------------------------------------------------------------- tenants' own indexes


def tenant_indexes_at(settings, rows: int, most: int = 50) -> None:
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "SEARCH": {
        **settings.MEMORY_PLATFORM["SEARCH"], "TENANT_INDEX_ROWS": rows, "TENANT_INDEXES_MAX": most}}


@pytest.fixture
def no_tenant_index_left():
    """Indexes outlive the rows a committing test truncates: none may reach the next test."""
    yield
    with connections["owner"].cursor() as cursor:
        for kind in vector_index.OWN_KINDS:
            for org_id in vector_index.tenant_indexes(kind, using="owner"):
                cursor.execute(f"DROP INDEX IF EXISTS {vector_index.tenant_index_name(org_id, kind)}")
    vector.reset_caches()


@committing
def test_a_large_tenant_gets_an_index_of_its_own_that_only_its_searches_use(populated, org_b, settings,
                                                                           no_tenant_index_left):
    import io

    from django.core.management import call_command

    hnsw_searching_with(settings, exact_scan_rows=1000)
    bulk_memories(populated, factories.agent(org=populated, name="more"), 200, seed=30)
    tenant_indexes_at(settings, rows=2000, most=1)  # both tenants are large; A (3,200 rows) is the largest
    out = io.StringIO()
    call_command("rebuild_vector_index", "--tenants", stdout=out, stderr=io.StringIO())
    own = vector_index.tenant_index_name(populated.id)
    assert f"created {own} (3,200 memories)" in out.getvalue()
    assert "tenants with a vector index of their own: 1 of their memories, 0 of their store items" in out.getvalue()
    assert vector_index.tenant_indexes() == {populated.id: True}
    analyze()
    vector.reset_caches()

    query = factories.unit_vector(31)
    method, nodes = search_plan(populated.id, query, SearchFilters(), 10)
    assert method == "hnsw_tenant" and own in [n.get("Index Name") for n in nodes]
    with tenant_context(populated.id), connection.cursor() as cursor:
        knobs = vector.statement(cursor, populated.id, query, SearchFilters(), 10).knobs
    assert knobs["hnsw.ef_search"] == settings.MEMORY_PLATFORM["SEARCH"]["TENANT_INDEX_EF_SEARCH"]
    with tenant_context(populated.id):
        hits, _ = vector.search(populated.id, query, SearchFilters(), 10)
        exact = list(Memory.objects.filter(org=populated).order_by(
            CosineDistance("embedding", query)).values_list("pk", flat=True)[:10])
    assert len({h.memory_id for h in hits} & set(exact)) >= 9

    # Even where an exact scan would be chosen (a tenant this size below EXACT_SCAN_ROWS), an
    # unfiltered search takes its own index; a filter leaving few rows still goes exact.
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, EXACT_SCAN_ROWS=10_000)
    assert search_plan(populated.id, query, SearchFilters(), 10)[0] == "hnsw_tenant"
    assert search_plan(populated.id, query, SearchFilters(categories=["preference"]), 10)[0] == "exact"
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, EXACT_SCAN_ROWS=1000)

    # Asked for one of B's own vectors, A's search through its index still finds only A's rows.
    with tenant_context(org_b.id):
        b_vector = list(Memory.objects.filter(org=org_b).values_list("embedding", flat=True)[:1])[0]
        b_rows = set(Memory.objects.filter(org=org_b).values_list("pk", flat=True))
    with tenant_context(populated.id):
        hits, method = vector.search(populated.id, list(b_vector), SearchFilters(), 10)
        a_rows = set(Memory.objects.filter(org=populated).values_list("pk", flat=True))
    assert method == "hnsw_tenant" and len(hits) == 10
    assert {h.memory_id for h in hits} <= a_rows and not {h.memory_id for h in hits} & b_rows

    # Another tenant's search cannot use it (its predicate names A) and goes through the shared one.
    method, nodes = search_plan(org_b.id, query, SearchFilters(), 10)
    names = [n.get("Index Name") for n in nodes]
    assert method == "hnsw" and vector_index.INDEX_NAME in names and own not in names

    assert vector_index.sync_tenant_indexes().created == []  # nothing left to do
    tenant_indexes_at(settings, rows=6000, most=1)  # A is above half of that: it keeps its index
    assert vector_index.sync_tenant_indexes().dropped == []
    tenant_indexes_at(settings, rows=7000, most=1)  # ...and below half of this: it goes
    assert vector_index.sync_tenant_indexes().dropped == [own]
    assert vector_index.tenant_indexes() == {}
    vector.reset_caches()
    method, nodes = search_plan(populated.id, query, SearchFilters(), 10)
    assert method == "hnsw" and vector_index.INDEX_NAME in [n.get("Index Name") for n in nodes]



def index_names(nodes) -> list:
    return [n.get("Index Name") for n in nodes]


@committing
def test_a_tenant_with_many_store_items_gets_an_index_of_them_that_only_its_store_searches_walk(
        populated, org_b, settings, no_tenant_index_left):
    """In the tenant's index of memories a search of the store's items keeps only their share of
    the candidates it visits (2.5% at 1M in benchmarks/scale) and walks on past the rest."""
    import io

    from django.core.management import call_command

    hnsw_searching_with(settings, exact_scan_rows=1000)
    bulk_memories(populated, factories.agent(org=populated, name="store"), 1200, seed=40, items=True)
    bulk_memories(org_b, factories.agent(org=org_b, name="store"), 300, seed=41, items=True)
    tenant_indexes_at(settings, rows=1000)  # both hold more memories than that; only A as many items
    out = io.StringIO()
    call_command("rebuild_vector_index", "--tenants", stdout=out, stderr=io.StringIO())
    own, store = (vector_index.tenant_index_name(populated.id),
                  vector_index.tenant_index_name(populated.id, vector_index.STORE_ITEMS))
    assert f"created {store} (1,200 store items)" in out.getvalue()
    assert "tenants with a vector index of their own: 2 of their memories, 1 of their store items" in out.getvalue()
    assert vector_index.tenant_indexes(vector_index.STORE_ITEMS) == {populated.id: True}
    analyze()
    vector.reset_caches()

    # Every item: through the items' index. Those of a prefix holding more than EXACT_SCAN_ROWS:
    # never through the index of memories (at this size the planner may sort them itself).
    query = factories.unit_vector(42)
    method, nodes = search_plan(populated.id, query, SearchFilters(store_items=True), 10)
    assert method == "hnsw_store" and store in index_names(nodes) and own not in index_names(nodes)
    method, nodes = search_plan(populated.id, query, SearchFilters(store_items=True, namespace="users"), 10)
    assert method == "hnsw_store" and own not in index_names(nodes)
    with tenant_context(populated.id):
        hits, _ = vector.search(populated.id, query, SearchFilters(store_items=True), 10)
        items = Memory.objects.filter(org=populated, key__isnull=False)
        exact = list(items.order_by(CosineDistance("embedding", query)).values_list("pk", flat=True)[:10])
        found, every_item = {h.memory_id for h in hits}, set(items.values_list("pk", flat=True))
    assert len(found) == 10 and found <= every_item
    assert len(found & set(exact)) >= 9

    # A search of memories walks the index of memories; one user's items are few: exact.
    method, nodes = search_plan(populated.id, query, SearchFilters(), 10)
    assert method == "hnsw_tenant" and own in index_names(nodes) and store not in index_names(nodes)
    assert search_plan(populated.id, query, SearchFilters(store_items=True, namespace="users/u3"), 10)[0] == "exact"
    # B's store search cannot walk A's items (its predicate names A).
    _, nodes = search_plan(org_b.id, query, SearchFilters(store_items=True), 10)
    assert store not in index_names(nodes)

    tenant_indexes_at(settings, rows=3000)  # A's 1,200 items are below half of that; its 4,200 memories are not
    assert vector_index.sync_tenant_indexes().dropped == [store]
    vector.reset_caches()
    assert search_plan(populated.id, query, SearchFilters(store_items=True), 10)[0] == "hnsw_tenant"


@committing
def test_an_index_a_failed_build_left_invalid_is_built_again(populated, settings, no_tenant_index_left):
    """A concurrent build that stops half-way (cancelled, timed out, the server restarted)
    leaves an invalid index, which the planner never uses: the next sync replaces it."""
    from django.db import DatabaseError

    tenant_indexes_at(settings, rows=2000)
    with connections["owner"].cursor() as cursor:
        cursor.execute("SET statement_timeout = '100ms'")
        try:
            with pytest.raises(DatabaseError, match="statement timeout"):
                cursor.execute(vector_index.tenant_index_sql(populated.id))
        finally:
            cursor.execute("RESET statement_timeout")
    assert vector_index.tenant_indexes() == {populated.id: False}
    changes = vector_index.sync_tenant_indexes()
    own = vector_index.tenant_index_name(populated.id)
    assert changes.dropped == [own] and own in changes.created
    assert vector_index.tenant_indexes()[populated.id] is True


@committing
def test_a_sync_while_another_runs_leaves_the_indexes_to_it(populated, settings, no_tenant_index_left):
    """The hourly job and the command may meet: an index the other is building reads as
    invalid until it is done, so the second sync must not act on what it sees."""
    tenant_indexes_at(settings, rows=2000)
    with connection.cursor() as other_session:
        other_session.execute("SELECT pg_advisory_lock(%s)", [vector_index.SYNC_LOCK])
        try:
            assert vector_index.sync_tenant_indexes() == vector_index.TenantIndexChanges()
            assert vector_index.tenant_indexes() == {}
        finally:
            other_session.execute("SELECT pg_advisory_unlock(%s)", [vector_index.SYNC_LOCK])
    assert vector_index.tenant_index_name(populated.id) in vector_index.sync_tenant_indexes().created
