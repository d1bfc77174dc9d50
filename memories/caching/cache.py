"""What Redis caches for retrieval: each agent's hot memories (spec §1) and query embeddings.

Redis is a cache here, never the record: when it is unreachable every function answers from
PostgreSQL or the model instead, a little slower.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

import numpy as np
import redis
from django.conf import settings
from django.utils import timezone

from memories.vectors.embeddings import KNOWN_MODELS, EmbeddingError, active_model, get_query_embedder, query_model
from memory_platform.after_response import after_response
from memory_platform.config import config

logger = logging.getLogger(__name__)

HOT_KEY = "{org_id}:hot_memories:{agent_id}"
HOT_BUILT_KEY = HOT_KEY + ":built"  # when the set was last scored from PostgreSQL (epoch seconds)
HOT_REBUILDING_KEY = HOT_KEY + ":rebuilding"  # a rebuild is on its way: no second one asked for
# How long an agent's set is kept after its last write or rebuild. Its scores are redone from
# PostgreSQL once older than HOT_CACHE_TTL_SECONDS (spec §1's five minutes), in the background
# while the set as it is answers (memories.retrieval.hot), so that only an agent idle this long
# (or Redis emptied) waits for a rebuild: a scan of its memories, which grows with them.
HOT_SET_KEPT_SECONDS = 86_400
QUERY_KEY = "query_embedding:{model}:{digest}"


@lru_cache(maxsize=1)
def client() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1)


# --------------------------------------------------------------------------- hot memories


# Spec §1's hot score, defined once: 0.40 confidence + 0.35 recency + 0.25 retrieval, where
# recency is 1 / (1 + age / 24 h) (a half after a day; the age is at least 0.01 h) and retrieval
# saturates at ten retrievals. hot_score computes it in Python (as a write updates the set),
# hot_score_sql in SQL (as memories.retrieval.hot rebuilds the set).
HOT_WEIGHTS = {"confidence": 0.40, "recency": 0.35, "retrieval": 0.25}
HOT_RECENCY_HOURS = 24.0
HOT_MIN_AGE_HOURS = 0.01
HOT_SATURATING_RETRIEVALS = 10.0


def hot_score(*, confidence: float, created_at: datetime, retrieval_count: int, now: datetime | None = None) -> float:
    now = now or timezone.now()
    age_hours = max((now - created_at).total_seconds() / 3600, HOT_MIN_AGE_HOURS)
    recency = 1.0 / (1.0 + age_hours / HOT_RECENCY_HOURS)
    return (HOT_WEIGHTS["confidence"] * float(confidence) + HOT_WEIGHTS["recency"] * recency
            + HOT_WEIGHTS["retrieval"] * min(retrieval_count / HOT_SATURATING_RETRIEVALS, 1.0))


def hot_score_sql(*, confidence: str, created_at: str, retrieval_count: str) -> str:
    """hot_score as an SQL expression of these columns, at the transaction's now()."""
    weight = HOT_WEIGHTS
    return (f"{weight['confidence']!r} * {confidence}"
            f" + {weight['recency']!r} / (1 + greatest(extract(epoch FROM now() - {created_at}) / 3600,"
            f" {HOT_MIN_AGE_HOURS!r}) / {HOT_RECENCY_HOURS!r})"
            f" + {weight['retrieval']!r} * least({retrieval_count} / {HOT_SATURATING_RETRIEVALS!r}, 1.0)")


def _hot_key(org_id, agent_id) -> str:
    return HOT_KEY.format(org_id=org_id, agent_id=agent_id)


def hot_memory_update(memory) -> None:
    """Add or re-score a live memory in its agent's hot set, trim it, refresh its TTL."""
    size, ttl = config().hot_cache_size, HOT_SET_KEPT_SECONDS
    key = _hot_key(memory.org_id, memory.agent_id)
    score = hot_score(confidence=memory.confidence, created_at=memory.created_at,
                      retrieval_count=memory.retrieval_count)
    try:
        with client().pipeline(transaction=True) as pipe:
            pipe.zadd(key, {str(memory.pk): score})
            pipe.zremrangebyrank(key, 0, -(size + 1))
            pipe.expire(key, ttl)
            pipe.execute()
    except redis.RedisError as exc:
        logger.warning("hot cache not updated (%s)", type(exc).__name__)


def hot_memory_remove(memory) -> None:
    try:
        client().zrem(_hot_key(memory.org_id, memory.agent_id), str(memory.pk))
    except redis.RedisError as exc:
        logger.warning("hot cache not updated (%s)", type(exc).__name__)


def hot_memories_remove(memories) -> None:
    """Take many memories out of their agents' hot sets, in one round trip."""
    try:
        with client().pipeline(transaction=False) as pipe:
            for memory in memories:
                pipe.zrem(_hot_key(memory.org_id, memory.agent_id), str(memory.pk))
            pipe.execute()
    except redis.RedisError as exc:
        logger.warning("hot cache not updated (%s)", type(exc).__name__)


@dataclass(frozen=True)
class HotSet:
    ids: list[str]  # the hottest first
    stale: bool  # scored longer ago than HOT_CACHE_TTL_SECONDS: to be rebuilt


def hot_memory_ids(org_id, agent_id, limit: int) -> HotSet | None:
    """The agent's hottest memory ids, best first, and whether they are due to be scored again;
    None when the set must be rebuilt now: gone (idle for HOT_SET_KEPT_SECONDS, or Redis is
    down), or never scored from PostgreSQL (a set that writes began holds only their memories)."""
    key = _hot_key(org_id, agent_id)
    try:
        with client().pipeline(transaction=False) as pipe:
            pipe.exists(key)
            pipe.zrevrange(key, 0, limit - 1)
            pipe.get(HOT_BUILT_KEY.format(org_id=org_id, agent_id=agent_id))
            exists, members, built = pipe.execute()
    except redis.RedisError:
        return None
    if not exists or built is None:  # gone, or only what writes added since it was: not the agent's best
        return None
    return HotSet([member.decode() for member in members],
                  stale=time.time() - float(built) > config().hot_cache_ttl_seconds)


def hot_rebuild_claim(org_id, agent_id) -> bool:
    """True for the one caller that should ask for the set's rebuild (the others see it asked
    for, for a minute, or until the rebuild is done)."""
    try:
        return bool(client().set(HOT_REBUILDING_KEY.format(org_id=org_id, agent_id=agent_id), 1, nx=True, ex=60))
    except redis.RedisError:
        return False


def hot_memories_fill(org_id, agent_id, scored: list[tuple[str, float]]) -> None:
    """Rebuild the set from scores computed in the database (none: the agent has no live
    memory, and the set is emptied)."""
    key = _hot_key(org_id, agent_id)
    try:
        with client().pipeline(transaction=True) as pipe:
            pipe.delete(key)
            if scored:
                pipe.zadd(key, dict(scored))
                pipe.expire(key, HOT_SET_KEPT_SECONDS)
                pipe.set(HOT_BUILT_KEY.format(org_id=org_id, agent_id=agent_id), time.time(), ex=HOT_SET_KEPT_SECONDS)
            pipe.delete(HOT_REBUILDING_KEY.format(org_id=org_id, agent_id=agent_id))
            pipe.execute()
    except redis.RedisError as exc:
        logger.warning("hot cache not rebuilt (%s)", type(exc).__name__)


def hot_memories_restore(org_id, agent_id, scored: list[tuple[str, float]], *, built: float) -> None:
    """Put a set gone from Redis back from a scoring kept in PostgreSQL, made at `built` (epoch
    seconds): its memories join what writes added since (those keep their scores, which are
    newer), the set is trimmed to its size, and it is as old as that scoring."""
    key = _hot_key(org_id, agent_id)
    try:
        with client().pipeline(transaction=True) as pipe:
            if scored:
                pipe.zadd(key, dict(scored), nx=True)
            pipe.zremrangebyrank(key, 0, -config().hot_cache_size - 1)
            pipe.expire(key, HOT_SET_KEPT_SECONDS)
            pipe.set(HOT_BUILT_KEY.format(org_id=org_id, agent_id=agent_id), built, ex=HOT_SET_KEPT_SECONDS)
            pipe.execute()
    except redis.RedisError as exc:
        logger.warning("hot cache not restored (%s)", type(exc).__name__)


# --------------------------------------------------------------------------- query embeddings


def query_key(text: str, model: str | None = None) -> str:
    """The Redis key of a query's embedding by `model` (default: the model that embeds
    queries now): a switch of the active model, or of QUERY_EMBEDDING_PRECISION, never reads
    another model's vector."""
    model = model or get_query_embedder().model_name
    return QUERY_KEY.format(model=model, digest=hashlib.sha256(text.encode()).hexdigest())


def query_keys(text: str) -> list[str]:
    """The query's key by every model this deployment knows (an erasure removes them all)."""
    return [query_key(text, model) for model in KNOWN_MODELS]


@lru_cache(maxsize=1024)
def _embed_query_cached(documents: str, queries: str, text: str) -> tuple[float, ...]:
    """The query's vector for memories embedded by `documents`, by the `queries` model (which
    QUERY_EMBEDDING_PRECISION chooses: part of the key, so a change of it is seen)."""
    embedder = get_query_embedder(model=documents)
    key = query_key(text, embedder.model_name)
    try:
        stored = client().get(key)
    except redis.RedisError:
        stored = None
    if stored is not None:
        return tuple(np.frombuffer(stored, dtype=np.float32).tolist())
    vector = embedder.embed([text])[0]
    packed = np.asarray(vector, dtype=np.float32).tobytes()

    def store():
        try:
            client().set(key, packed, ex=config().search.query_embedding_cache_seconds)
        except redis.RedisError:
            pass

    after_response(store)  # the search needs the vector now, the cache later
    return tuple(vector)


def query_embedding(text: str, model: str | None = None) -> list[float] | None:
    """The query's embedding for memories embedded by `model` (default: the active model's;
    a search reads it before it starts a statement of its own), from the process's cache,
    then Redis, then the model; None if the model cannot embed it, and the search goes on
    with full text alone."""
    try:
        documents = model or active_model()
        return list(_embed_query_cached(documents, query_model(documents), text))
    except EmbeddingError:
        return None
