"""The console's sorts paged by key on their indexes (docs/adr/0051): by confidence, by last
change and "Most retrieved" show every memory once, in order, while memories are written,
retrieved and deleted between pages, and nothing of another organisation."""

import re

import pytest
from django.utils import timezone

from memories.models import Memory
from memories.retrieval import events
from tenants.context import tenant_context
from tests.console.conftest import remember
from tests.markers import committing

pytestmark = pytest.mark.django_db



def _rows(response) -> list[str]:
    return re.findall(r'<td class="content"><a href="[^"]+">([^<]*)</a>', response.content.decode())


def _next(response) -> str:
    found = re.search(r'<a href="\?([^"]*)"[^>]*rel="next"', response.content.decode())
    return found.group(1).replace("&amp;", "&") if found else ""


@pytest.fixture
def operator_a(console_as, tenant_a):
    return console_as(tenant_a.org, "operator")


def _retrieve(org_id, counts: dict) -> None:
    """Count retrievals as a search does when Redis is down: written to memory_usage at once."""
    now = timezone.now().isoformat()
    events.reinforce(org_id=org_id, counts={str(k): v for k, v in counts.items()},
                     last={str(k): now for k in counts})


def _walk(operator, query: dict, between) -> list[str]:
    seen, url, n = [], "?" + "&".join(f"{k}={v}" for k, v in query.items()), 0
    while url is not None:
        response = operator.get(operator.base + "memories/" + url)
        assert response.status_code == 200
        seen += _rows(response)
        n += 1
        between(n)
        url = ("?" + _next(response)) if _next(response) else None
    return seen


def test_most_retrieved_lists_the_retrieved_memories_most_first_and_pages_by_key(operator_a, tenant_a, tenant_b):
    with tenant_context(tenant_a.org.id):
        Memory.objects.all().delete()
    rows = [remember(tenant_a, f"used {i:02d}", category="preference" if i % 5 else "factual", tags=["walk"])
            for i in range(60)]
    remember(tenant_a, "never retrieved", category="preference", tags=["walk"])
    _retrieve(tenant_a.org.id, {row.pk: 1 + i % 7 for i, row in enumerate(rows)})
    theirs = remember(tenant_b, "used by beta", category="preference", tags=["walk"])
    _retrieve(tenant_b.org.id, {theirs.pk: 100})

    first = operator_a.get(operator_a.base + "memories/", {"sort": "retrieved", "category": "preference"})
    shown = _rows(first)
    assert len(shown) == 25 and "used by beta" not in shown and "never retrieved" not in shown
    counts = {row.content: 1 + i % 7 for i, row in enumerate(rows)}
    assert [counts[text] for text in shown] == sorted((counts[text] for text in shown), reverse=True)
    assert counts[shown[0]] == 7

    volatile = [row for i, row in enumerate(rows) if i % 5 and i % 9 == 0]
    stable = {row.content for i, row in enumerate(rows) if i % 5 and row not in volatile}

    def write_between(n):
        fresh = remember(tenant_a, f"written {n}", category="preference", tags=["walk"])
        _retrieve(tenant_a.org.id, {fresh.pk: 1 + n % 7})
        if volatile:
            with tenant_context(tenant_a.org.id):
                Memory.objects.filter(pk=volatile.pop().pk).delete()

    seen = _walk(operator_a, {"sort": "retrieved", "category": "preference"}, write_between)
    assert len(seen) == len(set(seen)) and stable <= set(seen)
    assert not any(text.startswith("used") and counts[text] and int(text[5:]) % 5 == 0 for text in seen)
    assert "used by beta" not in seen and "never retrieved" not in seen


@pytest.mark.parametrize("sort", ["confidence", "updated"])
def test_the_indexed_sorts_skip_and_repeat_nothing_while_memories_are_written(operator_a, tenant_a, sort):
    with tenant_context(tenant_a.org.id):
        Memory.objects.all().delete()
    rows = [remember(tenant_a, f"walk {i:02d}", confidence=(i % 4) / 4 + 0.1, tags=["walk"]) for i in range(60)]
    volatile = rows[::7]
    stable = {row.content for row in rows if row not in volatile}

    def write_between(n):
        remember(tenant_a, f"written {n}", confidence=0.5, tags=["walk"])
        if volatile:
            with tenant_context(tenant_a.org.id):
                Memory.objects.filter(pk=volatile.pop().pk).delete()

    seen = _walk(operator_a, {"sort": sort, "tags": "walk"}, write_between)
    assert len(seen) == len(set(seen)) and stable <= set(seen)
    confidence = {row.content: row.confidence for row in rows}
    if sort == "confidence":
        listed = [confidence[text] for text in seen if text in confidence]
        assert listed == sorted(listed, reverse=True)


@committing  # the planner costs the index by the statistics of committed rows
@pytest.mark.parametrize("sort", ["confidence", "importance"])
def test_a_deep_page_by_confidence_or_importance_is_a_range_of_its_index_under_row_level_security(tenant_a, sort):
    """A page deep in the sort starts at its key in the index: the row comparison is an index
    condition, not a filter on every entry before it. Under row-level security only a leakproof
    comparison may be one, and numeric's are marked leakproof by the provisioning
    (memory_platform.local_services.LEAKPROOF_FUNCTIONS; docs/adr/0051)."""
    from django.db import connection, connections

    from console.views.memories import BY_KEY
    from memories import keyset
    from tests.plans import explained, plan_nodes

    with tenant_context(tenant_a.org.id):
        Memory.objects.bulk_create(
            Memory(org=tenant_a.org, agent=tenant_a.agent, content=f"sorted {n}", content_hash=f"{n:064x}", memory_type="semantic",
                   category="factual", confidence=(n % 997) / 1000, importance=(n % 991) / 1000)
            for n in range(3_000))
    with connections["owner"].cursor() as cursor:
        cursor.execute("ANALYZE memories")
    order = BY_KEY[sort]
    with tenant_context(tenant_a.org.id):
        deep = Memory.objects.order_by(*order.order_by())[2_700]
        page = keyset.after(Memory.objects.filter(deleted_at__isnull=True), order=order,
                            key=keyset.key_of(deep, order)).order_by(*order.order_by())[:25]
        sql, params = page.query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
            assert cursor.fetchone() == (False, False)
            cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
            plan = cursor.fetchone()[0]
    scans = [node for node in plan_nodes(explained(plan)) if node.get("Index Name") == f"memories_org_{sort}"]
    assert scans, plan
    assert any(sort in node.get("Index Cond", "") and "created_at" in node.get("Index Cond", "") for node in scans), scans


@committing  # the planner costs the index by the statistics of committed rows
def test_the_conflicts_page_reads_the_open_contradictions_on_their_own_index(tenant_a):
    """The conflicts page walks the open contradictions in its order on their partial index
    (memories 0051), under row-level security: the contradictions resolved long ago, which
    outnumber the open ones, are not read. Resolving one takes it out of the index's rows."""
    from django.db import connection, connections

    from memories.models import MemoryRelationship
    from memories.writes import conflicts
    from tests.plans import explained, plan_nodes

    with tenant_context(tenant_a.org.id):
        memories = Memory.objects.bulk_create(
            Memory(org=tenant_a.org, agent=tenant_a.agent, content=f"claim {n}", content_hash=f"{n:064x}",
                   memory_type="semantic", category="factual") for n in range(3_000))
        MemoryRelationship.objects.bulk_create(
            MemoryRelationship(org=tenant_a.org, source=memories[n], target=memories[n + 1], relation_type="contradicts",
                               metadata={} if n % 40 == 0 else {"resolution": {"resolution": "both_valid"}})
            for n in range(0, 2_998, 2))
    with connections["owner"].cursor() as cursor:
        cursor.execute("ANALYZE memories, memory_relationships")
    with tenant_context(tenant_a.org.id):
        shown = {(c.first.pk, c.second.pk) for c in conflicts.open_conflicts(org_id=tenant_a.org.id)}
        written = {(memories[n].pk, memories[n + 1].pk): n % 40 == 0 for n in range(0, 2_998, 2)}
        assert {pair for pair, open_ in written.items() if open_} <= shown  # the open ones, and
        assert not {pair for pair, open_ in written.items() if not open_} & shown  # none resolved
        page = (conflicts._contradictions(tenant_a.org.id).select_related("source", "target")
                .order_by("created_at", "id")[:101])
        sql, params = page.query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
            plan = cursor.fetchone()[0]
    scans = [node for node in plan_nodes(explained(plan)) if node.get("Relation Name") == "memory_relationships"]
    assert scans and all(node.get("Index Name") == "relationships_open_contradicts" for node in scans), [(n.get("Node Type"), n.get("Index Name"), n.get("Relation Name")) for n in plan_nodes(explained(plan)) if n.get("Relation Name")]
