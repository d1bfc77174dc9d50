"""Each agent's hot memories (spec §1): its best memories by the hot score (memories.caching.cache),
kept as a Redis sorted set. A write scores its memory into the set; every five minutes
(HOT_CACHE_TTL_SECONDS) the whole set is scored again from PostgreSQL, by the worker, while the
set as it is answers. Each scoring is also kept in PostgreSQL (memory_hot_sets, migration 0050),
so a set gone from Redis (an agent idle for a day, Redis emptied or unreachable) answers from
its last scoring, and is scored again behind the answer when that is due (docs/adr/0058). An
agent never scored is answered from its newest memories, scored before the answer, while the
worker scores them all (docs/adr/0059)."""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

from django.db import connection

from memories.caching import cache
from memories.models import Memory, live_sql
from memories.retrieval import records
from memories.retrieval.ranking import usage_join
from memory_platform.after_response import after_response
from memory_platform.config import config
from tenants.context import tenant_job

logger = logging.getLogger(__name__)

REBUILD_QUEUE = "default"
TABLE = "memory_hot_sets"

# The agent's live memories scored, the best %(size)s, each with how many were scored: all of
# them ({newest} empty), or its newest %(window)s, read from the index of an agent's live memories
# (memories_agent_live), so the window costs that many rows however many the agent holds. Every
# table is named by the organisation: on a Citus cluster that routes the statement to its shard
# (a join through the subquery's LIMIT alone is not routed). Each memory's usage is looked up by
# its key (ranking.usage_join), so the scoring reads as many usage rows as the agent's memories
# it scores: a join by hash or merge would read the organisation's (every agent's), and a plain
# join, with statistics that had not seen the organisation yet (after an import), read them again
# for each memory (docs/adr/0045).
HOT_SCORE_SQL = f"""
    SELECT m.id::text,
           {cache.hot_score_sql(confidence="m.confidence", created_at="m.created_at",
                                retrieval_count="coalesce(u.retrieval_count, 0)")} AS score,
           count(*) OVER () AS scored
    FROM (SELECT id, confidence, created_at FROM memories m
          WHERE m.org_id = %(org)s AND m.agent_id = %(agent)s AND {live_sql("m")}
            AND (m.expires_at IS NULL OR m.expires_at > now())
          {{newest}}) m
    {usage_join("m", org="%(org)s")}
    ORDER BY score DESC, id
    LIMIT %(size)s
"""
NEWEST = "ORDER BY m.created_at DESC LIMIT %(window)s"
# An agent never scored (its first hot read, after a bulk load or an import) is answered from
# its newest memories, this many, scored before the answer, while the worker scores them all.
FIRST_WINDOW = 1000


def hot_memories(*, org_id, agent_id, limit: int) -> list[Memory]:
    """The agent's hottest live memories, best first, as the tenant the caller has set: from
    the Redis set, or when it is gone from the last scoring kept in PostgreSQL (put back into
    Redis with what writes added since), its scoring asked of the worker when due; an agent
    never scored from its newest memories (_first_scoring)."""
    hot = cache.hot_memory_ids(org_id, agent_id, limit)
    if hot is None:
        kept = _kept(org_id, agent_id)
        if kept is None or not kept[0]:  # never scored, or had nothing live when it was
            ids = [memory_id for memory_id, _ in _first_scoring(org_id, agent_id)[:limit]]
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


def _scored(org_id, agent_id, window: int | None) -> tuple[list[tuple[str, float]], bool]:
    """The agent's best live memories by the hot score, best first, of its newest `window` (None:
    of them all), and whether that was all of them."""
    with connection.cursor() as cursor:
        cursor.execute(HOT_SCORE_SQL.format(newest="" if window is None else NEWEST),
                       {"org": org_id, "agent": agent_id, "size": config().hot_cache_size,
                        "window": window})
        rows = cursor.fetchall()
    complete = window is None or not rows or rows[0][2] < window  # fewer than the window: all of them
    return [(memory_id, float(score)) for memory_id, score, _ in rows], complete


def _first_scoring(org_id, agent_id) -> list[tuple[str, float]]:
    """An agent without a scoring: its newest FIRST_WINDOW memories scored before the answer. If
    that was all of them, it is the agent's scoring (kept, and the set filled); if not, the set is
    filled from it as already due and the worker asked to score them all (which a read meanwhile
    does not ask again): the first answer may miss an older memory that the full scoring ranks
    among the best, as an answer from a due set may miss what changed since (docs/adr/0059)."""
    scored, complete = _scored(org_id, agent_id, FIRST_WINDOW)
    if complete:
        _keep(org_id, agent_id, scored)
    else:
        cache.hot_memories_restore(org_id, agent_id, scored, built=0.0)
        if cache.hot_rebuild_claim(org_id, agent_id):
            _rebuild_soon(org_id, agent_id)
    return scored


def _rebuild(org_id, agent_id) -> list[tuple[str, float]]:
    """Score every live memory of the agent; the best fill the Redis set and are kept."""
    scored, _ = _scored(org_id, agent_id, None)
    _keep(org_id, agent_id, scored)
    return scored


def _keep(org_id, agent_id, scored: list[tuple[str, float]]) -> None:
    """The agent's scoring (of all its live memories), kept in PostgreSQL and filling its set."""
    with connection.cursor() as cursor:
        cursor.execute(f"""
            INSERT INTO {TABLE} AS kept (org_id, agent_id, ids, scores, scored_at)
            VALUES (%s, %s, %s::uuid[], %s, now())
            ON CONFLICT (org_id, agent_id) DO UPDATE
            SET ids = excluded.ids, scores = excluded.scores, scored_at = excluded.scored_at
        """, [org_id, agent_id, [memory_id for memory_id, _ in scored], [score for _, score in scored]])
    cache.hot_memories_fill(org_id, agent_id, scored)


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
