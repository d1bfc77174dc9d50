"""What every signal produces (Hit), how signals are fused (reciprocal-rank fusion), and the
final ranking: relevance blended with importance, confidence, recency, usage and strength.

A signal is any module whose search returns Hits, best first (ranked_hits makes them from
rows, equal scores sharing a rank); the pipeline keeps them under the signal's name, fusion
weighs them by rrf_weights[name], and each Hit's details show in the result's signals
beside its rank.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from memories.lifecycle import strength
from memories.models import RANKING_MEMORY_COLUMNS, Memory
from memory_platform.config import config
from memory_platform.database import prepared_cursor


@dataclass
class Hit:
    memory_id: object
    score: float  # similarity in [0, 1] for vectors, BM25 for text
    rank: int
    row: RankingRow | None = None  # what the final ranking reads of it, if the statement returned it
    details: dict = field(default_factory=dict)  # what the search shows of it beside its rank

    def explanation(self) -> dict:
        return {"rank": self.rank, **self.details}


class RankingRow(NamedTuple):
    """What the final ranking reads of a candidate: read as plain rows, since a search ranks
    up to a hundred candidates and loads whole records only for the few it returns."""

    pk: object
    importance: float
    confidence: float
    created_at: datetime
    decay_rate: float
    reinforced_at: datetime | None
    retrieval_count: int
    last_retrieved_at: datetime | None


def ranked_hits(rows, measure: str | None = "score") -> list[Hit]:
    """Hits from rows of (id, score[, ranking_columns]) in the order given, equal scores
    sharing a rank ("1, 2, 2, 4"): a tie within one signal says nothing, so fusion must not
    read an order into it (the others decide). measure: what each Hit's score is shown as
    (None: the score is not shown, only the rank)."""
    hits: list[Hit] = []
    for position, (memory_id, score, *ranking) in enumerate(rows, start=1):
        tied = hits and hits[-1].score == score
        hits.append(Hit(memory_id, score, hits[-1].rank if tied else position,
                        RankingRow(memory_id, *ranking) if ranking else None,
                        {measure: round(score, 6)} if measure else {}))
    return hits


# The RankingRow columns of a signal's rows come with them, from the statement that finds
# them: a separate read of ~90 candidates cost 3.0-3.2 ms p50 of a search at 1M memories, for
# rows those statements had just read. An index scan or a full-text match reads each row's
# heap tuple anyway, and an exact scan's covering index holds the three memory columns, so
# each statement carries them through. The usage count is joined after the LIMIT.
# A memory's usage, from `usage_join`, named as Memory's manager names it.
USAGE_COLUMNS = "coalesce(u.retrieval_count, 0) AS retrieval_count, u.last_retrieved_at"


def memory_columns(alias: str) -> str:
    """The columns a RankingRow reads of the memories row (or subquery) `alias`, after its id."""
    return ", ".join(f"{alias}.{column}" for column in RANKING_MEMORY_COLUMNS)


def ranking_columns(alias: str) -> str:
    """A RankingRow's columns after the id: the memory's own from `alias`, the usage from
    `usage_join`."""
    return f"{memory_columns(alias)}, {USAGE_COLUMNS}"


def usage_join(alias: str, org: str = "%s") -> str:
    """The usage row (u) of each memory `alias` names, if it has one; its parameter (`org`) is
    the organisation. Looked up row by row through the unique index (LIMIT 1 keeps the subquery
    from being flattened into a join): as a plain LEFT JOIN the planner hashed the whole
    organisation's usage rows for 50 memories (1 ms at 10,000 of them, and growing), and with
    statistics that had not seen the organisation yet it read them all again for each memory
    (docs/adr/0045). Named by the organisation, not through `alias`, so that on a Citus cluster
    the statement stays on its shard."""
    return (f"LEFT JOIN LATERAL (SELECT retrieval_count, last_retrieved_at FROM memory_usage "
            f"WHERE org_id = {org} AND memory_id = {alias}.id LIMIT 1) u ON true")


# --------------------------------------------------------------------------- fusion


def reciprocal_rank_fusion(signals: dict[str, list[Hit]], weights: dict[str, float], k: int,
                           fused: dict | None = None) -> dict:
    """score(m) = sum over signals of weight / (k + rank): deterministic, ties broken by id.
    fused: the fusion of earlier signals, which these are added to (in a new dict)."""
    fused = dict(fused or {})
    for name, hits in signals.items():
        for hit in hits:
            fused[hit.memory_id] = fused.get(hit.memory_id, 0.0) + weights.get(name, 1.0) / (k + hit.rank)
    return fused


def best(fused: dict, n: int) -> list:
    """The n memories fusion put first, best first (ties by id)."""
    return [memory_id for memory_id, _ in sorted(fused.items(), key=lambda kv: (-kv[1], str(kv[0])))][:n]


def explanations(signals: dict[str, list[Hit]]) -> dict:
    """What each signal says of each memory it found: {memory id: {signal: {"rank": ..., ...}}}."""
    explained: dict = {}
    for name, hits in signals.items():
        for hit in hits:
            explained.setdefault(hit.memory_id, {})[name] = hit.explanation()
    return explained


# --------------------------------------------------------------------------- ranking


def recency(created_at: datetime, now: datetime, half_life_days: float) -> float:
    age_days = max((now - created_at).total_seconds() / 86400, 0.0)
    return 0.5 ** (age_days / half_life_days)


def usage(retrieval_count: int) -> float:
    return min(math.log1p(retrieval_count) / math.log1p(100), 1.0)


# The RankingRows of memories no signal's statement returned (what an expansion found related), in
# one statement: through the ORM (an IN list of ~100 parameters, a correlated lookup per row,
# the model's default ordering) this read took 3.8 ms p50 for 90 candidates at 1M memories,
# as SQL 2.2. The ids come as an array joined row by row: against `id = ANY(array)` the
# planner weighs every element, which took it 1 ms of the 2.
RANKING_SQL = f"""
    SELECT m.id, {ranking_columns("m")}
    FROM unnest(%s::uuid[]) AS candidate(id)
    JOIN memories m ON m.org_id = %s AND m.id = candidate.id
    {usage_join("m")}
"""


def ranking_rows(org_id, memory_ids) -> dict:
    """Each memory's RankingRow, by id (memories of other organisations, or gone, have none)."""
    with prepared_cursor() as cursor:  # by id: planned once a connection
        cursor.execute(RANKING_SQL, [[str(memory_id) for memory_id in memory_ids], org_id, org_id])
        return {row[0]: RankingRow(*row) for row in cursor.fetchall()}


def candidates_rows(org_id, signals: dict[str, list[Hit]], fused: dict) -> dict:
    """Every fused memory's RankingRow: those the signals' statements returned with their
    hits, the rest (what an expansion found related) read now, in one statement."""
    rows = {hit.memory_id: hit.row for hits in signals.values() for hit in hits if hit.row}
    if missing := [memory_id for memory_id in fused if memory_id not in rows]:
        rows |= ranking_rows(org_id, missing)
    return rows


@dataclass
class Result:
    memory: Memory | RankingRow  # the whole record once the search has loaded it
    score: float
    signals: dict


@dataclass
class SearchOutcome:
    results: list[Result]
    degraded: str | None = None  # "no_embedding" when the query could not be embedded
    vector_method: str | None = None
    filled_from_fulltext: int = 0
    # What the search read from the query and ran: {"intent", "period", "speaker", "asks_for", "signals"}.
    understood: dict = field(default_factory=dict)


def standing(memory: RankingRow | Memory, now: datetime) -> dict[str, float]:
    """What a memory brings to the final score of any search besides its relevance, by part."""
    return {
        "importance": float(memory.importance),
        "confidence": float(memory.confidence),
        "recency": recency(memory.created_at, now, config().search.recency_half_life_days),
        "usage": usage(memory.retrieval_count),
        "strength": strength.of(memory, now),
    }


def rank(memories: dict, fused: dict, signal_details: dict, now: datetime) -> list[Result]:
    """The final score: relevance (fused, scaled to [0, 1]) blended with importance,
    confidence, recency, usage and strength (how well it is held: memories.lifecycle.strength), weights from settings (RANKING_WEIGHTS). `memories` maps
    each id to its RankingRow."""
    weights = config().search.ranking_weights
    top = max(fused.values(), default=1.0) or 1.0
    scored = []
    for memory_id, relevance in fused.items():
        memory = memories.get(memory_id)
        if memory is None:
            continue
        parts = {"relevance": relevance / top, **standing(memory, now)}
        score = sum(weights[name] * value for name, value in parts.items())
        scored.append((score, Result(memory, round(score, 6), {**signal_details.get(memory_id, {}), "blend": {
            name: round(value, 6) for name, value in parts.items()}, "fused": round(relevance, 6)})))
    # By the score itself, not as rounded for the answer: two memories alike but for when they
    # were written differ by less than the rounding, and by the clock their order would follow
    # the rounding's boundary from one search to the next; unrounded, the newer stays first.
    scored.sort(key=lambda pair: (-pair[0], str(pair[1].memory.pk)))
    return [result for _, result in scored]
