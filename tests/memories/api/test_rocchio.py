"""A question asking for an inference ("Would ... likely ...?") or for the members of a class
("What kind of ...?") also searches by meaning from what its best results mean together
(memories.retrieval.rocchio): its answer is not said in its words."""

import pytest

from tests.knobs import with_search_knobs
from tests.memories.api.conversation import store

pytestmark = pytest.mark.django_db

CONVERSATION = [
    "Caroline: I spent the whole weekend painting a sunset over the lake",
    "Caroline: My watercolours finally arrived, I tried them on a portrait of my dog",
    "Caroline: I sketch the people on the train every morning",
    "Melanie: My kids started piano lessons this spring",
    "Caroline: The quarterly tax forms are due next week",
]



def search(api, query: str, namespace: str, **body) -> dict:
    response = api.post("/api/v1/search", {"query": query, "filters": {"namespace": namespace}, **body})
    assert response.status_code == 200, response.content
    return response.json()


def test_an_inference_question_searches_again_from_the_meaning_of_its_best_results(api_a):
    ids = store(api_a, "conversations/1", CONVERSATION)
    body = search(api_a, "Would Caroline likely enjoy an art museum?", "conversations/1", limit=5)
    assert "rocchio" in body["understood"]["signals"]
    found = {result["memory"]["id"]: result for result in body["results"]}
    # What she does with paint, brushes and pencils is what the moved query is near.
    assert {ids[0], ids[1], ids[2]} <= found.keys()
    assert all("rank" in found[memory_id]["signals"]["rocchio"] for memory_id in ids[:3])


def test_a_question_asking_for_the_members_of_a_class_does_too(api_a):
    ids = store(api_a, "conversations/1", CONVERSATION)
    body = search(api_a, "What kind of art does Caroline make?", "conversations/1", limit=5)
    assert "rocchio" in body["understood"]["signals"]
    assert {ids[0], ids[1], ids[2]} <= {result["memory"]["id"] for result in body["results"]}


def test_a_question_whose_answer_is_said_does_not(api_a):
    store(api_a, "conversations/1", CONVERSATION)
    body = search(api_a, "What did Caroline paint over the weekend?", "conversations/1", limit=5)
    assert "rocchio" not in body["understood"]["signals"]
    assert not any("rocchio" in result["signals"] for result in body["results"])


def test_other_modes_and_a_zero_weight_never_run_it(api_a, settings):
    store(api_a, "conversations/1", CONVERSATION)
    for mode in ("vector", "fulltext"):
        body = search(api_a, "Would Caroline likely enjoy an art museum?", "conversations/1", mode=mode)
        assert "rocchio" not in body["understood"]["signals"]
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, RRF_WEIGHTS={
        **settings.MEMORY_PLATFORM["SEARCH"]["RRF_WEIGHTS"], "rocchio": 0.0})
    body = search(api_a, "Would Caroline likely enjoy an art museum?", "conversations/1")
    assert "rocchio" not in body["understood"]["signals"]


def test_the_moved_query_stays_within_the_namespace_and_the_tenant(api_a, api_b):
    store(api_a, "conversations/1", CONVERSATION)
    elsewhere = store(api_a, "conversations/2", ["Caroline: I paint murals of sunsets on every wall"])
    other_tenant = store(api_b, "conversations/1", ["Caroline: I paint sunsets in oils every weekend"])
    body = search(api_a, "Would Caroline likely enjoy an art museum?", "conversations/1", limit=20)
    assert "rocchio" in body["understood"]["signals"]
    returned = {result["memory"]["id"] for result in body["results"]}
    assert returned and not returned & {*elsewhere, *other_tenant}
