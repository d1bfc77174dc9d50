"""Each agent's hot memories (spec §1): its best memories by the hot score (memories.caching.cache),
kept as a Redis sorted set and rebuilt from PostgreSQL when the set has expired or Redis is
unreachable."""

from __future__ import annotations

import uuid

from django.db import connection

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


def hot_memories(*, org_id, agent_id, limit: int) -> list[Memory]:
    """The agent's hottest live memories, best first, as the tenant the caller has set: from
    the Redis set, rebuilt from PostgreSQL when it expired or Redis is unreachable."""
    ids = cache.hot_memory_ids(org_id, agent_id, limit)
    if ids is None:
        with connection.cursor() as cursor:
            cursor.execute(HOT_SCORE_SQL, [org_id, agent_id, config().hot_cache_size])
            scored = [(memory_id, float(score)) for memory_id, score in cursor.fetchall()]
        cache.hot_memories_fill(org_id, agent_id, scored)
        ids = [memory_id for memory_id, _ in scored[:limit]]
    memories = records.load(org_id, ids)
    live = [memories[uuid.UUID(i)] for i in ids if uuid.UUID(i) in memories]
    return [m for m in live if m.is_live]
