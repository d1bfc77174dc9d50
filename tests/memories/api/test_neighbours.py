"""A hybrid search brings the memories written just before and after its best results, in
their namespace (memories.retrieval.neighbours): the turn that answers a question often
follows the turn that matches it."""

import pytest

from memories.models import Memory
from tenants.context import tenant_context
from tests import factories
from tests.knobs import with_search_knobs
from tests.memories.api.conversation import store

pytestmark = pytest.mark.django_db

CONVERSATION = [
    "Caroline: I finally went to the adoption agency yesterday",
    "Melanie: That is wonderful news, what did you bring home?",
    "Caroline: A golden retriever puppy called Oscar",
    "Melanie: My kids started piano lessons this spring",
    "Caroline: I am painting a sunset over the lake for the gallery",
]


def namespace(result: dict) -> str:
    return "/".join(result["memory"]["namespace"])


def search(api, query: str, namespace: str | None = None, **body) -> list[dict]:
    filters = {"filters": {"namespace": namespace}} if namespace else {}
    response = api.post("/api/v1/search", {"query": query, **filters, **body})
    assert response.status_code == 200, response.content
    return response.json()["results"]


@pytest.fixture
def one_seed(settings):
    """Neighbours of the best result only: with a handful of memories every one is among a
    search's best ten, and results are never each other's neighbours."""
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, NEIGHBOUR_SEEDS=1)


def test_the_turn_after_a_match_comes_with_it_and_says_where_from(api_a, one_seed):
    ids = store(api_a, "conversations/1", CONVERSATION)
    results = search(api_a, "adoption agency", namespace="conversations/1", limit=3)
    by_id = {result["memory"]["id"]: result for result in results}
    assert results[0]["memory"]["id"] == ids[0]
    assert ids[1] in by_id  # the next turn
    assert by_id[ids[1]]["signals"]["neighbours"] == {"rank": 2, "from": ids[0], "side": "next"}


def test_without_seeds_there_is_no_neighbours_signal(api_a, settings):
    store(api_a, "conversations/1", CONVERSATION)
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, NEIGHBOUR_SEEDS=0)
    results = search(api_a, "adoption agency", namespace="conversations/1", limit=5)
    assert results and not any("neighbours" in result["signals"] for result in results)


def test_other_modes_and_store_search_bring_no_neighbours(api_a):
    store(api_a, "conversations/1", CONVERSATION)
    for mode in ("fulltext", "vector"):
        results = search(api_a, "adoption agency", namespace="conversations/1", limit=5, mode=mode)
        assert not any("neighbours" in result["signals"] for result in results), mode


def test_a_neighbour_is_never_in_another_namespace_nor_deleted(api_a, tenant_a, one_seed):
    # Alice's and Bob's turns written alternately: each one's neighbours are their own.
    alice, bob = [], []
    for turn in range(3):
        alice += store(api_a, "users/alice", [f"Alice: the adoption agency visit, part {turn}"])
        bob += store(api_a, "users/bob", [f"Bob: my adoption agency story, chapter {turn}"])
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(pk=alice[1]).update(deleted_at="2026-01-01T00:00:00Z")
    results = search(api_a, "adoption agency", limit=20)
    namespace_of = {result["memory"]["id"]: namespace(result) for result in results}
    neighbours = {result["memory"]["id"]: result["signals"]["neighbours"] for result in results
                  if "neighbours" in result["signals"]}
    assert neighbours  # the best result brings its neighbours...
    for memory_id, signal in neighbours.items():
        assert namespace_of[memory_id] == namespace_of[signal["from"]]  # ...from its own namespace only
    assert alice[1] not in namespace_of  # deleted: neither a result nor a neighbour


def test_a_key_limited_to_a_namespace_gets_no_neighbour_outside_it(api_a, tenant_a, api_client_for):
    store(api_a, "users/alice", ["Alice: the adoption agency called back"])
    store(api_a, "users/bob", ["Bob: I adopted a cat from the agency"])
    store(api_a, "users/alice", ["Alice: we pick the puppy up on Friday"])
    _, key = factories.api_key(agent=tenant_a.agent, namespaces=["users/alice"])
    from rest_framework.test import APIClient

    limited = APIClient()
    limited.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    results = search(limited, "adoption agency", limit=10)
    assert results and {namespace(result) for result in results} == {"users/alice"}


ADOPTION = [
    "Caroline: I chose an adoption agency last week",
    "Melanie: Wow, that agency looks great! What made you pick it?",
    "Caroline: They help LGBTQ+ folks adopt, and that inclusivity spoke to me",
    "Melanie: I love painting sunsets with my kids on weekends",
]


def test_a_question_among_the_best_results_lifts_its_reply_though_that_is_one_too(api_a):
    """With four memories every one is a seed, and seeds are not each other's neighbours; but a
    seed that asks brings the turn after it, its answer, ranked just below it."""
    ids = store(api_a, "conversations/1", ADOPTION)
    results = search(api_a, "Why did Caroline pick the adoption agency?", namespace="conversations/1", limit=4)
    by_id = {result["memory"]["id"]: result for result in results}
    assert set(by_id) == set(ids)
    lifted = by_id[ids[2]]["signals"]["neighbours"]
    assert {key: lifted[key] for key in ("from", "side", "answers")} == {"from": ids[1], "side": "next",
                                                                        "answers": True}
    # Seeds that ask nothing bring no seed: neither the question nor the last turn is lifted.
    assert "neighbours" not in by_id[ids[1]]["signals"]
    assert "neighbours" not in by_id[ids[3]]["signals"]


def test_a_question_about_one_person_lifts_only_a_reply_in_their_words(api_a):
    """Asked about Melanie, the question she put to Caroline does not make Caroline's answer
    Melanie's: the reply is not lifted."""
    ids = store(api_a, "conversations/1", ADOPTION)
    body = api_a.post("/api/v1/search", {"query": "What did Melanie ask about the adoption agency?",
                                         "filters": {"namespace": "conversations/1"}, "limit": 4}).json()
    assert body["understood"]["speaker"]["name"] == "Melanie"
    reply = next(result for result in body["results"] if result["memory"]["id"] == ids[2])
    assert "answers" not in reply["signals"].get("neighbours", {})


def test_a_reply_is_never_lifted_from_another_namespace(api_a):
    """The question is the last turn of one user's namespace; the next memory written is
    another user's answer to something else. It stays out of the first user's search."""
    question = store(api_a, "users/alice", ["Alice: Which adoption agency did you pick?"])
    store(api_a, "users/bob", ["Bob: We picked the agency downtown, they were kind"])
    results = search(api_a, "Which adoption agency did Alice pick?", namespace="users/alice", limit=10)
    assert [result["memory"]["id"] for result in results] == question
