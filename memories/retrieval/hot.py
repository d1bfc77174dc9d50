"""Each agent's hot memories (spec §1): its best memories by the hot score (memories.caching.cache),
kept as a Redis sorted set and rebuilt from PostgreSQL when the set has expired or Redis is
unreachable."""

from __future__ import annotations

import uuid

from django.db import connection
from django.utils import timezone

from memories.caching import cache
from memories.models import Memory, live_sql
from memories.retrieval import records
from memory_platform.config import config

HOT_SCORE_SQL = f"""
    SELECT m.id::text,
           {cache.hot_score_sql(confidence="m.confidence", created_at="m.created_at",
                                retrieval_count="coalesce(usage.retrieval_count, 0)")} AS score
    FROM memories m LEFT JOIN memory_usage usage ON usage.org_id = m.org_id AND usage.memory_id = m.id
    WHERE m.org_id = %s AND m.agent_id = %s AND {live_sql("m")}
      AND (m.expires_at IS NULL OR m.expires_at > now())
    ORDER BY score DESC, id
    LIMIT %s
"""


# The hot set rebuilt from three indexes instead of scoring every memory of the agent
# (docs/adr/0051): the score is a sum of three parts, each growing with one column, so the best
# `size` are found by reading the agent's memories newest first (memories_agent_live), the most
# confident first (memories_org_confidence) and the most retrieved first
# (memory_usage_most_retrieved), `depth` of each, and scoring those. A memory none of the three
# reached is no newer, no more confident and no more retrieved than the last each read, so its
# score is at most BOUND of those three; once the size-th best read beats that, the best `size`
# are exactly those of HOT_SCORE_SQL (a threshold walk). Otherwise each is read twice as deep, up
# to DEEPEST times the size, and past that every memory is scored (HOT_SCORE_SQL). Measured
# (docs/adr/0051), a second round cost more than it saved: one round, then every memory.
_CANDIDATES = f"""
    SELECT m.id::text, m.confidence, m.created_at, coalesce(usage.retrieval_count, 0)
    FROM memories m LEFT JOIN memory_usage usage ON usage.org_id = m.org_id AND usage.memory_id = m.id
    WHERE m.org_id = %s AND m.agent_id = %s AND {live_sql("m")} AND (m.expires_at IS NULL OR m.expires_at > now())
"""
HOT_WALKS = {
    "newest": _CANDIDATES + " ORDER BY m.created_at DESC LIMIT %s",
    "confident": _CANDIDATES + " ORDER BY m.confidence DESC, m.created_at DESC, m.id DESC LIMIT %s",
    "retrieved": f"""
        SELECT m.id::text, m.confidence, m.created_at, usage.retrieval_count
        FROM memory_usage usage JOIN memories m ON m.org_id = usage.org_id AND m.id = usage.memory_id
        WHERE usage.org_id = %s AND m.agent_id = %s AND {live_sql("m")}
          AND (m.expires_at IS NULL OR m.expires_at > now())
        ORDER BY usage.retrieval_count DESC, usage.memory_id DESC LIMIT %s
    """,
}
DEEPEST = 2


def hot_scored(*, org_id, agent_id, size: int) -> list[tuple[str, float]]:
    """The agent's best `size` live memories by the hot score, best first (ties by id), with
    their scores: what HOT_SCORE_SQL answers, read from indexes when the threshold walk ends."""
    now = timezone.now()
    depth = 2 * size
    while depth <= DEEPEST * size:
        walked, scores = {}, {}
        with connection.cursor() as cursor:
            for name, sql in HOT_WALKS.items():
                cursor.execute(sql, [org_id, agent_id, depth])
                walked[name] = cursor.fetchall()
        for rows in walked.values():
            for memory_id, confidence, created_at, retrievals in rows:
                scores[memory_id] = cache.hot_score(confidence=confidence, created_at=created_at,
                                                    retrieval_count=retrievals, now=now)
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:size]
        if len(walked["newest"]) < depth or len(walked["confident"]) < depth:
            return best  # every live memory of the agent was read
        newest, confident = walked["newest"][-1], walked["confident"][-1]
        retrieved = walked["retrieved"][-1][3] if len(walked["retrieved"]) == depth else 0
        bound = cache.hot_score(confidence=confident[1], created_at=newest[2], retrieval_count=retrieved, now=now)
        if len(best) == size and best[-1][1] > bound:
            return best
        depth *= 2
    with connection.cursor() as cursor:
        cursor.execute(HOT_SCORE_SQL, [org_id, agent_id, size])
        return [(memory_id, float(score)) for memory_id, score in cursor.fetchall()]


def hot_memories(*, org_id, agent_id, limit: int) -> list[Memory]:
    """The agent's hottest live memories, best first, as the tenant the caller has set: from
    the Redis set, rebuilt from PostgreSQL when it expired or Redis is unreachable."""
    ids = cache.hot_memory_ids(org_id, agent_id, limit)
    if ids is None:
        scored = hot_scored(org_id=org_id, agent_id=agent_id, size=config().hot_cache_size)
        cache.hot_memories_fill(org_id, agent_id, scored)
        ids = [memory_id for memory_id, _ in scored[:limit]]
    memories = records.load(org_id, ids)
    live = [memories[uuid.UUID(i)] for i in ids if uuid.UUID(i) in memories]
    return [m for m in live if m.is_live]
