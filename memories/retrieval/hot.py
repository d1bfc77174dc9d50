"""Each agent's hot memories (spec §1): its best memories by the hot score (memories.caching.cache),
kept as a Redis sorted set. A write scores its memory into the set; every five minutes
(HOT_CACHE_TTL_SECONDS) the whole set is scored again from PostgreSQL, by the worker, while the
set as it is answers. Each scoring is also kept in PostgreSQL (memory_hot_sets, migration 0050),
so a set gone from Redis (an agent idle for a day, Redis emptied or unreachable) answers from
its last scoring, and is scored again behind the answer when that is due; only an agent never
scored is scored before the answer (docs/adr/0058)."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

from django.db import connection

from memories.caching import cache
from memories.models import Memory, live_sql
from memories.retrieval import records
from memory_platform.after_response import after_response
from memory_platform.config import config
from tenants.context import tenant_job

logger = logging.getLogger(__name__)

REBUILD_QUEUE = "default"
TABLE = "memory_hot_sets"

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


def hot_memories(*, org_id, agent_id, limit: int) -> list[Memory]:
    """The agent's hottest live memories, best first, as the tenant the caller has set: from
    the Redis set, or when it is gone from the last scoring kept in PostgreSQL (put back into
    Redis with what writes added since), its scoring asked of the worker when due; scored now
    only if the agent was never scored."""
    hot = cache.hot_memory_ids(org_id, agent_id, limit)
    if hot is None:
        kept = _kept(org_id, agent_id)
        if kept is None or not kept[0]:  # never scored, or had nothing live when it was: score now
            ids = [memory_id for memory_id, _ in _rebuild(org_id, agent_id)[:limit]]
        else:
            scored, scored_at = kept
            cache.hot_memories_restore(org_id, agent_id, scored, built=scored_at.timestamp())
            hot = cache.hot_memory_ids(org_id, agent_id, limit)
            if hot is None:  # Redis unreachable: the kept scoring answers as it is
                ids = [memory_id for memory_id, _ in scored[:limit]]
    if hot is not None:
        ids = hot.ids
        if hot.stale and cache.hot_rebuild_claim(org_id, agent_id):
            _rebuild_soon(org_id, agent_id)
    memories = records.load(org_id, ids)
    live = [memories[uuid.UUID(i)] for i in ids if uuid.UUID(i) in memories]
    return [m for m in live if m.is_live]


@tenant_job
def rebuild_hot_set(*, org_id, agent_id) -> int:
    """The worker's side of a stale set: score the agent's memories again. Returns how many."""
    return len(_rebuild(org_id, agent_id))


def _rebuild(org_id, agent_id) -> list[tuple[str, float]]:
    """Score every live memory of the agent; the best fill the Redis set and are kept."""
    with connection.cursor() as cursor:
        cursor.execute(HOT_SCORE_SQL, [org_id, agent_id, config().hot_cache_size])
        scored = [(memory_id, float(score)) for memory_id, score in cursor.fetchall()]
        cursor.execute(f"""
            INSERT INTO {TABLE} AS kept (org_id, agent_id, ids, scores, scored_at)
            VALUES (%s, %s, %s::uuid[], %s, now())
            ON CONFLICT (org_id, agent_id) DO UPDATE
            SET ids = excluded.ids, scores = excluded.scores, scored_at = excluded.scored_at
        """, [org_id, agent_id, [memory_id for memory_id, _ in scored], [score for _, score in scored]])
    cache.hot_memories_fill(org_id, agent_id, scored)
    return scored


def _kept(org_id, agent_id) -> tuple[list[tuple[str, float]], datetime] | None:
    """The agent's last scoring kept in PostgreSQL, best first, and when it was made; None if
    it was never scored."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT ids::text[], scores, scored_at FROM {TABLE} WHERE org_id = %s AND agent_id = %s",
                       [org_id, agent_id])
        row = cursor.fetchone()
    if row is None:
        return None
    ids, scores, scored_at = row
    return list(zip(ids, scores)), scored_at


def _rebuild_soon(org_id, agent_id) -> None:
    """After the response, ask the worker to rebuild the set (the set answers meanwhile)."""

    def enqueue():
        try:
            import django_rq

            queue = django_rq.get_queue(REBUILD_QUEUE, commit_mode="auto")  # no transaction to wait for
            queue.enqueue(rebuild_hot_set, org_id=str(org_id), agent_id=str(agent_id), job_timeout=600)
        except Exception as exc:  # Redis unreachable: the next read finds the set gone and rebuilds it
            logger.warning("hot set rebuild not enqueued (%s)", type(exc).__name__)

    after_response(enqueue)
