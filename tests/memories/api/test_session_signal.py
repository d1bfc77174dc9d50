"""A hybrid search also ranks by meaning the other memories of the sessions its best results
belong to (memories.retrieval.sessions): a session is one namespace's memories of one event
time, as a conversation's sitting is written."""

import pytest

from tests.knobs import with_search_knobs

pytestmark = pytest.mark.django_db

FIRST, SECOND = "2023-05-08T13:56:00Z", "2023-06-27T10:00:00Z"
SITTINGS = [
    (FIRST, "Caroline: I went to the LGBTQ support group yesterday and it was so powerful"),
    (FIRST, "Melanie: That sounds amazing, how did it make you feel?"),
    (FIRST, "Caroline: I felt accepted, and it gave me the courage to start my counseling degree"),
    (FIRST, "Melanie: I am so proud of you, you will help so many people"),
    (SECOND, "Melanie: We took the kids camping in the mountains last weekend"),
    (SECOND, "Caroline: The stars must have been incredible up there"),
]


def store(api, namespace: str, sittings, *, timed: bool = True) -> list[str]:
    ids = []
    for when, content in sittings:
        body = {"content": content, "namespace": namespace.split("/"), **({"event_time": when} if timed else {})}
        response = api.post("/api/v1/memories", body)
        assert response.status_code == 201, response.content
        ids.append(response.json()["memory"]["id"])
    return ids


def search(api, query: str, namespace: str, **body) -> dict:
    response = api.post("/api/v1/search", {"query": query, "filters": {"namespace": namespace}, **body})
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def one_session(settings):
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, SESSION_SEEDS=1)


def test_the_memories_of_the_best_results_session_are_ranked_as_a_signal(api_a, one_session):
    ids = store(api_a, "conversations/1", SITTINGS)
    body = search(api_a, "What support group did Caroline go to?", "conversations/1", limit=10)
    assert "session" in body["understood"]["signals"]
    in_session = {result["memory"]["id"] for result in body["results"] if "session" in result["signals"]}
    # The best result's sitting, all of it (the answer's reply two turns on included), and no other.
    assert in_session == set(ids[:4])
    ranked = {result["memory"]["id"]: result["signals"]["session"] for result in body["results"]
              if "session" in result["signals"]}
    assert all(signal["rank"] >= 1 and 0 < signal["similarity"] <= 1 for signal in ranked.values())


def test_memories_without_an_event_time_make_no_session(api_a, one_session):
    store(api_a, "conversations/1", SITTINGS, timed=False)
    body = search(api_a, "What support group did Caroline go to?", "conversations/1", limit=10)
    assert "session" not in body["understood"]["signals"]


def test_other_modes_a_zero_weight_and_zero_sessions_never_run_it(api_a, settings):
    store(api_a, "conversations/1", SITTINGS)
    for mode in ("vector", "fulltext"):
        body = search(api_a, "What support group did Caroline go to?", "conversations/1", mode=mode)
        assert "session" not in body["understood"]["signals"]
    knobs = settings.MEMORY_PLATFORM
    settings.MEMORY_PLATFORM = with_search_knobs(knobs, RRF_WEIGHTS={**knobs["SEARCH"]["RRF_WEIGHTS"], "session": 0.0})
    assert "session" not in search(api_a, "What support group did Caroline go to?",
                                   "conversations/1")["understood"]["signals"]
    settings.MEMORY_PLATFORM = with_search_knobs(knobs, SESSION_SEEDS=0)
    assert "session" not in search(api_a, "What support group did Caroline go to?",
                                   "conversations/1")["understood"]["signals"]


def test_a_session_stays_within_the_namespace_and_the_tenant(api_a, api_b, one_session):
    store(api_a, "conversations/1", SITTINGS)
    # The same event time in another namespace and in another tenant: not the same session.
    elsewhere = store(api_a, "conversations/2", [(FIRST, "Caroline: The support group meets again on Friday")])
    other_tenant = store(api_b, "conversations/1", [(FIRST, "Caroline: I lead the support group now")])
    body = search(api_a, "What support group did Caroline go to?", "conversations/1", limit=20)
    assert "session" in body["understood"]["signals"]
    returned = {result["memory"]["id"] for result in body["results"]}
    assert returned and not returned & {*elsewhere, *other_tenant}
