"""The session tools through the official MCP client, against the served app, as the REST API's
sessions endpoints (the same use cases): open (or find again by external_id), remember_fact's
session_id, list, a session's memories in the order written, close (a closed session takes no
new memory; its consolidation proposes, for review); within the key's reach and the organisation."""

from __future__ import annotations

import uuid

import django_rq
import pytest

from memories.lifecycle import consolidation
from memories.models import Memory
from tenants.context import tenant_context
from tenants.models import Session
from tests import factories
from tests.integrations.mcp.client import data_of, text_of
from tests.integrations.mcp.test_tools import calls
from tests.markers import committing

pytestmark = pytest.mark.slow

ALICE_TURNS = [
    "Alice's daughter Mia turns seven in March",
    "Alice grows tomatoes and basil on her balcony",
    "Alice is training for the Lisbon half marathon in October",
    "Alice prefers trains to planes for trips inside Europe",
]


@pytest.fixture
def consolidation_queue(embedded_servers):
    """The queue a close sends its consolidation to, emptied around the test (no worker here)."""
    queue = django_rq.get_queue(consolidation.QUEUE)
    queue.empty()
    yield queue
    queue.empty()


@pytest.fixture
def key_a(tenant_a):
    return factories.api_key(agent=tenant_a.agent)[1]


def memories_of(org) -> int:
    with tenant_context(org.id):
        return Memory.objects.filter(org_id=org.id).count()


@committing
def test_a_conversation_s_session_opened_written_listed_and_closed(tenant_a, key_a, served, consolidation_queue):
    opened, again = (data_of(result) for result in calls(
        served.url, key_a,
        ("open_session", {"external_id": "thread-81", "namespace": ["users", "alice"],
                          "metadata": {"channel": "chat"}}),
        ("open_session", {"external_id": "thread-81"}),
    ))
    session = opened["session"]
    assert opened["created"] and not again["created"] and again["session"]["id"] == session["id"]
    assert session["status"] == "open" and session["namespace"] == ["users", "alice"]
    assert session["metadata"] == {"channel": "chat"} and session["memory_count"] == 0

    written = [data_of(result)["memory"]["id"] for result in calls(
        served.url, key_a, *[("remember_fact", {"content": turn, "namespace": "users/alice",
                                                "session_id": session["id"]}) for turn in ALICE_TURNS])]
    elsewhere = data_of(calls(served.url, key_a, ("remember_fact", {"content": "The office moved to Porto"}))[0])
    first_page, second_page, listed, by_external_id, open_ones, under_bob = (data_of(result) for result in calls(
        served.url, key_a,
        ("list_session_memories", {"session_id": session["id"], "limit": 3}),
        ("list_session_memories", {"session_id": session["id"], "limit": 3, "offset": 3}),
        ("list_sessions", {}),
        ("list_sessions", {"external_id": "thread-81"}),
        ("list_sessions", {"status": "open", "namespace": "users/alice"}),
        ("list_sessions", {"namespace": ["users", "bob"]}),
    ))
    assert [row["id"] for row in first_page["memories"] + second_page["memories"]] == written
    assert first_page["next_offset"] == 3 and second_page["next_offset"] is None
    assert elsewhere["memory"]["id"] not in written
    # Newest first: this one, then the fixture's.
    assert [row["id"] for row in listed["sessions"]] == [session["id"], str(tenant_a.session.pk)]
    assert listed["sessions"][0]["memory_count"] == len(ALICE_TURNS) and listed["next_offset"] is None
    assert [row["id"] for row in by_external_id["sessions"]] == [session["id"]]
    assert [row["id"] for row in open_ones["sessions"]] == [session["id"]] and under_bob["sessions"] == []

    closed, closed_twice, too_late, still_open = calls(
        served.url, key_a,
        ("close_session", {"session_id": session["id"]}),
        ("close_session", {"session_id": session["id"]}),
        ("remember_fact", {"content": "Alice said one more thing", "session_id": session["id"]}),
        ("list_sessions", {"status": "open"}),
    )
    assert data_of(closed)["session"]["status"] == "closed" and data_of(closed)["session"]["ended_at"]
    assert consolidation_queue.count == 1  # its consolidation, for a worker
    assert closed_twice.is_error and "session_closed: " in text_of(closed_twice)
    assert too_late.is_error and "session_closed: " in text_of(too_late) and "session_id" in text_of(too_late)
    assert [row["id"] for row in data_of(still_open)["sessions"]] == [str(tenant_a.session.pk)]

    consolidation.consolidate_session(org_id=tenant_a.org.id, session_id=session["id"])  # what the worker runs
    [shown] = data_of(calls(served.url, key_a, ("list_sessions", {"external_id": "thread-81"}))[0])["sessions"]
    assert shown["consolidated_at"] and shown["consolidation"] is not None
    after, _ = calls(served.url, key_a, ("list_session_memories", {"session_id": session["id"]}),
                     ("list_sessions", {}))
    summaries = [row for row in data_of(after)["memories"] if row["status"] == "pending_review"]
    assert len(summaries) == shown["consolidation"]["summaries"] == 1  # waiting for review, listed with the rest


@committing
def test_a_session_closed_without_consolidation_queues_nothing(tenant_a, key_a, served, consolidation_queue):
    session = data_of(calls(served.url, key_a, ("open_session", {}))[0])["session"]
    assert session["namespace"] == [] and session["external_id"] == ""
    closed = data_of(calls(served.url, key_a, ("close_session", {"session_id": session["id"],
                                                                  "consolidate": False}))[0])["session"]
    assert closed["status"] == "closed" and closed["consolidated_at"] == closed["ended_at"]
    assert consolidation_queue.count == 0


@committing
def test_bad_session_calls_are_clear_tool_errors_and_write_nothing(tenant_a, key_a, served):
    before = memories_of(tenant_a.org)
    results = calls(
        served.url, key_a,
        ("open_session", {"namespace": "users//alice"}),
        ("open_session", {"external_id": ""}),
        ("open_session", {"metadata": "not an object"}),
        ("list_sessions", {"status": "paused"}),
        ("list_sessions", {"limit": 0}),
        ("list_sessions", {"offset": -1}),
        ("list_session_memories", {"session_id": "not-an-id"}),
        ("list_session_memories", {"session_id": str(uuid.uuid4())}),
        ("close_session", {"session_id": str(uuid.uuid4())}),
        ("remember_fact", {"content": "Nowhere", "session_id": str(uuid.uuid4())}),
    )
    named = ["namespace", "external_id", "metadata", "status", "limit", "offset", "session_id",
             "not_found: ", "not_found: ", "session_id"]
    for result, name in zip(results, named, strict=True):
        assert result.is_error and name in text_of(result), (name, text_of(result))
    assert "not_found: " in text_of(results[-1])
    with tenant_context(tenant_a.org.id):
        assert Session.objects.filter(org_id=tenant_a.org.id).count() == 1  # the fixture's
    assert memories_of(tenant_a.org) == before


@committing
def test_keys_of_narrower_reach_and_another_organisation(tenant_a, tenant_b, key_a, served, consolidation_queue):
    alice = data_of(calls(served.url, key_a, ("open_session", {"external_id": "shared-id",
                                                               "namespace": ["users", "alice"]}))[0])["session"]
    calls(served.url, key_a, ("remember_fact", {"content": "Alice keeps bees", "namespace": ["users", "alice"],
                                                "session_id": alice["id"]}))
    before = memories_of(tenant_a.org)

    bobs = factories.api_key(agent=tenant_a.agent, namespaces=["users/bob"])[1]
    (into_alice, without_namespace, bob, listed, alice_memories, close_alice,
     write_into_alice) = calls(
        served.url, bobs,
        ("open_session", {"namespace": ["users", "alice"]}),
        ("open_session", {}),
        ("open_session", {"namespace": "users/bob/chat"}),
        ("list_sessions", {}),
        ("list_session_memories", {"session_id": alice["id"]}),
        ("close_session", {"session_id": alice["id"]}),
        ("remember_fact", {"content": "Bob's key wrote into Alice's session", "namespace": ["users", "bob"],
                           "session_id": alice["id"]}),
    )
    for refused in (into_alice, without_namespace):
        assert refused.is_error and "out_of_reach: " in text_of(refused), text_of(refused)
    assert [row["id"] for row in data_of(listed)["sessions"]] == [data_of(bob)["session"]["id"]]
    for missing in (alice_memories, close_alice, write_into_alice):
        assert missing.is_error and "not_found: " in text_of(missing), text_of(missing)

    reader = factories.api_key(agent=tenant_a.agent, read_only=True)[1]
    opened, closed, read = calls(served.url, reader, ("open_session", {}),
                                 ("close_session", {"session_id": alice["id"]}),
                                 ("list_session_memories", {"session_id": alice["id"]}))
    for refused in (opened, closed):
        assert refused.is_error and text_of(refused).endswith("out_of_reach: this API key is read-only")
    assert [row["content"] for row in data_of(read)["memories"]] == ["Alice keeps bees"]

    theirs = factories.api_key(agent=tenant_b.agent)[1]
    listed, by_external_id, memories, closed, planted, own = calls(
        served.url, theirs,
        ("list_sessions", {}),
        ("list_sessions", {"external_id": "shared-id"}),
        ("list_session_memories", {"session_id": alice["id"]}),
        ("close_session", {"session_id": alice["id"]}),
        ("remember_fact", {"content": "Planted", "session_id": alice["id"]}),
        ("open_session", {"external_id": "shared-id"}),  # the same external id is theirs to use
    )
    assert alice["id"] not in [row["id"] for row in data_of(listed)["sessions"]]
    assert data_of(by_external_id)["sessions"] == []
    for missing in (memories, closed, planted):
        assert missing.is_error and "not_found: " in text_of(missing), text_of(missing)
    assert data_of(own)["created"] and data_of(own)["session"]["id"] != alice["id"]

    [still] = data_of(calls(served.url, key_a, ("list_sessions", {"external_id": "shared-id"}))[0])["sessions"]
    assert still["status"] == "open" and still["memory_count"] == 1
    assert memories_of(tenant_a.org) == before and consolidation_queue.count == 0


@committing
def test_sessions_and_a_session_s_memories_page_by_cursor_while_written(tenant_a, key_a, served):
    """next_cursor walks the list by key (docs/adr/0046): sessions opened and deleted between two
    calls neither skip nor repeat one that was there throughout; an offset still works."""
    with tenant_context(tenant_a.org.id):
        rows = [Session.objects.create(org=tenant_a.org, agent=tenant_a.agent, namespace="users/alice")
                for _ in range(12)]
    volatile = rows[::4]
    stable = {str(row.pk) for row in rows if row not in volatile} | {str(tenant_a.session.pk)}
    seen, arguments = [], {"limit": 4}
    while True:
        listed = data_of(calls(served.url, key_a, ("list_sessions", arguments))[0])
        seen += [row["id"] for row in listed["sessions"]]
        with tenant_context(tenant_a.org.id):
            Session.objects.create(org=tenant_a.org, agent=tenant_a.agent, namespace="users/alice")
            if volatile:
                Session.objects.filter(pk=volatile.pop().pk).delete()
        if not listed["next_cursor"]:
            break
        arguments = {"limit": 4, "cursor": listed["next_cursor"]}
    assert len(seen) == len(set(seen)) and stable <= set(seen)

    by_offset, bad, both = calls(served.url, key_a, ("list_sessions", {"limit": 2, "offset": 2}),
                                 ("list_sessions", {"cursor": "nonsense"}),
                                 ("list_sessions", {"cursor": listed["next_cursor"] or "x", "offset": 2}))
    assert data_of(by_offset)["next_offset"] == 4 and data_of(by_offset)["next_cursor"]
    assert bad.is_error and "cursor" in text_of(bad) and both.is_error and "cursor" in text_of(both)

    written = [factories.memory(org=tenant_a.org, agent=tenant_a.agent, content=f"Turn {i}",
                                session=tenant_a.session, embedding=None).pk for i in range(5)]
    first, = calls(served.url, key_a, ("list_session_memories", {"session_id": str(tenant_a.session.pk), "limit": 3}))
    first = data_of(first)
    second, = calls(served.url, key_a, ("list_session_memories", {"session_id": str(tenant_a.session.pk), "limit": 3,
                                                                  "cursor": first["next_cursor"]}))
    shown = [row["id"] for row in first["memories"] + data_of(second)["memories"]]
    assert set(map(str, written)) <= set(shown) and len(shown) == len(set(shown))
    assert first["next_offset"] == 3
