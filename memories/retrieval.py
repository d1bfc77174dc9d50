"""Searching memories as agents and operators do it: hybrid search, seed 002's retrieve, seed
003's store search, each recorded as a RetrievalEvent that can be replayed later; the hot set.

Access reinforcement (retrieval_count, last_retrieved_at) is counted in Redis after the
response and written to PostgreSQL in batches by a periodic job (inline after commit if Redis
is down): the read path itself adds no write per row.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from dataclasses import asdict, dataclass

import redis
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from memories import cache, search
from memories.errors import Conflict, NotFound
from memories.models import Memory, RetrievalEvent
from memories.redaction import redactor_for
from memories.search import Hit, SearchFilters, SearchOutcome
from memory_platform.after_response import after_response
from tenants.context import tenant_context

logger = logging.getLogger(__name__)

# A loaded record: every column of the memory but the vector and the tsvector, which nobody
# reads back (a read of either loads it then), with its tags and the artifacts it refers to.
# Written as SQL and read through Memory.objects.raw: built with the ORM (an annotated,
# filtered queryset, then the tags prefetched and the artifacts read apart), the load of a
# search's ten records cost 8.2 ms p50 at 1M memories, two thirds of it building and
# compiling the statements.
RECORD_COLUMNS = ", ".join(f"m.{field.column}" for field in Memory._meta.concrete_fields
                           if field.name not in ("embedding", "search_vector"))
RECORDS_SQL = f"""
    SELECT {RECORD_COLUMNS},
           ARRAY(SELECT t.tag FROM memory_tags t WHERE t.org_id = m.org_id AND t.memory_id = m.id) AS tag_names,
           ARRAY(SELECT a.artifact_id FROM memory_artifacts a WHERE a.org_id = m.org_id AND a.memory_id = m.id)
             AS artifact_ids{{usage_columns}}
    FROM unnest(%s::uuid[]) AS wanted(id) JOIN memories m ON m.org_id = %s AND m.id = wanted.id
    {{usage_join}}
"""


def _load(org_id, ids, usage: dict | None = None) -> dict:
    """Full records, each with `tag_names` and `artifact_ids` (RECORDS_SQL), by id. usage: each
    memory's RankingRow, when the caller has read them already (then the records are read
    without looking their usage up again: 1 ms of a 3.5 ms load at 1M memories)."""
    ids = [str(memory_id) for memory_id in ids]
    if usage is None:
        sql = RECORDS_SQL.format(usage_columns=", " + search.USAGE_COLUMNS, usage_join=search.usage_join("m"))
        return {memory.pk: memory for memory in Memory.objects.raw(sql, [ids, org_id, org_id])}
    loaded = {memory.pk: memory for memory in Memory.objects.raw(RECORDS_SQL.format(usage_columns="", usage_join=""),
                                                                 [ids, org_id])}
    for memory_id, memory in loaded.items():
        memory.retrieval_count = usage[memory_id].retrieval_count
        memory.last_retrieved_at = usage[memory_id].last_retrieved_at
    return loaded


def as_tenant(org_id, tenant_active: bool):
    """Run as org_id: through tenant_context, or as the caller's transaction already does
    (tenant_active: an API view, whose authentication set the organisation). Setting it
    again costs four statements; a caller that claims it wrongly finds nothing and can write
    nothing, since every statement filters on org_id and row-level security on the tenant."""
    return contextlib.nullcontext() if tenant_active else tenant_context(org_id)


def memory_search(*, org_id, query: str, filters: SearchFilters, limit: int = 10, mode: str = "hybrid",
                  expand: bool = False, threshold: float | None = None, tenant_active: bool = False) -> SearchOutcome:
    """Rank memories for a query. threshold (cosine similarity) keeps only vector matches at
    or above it (seed 003's store search). tenant_active: see as_tenant."""
    knobs = search.knobs()
    candidates = max(limit, knobs["CANDIDATES"])
    signals: dict[str, list[Hit]] = {}
    method, vector, text_hits = None, None, None
    with as_tenant(org_id, tenant_active):
        rows = search.candidate_count(org_id, filters)
        exact = rows <= knobs["EXACT_SCAN_ROWS"]
        # Full text: match row by row the few rows a filter leaves (docs/adr/0035).
        small = filters.narrows() and rows <= knobs["TEXT_SCAN_ROWS"]
        if mode == "hybrid":  # the query is embedded while the database runs the full-text search
            text_hits, vector = search.fulltext_search_during(
                lambda: cache.query_embedding(query), org_id, query, filters, candidates, small, enough=limit)
        elif mode == "vector":
            vector = cache.query_embedding(query)
        degraded = "no_embedding" if mode in ("hybrid", "vector") and vector is None else None
        if vector is not None:
            hits, method = search.vector_search(org_id, vector, filters, candidates, exact)
            if threshold is not None:
                hits = [hit for hit in hits if hit.score >= threshold]
            signals["vector"] = hits
        filled = 0
        if text_hits is not None:
            signals["fulltext"] = text_hits
        elif degraded or mode == "fulltext":
            signals["fulltext"] = search.fulltext_search(org_id, query, filters, candidates, small, enough=limit)
        elif len(signals.get("vector", [])) < limit and threshold is None:
            # Seed 001: too few vector matches (sparse memories) -> full text fills up.
            seen = {hit.memory_id for hit in signals["vector"]}
            extra = [hit for hit in search.fulltext_search(org_id, query, filters, candidates, small)
                     if hit.memory_id not in seen][: limit - len(seen)]
            if extra:
                signals["fulltext"], filled = extra, len(extra)
        fused = search.reciprocal_rank_fusion(signals, knobs["RRF_WEIGHTS"], knobs["RRF_K"])
        details: dict = {}
        for name, hits in signals.items():
            for hit in hits:
                details.setdefault(hit.memory_id, {})[name] = {
                    "rank": hit.rank, ("similarity" if name == "vector" else "score"): round(hit.score, 6)}
        if expand and fused:
            seeds = [memory_id for memory_id, _ in sorted(fused.items(), key=lambda kv: (-kv[1], str(kv[0])))][:limit]
            neighbours = search.related(org_id, seeds, filters)
            ordered = sorted(neighbours, key=lambda n: (seeds.index(neighbours[n][0]), str(n)))
            graph = [Hit(memory_id, 0.0, rank) for rank, memory_id in enumerate(ordered, start=1)]
            for hit in graph:
                fused[hit.memory_id] = fused.get(hit.memory_id, 0.0) + knobs["RRF_WEIGHTS"]["graph"] / (
                    knobs["RRF_K"] + hit.rank)
                origin, relation = neighbours[hit.memory_id]
                details.setdefault(hit.memory_id, {})["graph"] = {
                    "rank": hit.rank, "from": str(origin), "relation_type": relation}
        # Rank every candidate on a few columns, which the signals' statements returned (the
        # neighbours of an expansion are read now); load whole records for the winners only.
        scoring = {hit.memory_id: hit.row for hits in signals.values() for hit in hits if hit.row}
        if missing := [memory_id for memory_id in fused if memory_id not in scoring]:
            scoring |= search.ranking_rows(org_id, missing)
        results = search.rank(scoring, fused, details, timezone.now())[:limit]
        full = _load(org_id, [result.memory.pk for result in results], usage=scoring)
        for result in results:
            result.memory = full[result.memory.pk]
    return SearchOutcome(results=results, degraded=degraded, vector_method=method, filled_from_fulltext=filled)


# --------------------------------------------------------------------------- events and reinforcement


def filters_as_json(filters: SearchFilters) -> dict:
    return {name: (value.isoformat() if hasattr(value, "isoformat") else
                   [str(v) for v in value] if isinstance(value, list) else
                   str(value) if isinstance(value, uuid.UUID) else value)
            for name, value in asdict(filters).items()}


def filters_from_json(data: dict) -> SearchFilters:
    from django.utils.dateparse import parse_datetime

    values = dict(data)
    values["within"] = tuple(values.get("within") or ())
    for name in ("created_after", "created_before", "valid_at"):
        if values.get(name):
            values[name] = parse_datetime(values[name])
    return SearchFilters(**{name: value for name, value in values.items()
                            if name in SearchFilters.__dataclass_fields__})


def retrieval_event_record(*, org_id, kind: str, query: str, scope: str, filters: SearchFilters, request: dict,
                           outcome: SearchOutcome, agent_id=None, user=None, replay_of=None,
                           artifact_ids: list | None = None, tenant_active: bool = False) -> RetrievalEvent:
    """artifact_ids: those the returned memories refer to, if the caller has read them itself
    (by default, the ones their records were loaded with).
    tenant_active: see as_tenant."""
    ids = [result.memory.pk for result in outcome.results]
    with as_tenant(org_id, tenant_active):
        # What the caller asked is free text kept for audit: redacted like a memory's content.
        redactor = redactor_for(org_id)
        recorded_filters, redacted = redactor.json({"filters": filters_as_json(filters), "request": request})
        recorded_query = redactor.text(query)
        redacted.update(recorded_query.kinds)
        event = RetrievalEvent.objects.create(
            org_id=org_id, kind=kind, agent_id=agent_id, user=user, query=recorded_query.text,
            scope=redactor.plain(scope), filters=recorded_filters,
            returned_memory_ids=ids, returned_scores=[result.score for result in outcome.results],
            returned_artifact_ids=sorted({artifact for result in outcome.results for artifact in result.memory.artifact_ids},
                                         key=str) if artifact_ids is None else artifact_ids,
            details={"signals": {str(r.memory.pk): r.signals for r in outcome.results},
                     "degraded": outcome.degraded, "vector_method": outcome.vector_method,
                     "filled_from_fulltext": outcome.filled_from_fulltext,
                     # What was asked is not all kept: a replay could not ask it again.
                     **({"redacted": True} if redacted else {})},
            replay_of=replay_of,
        )
    reinforce_after_commit(org_id, ids)
    return event


# Into memory_usage, never the memory's own row (memories migration 0009). Only memories of
# this organisation that still exist are counted: an id from elsewhere changes nothing.
REINFORCE_SQL = """
    INSERT INTO memory_usage AS usage (id, org_id, memory_id, retrieval_count, last_retrieved_at)
    SELECT gen_random_uuid(), m.org_id, m.id, u.n, u.at
    FROM unnest(%s::uuid[], %s::int[], %s::timestamptz[]) AS u(id, n, at)
    JOIN memories m ON m.org_id = %s AND m.id = u.id
    ON CONFLICT (org_id, memory_id) DO UPDATE
    SET retrieval_count = usage.retrieval_count + excluded.retrieval_count,
        last_retrieved_at = greatest(coalesce(usage.last_retrieved_at, excluded.last_retrieved_at),
                                     excluded.last_retrieved_at)
"""
# Retrievals waiting to be written, per organisation: memory id -> count, and -> latest time.
RETRIEVAL_COUNTS_KEY = "{org_id}:retrievals:counts"
RETRIEVAL_LAST_KEY = "{org_id}:retrievals:last"
RETRIEVALS_PENDING_KEY = "retrievals:pending"  # the organisations that have some


def reinforce(*, org_id, counts: dict, last: dict) -> int:
    """Add counts[id] retrievals to each memory and move its last_retrieved_at up to last[id],
    in one statement. Returns how many memories it changed."""
    if not counts:
        return 0
    ids = list(counts)
    with tenant_context(org_id), connection.cursor() as cursor:
        cursor.execute(REINFORCE_SQL, [[str(i) for i in ids], [int(counts[i]) for i in ids],
                                       [last[i] for i in ids], str(org_id)])
        return cursor.rowcount


def reinforce_after_commit(org_id, memory_ids: list) -> None:
    """Once the response's transaction has committed and the response has gone out, count one
    retrieval for each memory: into Redis (a few increments in one round trip), written to
    PostgreSQL in batches by flush_retrievals. A memory retrieved a hundred times a minute
    costs one UPDATE a minute, not a hundred; if Redis is down, it is written at once, in one
    statement."""
    if not memory_ids:
        return
    org_id, ids, at = str(org_id), [str(i) for i in memory_ids], timezone.now().isoformat()

    def record():
        try:
            with cache.client().pipeline(transaction=True) as pipe:
                for memory_id in ids:
                    pipe.hincrby(RETRIEVAL_COUNTS_KEY.format(org_id=org_id), memory_id, 1)
                pipe.hset(RETRIEVAL_LAST_KEY.format(org_id=org_id), mapping=dict.fromkeys(ids, at))
                pipe.sadd(RETRIEVALS_PENDING_KEY, org_id)
                pipe.execute()
        except redis.RedisError as exc:
            logger.warning("retrievals not queued (%s); written at once", type(exc).__name__)
            reinforce(org_id=org_id, counts=dict.fromkeys(ids, 1), last=dict.fromkeys(ids, at))

    transaction.on_commit(lambda: after_response(record))


def flush_retrievals() -> int:
    """Write the retrievals counted in Redis to PostgreSQL: one UPDATE per organisation
    (a periodic job, memories/cron.py). Counts taken from Redis are put back if the write
    fails, so none is lost. Returns how many memories changed."""
    client, changed = cache.client(), 0
    for org_id in sorted(member.decode() for member in client.smembers(RETRIEVALS_PENDING_KEY)):
        counts_key, last_key = RETRIEVAL_COUNTS_KEY.format(org_id=org_id), RETRIEVAL_LAST_KEY.format(org_id=org_id)
        with client.pipeline(transaction=True) as pipe:  # take them atomically: new ones start afresh
            pipe.hgetall(counts_key).hgetall(last_key).delete(counts_key, last_key).srem(RETRIEVALS_PENDING_KEY, org_id)
            counts, last, _, _ = pipe.execute()
        counts = {key.decode(): int(value) for key, value in counts.items()}
        last = {key.decode(): value.decode() for key, value in last.items()}
        try:
            with transaction.atomic():
                changed += reinforce(org_id=org_id, counts=counts, last={i: last.get(i) for i in counts})
        except Exception:
            with client.pipeline(transaction=True) as pipe:
                for memory_id, n in counts.items():
                    pipe.hincrby(counts_key, memory_id, n)
                if last:
                    pipe.hset(last_key, mapping=last)
                pipe.sadd(RETRIEVALS_PENDING_KEY, org_id)
                pipe.execute()
            raise
    return changed


# --------------------------------------------------------------------------- replay


def retrieval_event_get(*, org_id, event_id) -> RetrievalEvent:
    try:
        return RetrievalEvent.objects.get(org_id=org_id, pk=event_id)
    except (RetrievalEvent.DoesNotExist, ValueError):
        raise NotFound(f"retrieval event {event_id} not found") from None


@dataclass
class Replay:
    event: RetrievalEvent
    original: RetrievalEvent
    added: list
    removed: list  # with why each left: deleted, superseded, expired, ... or outranked
    moved: list
    unchanged: bool


def _why_gone(org_id, memory_ids) -> dict:
    now = timezone.now()
    reasons = {}
    for memory in Memory.objects.filter(org_id=org_id, pk__in=memory_ids):
        if memory.deleted_at:
            reasons[memory.pk] = "deleted"
        elif memory.status != "active":
            reasons[memory.pk] = memory.status
        elif memory.expires_at and memory.expires_at <= now:
            reasons[memory.pk] = "expired"
        else:
            reasons[memory.pk] = "outranked"
    return {memory_id: reasons.get(memory_id, "erased") for memory_id in memory_ids}


def retrieval_event_replay(*, org_id, event_id, agent_id=None, user=None) -> Replay:
    """Run a recorded retrieval again, as of now, and say what changed since."""
    original = retrieval_event_get(org_id=org_id, event_id=event_id)
    if original.details.get("redacted"):
        raise Conflict(f"retrieval event {event_id} was asked with values redacted before it was stored; "
                       "it cannot be run again as it was", code="redacted")
    request = original.filters.get("request", {})
    filters = filters_from_json(original.filters.get("filters", {}))
    outcome = memory_search(org_id=org_id, query=original.query, filters=filters,
                            limit=request.get("limit", max(len(original.returned_memory_ids), 1)),
                            mode=request.get("mode", "hybrid"), expand=request.get("expand", False),
                            threshold=request.get("threshold"))
    event = retrieval_event_record(org_id=org_id, kind=RetrievalEvent.Kind.REPLAY, query=original.query,
                                   scope=original.scope, filters=filters, request=request, outcome=outcome,
                                   agent_id=agent_id, user=user, replay_of=original)
    before = {memory_id: rank for rank, memory_id in enumerate(original.returned_memory_ids, start=1)}
    after = {memory_id: rank for rank, memory_id in enumerate(event.returned_memory_ids, start=1)}
    gone = [memory_id for memory_id in before if memory_id not in after]
    reasons = _why_gone(org_id, gone)
    return Replay(
        event=event, original=original,
        added=[{"id": str(m), "rank": after[m]} for m in after if m not in before],
        removed=[{"id": str(m), "rank": before[m], "reason": reasons[m]} for m in gone],
        moved=[{"id": str(m), "from": before[m], "to": after[m]} for m in after if m in before and before[m] != after[m]],
        unchanged=before == after,
    )


# --------------------------------------------------------------------------- hot memories


HOT_SCORE_SQL = """
    SELECT m.id::text,
           0.40 * confidence
         + 0.35 / (1 + greatest(extract(epoch FROM now() - created_at) / 3600, 0.01) / 24)
         + 0.25 * least(coalesce(usage.retrieval_count, 0) / 10.0, 1.0) AS score
    FROM memories m LEFT JOIN memory_usage usage ON usage.org_id = m.org_id AND usage.memory_id = m.id
    WHERE m.org_id = %s AND agent_id = %s AND status = 'active' AND deleted_at IS NULL
      AND (expires_at IS NULL OR expires_at > now())
    ORDER BY score DESC, id
    LIMIT %s
"""


def hot_memories(*, org_id, agent_id, limit: int) -> list[Memory]:
    """The agent's hottest memories (seed 001): from the Redis set, rebuilt from PostgreSQL
    when it expired or Redis is unreachable."""
    size = settings.MEMORY_PLATFORM["HOT_CACHE_SIZE"]
    with tenant_context(org_id):
        ids = cache.hot_memory_ids(org_id, agent_id, limit)
        if ids is None:
            with connection.cursor() as cursor:
                cursor.execute(HOT_SCORE_SQL, [org_id, agent_id, size])
                scored = [(memory_id, float(score)) for memory_id, score in cursor.fetchall()]
            cache.hot_memories_fill(org_id, agent_id, scored)
            ids = [memory_id for memory_id, _ in scored[:limit]]
        memories = _load(org_id, ids)
        live = [memories[uuid.UUID(i)] for i in ids if uuid.UUID(i) in memories]
    return [m for m in live if m.status == "active" and m.deleted_at is None]
