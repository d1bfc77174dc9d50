"""When it happened, not when it was written: a search can filter on a memory's event time,
and a query that names a period ranks the memories of that period higher (the time signal,
memories.retrieval.timeframe)."""

import pytest

from tests.knobs import with_search_knobs

pytestmark = pytest.mark.django_db

DIARY = {  # written in one go today; each says when it happened
    "mushroom": ("Alice cooked a mushroom risotto for her sister", "2023-05-12T19:00:00Z"),
    "paella": ("Alice cooked paella at the beach house", "2023-07-20T19:00:00Z"),
    "dinner": ("Alice cooked dinner and baked bread with her sister on Sunday", "2023-09-03T19:00:00Z"),
    "bread": ("Alice baked bread", None),
}


@pytest.fixture
def diary(api_a):
    ids = {}
    for name, (content, when) in DIARY.items():
        response = api_a.post("/api/v1/memories", {"content": content, "memory_type": "episodic", "event_time": when,
                                                   "namespace": ["users", "alice"]})
        assert response.status_code == 201, response.content
        ids[name] = response.json()["memory"]["id"]
    return ids


def search(api, query, **filters):
    response = api.post("/api/v1/search", {"query": query, "filters": {"namespace": "users/alice", **filters}})
    assert response.status_code == 200, response.content
    return response.json()["results"]


def test_a_query_naming_a_month_ranks_that_months_memory_first(api_a, diary):
    # Without the period the September memory matches best ("cooked dinner ... sister").
    assert search(api_a, "What did Alice cook for dinner with her sister?")[0]["memory"]["id"] == diary["dinner"]
    results = search(api_a, "What did Alice cook for dinner with her sister in May 2023?")
    assert results[0]["memory"]["id"] == diary["mushroom"]
    assert results[0]["signals"]["time"]["period"] == "May 2023"
    # The others are still there, found by the other signals.
    assert {diary["dinner"], diary["paella"]} <= {result["memory"]["id"] for result in results}
    assert all("time" not in result["signals"] for result in results[1:])


def test_a_month_of_any_year(api_a, diary):
    results = search(api_a, "Where did Alice cook in July?")
    assert results[0]["memory"]["id"] == diary["paella"]
    assert results[0]["signals"]["time"] == {"rank": 1, "bm25": results[0]["signals"]["time"]["bm25"],
                                              "period": "in July"}


def test_event_time_filters_keep_what_happened_in_the_period(api_a, diary):
    found = search(api_a, "Alice cooked", event_after="2023-06-01T00:00:00Z", event_before="2023-08-01T00:00:00Z")
    assert [result["memory"]["id"] for result in found] == [diary["paella"]]
    found = search(api_a, "bread", event_after="2023-01-01T00:00:00Z")
    assert {result["memory"]["id"] for result in found} == {diary["mushroom"], diary["paella"], diary["dinner"]}
    assert found[0]["memory"]["id"] == diary["dinner"]  # "Alice baked bread" has no event time: outside


def test_a_period_that_ends_before_it_starts_is_refused(api_a, diary):
    response = api_a.post("/api/v1/search", {"query": "bread", "filters": {
        "event_after": "2023-08-01T00:00:00Z", "event_before": "2023-06-01T00:00:00Z"}})
    assert response.status_code == 400
    assert "event_before" in str(response.json())


def test_what_a_period_held_is_found_where_it_was_told_soon_after(api_a):
    """"Last week we ...", said on 3 August, is about the week before the 3rd: the time signal
    reads the period's memories up to a week past its end (timeframe.REPORT_LAG), not further,
    and a caller's own event-time filter stays exact."""
    told = {}
    for name, content, when in (
            ("told", "Last week John took his kids to the military memorial", "2023-08-03T18:00:00Z"),
            ("later", "John took his kids to the military memorial again", "2023-08-12T18:00:00Z"),
            ("before", "John took his kids to the military memorial for the first time", "2023-06-02T18:00:00Z")):
        response = api_a.post("/api/v1/memories", {"content": content, "memory_type": "episodic", "event_time": when,
                                                   "namespace": ["users", "john"]})
        assert response.status_code == 201, response.content
        told[response.json()["memory"]["id"]] = name
    response = api_a.post("/api/v1/search", {"query": "Where did John take his kids the week before August 3, 2023?",
                                             "filters": {"namespace": "users/john"}})
    assert response.status_code == 200, response.content
    timed = [told[r["memory"]["id"]] for r in response.json()["results"] if "time" in r["signals"]]
    assert timed == ["told"]
    response = api_a.post("/api/v1/search", {"query": "Where did John take his kids the week before August 3, 2023?",
                                             "filters": {"namespace": "users/john",
                                                         "event_before": "2023-08-01T00:00:00Z"}})
    assert [told[r["memory"]["id"]] for r in response.json()["results"]] == ["before"]


def test_the_periods_memories_are_also_ranked_by_meaning(api_a, settings):
    """What happened in a period is mostly told in other words than a question about it uses:
    the turn answering this one holds none of its words. The time_vector signal ranks the
    period's memories (and those told soon after) by meaning; the words' time signal finds
    none of them, and the vector signal ranks the whole namespace, where the memories sharing
    the question's words come first. Another namespace's memory of the period is not read."""
    ids = {}
    for name, content, when in (
            ("bowling", "By the way, yesterday I went bowling and got two strikes!", "2022-03-17T19:00:00Z"),
            ("brakes", "The garage fixed the brakes on my car", "2022-03-16T10:00:00Z"),
            ("chess", "James is pursuing a recreational chess league this winter", "2022-01-10T18:00:00Z"),
            ("weekends", "James keeps recreational activities for the weekends", None),
            ("elsewhere", "Yesterday I went bowling with my brother", "2022-03-17T12:00:00Z")):
        namespace = ["users", "bob"] if name == "elsewhere" else ["users", "james"]
        response = api_a.post("/api/v1/memories", {"content": content, "memory_type": "episodic", "event_time": when,
                                                   "namespace": namespace})
        assert response.status_code == 201, response.content
        ids[response.json()["memory"]["id"]] = name

    def ranked():
        response = api_a.post("/api/v1/search", {"query": "Which recreational activity was James pursuing on "
                                                          "March 16, 2022?", "filters": {"namespace": "users/james"}})
        assert response.status_code == 200, response.content
        return response.json()["results"]

    results = ranked()
    order = [ids[result["memory"]["id"]] for result in results]
    assert order.index("bowling") < order.index("weekends")  # which holds "James" and "recreational"
    by_meaning = {ids[result["memory"]["id"]]: result["signals"]["time_vector"] for result in results
                  if "time_vector" in result["signals"]}
    assert set(by_meaning) == {"bowling", "brakes"}  # the period's, in the namespace searched
    assert by_meaning["bowling"]["rank"] == 1 and by_meaning["bowling"]["period"] == "March 16, 2022"
    assert not any("time" in result["signals"] for result in results)  # no word of the query in the period

    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, RRF_WEIGHTS={
        **settings.MEMORY_PLATFORM["SEARCH"]["RRF_WEIGHTS"], "time_vector": 0.0})
    without = [ids[result["memory"]["id"]] for result in ranked()]
    assert without.index("bowling") > without.index("weekends")
