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
import itertools
import logging
import uuid
from dataclasses import dataclass
from typing import Callable, Iterator

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
# What refers to a memory, deleted before it: (the count's name, the table, its columns that
# may name one).
REFERRING = (
    ("versions", "memory_versions", ("memory_id",)),
    ("relationships", "memory_relationships", ("source_id", "target_id")),
    ("tags", "memory_tags", ("memory_id",)),
    ("usage", "memory_usage", ("memory_id",)),
    ("artifact_links", "memory_artifacts", ("memory_id",)),
    ("duplicate_candidates", "memory_duplicate_candidates", ("memory_id", "candidate_id")),
    ("entity_links", "memory_entities", ("memory_id",)),
    ("other_model_vectors", "memory_embeddings", ("memory_id",)),
    ("provenance", "provenance", ("memory_id",)),
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
    digest = _Digest()
    digest.add(sorted(str(memory_id) for memory_id in memory_ids))
    return digest.hexdigest()


class _Digest:
    """memories_digest hashed as the ids come, in their order: the database's order of uuids is
    the order of their text, so ids read ORDER BY id hash as memories_digest sorts them."""

    def __init__(self):
        self._hash = hashlib.sha256()
        self._separator = b""

    def add(self, memory_ids) -> None:
        if memory_ids:
            self._hash.update(self._separator + "\n".join(str(memory_id) for memory_id in memory_ids).encode())
            self._separator = b"\n"

    def hexdigest(self) -> str:
        return self._hash.hexdigest()[:32]


def erase(org_id, scope: ErasureScope, *, via: str, agent_id=None, user_id=None, dry_run: bool = False,
          expected_digest: str | None = None, progress: Callable[[int, int], None] | None = None) -> Outcome:
    """Erase the scope's memories and everything they left, as the organisation the caller has
    set (the API's key, a command's tenant_context). Raises NotFound when the scope holds
    nothing to erase. A dry run counts what would go (_count: the rows _erase deletes, read and
    not deleted) and changes nothing. With expected_digest (a dry run's digest), it erases
    only if the scope holds exactly the memories counted then, and otherwise raises Conflict
    (`scope_changed`), erasing nothing.
    progress(done, total) is called as the memories go. Either holds a batch of ids at a time,
    whatever the scope's size."""
    with transaction.atomic(), connection.cursor() as cursor:
        if dry_run:
            counts, digest = _count(cursor, org_id, scope)
        else:
            counts, digest = _erase(cursor, org_id, scope, progress)
        if not any(counts.values()):
            raise NotFound(f"nothing to erase in {scope.describe()}")
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


def _erase(cursor, org_id, scope: ErasureScope, progress) -> tuple[dict, str]:
    """The deletes, a batch of the scope's memories at a time: what refers to them, the
    memories, then what only they held (_going). Ids are named in each statement as arrays (a
    statement that names the organisation and its ids goes to the one node holding it on a
    Citus cluster, which refuses a temporary table joined into a DELETE of a distributed one).
    Returns the rows deleted by kind, and the memories' digest."""
    counts = _counted(scope)
    total = memory_count(org_id, scope) if progress else 0
    digest, queries = _Digest(), _ForgottenQueries()

    def delete(name: str, table: str, where: str, values: list, returning: str = "") -> list:
        cursor.execute(f"DELETE FROM {table} WHERE {where}" + (f" RETURNING {returning}" if returning else ""),
                       values)
        counts[name] += cursor.rowcount
        return [row[0] for row in cursor.fetchall()] if returning else []

    def delete_going(*, entities=(), artifacts=(), events=()) -> list:
        """What goes once nothing kept refers to it; returns the entities' ids that went."""
        gone = []
        for name, table, where, values, cleared in _going(org_id, ("TRUE", []), entities=list(entities),
                                                          artifacts=list(artifacts), events=list(events)):
            if cleared:
                clear_references(cleared, org_id=org_id, rows=Rows(f"SELECT id FROM {table} WHERE {where}",
                                                                   tuple(values)))
            returned = delete(name, table, where, values, RETURNING.get(name, ""))
            if name == "entities":
                gone = returned
            elif name == "retrieval_events":
                queries.forget(returned)
        return gone

    # The idempotency records that name one of the memories: found while the memories are there.
    delete(*_idempotency(org_id, scope))
    # The memories in batches, each with what refers to it first. Other memories may point at
    # them (superseded_by, merged_into), and so may one erased in a later batch than the
    # memory it points at: emptied first, as ON DELETE SET NULL did.
    for batch in _in_batches(*_scope_memories(org_id, scope)):
        digest.add(batch)
        linked = _linked(cursor, org_id, batch)
        for name, table, where, values in _referring(org_id, batch):
            delete(name, table, where, values)
        clear_references("memories", org_id=org_id, rows=batch)
        delete("memories", "memories", "org_id = %s AND id = ANY(%s)", [org_id, batch])
        entities = delete_going(**linked)
        delete(*_admin_log([*batch, *entities]))
        if progress:
            progress(counts["memories"], max(total, counts["memories"]))
    # What the scope held of its own beside its memories' (under the namespace, or the whole
    # organisation's, and the searches asked in it), a batch at a time.
    for kind, sql, values in _owned(org_id, scope):
        for batch in _in_batches(sql, values):
            delete(*_admin_log(delete_going(**{kind: batch})))
    sessions, session_params = _sessions(scope)
    if sessions:  # the memories of the session out of the scope stay, without it
        where, values = f"s.org_id = %s AND {sessions}", [org_id, *session_params]
        clear_references("sessions", org_id=org_id, rows=Rows(f"SELECT s.id FROM sessions s WHERE {where}",
                                                              tuple(values)))
        delete("sessions", "sessions s", where, values)

    transaction.on_commit(lambda: forget_in_redis(org_id))
    return counts, digest.hexdigest()


def _count(cursor, org_id, scope: ErasureScope) -> tuple[dict, str]:
    """What _erase would delete, by kind, and the memories' digest, without deleting anything:
    the rows it deletes batch by batch, counted at once by what they are (_going with the
    memories kept being those out of the scope; tests/memories/api/test_erasure.py compares the
    counts with the erasure's for every kind of scope). Reads in proportion to the scope."""
    counts = _counted(scope)
    digest = _Digest()

    def count(name: str, table: str, where: str, values: list) -> None:
        cursor.execute(f"SELECT count(*) FROM {table} WHERE {where}", values)
        counts[name] += cursor.fetchone()[0]

    count(*_idempotency(org_id, scope))
    for batch in _in_batches(*_scope_memories(org_id, scope)):
        digest.add(batch)
        counts["memories"] += len(batch)
        count(*_admin_log(batch))
    in_scope, in_scope_params = scope.memories("m")
    # A narrowed scope's memories, if few, are looked up each by key (_Keyed); many, by a scan.
    keyed = in_scope != "TRUE" and counts["memories"] <= KEYED_MEMORIES
    memories = (_Keyed if keyed else Rows)(f"SELECT m.id FROM memories m WHERE m.org_id = %s AND {in_scope}",
                                           (org_id, *in_scope_params))
    for name, table, where, values in _referring(org_id, memories):
        count(name, table, where, values)
    candidates = _candidates(org_id, scope, memories)
    if isinstance(candidates["events"], _Keyed):  # found once (a lookup per memory), not for each count
        for batch in _in_batches(candidates["events"].sql, list(candidates["events"].params)):
            counts["retrieval_events"] += len(batch)
            count("provenance", "provenance p", "p.org_id = %s AND p.retrieval_event_id = ANY(%s::uuid[])",
                  [org_id, batch])
        candidates["events"] = []
    # A link to a memory out of the scope keeps an entity or artifact (none is, when it is all).
    kept = (f"({in_scope}) IS NOT TRUE", in_scope_params) if in_scope != "TRUE" else None
    for name, table, where, values, _ in _going(org_id, kept, **candidates):
        if name == "entities":  # and the admin log's lines about them
            for batch in _in_batches(f"SELECT e.id FROM {table} WHERE {where} ORDER BY e.id", values):
                counts[name] += len(batch)
                count(*_admin_log(batch))
        else:
            count(name, table, where, values)
    sessions, session_params = _sessions(scope)
    if sessions:
        count("sessions", "sessions s", f"s.org_id = %s AND {sessions}", [org_id, *session_params])
    return counts, digest.hexdigest()


# What an erasure counts, in the order a reader reads them (the memories first).
KINDS = ("memories", "versions", "relationships", "tags", "usage", "artifact_links", "duplicate_candidates",
         "entity_links", "other_model_vectors", "provenance", "entity_aliases", "entities", "artifacts",
         "retrieval_events", "idempotency_records", "sessions", "admin_log")


def _counted(scope: ErasureScope) -> dict:
    """The counts of an erasure of the scope, at nothing yet: every kind, but the sessions only
    for a scope that erases sessions (a session erased within a key's namespaces stays)."""
    return dict.fromkeys((kind for kind in KINDS if kind != "sessions" or _sessions(scope)[0]), 0)


# What _erase reads back of the rows _going deletes: the entities' ids (the admin log's lines
# about them go too), the searches' queries (their cached embeddings go).
RETURNING = {"entities": "e.id", "retrieval_events": "query"}


def _in_batches(sql: str, values: list) -> Iterator[list]:
    """The first column of a query's rows, a batch at a time, from a cursor the server keeps:
    it reads them from the one snapshot it opened with, so rows the transaction deletes
    meanwhile (or others write) do not change what it reads, and a batch at a time is all the
    process holds. Planned for every row (cursor_tuple_fraction 1), as a statement is."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL cursor_tuple_fraction = 1")
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, values)
        while rows := cursor.fetchmany(BATCH):
            yield [row[0] for row in rows]


def _scope_memories(org_id, scope: ErasureScope) -> tuple[str, list]:
    """The scope's memories in key order: the order of memories_digest."""
    where, params = scope.memories("m")
    return f"SELECT m.id FROM memories m WHERE m.org_id = %s AND {where} ORDER BY m.id", [org_id, *params]


# The most memories a dry run looks up each by key (_Keyed), so that the array of their ids in
# a statement stays under a megabyte (800 kB); a larger scope is counted by scans, as the whole
# organisation is.
KEYED_MEMORIES = 50_000


class _Keyed(Rows):
    """A query of rows few beside their organisation's (a narrowed scope's memories, what they
    link to): a statement finds what refers to them by looking each up on its index. As `IN
    (query)` the planner hashes them and reads the whole referring table to probe the hash,
    which at 1% of a 1M organisation is most of a dry run's time and grows with the
    organisation, not the scope (benchmarks/scale/README.md); as `= ANY(ARRAY(query))` the query
    runs once and the index is read for its ids."""


def _in(column: str, rows: Rows | list) -> tuple[str, list]:
    """`column` is one of `rows`: ids named in the statement (a batch), or a query of them."""
    if isinstance(rows, _Keyed):
        return f"{column} = ANY(ARRAY({rows.sql}))", list(rows.params)
    if isinstance(rows, Rows):
        return f"{column} IN ({rows.sql})", list(rows.params)
    return f"{column} = ANY(%s::uuid[])", [rows]


def _referring(org_id, memories: Rows | list) -> list[tuple[str, str, str, list]]:
    """(the count's name, the table, the condition, its values) of what refers to these memories.
    A row with two columns that may name one (a relationship's ends) is found by each on its
    index: OR between two subqueries would be read as a subquery per row (not hashed once the
    memories outgrow work_mem); between two arrays it is a bitmap OR of two index scans."""
    steps = []
    for name, table, columns in REFERRING:
        conditions = [_in(column, memories) for column in columns]
        if isinstance(memories, Rows) and len(columns) > 1:
            either = " UNION ".join(f"SELECT id FROM {table} WHERE org_id = %s AND {sql}" for sql, _ in conditions)
            steps.append((name, table, f"org_id = %s AND id IN ({either})",
                          [org_id, *(value for _, values in conditions for value in (org_id, *values))]))
        else:
            steps.append((name, table, "org_id = %s AND (" + " OR ".join(sql for sql, _ in conditions) + ")",
                          [org_id, *(value for _, values in conditions for value in values)]))
    return steps


def _linked(cursor, org_id, memory_ids: list) -> dict:
    """The entities, artifacts and retrieval events these memories refer to or were returned
    by: what may go with them (_going's arguments)."""
    linked = {}
    for kind, column, table in (("entities", "entity_id", "memory_entities"),
                                ("artifacts", "artifact_id", "memory_artifacts")):
        cursor.execute(f"SELECT DISTINCT {column} FROM {table} WHERE org_id = %s AND memory_id = ANY(%s::uuid[])",
                       [org_id, memory_ids])
        linked[kind] = [row[0] for row in cursor.fetchall()]
    cursor.execute(RETURNING_ANY_SQL, [memory_ids, org_id])
    linked["events"] = list({row[0] for row in cursor.fetchall()})
    return linked


def _candidates(org_id, scope: ErasureScope, memories: Rows) -> dict:
    """_linked and _owned at once, as queries (a dry run's)."""
    candidates = {}
    for kind, column, table, alias in (("entities", "entity_id", "memory_entities", "e"),
                                       ("artifacts", "artifact_id", "memory_artifacts", "a")):
        under = scope.under(f"{alias}.scope")
        if under and under[0] == "TRUE":  # all the organisation's (and Citus plans no UNION of them)
            candidates[kind] = Rows(f"SELECT {alias}.id FROM {kind} {alias} WHERE {alias}.org_id = %s", (org_id,))
            continue
        linked, linked_params = _in("memory_id", memories)
        sql, params = f"SELECT {column} FROM {table} WHERE org_id = %s AND {linked}", (org_id, *linked_params)
        if under:
            sql += f" UNION SELECT {alias}.id FROM {kind} {alias} WHERE {alias}.org_id = %s AND {under[0]}"
            params += (org_id, *under[1])
        candidates[kind] = type(memories)(sql, params)
    asked, asked_params = _events_asked(scope)
    sql, params = f"SELECT r.id FROM retrieval_events r WHERE r.org_id = %s AND {asked}", (org_id, *asked_params)
    if asked != "TRUE":  # and those that returned one of the memories, by the index (RETURNING_ANY_SQL)
        sql += (f" UNION SELECT r.id FROM ({memories.sql}) AS erased(memory_id) CROSS JOIN LATERAL ("
                "SELECT r.id FROM retrieval_events r WHERE r.org_id = %s AND r.returned_memory_ids @> ARRAY[erased.memory_id]) r")
        params += (*memories.params, org_id)
    candidates["events"] = type(memories)(sql, params)
    return candidates


def _owned(org_id, scope: ErasureScope) -> list[tuple[str, str, list]]:
    """(the kind, the query of its ids in key order) of what the scope holds of its own, beside
    what its memories refer to: the entities and artifacts kept under its namespace (or all the
    organisation's), the searches asked in it."""
    owned = []
    for kind, alias in (("entities", "e"), ("artifacts", "a")):
        under = scope.under(f"{alias}.scope")
        if under:
            owned.append((kind, f"SELECT {alias}.id FROM {kind} {alias} WHERE {alias}.org_id = %s AND {under[0]}"
                                f" ORDER BY {alias}.id", [org_id, *under[1]]))
    asked, asked_params = _events_asked(scope)
    if asked != "FALSE":
        owned.append(("events", f"SELECT r.id FROM retrieval_events r WHERE r.org_id = %s AND {asked} ORDER BY r.id",
                      [org_id, *asked_params]))
    return owned


def _going(org_id, kept: tuple[str, list] | None, *, entities: Rows | list, artifacts: Rows | list,
           events: Rows | list) -> list[tuple[str, str, str, list, str | None]]:
    """(the count's name, the table as an alias, the condition, its values, the table whose
    references to the rows are emptied first or None) of what goes with erased memories: of
    `entities` and `artifacts` (ids, or a query of them) those no memory kept links to, and the
    retrieval `events`, with their aliases and provenance. `kept` is the condition on a linked
    memory m that keeps them: TRUE once the erased ones are gone, None when no memory is kept (a
    condition false throughout keeps Citus from seeing the statement's tables on one node). A
    provenance row has one subject: these are none of the memories' (deleted with them)."""
    if not any(isinstance(rows, Rows) or rows for rows in (entities, artifacts, events)):
        return []

    def unlinked(links: str, column: str, row: str) -> tuple[str, list]:
        if kept is None:
            return "TRUE", []
        kept_sql, kept_params = kept
        return (f"NOT EXISTS (SELECT 1 FROM {links} l JOIN memories m ON m.org_id = l.org_id AND m.id = l.memory_id"
                f" WHERE l.org_id = %s AND l.{column} = {row} AND {kept_sql})", [org_id, *kept_params])

    events_in, events_params = _in("p.retrieval_event_id", events)
    artifact_in, artifact_params = _in("p.artifact_id", artifacts)
    artifact_left, artifact_left_params = unlinked("memory_artifacts", "artifact_id", "p.artifact_id")
    entity_in, entity_params = _in("e.id", entities)
    entity_left, entity_left_params = unlinked("memory_entities", "entity_id", "e.id")
    entities_going = f"e.org_id = %s AND {entity_in} AND {entity_left}"
    entities_going_params = [org_id, *entity_params, *entity_left_params]
    artifacts_in, artifacts_params = _in("a.id", artifacts)
    artifacts_left, artifacts_left_params = unlinked("memory_artifacts", "artifact_id", "a.id")
    retrieval_in, retrieval_params = _in("id", events)
    return [  # (a provenance row has exactly one subject: the two are apart)
        ("provenance", "provenance p", f"p.org_id = %s AND {events_in}", [org_id, *events_params], None),
        ("provenance", "provenance p", f"p.org_id = %s AND {artifact_in} AND {artifact_left}",
         [org_id, *artifact_params, *artifact_left_params], None),
        ("entity_aliases", "entity_aliases", f"org_id = %s AND entity_id IN (SELECT e.id FROM entities e "
                                             f"WHERE {entities_going})", [org_id, *entities_going_params], None),
        ("entities", "entities e", entities_going, entities_going_params, None),
        # An artifact no memory kept links to has no provenance left either (the first step
        # took it; the foreign key would refuse the delete otherwise).
        ("artifacts", "artifacts a", f"a.org_id = %s AND {artifacts_in} AND {artifacts_left}",
         [org_id, *artifacts_params, *artifacts_left_params], None),
        ("retrieval_events", "retrieval_events", f"org_id = %s AND {retrieval_in}", [org_id, *retrieval_params],
         "retrieval_events"),
    ]


def _idempotency(org_id, scope: ErasureScope) -> tuple[str, str, str, list]:
    """The idempotency records whose stored response names one of the scope's memories (read
    while they are there), or that the erased agent or organisation wrote."""
    written, written_params = _idempotency_written(scope)
    in_scope, in_scope_params = scope.memories("m")
    return ("idempotency_records", "idempotency_records i", f"""i.org_id = %s AND ({written} OR EXISTS (
            SELECT 1 FROM regexp_matches(i.response_body::text, %s, 'g') AS found(id)
            JOIN memories m ON m.org_id = %s AND m.id = found.id[1]::uuid WHERE {in_scope}))""",
            [org_id, *written_params, UUID_PATTERN, org_id, *in_scope_params])


def _admin_log(ids: list) -> tuple[str, str, str, list]:
    """The admin log's lines about these memories or entities (they quote the content)."""
    return "admin_log", "django_admin_log", "object_id = ANY(%s)", [[str(id) for id in ids]]


class _ForgottenQueries:
    """The cached embeddings of the erased searches' queries, by every model, dropped from Redis
    as the searches go: a cache, so one dropped for an erasure that then rolls back is computed
    again when next asked. When Redis is unreachable the first time, it stops trying (it logs;
    they expire with QUERY_EMBEDDING_CACHE_SECONDS)."""

    def __init__(self):
        self.reachable = True

    def forget(self, queries: list[str]) -> None:
        if not (queries and self.reachable):
            return
        try:
            cache.client().delete(*[key for query in set(queries) for key in cache.query_keys(query)])
        except redis.RedisError as exc:
            self.reachable = False
            logger.warning("erased searches' cached query embeddings not removed from Redis (%s)",
                           type(exc).__name__)


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


def forget_in_redis(org_id) -> None:
    """The places in the organisation's hot sets and retrieval counters of the memories that are
    no longer there (those just erased), each set read a thousand at a time and checked against
    the memories: what it reads is bounded by what Redis holds, not by what went. Then the word
    statistics. Run after the erasure commits, so neither failing undoes it: Redis is a cache
    (when it is unreachable this logs and goes on; the hot sets expire, and the counters of
    memories that no longer exist update no row), and the worker folds the statistics every 30 s."""
    client = cache.client()
    try:
        for key in client.scan_iter(match=cache.HOT_KEY.format(org_id=org_id, agent_id="*"), count=1000, _type="zset"):
            for members in _chunks(member for member, _ in client.zscan_iter(key, count=1000)):
                if gone := _not_memories(org_id, members):
                    client.zrem(key, *gone)
        for key in (RETRIEVAL_COUNTS_KEY.format(org_id=org_id), RETRIEVAL_LAST_KEY.format(org_id=org_id)):
            for fields in _chunks(field for field, _ in client.hscan_iter(key, count=1000)):
                if gone := _not_memories(org_id, fields):
                    client.hdel(key, *gone)
    except redis.RedisError as exc:
        logger.warning("erased memories not removed from Redis (%s)", type(exc).__name__)
    try:
        lexicon.fold()  # the erased memories' words leave the statistics now, not in 30 s
    except DatabaseError as exc:  # the worker's fold takes them within 30 s
        logger.warning("word statistics not folded after an erasure (%s)", type(exc).__name__)


def _chunks(values: Iterator, size: int = 1000) -> Iterator[list]:
    while chunk := list(itertools.islice(values, size)):
        yield chunk


def _not_memories(org_id, members: list[bytes]) -> list[bytes]:
    """Those of Redis's members that name no memory of the organisation (as it reads them)."""
    named = {}
    for member in members:
        try:
            named[member] = uuid.UUID(member.decode())
        except ValueError:
            named[member] = None
    with tenant_context(org_id), connection.cursor() as cursor:
        cursor.execute("SELECT id FROM memories WHERE org_id = %s AND id = ANY(%s::uuid[])",
                       [org_id, [id for id in named.values() if id]])
        there = {row[0] for row in cursor.fetchall()}
    return [member for member, id in named.items() if id not in there]
