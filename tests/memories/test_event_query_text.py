"""Retrieval events found by a text of their query (the console's events page): the text from
the start of a word of the query, whatever its case, through the events' query tails and their
GIN index (memories migration 0047, docs/adr/0056); never another organisation's events."""

import importlib
from types import SimpleNamespace

import pytest

from memories.access import Caller
from memories.models import RetrievalEvent
from memories.reads import selectors
from memories.use_cases import retrieval
from memory_platform import database
from tenants.context import tenant_context
from tests.markers import committing

QUERIES = [
    "Flights to Paris?",
    "what did Dana say about PARIS in May",
    "comparison: paris vs. rome",
    "aristocrats",
    "a #tag of its own",
    "a tag on its own",
    "it's Dana's birthday",
    r"C:\path\to\file",
    "what?? really??",
    "ünïcode Straße café",
    "the weather in Parisian suburbs, and " + "much more, " * 8 + "then the end",
]
TEXTS = ["par", "PARIS", "to paris", "aris", "paris vs", "#tag", "tag", "it's", "dana's b", r"c:\path",
         r"\path", "??", "straße", "café", "caf", "zzz", "on its own", "of its", "more, much more, then",
         "the weather in parisian suburbs, and much more, much more, much more, mu"]


def _expected(text: str) -> set[str]:
    """A query matches where it holds the text, whatever its case, and the text's first letter
    or digit starts a word of the query (a text without one: anywhere)."""
    folded, start = text.lower(), next((i for i, c in enumerate(text) if c.isalnum()), None)
    matched = set()
    for query in QUERIES:
        held = query.lower()
        for place in range(len(held)):
            if not held.startswith(folded, place):
                continue
            first = place + (start or 0)
            if start is None or first == 0 or not held[first - 1].isalnum():
                matched.add(query)
    return matched


def _event(tenant, query: str) -> RetrievalEvent:
    with tenant_context(tenant.org.id):
        return RetrievalEvent.objects.create(org=tenant.org, agent=tenant.agent, kind="search", query=query)


def _found(tenant, text: str) -> set[str]:
    caller = Caller(org_id=tenant.org.id, agent_id=tenant.agent.pk)
    with tenant_context(tenant.org.id):
        return set(retrieval.retrieval_event_list(caller, query_contains=text).values_list("query", flat=True))


@pytest.mark.django_db
@pytest.mark.parametrize("by_id", [selectors.NAMED_BY_ID, 1], ids=["matches by id", "matches walked"])
def test_an_event_is_found_by_a_text_from_the_start_of_a_word_of_its_query(tenant_a, tenant_b, monkeypatch, by_id):
    monkeypatch.setattr(selectors, "NAMED_BY_ID", by_id)
    with tenant_context(tenant_a.org.id):
        RetrievalEvent.objects.all().delete()
    for query in QUERIES:
        _event(tenant_a, query)
        _event(tenant_b, query + " (beta)")
    for text in TEXTS:
        assert _found(tenant_a, text) == _expected(text), text
    assert _found(tenant_a, "beta") == set()
    assert _found(tenant_b, "paris") == {q + " (beta)" for q in _expected("paris")}


@pytest.mark.django_db
def test_the_found_events_keep_the_other_filters(tenant_a):
    with tenant_context(tenant_a.org.id):
        RetrievalEvent.objects.all().delete()
        RetrievalEvent.objects.create(org=tenant_a.org, agent=tenant_a.agent, kind="context", query="paris trip")
    _event(tenant_a, "paris flights")
    caller = Caller(org_id=tenant_a.org.id, agent_id=tenant_a.agent.pk)
    with tenant_context(tenant_a.org.id):
        found = retrieval.retrieval_event_list(caller, kind="search", query_contains="paris")
        assert list(found.values_list("query", flat=True)) == ["paris flights"]


@committing  # the planner costs the index by the statistics of committed rows
def test_a_rare_text_is_found_on_the_index_under_row_level_security(tenant_a):
    """The tails match is leakproof (tsvector @@ tsquery), so under row-level security it is an
    index condition: a text no event holds does not read the organisation's events."""
    from django.db import connection, connections

    from tests.plans import explained, plan_nodes

    with tenant_context(tenant_a.org.id):
        RetrievalEvent.objects.bulk_create(
            RetrievalEvent(org=tenant_a.org, agent=tenant_a.agent, kind="search", query=f"search number {n} of many")
            for n in range(2_000))
    with connections["owner"].cursor() as cursor:
        cursor.execute("ANALYZE retrieval_events")
    with tenant_context(tenant_a.org.id):
        named = RetrievalEvent.objects.filter(org_id=tenant_a.org.id).extra(
            where=[selectors.EVENT_QUERY_SQL], params=[selectors.word_start_query(tenant_a.org.id, "zzz")])
        sql, params = named.order_by().values_list("pk", flat=True)[:selectors.NAMED_BY_ID + 1].query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
            assert cursor.fetchone() == (False, False)
            cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
            plan = cursor.fetchone()[0]
    assert "retrieval_events_query_tails" in {node.get("Index Name") for node in plan_nodes(explained(plan))}, plan


@committing
def test_the_migration_fills_the_tails_of_the_events_written_before_it(tenant_a, tenant_b, monkeypatch):
    """Events written before migration 0047 (its trigger off, as they were) get their tails from
    its fill, a batch at a time, and are then found; the fill changes nothing else of them."""
    from django.db import connections

    fill = importlib.import_module("memories.migrations.0047_event_query_tails")
    monkeypatch.setattr(fill, "BATCH", 3)
    owner = connections["owner"]

    def trigger(state: str) -> None:
        with owner.cursor() as cursor:
            citus = database.citus_present("owner")
            if citus:  # Citus asks for it to change a distributed table's trigger
                cursor.execute("SET citus.enable_unsafe_triggers = on")
            cursor.execute(f"ALTER TABLE retrieval_events {state} TRIGGER retrieval_events_query_tails")
            if citus:
                cursor.execute("RESET citus.enable_unsafe_triggers")

    trigger("DISABLE")
    try:
        before = {tenant.org.id: [_event(tenant, f"{query} {tenant.org.name}") for query in QUERIES[:7]]
                  for tenant in (tenant_a, tenant_b)}
    finally:
        trigger("ENABLE")
    assert _found(tenant_a, "paris") == set()
    fill.fill(None, SimpleNamespace(connection=owner))
    for tenant in (tenant_a, tenant_b):
        assert _found(tenant, "paris") == {f"{q} {tenant.org.name}" for q in _expected("paris") if q in QUERIES[:7]}
        with tenant_context(tenant.org.id):
            now = {event.pk: (event.query, event.created_at, event.agent_id)
                   for event in RetrievalEvent.objects.filter(pk__in=[e.pk for e in before[tenant.org.id]])}
        assert now == {event.pk: (event.query, event.created_at, event.agent_id) for event in before[tenant.org.id]}
