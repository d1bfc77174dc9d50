"""A search's parts that need no server: what it reads of its query, which signals apply to
which request, and the loop that runs them with one fusion per stage (memories.retrieval.pipeline)."""

from datetime import datetime, timedelta, timezone

import pytest

from memories.retrieval import pipeline, ranking
from memories.retrieval.filters import SearchFilters
from memories.retrieval.pipeline import VECTOR_ONLY, QueryReading, Search, Signal
from memories.retrieval.speakers import Speaker
from memories.understanding.when import Period
from memory_platform.config import config

JULY = Period(datetime(2023, 7, 1, tzinfo=timezone.utc), datetime(2023, 8, 1, tzinfo=timezone.utc), "July 2023")


def test_a_query_is_read_once_into_its_words_intent_period_and_speaker():
    melanie = Speaker(name="Melanie", entity_ids=("e1",))
    reading = QueryReading.of("Why did Melanie's sister paint in July 2023?", period=JULY, speaker=melanie)
    # Full text and meaning match the rest of the query: the name is in all of her own words.
    assert "Melanie" not in reading.words and reading.terms == ("why", "did", "sister", "paint", "in", "july", "2023")
    assert (reading.intent, reading.period, reading.speaker) == ("why", JULY, melanie)
    plain = QueryReading.of("what does the user drink?")
    assert plain.words == "what does the user drink?" and plain.terms == ("what", "does", "the", "user", "drink")
    assert (plain.intent, plain.period, plain.speaker) == ("what", None, None)


def test_only_a_hybrid_search_without_a_threshold_reaches_beyond_its_query():
    assert pipeline.widens("hybrid", None)
    assert not pipeline.widens("hybrid", 0.7) and not pipeline.widens("vector", None)
    assert not pipeline.widens("fulltext", None) and not pipeline.widens(VECTOR_ONLY, None)


def search(mode="hybrid", *, threshold=None, expand=0, reading=None, embedding=(0.1,)) -> Search:
    return Search(org_id="org", reading=reading or QueryReading.of("what does the user drink?"),
                  filters=SearchFilters(), limit=10, mode=mode, expand=expand, threshold=threshold, k=50, exact=True,
                  small=False, model="a model", embedding=embedding)


def applying(search: Search) -> list[str]:
    return [f"{signal.name} ({signal.search.__name__})" for signal in pipeline.SIGNALS if signal.applies(search)]


def test_a_hybrid_search_runs_its_query_signals_and_those_its_reading_calls_for():
    assert applying(search()) == ["fulltext (words)", "vector (meaning)", "session (sessions_of_results)",
                                  "neighbours (written_nearby)"]
    why_in_july = QueryReading.of("Why did the deploy fail in July 2023?", period=JULY)
    assert applying(search(reading=why_in_july)) == [
        "fulltext (words)", "vector (meaning)", "time (period)", "time_vector (period_by_meaning)",
        "graph (relationships)", "session (sessions_of_results)", "neighbours (written_nearby)"]
    # A threshold keeps it to the query's own signals (and expansion, when asked for).
    assert applying(search(threshold=0.7, reading=why_in_july)) == ["fulltext (words)", "vector (meaning)"]
    assert applying(search(threshold=0.7, expand=1)) == [
        "fulltext (words)", "vector (meaning)", "graph (relationships)"]
    # A query that cannot be embedded is answered by the rest.
    assert applying(search(embedding=None)) == ["fulltext (words)", "neighbours (written_nearby)"]
    assert applying(search(embedding=None, reading=why_in_july)) == [
        "fulltext (words)", "time (period)", "graph (relationships)", "neighbours (written_nearby)"]


def test_a_vector_search_falls_back_on_full_text_and_fills_up_with_it_unless_asked_not_to():
    short, full = search("vector"), search("vector")
    short.hits["vector"] = [ranking.Hit(n, 0.9, n) for n in range(3)]
    full.hits["vector"] = [ranking.Hit(n, 0.9, n) for n in range(10)]
    assert applying(short) == ["vector (meaning)", "fulltext (words_for_meaning)"]  # spec §1: fills up
    assert applying(full) == ["vector (meaning)"]
    thresholded = search("vector", threshold=0.7)
    thresholded.hits["vector"] = []
    assert applying(thresholded) == ["vector (meaning)"]
    only = search(VECTOR_ONLY)
    only.hits["vector"] = []
    assert applying(only) == ["vector (meaning)"]  # the store's search: never filled
    assert applying(search(VECTOR_ONLY, embedding=None)) == ["fulltext (words_for_meaning)"]
    assert applying(search("vector", embedding=None)) == ["fulltext (words_for_meaning)"]
    assert applying(search("fulltext", embedding=None)) == ["fulltext (words)"]


def found(*ids) -> list[ranking.Hit]:
    return [ranking.Hit(memory_id, 0.0, rank) for rank, memory_id in enumerate(ids, start=1)]


def always(search: Search) -> bool:
    return True


def never(search: Search) -> bool:
    return False


def test_signals_run_in_order_and_each_seeded_one_starts_from_the_fusion_before_it():
    weights, k = config().search.rrf_weights, config().search.rrf_k
    given: dict = {}

    def seeded(name, *ids):
        def run(search: Search) -> list[ranking.Hit]:
            given[name] = dict(search.fused)
            return found(*ids)
        return run

    table = (Signal("vector", False, always, lambda search: found("a", "b")),
             Signal("fulltext", False, always, lambda search: found("b", "c")),
             Signal("graph", True, always, seeded("graph", "d")),
             Signal("time", False, never, lambda search: found("e")),
             Signal("neighbours", True, always, seeded("neighbours", "a", "e")))
    ran = search()
    pipeline.run_signals(ran, table)
    assert list(ran.hits) == ["vector", "fulltext", "graph", "neighbours"]
    query = {"vector": found("a", "b"), "fulltext": found("b", "c")}
    assert given["graph"] == ranking.reciprocal_rank_fusion(query, weights, k)
    assert given["neighbours"] == ranking.reciprocal_rank_fusion({**query, "graph": found("d")}, weights, k)
    assert ran.fused == pytest.approx(ranking.reciprocal_rank_fusion(ran.hits, weights, k))


def test_a_seeded_signal_has_nothing_to_start_from_when_nothing_was_found():
    table = (Signal("vector", False, always, lambda search: []),
             Signal("neighbours", True, always, lambda search: found("a")))
    ran = search()
    pipeline.run_signals(ran, table)
    assert ran.hits == {"vector": []} and ran.fused == {}


def test_fusion_goes_on_from_the_fusion_of_earlier_signals():
    weights = {"vector": 1.0, "fulltext": 2.0, "neighbours": 0.5}
    first = ranking.reciprocal_rank_fusion({"vector": found("a", "b")}, weights, 60)
    later = ranking.reciprocal_rank_fusion({"fulltext": found("b", "c"), "neighbours": found("c")}, weights, 60, first)
    assert later == ranking.reciprocal_rank_fusion(
        {"vector": found("a", "b"), "fulltext": found("b", "c"), "neighbours": found("c")}, weights, 60)
    assert first == {"a": 1 / 61, "b": 1 / 62}  # the earlier fusion is left as it was


def test_two_memories_alike_but_for_when_they_were_written_keep_one_order_whatever_the_clock():
    # Their final scores differ by less than the answer's rounding (six decimals): ranked by the
    # rounded score, their order followed the rounding's boundary as the clock moved from one
    # search to the next (a search test failed now and then on it); by the score itself the
    # newer stays first.
    written = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)
    older = ranking.RankingRow("0000", 0.0, 0.8, written, 0.1, None, 0, None)  # first by id on a tie
    newer = ranking.RankingRow("ffff", 0.0, 0.8, written + timedelta(milliseconds=30), 0.1, None, 0, None)
    fused = {"0000": 0.015385, "ffff": 0.015385, "top": 0.032787}
    top = ranking.RankingRow("top", 0.0, 0.8, written, 0.1, None, 0, None)
    orders = set()
    for seconds in range(0, 600):
        now = written + timedelta(seconds=1, milliseconds=seconds * 37)
        results = ranking.rank({"0000": older, "ffff": newer, "top": top}, fused, {}, now)
        orders.add(tuple(result.memory.pk for result in results))
        assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    assert orders == {("top", "ffff", "0000")}
