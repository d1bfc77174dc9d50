"""A search, top to bottom: signals -> fusion -> rank -> load (docs/adr/0035).

Each signal ranks memories its own way into Hits (ranking.Hit); reciprocal-rank fusion adds
them up, weighted by signal (RRF_WEIGHTS); the final rank blends the fused relevance with
importance, confidence, recency and usage; whole records are loaded for the winners only.
A new signal is a module whose search returns Hits, put in `signals` under its name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils import timezone

from memories import cache, embeddings, when
from memories import intent as intents
from memories.retrieval import (
    expansion,
    fulltext,
    neighbours,
    ranking,
    records,
    size,
    speakers,
    timeframe,
    vector,
)
from memories.retrieval.filters import SearchFilters
from memories.retrieval.ranking import Hit, SearchOutcome
from memory_platform.config import config


@dataclass
class Signals:
    """What the query's own signals found: each one's Hits, best first, by name."""

    hits: dict[str, list[Hit]] = field(default_factory=dict)
    degraded: str | None = None  # "no_embedding" when the query could not be embedded
    vector_method: str | None = None
    filled_from_fulltext: int = 0


def query_signals(*, org_id, query: str, filters: SearchFilters, limit: int, mode: str,
                  threshold: float | None, words: str | None = None) -> Signals:
    """The vector and full-text signals, as `mode` asks for them ("hybrid", "vector" or
    "fulltext"), each with up to CANDIDATES memories (at least `limit`). words: what a hybrid
    search matches by full text and by meaning, if not the whole query."""
    k = max(limit, config().search.candidates)
    rows = size.candidate_count(org_id, filters)
    exact = rows <= config().search.exact_scan_rows
    # Full text: match row by row the few rows a filter leaves (docs/adr/0035).
    small = filters.narrows() and rows <= config().search.text_scan_rows
    embedding, text_hits = None, None
    # The model whose vectors the memories hold, read (at most every few seconds) before the
    # full-text statement goes out: the connection is the pipeline's until it ends.
    model = embeddings.active_model()
    if mode == "hybrid":
        with fulltext.started(org_id, words or query, filters, k, small) as text:
            embedding = cache.query_embedding(words or query, model)  # while the database runs the full-text statement
        text_hits = text.hits
    elif mode == "vector":
        embedding = cache.query_embedding(query, model)
    found = Signals(degraded="no_embedding" if mode in ("hybrid", "vector") and embedding is None else None)
    if embedding is not None:
        hits, found.vector_method = vector.search(org_id, embedding, filters, k, exact)
        if threshold is not None:  # seed 003's store search: only matches at least this similar
            hits = [hit for hit in hits if hit.score >= threshold]
        found.hits["vector"] = hits
    if text_hits is not None:
        found.hits["fulltext"] = text_hits
    elif found.degraded or mode == "fulltext":
        found.hits["fulltext"] = fulltext.search(org_id, query, filters, k, small)
    elif len(found.hits["vector"]) < limit and threshold is None:
        # Seed 001: too few vector matches (sparse memories) -> full text fills up.
        seen = {hit.memory_id for hit in found.hits["vector"]}
        extra = [hit for hit in fulltext.search(org_id, query, filters, k, small)
                 if hit.memory_id not in seen][: limit - len(seen)]
        if extra:
            found.hits["fulltext"], found.filled_from_fulltext = extra, len(extra)
    return found


# A "why" question follows these edges from its best results (seed 004's causal chain).
CAUSAL_CHAIN = ("causal", "derived_from", "supports")
CAUSAL_HOPS = 2  # the cause of a result, and the cause of that cause


def memory_search(*, org_id, query: str, filters: SearchFilters, limit: int = 10, mode: str = "hybrid",
                  expand: int = 0, threshold: float | None = None) -> SearchOutcome:
    """Rank memories for a query, as the tenant the caller has set (memories.retrieval).
    threshold (cosine similarity) keeps only vector matches at or above it (seed 003's store
    search); expand (a number of hops, 1 or 2; True is 1) adds the memories that many
    relationships from the best results (expansion). A hybrid search also ranks, as signals of
    their own: for a "why" question (memories.intent) the causal chain of its best results, up to
    two relationships along it (expansion along CAUSAL_CHAIN), the memories of the period its
    query names (timeframe), and the memories written just before and after its best results
    (neighbours); and when the query names one person who speaks in the namespaces searched,
    full text and meaning match the rest of the query and the others' words weigh less
    (speakers). The outcome says what it understood of the query (SearchOutcome.understood)."""
    weights, rrf_k = config().search.rrf_weights, config().search.rrf_k
    hybrid = mode == "hybrid" and threshold is None  # the signals beyond the query's own
    # The one person the query names, if they speak in the namespaces searched: their name is
    # in all of their words and in the others' words to them, so both signals match the rest
    # of the query; at the end the others' words weigh less.
    others_weight = config().search.speaker_others_weight
    speaker = speakers.named(org_id, query, filters) if hybrid and others_weight < 1 else None
    # Signals, then fusion.
    words = speakers.unnamed(query, speaker) if speaker else query
    found = query_signals(org_id=org_id, query=query, filters=filters, limit=limit, mode=mode, threshold=threshold,
                          words=words)
    signals = found.hits
    fused = ranking.reciprocal_rank_fusion(signals, weights, rrf_k)
    intent = intents.classify(query)
    if expand and fused:  # a signal seeded by the others' fusion, then fused with them
        signals["graph"] = expansion.search(org_id, ranking.best(fused, limit), filters, hops=int(expand))
        fused = ranking.reciprocal_rank_fusion(signals, weights, rrf_k)
    elif hybrid and intent == "why" and weights["graph"] and fused:  # the causal chain of the best results
        signals["graph"] = expansion.search(org_id, ranking.best(fused, limit), filters, types=CAUSAL_CHAIN,
                                            hops=CAUSAL_HOPS)
        fused = ranking.reciprocal_rank_fusion(signals, weights, rrf_k)
    period = when.period(query, timezone.now()) if hybrid else None
    if period is not None and weights["time"]:  # a signal of its own, fused with the query's
        signals["time"] = timeframe.search(org_id, words, filters, period, max(limit, config().search.candidates))
        fused = ranking.reciprocal_rank_fusion(signals, weights, rrf_k)
    seeds = config().search.neighbour_seeds
    if hybrid and seeds and weights["neighbours"] and fused:  # seeded by the fusion so far
        signals["neighbours"] = neighbours.search(org_id, ranking.best(fused, seeds), filters)
        fused = ranking.reciprocal_rank_fusion(signals, weights, rrf_k)
    explained = ranking.explanations(signals)
    if speaker is not None and fused:
        fused, spoken = speakers.prefer(org_id, speaker, fused, others_weight)
        for memory_id in spoken:
            explained.setdefault(memory_id, {})["speaker"] = {"name": speaker.name}
    # Rank every candidate on a few columns, most of which came with the signals' rows.
    rows = ranking.candidates_rows(org_id, signals, fused)
    results = ranking.rank(rows, fused, explained, timezone.now())[:limit]
    # Load whole records for the winners only.
    records.fill(org_id, results, usage=rows)
    understood = {"intent": intent, "period": period.as_json() if period else None,
                  "speaker": speaker.as_json() if speaker else None,
                  "signals": [name for name, hits in signals.items() if hits]}
    return SearchOutcome(results=results, degraded=found.degraded, vector_method=found.vector_method,
                         understood=understood,
                         filled_from_fulltext=found.filled_from_fulltext)
