"""Every REST list pages by key (memories.keyset, docs/adr/0046): walked to the end and back
while another writer inserts rows all through the order and deletes others, no row that was
there before and after the walk is skipped or repeated; a cursor that is not one is a 400
naming `cursor`."""

import itertools
import random
from unittest import mock
from datetime import timedelta

import pytest
from django.utils import timezone

from memories import keyset
from memories.models import Entity, Memory, MemoryTag, RetrievalEvent
from tenants.context import tenant_context
from tenants.models import Session
from tests import factories

pytestmark = pytest.mark.django_db

ROWS, VOLATILE, LIMIT = 36, 10, 5
_numbers = itertools.count()


def error(response, status):
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    return response.json()["error"]


class Writer:
    """Inserts rows with sort keys anywhere in the list's range, and deletes the volatile
    rows one by one, between page reads."""

    def __init__(self, tenant, make, remove, volatile):
        self.tenant, self.make, self.remove = tenant, make, remove
        self.volatile = list(volatile)
        self.rng = random.Random(7)

    def __call__(self):
        with tenant_context(self.tenant.org.id):
            for _ in range(2):
                self.make(self.rng.random())
            if self.volatile:
                self.remove(self.volatile.pop())


def walk(client, url, between) -> tuple[list[str], str | None]:
    """Every id the pages show, following `next`, the writer between each read; and the
    `previous` link of the last page."""
    seen, previous = [], None
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.content
        body = response.json()
        seen += [row["id"] for row in body["results"]]
        between()
        url, previous = body["next"], body["previous"] or previous
    return seen, previous


def walk_back(client, url, between) -> list[str]:
    seen = []
    while url:
        body = client.get(url).json()
        seen = [row["id"] for row in body["results"]] + seen
        between()
        url = body["previous"]
    return seen


def assert_each_once(seen, stable):
    assert len(seen) == len(set(seen)), "a row was repeated"
    assert stable <= set(seen), f"{len(stable - set(seen))} rows were skipped"


def check(client, url, *, stable, writer):
    forward, back = walk(client, url, writer)
    assert_each_once(forward, stable)
    assert back is not None
    # Back from the last page to the first: every row before the last page once more.
    backward = walk_back(client, back, writer)
    last_page = set(forward[-LIMIT:])
    assert_each_once(backward, stable - last_page)


# --------------------------------------------------------------------------- memories


def at(minutes_ago: float):
    return timezone.now() - timedelta(minutes=minutes_ago)


def memory(tenant, *, minutes_ago, namespace="users/alice", category="preference", tags=(), session=None):
    row = factories.memory(org=tenant.org, agent=tenant.agent, content=f"Walked memory {next(_numbers)}",
                           namespace=namespace, category=category, embedding=None, session=session)
    with tenant_context(tenant.org.id):
        # Several rows share a created_at (one transaction's now()): the id orders them.
        Memory.objects.filter(pk=row.pk).update(created_at=at(round(minutes_ago)))
        for tag in tags:
            MemoryTag.objects.create(org=tenant.org, memory=row, tag=tag)
    return row


def memory_removal(row):
    if next(_numbers) % 2:
        Memory.objects.filter(pk=row.pk).update(deleted_at=timezone.now())  # soft: out of the list
    else:
        Memory.objects.filter(pk=row.pk).delete()


@pytest.mark.parametrize("query", [
    "",
    "?namespace=users/alice&category=preference&tag=tea",
    "?status=active&memory_type=semantic&agent={agent}",
    "?namespace=users&created_after={after}&created_before={before}",
])
def test_memories_walk_without_skipping_or_repeating_while_written(tenant_a, api_a, query):
    rows = [memory(tenant_a, minutes_ago=i, namespace="other" if i % 7 == 0 else ("users/alice", "users/bob")[i % 2],
                   category="factual" if i % 3 == 0 else "preference", tags=("tea",) if i % 5 else ())
            for i in range(ROWS)]
    volatile, stable_rows = rows[::4][:VOLATILE], [row for row in rows if row not in rows[::4][:VOLATILE]]
    query = query.format(agent=tenant_a.agent.id, after=at(ROWS - 5).isoformat().replace("+00:00", "Z"),
                         before=at(3).isoformat().replace("+00:00", "Z"))
    url = f"/api/v1/memories{query}{'&' if query else '?'}limit={LIMIT}"
    listed = {row["id"] for row in _everything(api_a, url)}
    stable = {str(row.pk) for row in stable_rows} & listed
    assert len(stable) >= 3
    writer = Writer(tenant_a, lambda r: memory(tenant_a, minutes_ago=r * ROWS, tags=("tea",)), memory_removal,
                    volatile)
    check(api_a, url, stable=stable, writer=writer)


def _everything(client, url) -> list[dict]:
    rows = []
    while url:
        body = client.get(url).json()
        rows += body["results"]
        url = body["next"]
    return rows


def test_a_session_memories_walk_in_the_order_written_while_written(tenant_a, api_a):
    session = tenant_a.session
    rows = [memory(tenant_a, minutes_ago=ROWS - i, session=session) for i in range(ROWS)]
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(session=session).exclude(pk__in=[row.pk for row in rows]).delete()
    volatile = rows[1::3][:VOLATILE]
    stable = {str(row.pk) for row in rows if row not in volatile}
    writer = Writer(tenant_a, lambda r: memory(tenant_a, minutes_ago=r * ROWS, session=session), memory_removal,
                    volatile)
    url = f"/api/v1/sessions/{session.pk}/memories?limit={LIMIT}"
    first = api_a.get(url).json()["results"]
    assert first[0]["created_at"] <= first[-1]["created_at"]  # the oldest first
    check(api_a, url, stable=stable, writer=writer)


# --------------------------------------------------------------------------- sessions, events, entities


def session(tenant, *, minutes_ago, namespace="users/alice"):
    with tenant_context(tenant.org.id):
        row = Session.objects.create(org=tenant.org, agent=tenant.agent, namespace=namespace)
        Session.objects.filter(pk=row.pk).update(started_at=at(round(minutes_ago)))
    return row


@pytest.mark.parametrize("query", ["", "?namespace=users&status=open&agent={agent}"])
def test_sessions_walk_without_skipping_or_repeating_while_written(tenant_a, api_a, query):
    rows = [session(tenant_a, minutes_ago=i, namespace=("users/alice", "users/bob")[i % 2]) for i in range(ROWS)]
    volatile = rows[2::3][:VOLATILE]
    stable = {str(row.pk) for row in rows if row not in volatile}
    query = query.format(agent=tenant_a.agent.id)
    writer = Writer(tenant_a, lambda r: session(tenant_a, minutes_ago=r * ROWS),
                    lambda row: Session.objects.filter(pk=row.pk).delete(), volatile)
    check(api_a, f"/api/v1/sessions{query}{'&' if query else '?'}limit={LIMIT}", stable=stable, writer=writer)


def event(tenant, *, minutes_ago, kind="search"):
    # An event is never changed (the table refuses an UPDATE): written at that time instead.
    with tenant_context(tenant.org.id), mock.patch("django.utils.timezone.now", return_value=at(round(minutes_ago))):
        return RetrievalEvent.objects.create(org=tenant.org, agent=tenant.agent, kind=kind, query="what?")


@pytest.mark.parametrize("query", ["", "?kind=search&agent={agent}"])
def test_retrieval_events_walk_without_skipping_or_repeating_while_written(tenant_a, api_a, query):
    rows = [event(tenant_a, minutes_ago=i) for i in range(ROWS)]
    volatile = rows[::3][:VOLATILE]
    stable = {str(row.pk) for row in rows if row not in volatile}
    writer = Writer(tenant_a, lambda r: event(tenant_a, minutes_ago=r * ROWS),
                    lambda row: RetrievalEvent.objects.filter(pk=row.pk).delete(), volatile)
    query = query.format(agent=tenant_a.agent.id)
    check(api_a, f"/api/v1/retrieval-events{query}{'&' if query else '?'}limit={LIMIT}", stable=stable,
          writer=writer)


def entity(tenant, *, mentions, namespace="users/alice", kind="person"):
    n = next(_numbers)
    with tenant_context(tenant.org.id):
        return Entity.objects.create(org=tenant.org, namespace=namespace, kind=kind, name=f"Person {n}",
                                     key=f"person {n}", mention_count=mentions)


@pytest.mark.parametrize("query", ["", "?namespace=users&type=person"])
def test_entities_walk_over_many_ties_without_skipping_or_repeating_while_written(tenant_a, api_a, query):
    # Most share one count, as in life: the key (mention_count, id) pages through the ties.
    rows = [entity(tenant_a, mentions=1 if i % 4 else 1 + i % 3, namespace=("users/alice", "users/bob")[i % 2])
            for i in range(ROWS)]
    volatile = rows[1::3][:VOLATILE]
    stable = {str(row.pk) for row in rows if row not in volatile}
    writer = Writer(tenant_a, lambda r: entity(tenant_a, mentions=1 + int(r * 3)),
                    lambda row: Entity.objects.filter(pk=row.pk).delete(), volatile)
    check(api_a, f"/api/v1/entities{query}{'&' if query else '?'}limit={LIMIT}", stable=stable, writer=writer)


# --------------------------------------------------------------------------- cursors


@pytest.mark.parametrize("path", ["/api/v1/memories", "/api/v1/sessions", "/api/v1/retrieval-events",
                                  "/api/v1/entities", "/api/v1/sessions/{session}/memories"])
@pytest.mark.parametrize("cursor", [
    "nonsense", "e30", keyset.cursor_encode(["yesterday", "x"]), keyset.cursor_encode([1]),
    keyset.cursor_encode([None, None]), "%00", "eyJrIjpbMSwyXSwiYiI6Mn0",
])
def test_a_cursor_that_is_not_one_is_a_400_naming_it(tenant_a, api_a, path, cursor):
    problem = error(api_a.get(path.format(session=tenant_a.session.pk), {"cursor": cursor}), 400)
    assert "cursor" in problem["fields"]


def test_another_tenants_cursor_shows_nothing_of_theirs(tenant_a, tenant_b, api_a, api_b):
    for i in range(3):
        memory(tenant_b, minutes_ago=i)
    theirs = api_b.get("/api/v1/memories?limit=1").json()["next"]
    ours = {row["id"] for row in api_a.get(theirs).json()["results"]}
    with tenant_context(tenant_b.org.id):
        assert not ours & {str(pk) for pk in Memory.objects.filter(org=tenant_b.org).values_list("pk", flat=True)}


def test_a_memory_s_history_pages_by_version_while_it_changes(tenant_a, api_a):
    url = f"/api/v1/memories/{tenant_a.memory.pk}"
    for i in range(7):
        version = api_a.get(url).json()["version"]
        assert api_a.patch(url, {"confidence": 0.5 + i / 100}, HTTP_IF_MATCH=f'"{version}"').status_code == 200
    before = [row["id"] for row in api_a.get(f"{url}/history").json()["results"]]
    assert len(before) >= 8

    def changed():
        version = api_a.get(url).json()["version"]
        api_a.patch(url, {"confidence": 0.9}, HTTP_IF_MATCH=f'"{version}"')

    seen, following = walk(api_a, f"{url}/history?limit=3", changed)
    assert_each_once(seen, set(before))
    assert seen[:len(before)] == before  # the first first, then what was written during the walk
    assert "cursor" in error(api_a.get(f"{url}/history", {"cursor": "nope"}), 400)["fields"]
