"""A search says what it read from the query (its intent, the period it names) and which
signals ran; a "why" question follows the causal chain of its best results."""

import pytest

from tests.knobs import with_search_knobs

pytestmark = pytest.mark.django_db


def write(api, content, **fields):
    response = api.post("/api/v1/memories", {"content": content, **fields})
    assert response.status_code == 201, response.content
    return response.json()["memory"]["id"]


def test_a_why_question_follows_causal_edges_from_its_best_results(api_a, settings):
    failed = write(api_a, "The Friday deploy failed")
    cause = write(api_a, "A long lock on the orders table blocked the migration")
    response = api_a.post(f"/api/v1/memories/{cause}/relationships", {"target_id": failed, "relation_type": "causal"})
    assert response.status_code == 201, response.content
    for other in ["The Friday deploy was postponed once", "The Friday deploy checklist", "Notes on the Friday deploy"]:
        write(api_a, other)
    # The best 4 are the deploy's memories; the chain reaches the cause from them. (Weighed
    # heavily here, so that it surely shows among 4 in so small a tenant.)
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, RRF_WEIGHTS={
        **settings.MEMORY_PLATFORM["SEARCH"]["RRF_WEIGHTS"], "graph": 5.0})
    body = api_a.post("/api/v1/search", {"query": "Why did the Friday deploy fail?", "limit": 4}).json()
    assert body["understood"]["intent"] == "why" and "graph" in body["understood"]["signals"]
    signals = {result["memory"]["id"]: result["signals"] for result in body["results"]}
    assert signals[cause]["graph"] == {"rank": 1, "from": failed, "relation_type": "causal", "hops": 1, "seed": failed}
    # Asked another way, the same words do not walk the chain.
    body = api_a.post("/api/v1/search", {"query": "the Friday deploy", "limit": 4}).json()
    assert body["understood"]["intent"] == "general" and "graph" not in body["understood"]["signals"]


def test_a_why_question_follows_the_chain_two_causes_back(api_a, settings):
    """The outage was caused by a full disk, which a runaway log caused: asked why the
    outage happened, the search reaches the log through the disk, though the log's words share
    nothing with the question; the flag that caused the log, a third step back, is not taken."""
    outage = write(api_a, "The checkout outage on Monday")
    for other in ["The checkout page was slow on Monday", "Monday checkout release notes"]:
        write(api_a, other)
    disk = write(api_a, "The database server ran out of disk space")
    log = write(api_a, "A debug flag left on made the audit logger write gigabytes an hour")
    flag = write(api_a, "Someone enabled the debug flag while chasing a bug in March")
    for cause, effect in [(disk, outage), (log, disk), (flag, log)]:
        response = api_a.post(f"/api/v1/memories/{cause}/relationships", {"target_id": effect, "relation_type": "causal"})
        assert response.status_code == 201, response.content
    # Weighed heavily, as above: whatever the chain reaches ranks above what the words found.
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, RRF_WEIGHTS={
        **settings.MEMORY_PLATFORM["SEARCH"]["RRF_WEIGHTS"], "graph": 5.0})
    body = api_a.post("/api/v1/search", {"query": "Why was there a checkout outage on Monday?", "limit": 3}).json()
    graph = {result["memory"]["id"]: result["signals"].get("graph") for result in body["results"]}
    assert graph[disk] == {"rank": 1, "from": outage, "relation_type": "causal", "hops": 1, "seed": outage}
    assert graph[log] == {"rank": 2, "from": disk, "relation_type": "causal", "hops": 2, "seed": outage}
    assert flag not in graph and outage in graph


def test_a_when_question_says_the_period_it_read(api_a):
    write(api_a, "Alice cooked paella at the beach house", event_time="2023-07-20T19:00:00Z")
    body = api_a.post("/api/v1/search", {"query": "When did Alice cook paella in July 2023?"}).json()
    assert body["understood"]["intent"] == "when"
    assert body["understood"]["period"] == {"phrase": "July 2023", "start": "2023-07-01T00:00:00+00:00",
                                            "end": "2023-08-01T00:00:00+00:00", "months": []}
    # The memory has an event time, so it is a session of its own (memories.retrieval.sessions).
    assert set(body["understood"]["signals"]) == {"vector", "fulltext", "time", "time_vector", "session"}
