"""Retrieval events: each search recorded as what it was asked and what it returned, so it can
be replayed later; and the access reinforcement each retrieval brings its memories.

Reinforcement (retrieval_count, last_retrieved_at) is counted in Redis after the response and
written to PostgreSQL in batches by a periodic job (inline after commit if Redis is down):
the read path itself adds no write per row.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass

import redis
from django.db import connection, transaction
from django.utils import timezone
from psycopg.types.json import Jsonb

from memories.caching import cache
from memories.errors import Conflict, NotFound
from memories.intake.redaction import Redactor, redactor_for
from memories.models import Memory, RetrievalEvent
from memories.retrieval import context
from memories.retrieval.filters import SearchFilters
from memories.retrieval.pipeline import memory_search
from memories.retrieval.ranking import SearchOutcome
from memory_platform.after_response import after_response
from memory_platform.database import prepared_cursor
from tenants.context import tenant_context

logger = logging.getLogger(__name__)


# Every search writes one (the API's search, retrieve, store search, context, replay): one
# statement planned once a connection (docs/adr/0063), with the values the ORM would have sent.
# Through RetrievalEvent.objects.create it cost ~1 ms more a search, building and compiling the
# INSERT (docs/adr/0066).
INSERT_EVENT_SQL = """
    INSERT INTO retrieval_events (id, org_id, kind, agent_id, user_id, query, scope, filters, returned_memory_ids,
                                  returned_scores, returned_artifact_ids, details, replay_of, created_at)
    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::uuid[], %s::float8[], %s::uuid[], %s, %s, %s)
"""


def retrieval_event_record(*, org_id, kind: str, query: str, namespace: str, filters: SearchFilters, request: dict,
                           outcome: SearchOutcome, agent_id=None, user=None, replay_of=None,
                           artifact_ids: list | None = None, redactor: Redactor | None = None) -> RetrievalEvent:
    """Record a search as the tenant the caller has set, and count a retrieval for each memory
    it returned once the transaction commits. request: the options it was asked with, by the
    product's names (limit, mode...). artifact_ids: those the returned memories refer to, if
    the caller has read them itself (by default, the ones their records were loaded with).
    redactor: the organisation's, if the caller has it (Caller.redactor); else it is read."""
    ids = [result.memory.pk for result in outcome.results]
    # What the caller asked is free text kept for audit: redacted like a memory's content. The
    # filters' and the request's names are the product's own (SearchFilters' fields, the
    # options a use case records): only their values are the caller's (most of them empty),
    # which spares each search ~30 redactions of names (each runs ~45 patterns).
    redactor = redactor or redactor_for(org_id)
    redacted = Counter()
    recorded_filters = {part: {name: redactor.json(value, redacted)[0] for name, value in asked.items()}
                        for part, asked in (("filters", filters.as_json()), ("request", request))}
    recorded_query = redactor.text(query)
    redacted.update(recorded_query.kinds)
    event = RetrievalEvent(
        org_id=org_id, kind=kind, agent_id=agent_id, user=user, query=recorded_query.text,
        namespace=redactor.plain(namespace), filters=recorded_filters,
        returned_memory_ids=ids, returned_scores=[result.score for result in outcome.results],
        returned_artifact_ids=sorted({artifact for result in outcome.results for artifact in result.memory.artifact_ids},
                                     key=str) if artifact_ids is None else artifact_ids,
        details={"signals": {str(r.memory.pk): r.signals for r in outcome.results},
                 "degraded": outcome.degraded, "vector_method": outcome.vector_method,
                 "filled_from_fulltext": outcome.filled_from_fulltext,
                 # What was asked is not all kept: a replay could not ask it again.
                 **({"redacted": True} if redacted else {})},
        replay_of=replay_of, created_at=timezone.now(),
    )
    with prepared_cursor() as cursor:
        cursor.execute(INSERT_EVENT_SQL, [
            event.pk, event.org_id, event.kind, event.agent_id, event.user_id, event.query, event.namespace,
            Jsonb(event.filters), event.returned_memory_ids, event.returned_scores, event.returned_artifact_ids,
            Jsonb(event.details), event.replay_of_id, event.created_at])
    event._state.adding, event._state.db = False, connection.alias  # as a saved row is
    reinforce_after_commit(org_id, ids)
    return event


# --------------------------------------------------------------------------- reinforcement

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
    in one statement. Returns how many memories it changed. It runs with no caller's tenant
    around it (the periodic flush, an after-response callback), so it sets org_id itself."""
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
    filters = SearchFilters.from_json(original.filters.get("filters", {}))
    if original.kind == RetrievalEvent.Kind.CONTEXT:  # what a prompt would be given now
        outcome = context.assemble(org_id=org_id, query=original.query, filters=filters,
                                   max_tokens=request["max_tokens"], candidates=request["candidates"],
                                   encoding_name=request["encoding"], order=request["order"]).outcome
    else:
        outcome = memory_search(org_id=org_id, query=original.query, filters=filters,
                                limit=request.get("limit", max(len(original.returned_memory_ids), 1)),
                                mode=request.get("mode", "hybrid"), expand=request.get("expand", False),
                                threshold=request.get("threshold"))
    event = retrieval_event_record(org_id=org_id, kind=RetrievalEvent.Kind.REPLAY, query=original.query,
                                   namespace=original.namespace, filters=filters, request=request, outcome=outcome,
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
