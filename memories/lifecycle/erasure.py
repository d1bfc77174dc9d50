"""Erasure: a hard delete that leaves nothing behind (spec §0's "forget everything about this
user"), by namespace prefix, by agent, by session, or the whole organisation's memory; and
the memories past their expiry (spec §2's TTL: memories.lifecycle.expiry sweeps them here).

What goes, in one transaction, as the organisation (row-level security keeps it inside):
  * the memories of the scope, whatever their status (deleted, superseded, pending...), their
    vectors and full-text vectors with them, and every row that refers to one: versions,
    relationships (either end), tags, usage, artifact links, provenance, duplicate candidates,
    entity links, their vectors by other models than the active one (memory_embeddings:
    the one being built, the one kept to roll back to; memories.lifecycle.reembed);
  * the entities and artifacts only those memories referred to (and, for a namespace or the
    whole organisation, those kept under it), with their aliases;
  * the retrieval events that returned one of them or were asked in the scope (their query
    is free text about it), with their provenance;
  * the idempotency records whose stored response names one of them, or that the agent or
    organisation erased wrote;
  * the sessions erased (a session, an agent's, those under the namespace, or all);
  * the admin log's lines about the memories and entities erased (they quote the content);
and what only referred to something erased stays, its reference emptied first
(memory_platform.references): a memory kept that one erased superseded or merged, a replay
of an erased retrieval event, a memory out of the scope in an erased session;
and once it commits: the memories' places in the hot sets and the retrieval counters in
Redis, the cached embeddings of the erased events' queries by every model (a query matched
without the name of the person it named is cached under those other words, and expires with
QUERY_EMBEDDING_CACHE_SECONDS), and the word statistics the memories counted (folded at once,
so the words go too).

The erasure itself is recorded (memories.models.Erasure): who asked, the scope, the rows
deleted by kind, never what they held. The organisation, its agents, keys and operators stay.
A write into the scope while the erasure runs is not erased (it is not yet visible to it).
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from typing import Callable

import redis
from django.db import DatabaseError, connection, transaction

from memories.access import namespace_sql
from memories.caching import cache
from memories.errors import Conflict, InvalidInput, NotFound
from memories.lifecycle import tallies, tracking
from memories.models import Erasure
from memories.retrieval.events import RETRIEVAL_COUNTS_KEY, RETRIEVAL_LAST_KEY
from memories.understanding import lexicon
from memory_platform.references import Rows, clear_references
from tenants.context import tenant_context

logger = logging.getLogger(__name__)

BATCH = 5_000  # memories deleted per statement, so a long erasure can show its progress
# What refers to a memory, deleted before it: (the count's name, the table, the condition on a
# batch of memory ids, each %s the batch).
REFERRING = (
    ("versions", "memory_versions", "memory_id = ANY(%s)"),
    ("relationships", "memory_relationships", "(source_id = ANY(%s) OR target_id = ANY(%s))"),
    ("tags", "memory_tags", "memory_id = ANY(%s)"),
    ("usage", "memory_usage", "memory_id = ANY(%s)"),
    ("artifact_links", "memory_artifacts", "memory_id = ANY(%s)"),
    ("duplicate_candidates", "memory_duplicate_candidates", "(memory_id = ANY(%s) OR candidate_id = ANY(%s))"),
    ("entity_links", "memory_entities", "memory_id = ANY(%s)"),
    ("other_model_vectors", "memory_embeddings", "memory_id = ANY(%s)"),
    ("provenance", "provenance", "memory_id = ANY(%s)"),
)
UUID_PATTERN = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


@dataclass(frozen=True)
class ErasureScope:
    """What to erase: everything under a namespace prefix, an agent's, a session's, or the
    whole organisation's memory. An agent erasing its own data gives its agent_id with a
    namespace or a session: then only its own memories in it go."""

    namespace: str | None = None  # "users/alice": that namespace and every one under it
    agent_id: uuid.UUID | None = None
    session_id: uuid.UUID | None = None
    everything: bool = False
    within: tuple[str, ...] = ()  # an API key's namespace prefixes: nothing outside them goes
    expired: bool = False  # the memories past their expiry (memories.lifecycle.expiry)

    def __post_init__(self):
        if self.everything and (self.namespace is not None or self.agent_id or self.session_id or self.expired):
            raise InvalidInput("erasing everything takes no other scope")
        if self.expired and (self.namespace is not None or self.agent_id or self.session_id):
            raise InvalidInput("the expired memories are erased on their own")
        if self.namespace is not None and self.session_id:
            raise InvalidInput("give a namespace or a session, not both")
        if self.namespace is not None and not self.namespace.strip("/"):
            raise InvalidInput("the namespace to erase is empty", field="namespace")
        if not (self.everything or self.expired or self.namespace is not None or self.agent_id or self.session_id):
            raise InvalidInput("say what to erase: a namespace, an agent, a session, or everything")

    def as_json(self) -> dict:
        scope = {"all": True} if self.everything else {"expired": True} if self.expired else {}
        if self.namespace is not None:
            scope["namespace"] = self.namespace
        if self.agent_id:
            scope["agent"] = str(self.agent_id)
        if self.session_id:
            scope["session"] = str(self.session_id)
        return scope

    @classmethod
    def from_json(cls, scope: dict) -> ErasureScope:
        """The scope as_json wrote (a queued erasure's)."""
        return cls(namespace=scope.get("namespace"), agent_id=uuid.UUID(scope["agent"]) if scope.get("agent") else None,
                   session_id=uuid.UUID(scope["session"]) if scope.get("session") else None,
                   everything=bool(scope.get("all")), expired=bool(scope.get("expired")))

    def describe(self) -> str:
        """In words, for messages: 'namespace users/alice of agent ...'."""
        if self.everything:
            return "the whole organisation"
        if self.expired:
            return "the memories past their expiry"
        parts = [f"namespace {self.namespace}" if self.namespace is not None else "",
                 f"session {self.session_id}" if self.session_id else "",
                 f"agent {self.agent_id}" if self.agent_id else ""]
        return " of ".join(part for part in parts if part)

    def memories(self, alias: str = "m") -> tuple[str, list]:
        """The condition on memories (as `alias`) that picks the scope's."""
        conditions, params = [], []
        if self.expired:
            conditions.append(f"{alias}.expires_at <= now()")
        if self.namespace is not None:
            sql, values = namespace_sql(self.namespace, f"{alias}.scope")
            conditions.append(sql)
            params += values
        if self.agent_id:
            conditions.append(f"{alias}.agent_id = %s")
            params.append(self.agent_id)
        if self.session_id:
            conditions.append(f"{alias}.session_id = %s")
            params.append(self.session_id)
        if self.within:
            under = [namespace_sql(prefix, f"{alias}.scope") for prefix in self.within]
            conditions.append("(" + " OR ".join(sql for sql, _ in under) + ")")
            params += [value for _, values in under for value in values]
        return " AND ".join(conditions) or "TRUE", params

    def under(self, column: str) -> tuple[str, list] | None:
        """The condition that a row kept under a namespace (`column`) belongs to the scope
        on its own, whatever it refers to: under the namespace, or anything of the
        organisation when it is all erased; None for an agent's or a session's."""
        if self.everything:
            return "TRUE", []
        if self.namespace is not None and not self.agent_id:
            return namespace_sql(self.namespace, column)
        return None


@dataclass
class Outcome:
    erasure: Erasure | None  # None for a dry run
    counts: dict
    digest: str = ""  # which memories went (or, for a dry run, would go): memories_digest


def memories_digest(memory_ids) -> str:
    """Which memories a scope holds, in a few characters that say nothing of them: what a
    confirmation names, so that an erasure confirmed for some memories erases exactly those."""
    joined = "\n".join(sorted(str(memory_id) for memory_id in memory_ids))
    return hashlib.sha256(joined.encode()).hexdigest()[:32]


def erase(org_id, scope: ErasureScope, *, via: str, agent_id=None, user_id=None, dry_run: bool = False,
          expected_digest: str | None = None, progress: Callable[[int, int], None] | None = None) -> Outcome:
    """Erase the scope's memories and everything they left, as the organisation the caller has
    set (the API's key, a command's tenant_context). Raises NotFound when the scope holds
    nothing to erase. A dry run counts what would go (_count: the erasure's conditions, read
    and not deleted) and changes nothing. With expected_digest (a dry run's digest), it erases
    only if the scope holds exactly the memories counted then, and otherwise raises Conflict
    (`scope_changed`), erasing nothing.
    progress(done, total) is called as the memories go."""
    with transaction.atomic(), connection.cursor() as cursor:
        if dry_run:
            counts, memory_ids = _count(cursor, org_id, scope)
        else:
            counts, memory_ids = _erase(cursor, org_id, scope, progress)
        if not any(counts.values()):
            raise NotFound(f"nothing to erase in {scope.describe()}")
        digest = memories_digest(memory_ids)
        if expected_digest is not None and digest != expected_digest:
            raise Conflict(f"{scope.describe()} changed since its memories were counted (it holds "
                           f"{counts['memories']} now); nothing was erased", code="scope_changed")
        if dry_run:
            return Outcome(erasure=None, counts=counts, digest=digest)
        erasure = Erasure.objects.create(org_id=org_id, scope=scope.as_json(), counts=counts, via=via,
                                         requested_by_agent_id=agent_id, requested_by_user_id=user_id)
    logger.info("erasure done", extra={"erasure_id": str(erasure.pk), "org_id": str(org_id), "via": via,
                                       "memories": counts["memories"]})
    return Outcome(erasure=erasure, counts=counts, digest=digest)


def memory_count(org_id, scope: ErasureScope) -> int:
    """How many memories the scope holds, whatever their status: what an operator confirms
    before erasing (a dry run counts every kind of row). A namespace's are counted on the index
    of every memory's namespace (memories_namespace_all), not a walk of the organisation's."""
    if scope.everything:  # counted without reading the organisation's memories (docs/adr/0056)
        return tallies.memories_held(org_id)
    where, params = scope.memories("m")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM memories m WHERE m.org_id = %s AND {where}", [org_id, *params])
        return cursor.fetchone()[0]


# An erasure the console starts runs on the worker (a whole organisation's can outlast a
# request), reporting its progress in its job; the page follows it (memories.lifecycle.tracking).
ERASE_QUEUE = "maintenance"
ERASE_TIMEOUT_SECONDS = 4 * 3600


@dataclass
class ErasureStatus:
    state: str  # queued, started, finished, failed
    scope: str  # in words
    done: int = 0
    total: int = 0
    result: dict | None = None  # {"erasure": id, "counts": {...}} or {"error": ...}

    @property
    def running(self) -> bool:
        return self.state in tracking.RUNNING


def erase_enqueue(*, org_id, scope: ErasureScope, user_id) -> str:
    """Ask the worker to erase the scope for an operator; returns the job's id. Raises
    Redis's errors if the queue is unreachable (nothing is erased then)."""
    import django_rq

    job_id = str(uuid.uuid4())
    django_rq.get_queue(ERASE_QUEUE, commit_mode="auto").enqueue(
        erase_job, org_id=str(org_id), scope=scope.as_json(), user_id=user_id, job_id=job_id,
        job_timeout=ERASE_TIMEOUT_SECONDS, result_ttl=tracking.KEPT_SECONDS, failure_ttl=tracking.KEPT_SECONDS,
        meta={"org_id": str(org_id), "scope": scope.describe()})
    return job_id


def erase_job(*, org_id: str, scope: dict, user_id) -> dict:
    """The worker's side of erase_enqueue: the erasure, as the organisation, its progress in
    the job. Returns {"erasure": id, "counts": ...}, or {"error": ...} when there was nothing
    to erase."""

    def progress(done: int, total: int) -> None:
        tracking.report_progress(done=done, total=total)

    try:
        with tenant_context(org_id):
            outcome = erase(org_id, ErasureScope.from_json(scope), via="console", user_id=user_id, progress=progress)
    except NotFound as exc:
        return {"error": exc.message}
    return {"erasure": str(outcome.erasure.pk), "counts": outcome.counts}


def erase_status(*, org_id, job_id: str) -> ErasureStatus | None:
    """Where an erasure of this organisation stands; None for an unknown job or another's."""
    job = tracking.tracked_job(ERASE_QUEUE, org_id=org_id, job_id=job_id)
    if job is None:
        return None
    result = job.result
    if job.state == "failed":
        result = {"error": "the erasure stopped unexpectedly; nothing was erased. The worker's log says why."}
    return ErasureStatus(state=job.state, scope=job.meta.get("scope", ""), done=job.meta.get("done", 0),
                         total=job.meta.get("total", 0), result=result)


def _erase(cursor, org_id, scope: ErasureScope, progress) -> tuple[dict, list]:
    """The deletes, as arrays of ids named in each statement (a statement that names the
    organisation and its ids goes to the one node holding it on a Citus cluster, which
    refuses a temporary table joined into a DELETE of a distributed one). Returns the rows
    deleted by kind, and the memories' ids."""
    counts = {"memories": 0}  # first: what a reader looks for
    erased = _Erased.find(cursor, org_id, scope)
    memory_ids, total = erased.memory_ids, len(erased.memory_ids)

    def delete(name: str, table: str, where: str, values: list) -> None:
        cursor.execute(f"DELETE FROM {table} WHERE {where}", values)
        counts[name] = counts.get(name, 0) + cursor.rowcount

    # The memories in batches, each with what refers to it first. Other memories may point at
    # them (superseded_by, merged_into), and so may one erased in a later batch than the
    # memory it points at: emptied first, as ON DELETE SET NULL did.
    for start in range(0, total, BATCH):
        batch = memory_ids[start:start + BATCH]
        for name, table, where, values in _referring(org_id, batch):
            delete(name, table, where, values)
        clear_references("memories", org_id=org_id, rows=batch)
        delete("memories", "memories", "org_id = %s AND id = ANY(%s)", [org_id, batch])
        if progress:
            progress(counts["memories"], total)

    for name, table, where, values, cleared in _afterwards(org_id, scope, erased):
        if cleared:  # what refers to these rows and stays, emptied first
            clear_references(cleared, org_id=org_id, rows=Rows(f"SELECT id FROM {table} WHERE {where}", tuple(values)))
        delete(name, table, where, values)

    queries = [query for _, query in erased.events]
    erased_ids = [str(id) for id in memory_ids]
    transaction.on_commit(lambda: forget_in_redis(org_id, erased_ids, queries))
    return counts, memory_ids


def _count(cursor, org_id, scope: ErasureScope) -> tuple[dict, list]:
    """What _erase would delete, by kind, and the memories' ids, counted by the same conditions
    (_referring, _afterwards) without deleting anything: reads in proportion to the scope, where
    the erasure rolled back wrote and undid every row of it. Each condition holds of the same
    rows whether the memories are still there or already gone, so a count before and a delete
    after agree (tests/memories/api/test_erasure.py compares them for every kind of scope)."""
    counts = {"memories": 0}
    erased = _Erased.find(cursor, org_id, scope)

    def count(name: str, table: str, where: str, values: list) -> None:
        cursor.execute(f"SELECT count(*) FROM {table} WHERE {where}", values)
        counts[name] = counts.get(name, 0) + cursor.fetchone()[0]

    if erased.memory_ids:
        for name, table, where, values in _referring(org_id, erased.memory_ids):
            count(name, table, where, values)
        counts["memories"] = len(erased.memory_ids)
    for name, table, where, values, _ in _afterwards(org_id, scope, erased):
        count(name, table, where, values)
    return counts, erased.memory_ids


@dataclass
class _Erased:
    """The ids an erasure names in its statements: the scope's memories (oldest first), and the
    entities, artifacts and retrieval events that may go with them."""

    memory_ids: list
    entity_ids: list
    artifact_ids: list
    events: list  # (id, query)

    @classmethod
    def find(cls, cursor, org_id, scope: ErasureScope) -> _Erased:
        where, params = scope.memories("m")
        cursor.execute(f"SELECT m.id FROM memories m WHERE m.org_id = %s AND {where} ORDER BY m.created_at, m.id",
                       [org_id, *params])
        memory_ids = [row[0] for row in cursor.fetchall()]
        # What only they (or the scope) hold: entities, artifacts, retrieval events.
        own_entities, own_params = _or_under(scope, "e.scope")
        cursor.execute(f"""
            SELECT DISTINCT e.id FROM entities e
            WHERE e.org_id = %s AND (e.id IN (SELECT me.entity_id FROM memory_entities me
                                              WHERE me.org_id = %s AND me.memory_id = ANY(%s::uuid[])) OR {own_entities})
        """, [org_id, org_id, memory_ids, *own_params])
        entity_ids = [row[0] for row in cursor.fetchall()]
        own_artifacts, own_artifact_params = _or_under(scope, "a.scope")
        cursor.execute(f"""
            SELECT a.id FROM artifacts a
            WHERE a.org_id = %s AND (a.id IN (SELECT ma.artifact_id FROM memory_artifacts ma
                                              WHERE ma.org_id = %s AND ma.memory_id = ANY(%s::uuid[])) OR {own_artifacts})
        """, [org_id, org_id, memory_ids, *own_artifact_params])
        artifact_ids = [row[0] for row in cursor.fetchall()]
        # Those that returned one of the memories (the index on returned_memory_ids, memories
        # migration 0043), and those asked in the scope: two statements, each on its index,
        # where one with OR between them reads every event of the organisation.
        events = {}
        if memory_ids:
            cursor.execute(RETURNING_ANY_SQL, [memory_ids, org_id])
            events.update(cursor.fetchall())
        asked, asked_params = _events_asked(scope)
        if asked != "FALSE":
            cursor.execute(f"SELECT r.id, r.query FROM retrieval_events r WHERE r.org_id = %s AND {asked}",
                           [org_id, *asked_params])
            events.update(cursor.fetchall())
        return cls(memory_ids, entity_ids, artifact_ids, list(events.items()))


# The retrieval events that returned any of some memories, by the GIN index on
# returned_memory_ids (memories migration 0043): one lookup of the index per memory, so the
# statement reads what the memories' searches returned and nothing else. (`returned_memory_ids
# && <the memories>` in one condition is estimated to match much of the table for a long array,
# and read by a scan comparing every event's ids with every memory's: 11 s for 1,000 memories
# among 100,000 events; docs/adr/0052.) Under row-level security the index serves @> only where
# arraycontains is LEAKPROOF (memory_platform.local_services). An event appears once for each of
# the memories it returned.
RETURNING_ANY_SQL = """
    SELECT r.id, r.query FROM unnest(%s::uuid[]) AS erased(memory_id)
    CROSS JOIN LATERAL (SELECT r.id, r.query FROM retrieval_events r
                        WHERE r.org_id = %s AND r.returned_memory_ids @> ARRAY[erased.memory_id]) AS r
"""


def _referring(org_id, memory_ids: list) -> list[tuple[str, str, str, list]]:
    """(the count's name, the table, the condition, its values) of what refers to these memories."""
    return [(name, table, f"org_id = %s AND {condition}", [org_id, *[memory_ids] * condition.count("%s")])
            for name, table, condition in REFERRING]


def _afterwards(org_id, scope: ErasureScope, erased: _Erased) -> list[tuple[str, str, str, list, str | None]]:
    """(the count's name, the table as an alias, the condition, its values, the table whose
    references to the rows are emptied first or None) of what goes after the memories: what
    nothing refers to any more. Each condition names the erased memories' rows as gone
    (`NOT ... = ANY(memories)`), so it picks the same rows before the memories are deleted
    (a dry run's count) as after (the erasure's delete)."""
    memory_ids = erased.memory_ids
    entity_ids, artifact_ids, event_ids = erased.entity_ids, erased.artifact_ids, [id for id, _ in erased.events]
    linked = ("EXISTS (SELECT 1 FROM memory_artifacts ma WHERE ma.org_id = %s AND ma.artifact_id = {artifact}"
              " AND NOT ma.memory_id = ANY(%s::uuid[]))")
    unreferenced = ("NOT EXISTS (SELECT 1 FROM memory_entities me WHERE me.org_id = %s AND me.entity_id = e.id"
                    " AND NOT me.memory_id = ANY(%s::uuid[]))")
    steps = [
        # A provenance row has one subject: these are none of the memories' (deleted with them).
        ("provenance", "provenance p", f"""p.org_id = %s AND (p.retrieval_event_id = ANY(%s::uuid[])
            OR p.artifact_id = ANY(%s::uuid[]) AND NOT {linked.format(artifact="p.artifact_id")})""",
         [org_id, event_ids, artifact_ids, org_id, memory_ids], None),
        ("entity_aliases", "entity_aliases", f"""org_id = %s AND entity_id IN (
            SELECT e.id FROM entities e WHERE e.org_id = %s AND e.id = ANY(%s::uuid[]) AND {unreferenced})""",
         [org_id, org_id, entity_ids, org_id, memory_ids], None),
        ("entities", "entities e", f"e.org_id = %s AND e.id = ANY(%s::uuid[]) AND {unreferenced}",
         [org_id, entity_ids, org_id, memory_ids], None),
        # An artifact no memory kept links to has no provenance left either (the first step
        # took it; the foreign key would refuse the delete otherwise).
        ("artifacts", "artifacts a", f"a.org_id = %s AND a.id = ANY(%s::uuid[]) AND NOT {linked.format(artifact='a.id')}",
         [org_id, artifact_ids, org_id, memory_ids], None),
        ("retrieval_events", "retrieval_events", "org_id = %s AND id = ANY(%s::uuid[])", [org_id, event_ids],
         "retrieval_events"),
    ]
    kept, kept_params = _idempotency_written(scope)
    steps.append(("idempotency_records", "idempotency_records i", f"""i.org_id = %s AND ({kept} OR EXISTS (
            SELECT 1 FROM regexp_matches(i.response_body::text, %s, 'g') AS found(id)
            WHERE found.id[1]::uuid = ANY(%s::uuid[])))""",
                  [org_id, *kept_params, UUID_PATTERN, memory_ids], None))
    sessions, session_params = _sessions(scope)
    if sessions:  # the memories of the session out of the scope stay, without it
        steps.append(("sessions", "sessions s", f"s.org_id = %s AND {sessions}", [org_id, *session_params],
                      "sessions"))
    # The admin log's lines about what went (they quote the content).
    steps.append(("admin_log", "django_admin_log", "object_id = ANY(%s)",
                  [[str(id) for id in [*memory_ids, *entity_ids]]], None))
    return steps


def _or_under(scope: ErasureScope, column: str) -> tuple[str, list]:
    under = scope.under(column)
    return under if under else ("FALSE", [])


def _events_asked(scope: ErasureScope) -> tuple[str, list]:
    """Retrieval events that belong to the scope by where or by whom they were asked."""
    if scope.everything:
        return "TRUE", []
    if scope.namespace is not None:
        sql, params = namespace_sql(scope.namespace, "r.scope")
        if scope.agent_id:
            return f"({sql} AND r.agent_id = %s)", [*params, scope.agent_id]
        return sql, params
    if scope.agent_id and not scope.session_id:
        return "r.agent_id = %s", [scope.agent_id]
    return "FALSE", []


def _idempotency_written(scope: ErasureScope) -> tuple[str, list]:
    """Idempotency records that go whatever their response holds: the erased agent's, or all."""
    if scope.everything:
        return "TRUE", []
    if scope.agent_id and scope.namespace is None and not scope.session_id:
        return "i.agent_id = %s", [scope.agent_id]
    return "FALSE", []


def _sessions(scope: ErasureScope) -> tuple[str | None, list]:
    """The sessions erased with the scope: the session (the agent's own, if an agent erases
    it, and only with a key that reaches every namespace), an agent's, those kept under the
    namespace, or all."""
    if scope.everything:
        return "TRUE", []
    if scope.session_id:
        if scope.within:  # it may hold memories out of the key's reach, which stay
            return None, []
        if scope.agent_id:
            return "s.id = %s AND s.agent_id = %s", [scope.session_id, scope.agent_id]
        return "s.id = %s", [scope.session_id]
    if scope.agent_id and scope.namespace is None:
        return "s.agent_id = %s", [scope.agent_id]
    if scope.namespace is not None:
        sql, params = namespace_sql(scope.namespace, "s.scope")
        if scope.agent_id:
            return f"{sql} AND s.agent_id = %s", [*params, scope.agent_id]
        return sql, params
    return None, []


def forget_in_redis(org_id, memory_ids: list[str], queries: list[str]) -> None:
    """The erased memories' places in every hot set and retrieval counter of the
    organisation, and the cached embeddings of the erased events' queries; then the word
    statistics. Run after the erasure commits, so neither failing undoes it: Redis is a cache
    (when it is unreachable this logs and goes on; the hot sets expire, and the counters of
    memories that no longer exist update no row), and the worker folds the statistics every 30 s."""
    client = cache.client()
    try:
        with client.pipeline(transaction=False) as pipe:
            for key in client.scan_iter(match=f"{org_id}:hot_memories:*", count=1000):
                for start in range(0, len(memory_ids), 1000):
                    pipe.zrem(key, *memory_ids[start:start + 1000])
            for key in (RETRIEVAL_COUNTS_KEY.format(org_id=org_id), RETRIEVAL_LAST_KEY.format(org_id=org_id)):
                for start in range(0, len(memory_ids), 1000):
                    pipe.hdel(key, *memory_ids[start:start + 1000])
            for query in set(queries):
                pipe.delete(*cache.query_keys(query))
            pipe.execute()
    except redis.RedisError as exc:
        logger.warning("erased memories not removed from Redis (%s)", type(exc).__name__)
    try:
        lexicon.fold()  # the erased memories' words leave the statistics now, not in 30 s
    except DatabaseError as exc:  # the worker's fold takes them within 30 s
        logger.warning("word statistics not folded after an erasure (%s)", type(exc).__name__)
