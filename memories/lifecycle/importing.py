"""Import (JSONL): a file memories.lifecycle.export wrote, from this deployment or another,
into one organisation, as the rows of that organisation, with new ids.

Two passes over the file, in one transaction, as the organisation the caller has set (row-
level security keeps every write inside it):

1. Check and plan. Every line is read and checked (memories.lifecycle.portability), and
   every record that becomes a row is given its id in this organisation: a new one, or the
   id of the row it is already here as. Nothing but the plan is written (in temporary
   tables, so the Python process holds no map of ids, whatever the file's size). A bad line
   stops the import here, its number named, with nothing written; with skip_bad_lines it is
   reported and left out instead.
2. Write, a chunk of records at a time, each reference resolved through the plan.

What is already here is never written again, and never changed: importing a file twice adds
nothing the second time.
  * agents are matched by name (and created when new);
  * a memory, session or artifact is here when a row of the organisation came from the same
    origin (the id the file names as its `origin`, kept as portability.ORIGIN_KEY in what
    an import writes), or is that row itself;
  * entities are matched by namespace, kind and name (their aliases are added);
  * relationships, tags, entity links, near-duplicate pairs are unique where they are kept.
A live memory whose content an equal live memory of the same agent already holds in the
same namespace, or whose namespace and key a memory here already holds, is a duplicate: it
is skipped and reported, and what the file relates to it is related to the one here.

A memory arrives as it was: its status, history (versions), timestamps, tags, usage,
entity links, artifacts and provenance. Its content, metadata and provenance, and the
other free text, are redacted by this organisation's policy as any write's are, and its
content hash is computed again. Its vector is kept when the file's model is the one this
deployment embeds with; otherwise it is stored pending and the worker embeds it
(memories.jobs.embed_pending). Rows are written by plain INSERTs, so the triggers keep the
word statistics (memories.understanding.lexicon) and PostgreSQL the vector and full-text indexes, as for
any write; an imported memory joins the agent's hot set when it is next used.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from memories.errors import InvalidInput
from memories.intake.redaction import Redactor, redactor_for
from memories.lifecycle import decay, tracking
from memories.lifecycle.portability import (
    MAX_LINE_BYTES,
    ORIGIN_KEY,
    RECORD_ORDER,
    BadRecord,
    decode,
    read,
    with_origin,
)
from memories.models import EMBEDDING_DIMENSIONS, live_sql
from memories.understanding import lexicon
from memories.understanding.entities import name_key
from memories.vectors.embeddings import active_model, vector_literal
from memories.writes.kernel import (
    check_content,
    check_identifiers,
    content_hash,
    redact,
)
from tenants.context import tenant_context
from tenants.models import Agent, Membership

logger = logging.getLogger(__name__)

CHUNK = 500  # records planned, and written, at a time
LISTED = 100  # bad lines and duplicates named in a report; beyond, only counted
UUID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"


class ImportFailed(InvalidInput):
    """The file cannot be imported; nothing was. Names the line when one is to blame."""

    def __init__(self, message: str, *, line: int | None = None):
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line


@dataclass
class ImportReport:
    source: str = ""  # the exporting organisation's slug
    lines: int = 0
    created: Counter = field(default_factory=Counter)  # rows written, by kind
    present: Counter = field(default_factory=Counter)  # records already here (an earlier import of them), by kind
    duplicates: int = 0
    duplicate_lines: list[dict] = field(default_factory=list)  # the first LISTED: line, why, the memory here
    bad: int = 0
    bad_lines: list[dict] = field(default_factory=list)  # the first LISTED: line, message
    left_out: Counter = field(default_factory=Counter)  # what names a memory the file does not hold, by kind
    embeddings_pending: int = 0
    complete: bool = False  # the file's end record was read
    export_left_out: dict = field(default_factory=dict)  # what the export left out of its scope, by kind

    def as_json(self) -> dict:
        return {"source": self.source, "lines": self.lines, "created": dict(self.created),
                "present": dict(self.present), "duplicates": self.duplicates,
                "duplicate_lines": self.duplicate_lines, "bad": self.bad, "bad_lines": self.bad_lines,
                "left_out": dict(self.left_out), "embeddings_pending": self.embeddings_pending,
                "complete": self.complete, "export_left_out": self.export_left_out}


Progress = Callable[[str, int, int], None]  # (phase, bytes done, bytes in all)


def memories_import(*, org_id, file: BinaryIO, skip_bad_lines: bool = False,
                    progress: Progress | None = None) -> ImportReport:
    """Import the file (opened in binary, seekable) into the organisation the caller has set,
    all or nothing. Raises ImportFailed for a bad line, naming it, unless skip_bad_lines:
    then bad lines are reported and the rest imported. progress(phase, done, total) is
    called as the file is read: phase "checking", then "importing"."""
    run = _Import(org_id, file, skip_bad_lines, progress)
    with transaction.atomic(), connection.cursor() as cursor:
        # One import at a time into an organisation: two would each plan the other's rows as new.
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"import:{org_id}"])
        run.cursor = cursor
        run.prepare()
        run.plan()
        run.write()
        run.finish()
    logger.info("import done", extra={"org_id": str(org_id), "memories": run.report.created["memories"],
                                      "duplicates": run.report.duplicates, "bad_lines": run.report.bad})
    return run.report


# --------------------------------------------------------------------------- rows as SQL


def insert_sql(table: str, columns: tuple[str, ...], rows: list[tuple], *, casts: dict | None = None,
               ignore_conflicts: bool = False) -> tuple[str, list]:
    """One INSERT of many rows, and its parameters. casts: column -> SQL type its text is
    cast to (jsonb, vector); ignore_conflicts: rows a unique index already holds are skipped."""
    casts = casts or {}
    row = "(" + ", ".join(f"%s::{casts[column]}" if column in casts else "%s" for column in columns) + ")"
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([row] * len(rows))}"
    if ignore_conflicts:
        sql += " ON CONFLICT DO NOTHING"
    return sql, [value for values in rows for value in values]


def as_json(value) -> str:
    return json.dumps(value, ensure_ascii=False)


JSONB = "jsonb"
TABLES = {
    "agents": ("id", "org_id", "name", "description", "is_active", "created_at", "updated_at"),
    # A closed session arrives consolidated (consolidated_at: its end): its memories carry what
    # its consolidation proposed, and the sweep is not to propose it again here.
    "sessions": ("id", "org_id", "agent_id", "scope", "external_id", "metadata", "started_at", "ended_at",
                 "consolidated_at"),
    "entities": ("id", "org_id", "scope", "kind", "name", "key", "summary", "attributes", "mention_count",
                 "first_seen_at", "last_seen_at"),
    "entity_aliases": ("id", "org_id", "entity_id", "alias", "key", "created_at"),
    "artifacts": ("id", "org_id", "scope", "sha256", "storage_uri", "artifact_type", "metadata", "created_at"),
    "provenance": ("id", "org_id", "memory_id", "artifact_id", "source_identity", "source_event", "details",
                   "created_at"),
    "memories": ("id", "org_id", "agent_id", "session_id", "content", "content_hash", "embedding", "embedding_model",
                 "embedding_dimensions", "embedded_at", "category", "memory_type", "source", "status", "confidence",
                 "usefulness_score", "importance", "sensitivity", "validation_status", "scope", "key", "provenance",
                 "metadata", "last_injected_at", "decay_rate", "is_protected", "valid_from", "valid_until",
                 "event_time", "superseded_by", "merged_into", "expires_at", "deleted_at", "version", "created_at",
                 "updated_at", "indexed"),
    "memory_versions": ("id", "org_id", "memory_id", "version_num", "operation", "content", "category", "confidence",
                        "status", "metadata", "snapshot", "changed_by_type", "changed_by_agent_id",
                        "changed_by_user_id", "change_reason", "created_at"),
    "memory_tags": ("id", "org_id", "memory_id", "tag", "created_at"),
    "memory_usage": ("id", "org_id", "memory_id", "retrieval_count", "last_retrieved_at"),
    "memory_entities": ("id", "org_id", "memory_id", "entity_id", "mention", "source", "role", "created_at"),
    "memory_artifacts": ("id", "org_id", "memory_id", "artifact_id", "scope", "created_at"),
    "memory_relationships": ("id", "org_id", "source_id", "target_id", "relation_type", "predicate", "weight",
                             "confidence", "evidence", "metadata", "valid_from", "valid_until", "created_at"),
    "memory_duplicate_candidates": ("id", "org_id", "memory_id", "candidate_id", "similarity", "detected_at",
                                    "resolved_at", "resolution"),
}
CASTS = {"metadata": JSONB, "attributes": JSONB, "details": JSONB, "provenance": JSONB, "snapshot": JSONB,
         "evidence": JSONB, "embedding": "vector"}
# What a version's snapshot names by id, and what kind of record each is.
SNAPSHOT_REFERENCES = {"session_id": "session", "superseded_by_id": "memory", "merged_into_id": "memory"}


@dataclass
class _Written:
    """What one chunk wrote: added to the report once its savepoint holds."""

    created: Counter = field(default_factory=Counter)
    left_out: Counter = field(default_factory=Counter)
    pending: int = 0
    mentions: Counter = field(default_factory=Counter)  # links added to entities already here
    later: list = field(default_factory=list)  # (memory, superseded_by, merged_into) set once written


class _Import:
    def __init__(self, org_id, file: BinaryIO, skip_bad_lines: bool, progress: Progress | None):
        self.org_id = uuid.UUID(str(org_id))
        self.file, self.skip_bad_lines, self.progress = file, skip_bad_lines, progress
        self.size = os.fstat(file.fileno()).st_size if hasattr(file, "fileno") else file.seek(0, os.SEEK_END)
        self.report = ImportReport()
        self.redactor: Redactor = redactor_for(self.org_id)
        self.bad_numbers: set[int] = set()
        self.agents: dict[uuid.UUID, tuple[uuid.UUID, bool]] = {}  # file's id -> (id here, new)
        self.agent_rows: dict[uuid.UUID, dict] = {}
        self.members: dict[str, int | None] = {}  # username -> the member of the organisation by that name
        self.vectors_usable = False
        self.model = ""  # the active embedding model, read with the header
        self.mentions: Counter = Counter()
        self.later: list = []
        self.read_so_far: Counter = Counter()
        self.cursor = None

    # ----------------------------------------------------------------------- reading

    def _raw_lines(self) -> Iterator[tuple[bytes | None, int]]:
        """(line, its length in bytes) in order; None for a line too long to hold."""
        self.file.seek(0)
        while raw := self.file.readline(MAX_LINE_BYTES + 1):
            if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
                yield raw, len(raw)
                continue
            length = len(raw)
            while (rest := self.file.readline(MAX_LINE_BYTES)) and not rest.endswith(b"\n"):
                length += len(rest)
            yield None, length + len(rest)

    def records(self, phase: str) -> Iterator[tuple[int, str, dict]]:
        """(line number, type, fields) of every good record; a bad line is reported (or stops
        the import: ImportFailed)."""
        position, number, done, last_report = -1, 0, 0, 0.0
        for raw, length in self._raw_lines():
            number += 1
            done += length
            if self.progress and (time.monotonic() - last_report > 0.2 or done == self.size):
                self.progress(phase, done, self.size)
                last_report = time.monotonic()
            if number in self.bad_numbers or (number > 1 and raw is not None and not raw.strip()):
                continue
            try:
                if raw is None:
                    raise BadRecord(f"longer than {MAX_LINE_BYTES // (1024 * 1024)} MB")
                kind, fields = read(decode(raw))
                index = RECORD_ORDER.index(kind)
                if (number == 1) != (kind == "header"):
                    raise BadRecord("the file must start with its header record, and hold one only")
                if index < position or position == len(RECORD_ORDER) - 1:
                    raise BadRecord(f"this {kind} record comes after the {RECORD_ORDER[position]} records: records "
                                    f"come in the order {', '.join(RECORD_ORDER)}")
            except BadRecord as exc:
                if number == 1:
                    raise ImportFailed(str(exc), line=1) from None
                self.bad(number, str(exc))
                continue
            position = index
            yield number, kind, fields
        self.report.lines = number
        if self.progress:
            self.progress(phase, self.size, self.size)

    def bad(self, number: int, message: str) -> None:
        if not self.skip_bad_lines:
            raise ImportFailed(message, line=number)
        if number not in self.bad_numbers:
            self.bad_numbers.add(number)
            self.report.bad += 1
            if len(self.report.bad_lines) < LISTED:
                self.report.bad_lines.append({"line": number, "message": message})

    def chunks(self, phase: str) -> Iterator[tuple[str, list[tuple[int, dict]]]]:
        """The file's good records as (type, [(line number, fields)]), up to CHUNK of one type."""
        kind, chunk = None, []
        for number, record_kind, record in self.records(phase):
            if chunk and (record_kind != kind or len(chunk) >= CHUNK):
                yield kind, chunk
                chunk = []
            kind = record_kind
            chunk.append((number, record))
        if chunk:
            yield kind, chunk

    # ----------------------------------------------------------------------- the plan

    def prepare(self) -> None:
        """The plan's tables, and what this organisation holds from earlier imports."""
        execute = self.cursor.execute
        execute("DROP TABLE IF EXISTS import_ids, import_origins, import_identities")
        # The file's id of each record that becomes (or is already) a row -> its id here.
        execute("CREATE TEMP TABLE import_ids (kind text, source uuid, target uuid NOT NULL, new boolean NOT NULL, "
                "PRIMARY KEY (kind, source)) ON COMMIT DROP")
        # Rows planned so far by what makes them unique here (an entity's namespace, kind and
        # name; a live memory's agent, namespace and content), so the file's own repeats are found.
        execute("CREATE TEMP TABLE import_identities (kind text, identity text, target uuid NOT NULL, "
                "PRIMARY KEY (kind, identity)) ON COMMIT DROP")
        execute("""
            CREATE TEMP TABLE import_origins ON COMMIT DROP AS
            SELECT 'memory' AS kind, (provenance->>%(key)s)::uuid AS origin, id AS target FROM memories
            WHERE org_id = %(org)s AND provenance->>%(key)s ~ %(uuid)s
            UNION ALL
            SELECT 'session', (metadata->>%(key)s)::uuid, id FROM sessions
            WHERE org_id = %(org)s AND metadata->>%(key)s ~ %(uuid)s
            UNION ALL
            SELECT 'artifact', (metadata->>%(key)s)::uuid, id FROM artifacts
            WHERE org_id = %(org)s AND metadata->>%(key)s ~ %(uuid)s
        """, {"key": ORIGIN_KEY, "org": self.org_id, "uuid": UUID_PATTERN})
        execute("CREATE INDEX ON import_origins (kind, origin)")

    def plan(self) -> None:
        planners = {"header": self.plan_header, "agent": self.plan_agents, "session": self.plan_sessions,
                    "entity": self.plan_entities, "artifact": self.plan_artifacts, "memory": self.plan_memories,
                    "end": self.plan_end}
        for kind, chunk in self.chunks("checking"):
            self.read_so_far[kind] += len(chunk)
            if kind in planners:
                planners[kind](chunk)
        if not self.report.complete and not self.skip_bad_lines:  # skipping, the report says it
            raise ImportFailed(f"the file ends at line {self.report.lines} without its end record: it was cut short")

    def plan_header(self, chunk) -> None:
        header = chunk[0][1]
        self.report.source = header["organisation"]
        embedding = header["embedding"]
        self.model = active_model()  # read once: a switch while the import runs is the sweep's
        self.vectors_usable = bool(embedding and embedding["model"] == self.model
                                   and embedding["dimensions"] == EMBEDDING_DIMENSIONS)

    def plan_end(self, chunk) -> None:
        number, end = chunk[0]
        read_so_far = {kind: n for kind, n in self.read_so_far.items() if kind not in ("header", "end")}
        if not self.skip_bad_lines and {k: n for k, n in end["records"].items() if n} != read_so_far:
            self.bad(number, f"the end record counts {end['records']}, the file holds {read_so_far}")
        self.report.complete = True
        self.report.export_left_out = {kind: n for kind, n in end["left_out"].items() if n}

    def remember(self, kind: str, planned: list[tuple]) -> None:
        """Record (file's id, id here, new) for records of a kind."""
        if planned:
            self.cursor.execute(*insert_sql("import_ids", ("kind", "source", "target", "new"),
                                            [(kind, *entry) for entry in planned], ignore_conflicts=True))

    def targets(self, wanted: set[tuple[str, uuid.UUID]]) -> dict[tuple[str, uuid.UUID], tuple[uuid.UUID, bool]]:
        """(kind, file's id) -> (id here, new) for those the plan holds."""
        if not wanted:
            return {}
        kinds, sources = zip(*wanted)
        self.cursor.execute("SELECT i.kind, i.source, i.target, i.new FROM import_ids i "
                            "JOIN unnest(%s::text[], %s::uuid[]) w(kind, source) USING (kind, source)",
                            [list(kinds), list(sources)])
        return {(kind, source): (target, new) for kind, source, target, new in self.cursor.fetchall()}

    def already_here(self, kind: str, table: str, origins: list[uuid.UUID]) -> dict[uuid.UUID, uuid.UUID]:
        """origin -> the row here that came from it, or is it."""
        self.cursor.execute(f"""
            SELECT origin, target FROM import_origins WHERE kind = %s AND origin = ANY(%s::uuid[])
            UNION ALL
            SELECT id, id FROM {table} WHERE org_id = %s AND id = ANY(%s::uuid[])
        """, [kind, origins, self.org_id, origins])
        return dict(self.cursor.fetchall())

    def identities(self, kind: str, sql: str, params: list, keys: list[tuple]) -> dict[str, uuid.UUID]:
        """identity -> the row here (read by `sql`, which returns identity parts then id) or
        planned earlier in the file that holds it."""
        found = {}
        if keys:
            self.cursor.execute(sql, params)
            found = {identity(*row[:-1]): row[-1] for row in self.cursor.fetchall()}
            names = [identity(*key) for key in keys]
            self.cursor.execute("SELECT identity, target FROM import_identities WHERE kind = %s "
                                "AND identity = ANY(%s)", [kind, names])
            found.update(self.cursor.fetchall())
        return found

    def hold(self, kind: str, planned: dict[str, uuid.UUID]) -> None:
        if planned:
            self.cursor.execute(*insert_sql("import_identities", ("kind", "identity", "target"),
                                            [(kind, name, target) for name, target in planned.items()]))

    def plan_agents(self, chunk) -> None:
        names = {record["name"] for _, record in chunk}
        here = dict(Agent.objects.filter(org_id=self.org_id, name__in=names).values_list("name", "id"))
        new_by_name = {row["name"]: target for target, row in self.agent_rows.items()}
        for _, record in chunk:
            if record["name"] in here:
                self.agents[record["id"]] = (here[record["name"]], False)
                self.report.present["agents"] += 1
            elif record["name"] in new_by_name:
                self.agents[record["id"]] = (new_by_name[record["name"]], False)
            else:
                target = uuid.uuid4()
                self.agents[record["id"]] = (target, True)
                self.agent_rows[target] = record
                new_by_name[record["name"]] = target

    def plan_by_origin(self, kind: str, table: str, chunk) -> None:
        here = self.already_here(kind, table, [record["origin"] for _, record in chunk])
        planned = []
        for _, record in chunk:
            if record["origin"] in here:
                planned.append((record["id"], here[record["origin"]], False))
                self.report.present[table] += 1
            else:
                planned.append((record["id"], uuid.uuid4(), True))
        self.remember(kind, planned)

    def plan_sessions(self, chunk) -> None:
        good = []
        for number, record in chunk:
            if record["agent"] is not None and record["agent"] not in self.agents:
                self.bad(number, f"names agent {record['agent']}, which no agent record before it holds")
                continue
            good.append((number, record))
        self.plan_by_origin("session", "sessions", good)

    def plan_artifacts(self, chunk) -> None:
        self.plan_by_origin("artifact", "artifacts", chunk)

    def entity_name(self, record: dict) -> tuple[str, str]:
        name = self.redactor.plain(record["name"])
        return name, name_key(name)

    def plan_entities(self, chunk) -> None:
        keys = [(record["scope"], record["kind"], self.entity_name(record)[1]) for _, record in chunk]
        namespaces, kinds, names = (list(column) for column in zip(*keys))
        found = self.identities("entity", """
            SELECT e.scope, e.kind, e.key, e.id FROM entities e
            JOIN unnest(%s::text[], %s::text[], %s::text[]) w(scope, kind, key) USING (scope, kind, key)
            WHERE e.org_id = %s
        """, [namespaces, kinds, names, self.org_id], keys)
        planned, held = [], {}
        for (number, record), key in zip(chunk, keys):
            if not key[2]:
                self.bad(number, "name holds no word to match the entity by")
                continue
            name = identity(*key)
            if name in found:
                planned.append((record["id"], found[name], False))
                self.report.present["entities"] += 1
            else:
                found[name] = held[name] = uuid.uuid4()
                planned.append((record["id"], found[name], True))
        self.hold("entity", held)
        self.remember("entity", planned)

    def stored_content(self, record: dict) -> str:
        """The memory's content as this organisation stores it, its identifiers checked."""
        try:
            check_identifiers(self.redactor, namespace=record["scope"], key=record["key"],
                              tags=[tag["tag"] for tag in record["tags"]], sensitivity=record["sensitivity"])
            content = self.redactor.plain(record["content"]).strip()
            check_content(content)
        except InvalidInput as exc:
            raise BadRecord(exc.message) from None
        return content

    def check_references(self, record: dict, known: dict) -> None:
        missing = [("agent", record["agent"])] if record["agent"] not in self.agents else []
        missing += [("agent", v["changed_by_agent"]) for v in record["versions"]
                    if v["changed_by_agent"] and v["changed_by_agent"] not in self.agents]
        wanted = [("session", record["session"])] if record["session"] else []
        wanted += [("entity", link["entity"]) for link in record["entities"]]
        wanted += [("artifact", link["artifact"]) for link in record["artifacts"]]
        missing += [reference for reference in wanted if reference not in known]
        if missing:
            kind, source = missing[0]
            raise BadRecord(f"names {kind} {source}, which no {kind} record before it holds")

    def plan_memories(self, chunk) -> None:
        known = self.targets({reference for _, record in chunk for reference in _references(record)})
        checked = []
        for number, record in chunk:
            try:
                self.check_references(record, known)
                content = self.stored_content(record)
            except BadRecord as exc:
                self.bad(number, str(exc))
                continue
            checked.append((number, record, self.agents[record["agent"]][0], content_hash(content)))
        here = self.already_here("memory", "memories", [record["origin"] for _, record, _, _ in checked])
        fresh = [item for item in checked if item[1]["origin"] not in here]
        live = [(agent, record["scope"], digest) for _, record, agent, digest in fresh
                if record["key"] is None and _is_live(record)]
        keyed = [(record["scope"], record["key"]) for _, record, _, _ in fresh
                 if record["key"] is not None and record["deleted_at"] is None]
        found_live = self.identities("live", f"""
            SELECT m.agent_id, m.scope, m.content_hash, m.id FROM memories m
            JOIN unnest(%s::uuid[], %s::text[], %s::text[]) w(agent_id, scope, content_hash)
              USING (agent_id, scope, content_hash)
            WHERE m.org_id = %s AND {live_sql("m")} AND m.key IS NULL
        """, [*(list(column) for column in zip(*live)), self.org_id] if live else [], live)
        found_keys = self.identities("key", """
            SELECT m.scope, m.key, m.id FROM memories m JOIN unnest(%s::text[], %s::text[]) w(scope, key)
              USING (scope, key)
            WHERE m.org_id = %s AND m.key IS NOT NULL AND m.deleted_at IS NULL
        """, [*(list(column) for column in zip(*keyed)), self.org_id] if keyed else [], keyed)
        planned, held_live, held_keys = [], {}, {}
        for number, record, agent, digest in checked:
            if record["origin"] in here:
                planned.append((record["id"], here[record["origin"]], False))
                self.report.present["memories"] += 1
                continue
            by_content = identity(agent, record["scope"], digest) if (
                record["key"] is None and _is_live(record)) else None
            by_key = identity(record["scope"], record["key"]) if (
                record["key"] is not None and record["deleted_at"] is None) else None
            twin = found_live.get(by_content) or found_keys.get(by_key)
            if twin is not None:
                planned.append((record["id"], twin, False))
                self.duplicate(number, twin, "an equal live memory of the same agent is in the same namespace"
                               if by_content else "a memory here holds its namespace and key")
                continue
            target = uuid.uuid4()
            planned.append((record["id"], target, True))
            for name, found, held in ((by_content, found_live, held_live), (by_key, found_keys, held_keys)):
                if name is not None:
                    found[name] = held[name] = target
        self.hold("live", held_live)
        self.hold("key", held_keys)
        self.remember("memory", planned)

    def duplicate(self, number: int, existing: uuid.UUID, reason: str) -> None:
        self.report.duplicates += 1
        if len(self.report.duplicate_lines) < LISTED:
            self.report.duplicate_lines.append({"line": number, "reason": reason, "existing": str(existing)})

    # ----------------------------------------------------------------------- the writes

    def write(self) -> None:
        writers = {"agent": self.write_agents, "session": self.write_sessions, "entity": self.write_entities,
                   "artifact": self.write_artifacts, "memory": self.write_memories,
                   "relationship": self.write_relationships, "duplicate_candidate": self.write_duplicate_candidates}
        for kind, chunk in self.chunks("importing"):
            if kind in writers:
                self.write_chunk(kind, writers[kind], chunk)

    def write_chunk(self, kind: str, writer, chunk) -> None:
        """Write a chunk in a savepoint; if the database refuses it, each record on its own,
        to name the line it refuses (and, skipping bad lines, write the others)."""
        written = _Written()
        try:
            with transaction.atomic():
                writer(chunk, written)
        except (DatabaseError, BadRecord) as exc:
            if len(chunk) > 1:
                for item in chunk:
                    self.write_chunk(kind, writer, [item])
                return
            number, record = chunk[0]
            if kind in ("session", "entity", "artifact", "memory"):  # what names it is left out
                self.cursor.execute("""
                    WITH forgotten AS (DELETE FROM import_ids WHERE kind = %s AND source = %s RETURNING target)
                    DELETE FROM import_identities WHERE target IN (SELECT target FROM forgotten)
                """, [kind, record["id"]])
            self.bad(number, _refusal(exc))
            return
        self.report.created.update(written.created)
        self.report.left_out.update(written.left_out)
        self.report.embeddings_pending += written.pending
        self.mentions.update(written.mentions)
        self.later.extend(written.later)

    def insert(self, table: str, rows: list[tuple], written: _Written, *, ignore_conflicts: bool = False) -> None:
        if rows:
            self.cursor.execute(*insert_sql(table, TABLES[table], rows, casts=CASTS, ignore_conflicts=ignore_conflicts))
            written.created[table] += self.cursor.rowcount

    def write_agents(self, chunk, written: _Written) -> None:
        now = timezone.now()
        rows = [(target, self.org_id, record["name"], record["description"], record["is_active"], now, now)
                for _, record in chunk for target, new in [self.agents[record["id"]]] if new]
        self.insert("agents", rows, written)

    def write_sessions(self, chunk, written: _Written) -> None:
        targets = self.targets({("session", record["id"]) for _, record in chunk})
        rows = []
        for _, record in chunk:
            target, new = _planned(targets, "session", record["id"])
            if new:
                metadata = with_origin(self.redactor.json(record["metadata"])[0], record["origin"])
                rows.append((target, self.org_id, self.agents[record["agent"]][0] if record["agent"] else None,
                             record["scope"], record["external_id"], as_json(metadata),
                             record["started_at"] or timezone.now(), record["ended_at"], record["ended_at"]))
        self.insert("sessions", rows, written)

    def write_entities(self, chunk, written: _Written) -> None:
        targets = self.targets({("entity", record["id"]) for _, record in chunk})
        entities, aliases = [], []
        for _, record in chunk:
            target, new = _planned(targets, "entity", record["id"])
            name, key = self.entity_name(record)
            if new:
                seen = record["last_seen_at"] or record["first_seen_at"] or timezone.now()
                entities.append((target, self.org_id, record["scope"], record["kind"], name, key,
                                 self.redactor.plain(record["summary"]),
                                 as_json(self.redactor.json(record["attributes"])[0]), record["mention_count"],
                                 record["first_seen_at"] or seen, seen))
            for alias in record["aliases"]:
                text = self.redactor.plain(alias["alias"])
                if name_key(text) and name_key(text) != key:
                    aliases.append((uuid.uuid4(), self.org_id, target, text, name_key(text),
                                    alias["created_at"] or timezone.now()))
        self.insert("entities", entities, written)
        self.insert("entity_aliases", aliases, written, ignore_conflicts=True)

    def provenance_rows(self, records: list[dict], *, memory=None, artifact=None) -> list[tuple]:
        return [(uuid.uuid4(), self.org_id, memory, artifact, self.redactor.plain(record["source_identity"]),
                 self.redactor.plain(record["source_event"]), as_json(self.redactor.json(record["details"])[0]),
                 record["created_at"] or timezone.now()) for record in records]

    def write_artifacts(self, chunk, written: _Written) -> None:
        targets = self.targets({("artifact", record["id"]) for _, record in chunk})
        artifacts, provenance = [], []
        for _, record in chunk:
            target, new = _planned(targets, "artifact", record["id"])
            if new:
                metadata = with_origin(self.redactor.json(record["metadata"])[0], record["origin"])
                artifacts.append((target, self.org_id, record["scope"], record["sha256"],
                                  self.redactor.plain(record["storage_uri"]), record["artifact_type"],
                                  as_json(metadata), record["created_at"] or timezone.now()))
                provenance += self.provenance_rows(record["provenance_records"], artifact=target)
        self.insert("artifacts", artifacts, written)
        self.insert("provenance", provenance, written)

    def write_memories(self, chunk, written: _Written) -> None:
        wanted = {("memory", record["id"]) for _, record in chunk}
        for _, record in chunk:
            wanted |= set(_references(record))
            wanted |= {("memory", source) for source in (record["superseded_by"], record["merged_into"]) if source}
            wanted |= {(kind, uuid.UUID(version["snapshot"][name])) for version in record["versions"]
                       for name, kind in SNAPSHOT_REFERENCES.items() if _is_id(version["snapshot"].get(name))}
        targets = self.targets(wanted)
        new_here = {targets[("memory", record["id"])][0] for _, record in chunk
                    if targets.get(("memory", record["id"]), (None, False))[1]}
        waiting = self.not_written_yet(targets, new_here)
        rows: dict[str, list] = {table: [] for table in ("memories", "memory_versions", "memory_tags", "memory_usage",
                                                         "memory_entities", "memory_artifacts", "provenance")}
        for _, record in chunk:
            target, new = _planned(targets, "memory", record["id"])
            if new:
                self.memory_rows(record, target, targets, waiting, rows, written)
        for table, table_rows in rows.items():
            self.insert(table, table_rows, written)

    def not_written_yet(self, targets: dict, this_chunk: set) -> set:
        """The memories planned new that neither an earlier chunk nor this one writes: a
        reference to one waits until the end (a file out of order, or a cycle)."""
        new = {target for (kind, _), (target, is_new) in targets.items() if kind == "memory" and is_new} - this_chunk
        if not new:
            return set()
        self.cursor.execute("SELECT id FROM memories WHERE org_id = %s AND id = ANY(%s::uuid[])",
                            [self.org_id, list(new)])
        return new - {row[0] for row in self.cursor.fetchall()}

    def memory_rows(self, record: dict, target, targets: dict, waiting: set, rows: dict, written: _Written) -> None:
        def here(kind: str, source) -> uuid.UUID | None:
            return targets.get((kind, source), (None, False))[0] if source else None

        stored = redact(self.redactor, record["content"], record["metadata"], record["provenance"])
        check_content(stored.content)
        references = {name: here("memory", record[name]) for name in ("superseded_by", "merged_into")}
        written.left_out["memory_references"] += sum(1 for name in references if record[name] and not references[name])
        if any(reference in waiting for reference in references.values()):
            written.later.append((target, references["superseded_by"], references["merged_into"]))
            references = {name: None for name in references}
        session = here("session", record["session"])
        if record["session"] and session is None:
            raise BadRecord(f"names session {record['session']}, which was not imported")
        vector = self.usable_vector(record["embedding"]) if record["indexed"] else None
        written.pending += vector is None and record["indexed"]
        created = record["created_at"] or timezone.now()
        rows["memories"].append((
            target, self.org_id, self.agents[record["agent"]][0], session, stored.content,
            content_hash(stored.content), vector_literal(vector) if vector is not None else None,
            self.model if vector is not None else "", EMBEDDING_DIMENSIONS if vector is not None else None,
            (record["embedding"]["embedded_at"] or created) if vector is not None else None,
            record["category"], record["memory_type"], record["source"], record["status"], record["confidence"],
            record["usefulness_score"], record["importance"], record["sensitivity"], record["validation_status"],
            record["scope"], record["key"], as_json(with_origin(stored.provenance, record["origin"])),
            as_json(stored.metadata), record["last_injected_at"], record["decay_rate"], record["is_protected"],
            record["valid_from"], record["valid_until"], record["event_time"], references["superseded_by"],
            references["merged_into"], record["expires_at"], record["deleted_at"], record["version"], created,
            record["updated_at"] or created, record["indexed"],
        ))
        redacted = {record["content"]: stored.content}  # a version's content is mostly the memory's
        members = self.members_named({version["changed_by_user"] for version in record["versions"]})
        for version in record["versions"]:
            content = redacted.get(version["content"])
            if content is None:
                content = redacted[version["content"]] = self.redactor.plain(version["content"])
            snapshot = dict(version["snapshot"])
            for name, kind in SNAPSHOT_REFERENCES.items():
                if _is_id(snapshot.get(name)):
                    found = here(kind, uuid.UUID(snapshot[name]))
                    snapshot[name] = str(found) if found else None
            rows["memory_versions"].append((
                uuid.uuid4(), self.org_id, target, version["version_num"], version["operation"], content,
                version["category"],
                version["confidence"], version["status"], as_json(self.redactor.json(version["metadata"])[0]),
                as_json(snapshot), version["changed_by_type"],
                self.agents[version["changed_by_agent"]][0] if version["changed_by_agent"] else None,
                members.get(version["changed_by_user"]), self.redactor.plain(version["change_reason"]),
                version["created_at"] or created))
        tags = {tag["tag"]: tag["created_at"] for tag in record["tags"]}
        rows["memory_tags"] += [(uuid.uuid4(), self.org_id, target, tag, when or created) for tag, when in tags.items()]
        if record["retrieval_count"] or record["last_retrieved_at"]:
            rows["memory_usage"].append((uuid.uuid4(), self.org_id, target, record["retrieval_count"],
                                         record["last_retrieved_at"]))
        linked = set()
        for link in record["entities"]:
            entity, new_entity = targets[("entity", link["entity"])] if ("entity", link["entity"]) in targets else (
                None, False)
            if entity is None:
                raise BadRecord(f"names entity {link['entity']}, which was not imported")
            if entity in linked:
                continue
            linked.add(entity)
            if not new_entity:
                written.mentions[entity] += 1
            rows["memory_entities"].append((uuid.uuid4(), self.org_id, target, entity,
                                            self.redactor.plain(link["mention"])[:256], link["source"], link["role"],
                                            link["created_at"] or created))
        for link in record["artifacts"]:
            artifact = here("artifact", link["artifact"])
            if artifact is None:
                raise BadRecord(f"names artifact {link['artifact']}, which was not imported")
            rows["memory_artifacts"].append((uuid.uuid4(), self.org_id, target, artifact, record["scope"],
                                             link["created_at"] or created))
        rows["provenance"] += self.provenance_rows(record["provenance_records"], memory=target)

    def usable_vector(self, embedding: dict | None):
        """The file's vector, when the model that made it is the one this deployment embeds
        with; None leaves the memory for the worker to embed."""
        if (embedding is None or not self.vectors_usable or embedding["model"] != self.model
                or embedding["dimensions"] != EMBEDDING_DIMENSIONS):
            return None
        return embedding["vector"]

    def members_named(self, usernames: set) -> dict[str, int | None]:
        """Operators by username: a version changed by one keeps them when they are a member
        of this organisation too, and names nobody otherwise."""
        unknown = {name for name in usernames if name and name not in self.members}
        if unknown:
            found = dict(Membership.objects.filter(org_id=self.org_id, user__username__in=unknown)
                         .values_list("user__username", "user_id"))
            self.members.update({name: found.get(name) for name in unknown})
        return self.members

    def between(self, chunk, ends: tuple[str, str], kind: str, written: _Written) -> Iterator[tuple]:
        """(record, first memory here, second) for the chunk's records whose two memories are
        both here, and two; the others are left out."""
        targets = self.targets({("memory", record[end]) for _, record in chunk for end in ends})
        for _, record in chunk:
            first, second = (targets.get(("memory", record[end]), (None,))[0] for end in ends)
            if first is None or second is None or first == second:
                written.left_out[kind] += 1
                continue
            yield record, first, second

    def write_relationships(self, chunk, written: _Written) -> None:
        rows = [(uuid.uuid4(), self.org_id, source, target, record["relation_type"],
                 self.redactor.plain(record["predicate"]), record["weight"], record["confidence"],
                 as_json(self.redactor.json(record["evidence"])[0]), as_json(self.redactor.json(record["metadata"])[0]),
                 record["valid_from"], record["valid_until"], record["created_at"] or timezone.now())
                for record, source, target in self.between(chunk, ("source", "target"), "relationships", written)]
        self.insert("memory_relationships", rows, written, ignore_conflicts=True)

    def write_duplicate_candidates(self, chunk, written: _Written) -> None:
        rows = [(uuid.uuid4(), self.org_id, memory, candidate, record["similarity"],
                 record["detected_at"] or timezone.now(), record["resolved_at"], record["resolution"])
                for record, memory, candidate in self.between(chunk, ("memory", "candidate"), "duplicate_candidates",
                                                              written)]
        self.insert("memory_duplicate_candidates", rows, written, ignore_conflicts=True)

    # ----------------------------------------------------------------------- after the writes

    def finish(self) -> None:
        """References to memories written after the one naming them; the mentions added to
        entities that were here; the worker asked to embed what came without a vector."""
        for memory, superseded_by, merged_into in self.later:
            self.cursor.execute("UPDATE memories SET superseded_by = %s, merged_into = %s "
                                "WHERE org_id = %s AND id = %s", [superseded_by, merged_into, self.org_id, memory])
        by_count: dict[int, list] = {}
        for entity, count in self.mentions.items():
            by_count.setdefault(count, []).append(entity)
        for count, entities in by_count.items():
            self.cursor.execute("UPDATE entities SET mention_count = mention_count + %s "
                                "WHERE org_id = %s AND id = ANY(%s::uuid[])", [count, self.org_id, entities])
        if self.report.embeddings_pending:
            transaction.on_commit(_embed_pending_soon)
        transaction.on_commit(_fold_word_statistics)
        if sum(self.report.created.values()) >= ANALYSED_FROM_ROWS:
            transaction.on_commit(_analyse_tables)  # before the count, which then plans on them
        transaction.on_commit(functools.partial(_count_strength_bands, self.org_id))


def identity(*parts) -> str:
    """What makes a row unique here, as one text (JSON: no separator can be forged)."""
    return json.dumps([str(part) for part in parts])


def _is_live(record: dict) -> bool:
    return record["status"] == "active" and record["deleted_at"] is None


def _is_id(value) -> bool:
    try:
        return isinstance(value, str) and uuid.UUID(value) is not None
    except ValueError:
        return False


def _references(record: dict) -> Iterator[tuple[str, uuid.UUID]]:
    """What a memory record names that must come before it."""
    if record["session"]:
        yield "session", record["session"]
    for link in record["entities"]:
        yield "entity", link["entity"]
    for link in record["artifacts"]:
        yield "artifact", link["artifact"]


def _planned(targets: dict, kind: str, source) -> tuple[uuid.UUID, bool]:
    if (kind, source) not in targets:
        raise BadRecord(f"{kind} {source} was not imported")
    return targets[(kind, source)]


def _refusal(exc: Exception) -> str:
    """Why the database refused a record: its primary message, never its DETAIL (which
    quotes the row, content and all)."""
    if isinstance(exc, BadRecord):
        return str(exc)
    diagnosis = getattr(exc.__cause__, "diag", None)
    return f"the database refused it: {getattr(diagnosis, 'message_primary', None) or type(exc).__name__}"


def _embed_pending_soon() -> None:
    """After commit: the sweep, now rather than within the minute (memories.jobs)."""
    from memories import jobs

    try:
        import django_rq

        django_rq.get_queue(jobs.QUEUE).enqueue(jobs.embed_pending, job_timeout=3600)
    except Exception as exc:  # Redis unreachable: the cron's sweep embeds them when it is back
        logger.warning("embedding sweep not enqueued after an import (%s)", type(exc).__name__)


def _fold_word_statistics() -> None:
    try:
        lexicon.fold()
    except DatabaseError as exc:  # the worker's fold takes them within 30 s
        logger.warning("word statistics not folded after an import (%s)", type(exc).__name__)


# An import of this many rows or more has the tables it wrote analysed once it commits, so that
# the planner knows the organisation at once, not when autovacuum next gets to them (docs/adr/0045).
# Fewer rows misjudged cost a plan milliseconds; the analysis takes seconds at a million rows.
ANALYSED_FROM_ROWS = 1_000


def _analyse_tables() -> None:
    """After commit: ANALYZE the tables an import writes (memories migration 0058's function)."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT analyse_imported_tables()")
    except DatabaseError as exc:
        logger.warning("tables not analysed after an import (%s)", type(exc).__name__)


def _count_strength_bands(org_id) -> None:
    """After commit: the bands and the weakest memories counted again, which the weak list
    serves (an imported memory may be weak at once); otherwise the job counts them within 10 minutes."""
    try:
        decay.count_organisation_bands(org_id=org_id)
    except DatabaseError as exc:
        logger.warning("strength bands not counted after an import (%s)", type(exc).__name__)


# --------------------------------------------------------------------------- in the background
# The console's imports run in the worker: a file the size of an organisation takes longer
# than a web request may. The upload waits in the data folder (which `manage.py run` gives
# the web processes and the worker alike) until the job has read it, and the job reports its
# progress in its own meta, which the console polls.

IMPORT_QUEUE = "default"
IMPORT_TIMEOUT_SECONDS = 4 * 3600
IMPORT_KEPT_SECONDS = tracking.KEPT_SECONDS  # how long a finished import's report can be read


def upload_path(job_id: str) -> Path:
    from memory_platform import local_services

    return local_services.data_dir() / "imports" / f"{job_id}.jsonl"


def import_enqueue(*, org_id, chunks: Iterator[bytes], name: str, skip_bad_lines: bool) -> str:
    """Keep an uploaded file (its chunks) and ask the worker to import it into the
    organisation; returns the job's id. Raises OSError if the file cannot be kept, and
    Redis's errors if the queue is unreachable (nothing is kept then)."""
    import django_rq

    job_id = str(uuid.uuid4())
    path = upload_path(job_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("wb") as kept:
            for chunk in chunks:
                kept.write(chunk)
        # At once, not when the request commits: the job needs nothing the request writes, and
        # the page that answers the upload shows it.
        django_rq.get_queue(IMPORT_QUEUE, commit_mode="auto").enqueue(
            import_job, org_id=str(org_id), upload=job_id, skip_bad_lines=skip_bad_lines, job_id=job_id,
            job_timeout=IMPORT_TIMEOUT_SECONDS, result_ttl=IMPORT_KEPT_SECONDS, failure_ttl=IMPORT_KEPT_SECONDS,
            meta={"org_id": str(org_id), "name": name, "size": path.stat().st_size})
    except BaseException:  # an upload cut short, or no queue: nothing is kept
        path.unlink(missing_ok=True)
        raise
    return job_id


def import_job(*, org_id: str, upload: str, skip_bad_lines: bool) -> dict:
    """The worker's side: import the kept file as the organisation, all or nothing, then
    remove it. Returns the report as JSON, or {"error": ...} when the file was refused."""
    path = upload_path(upload)

    def progress(phase: str, done: int, total: int) -> None:
        tracking.report_progress(phase=phase, done=done, total=total)

    try:
        with path.open("rb") as file, tenant_context(org_id):
            report = memories_import(org_id=org_id, file=file, skip_bad_lines=skip_bad_lines, progress=progress)
    except ImportFailed as exc:
        return {"error": exc.message}
    finally:
        path.unlink(missing_ok=True)
    return report.as_json()


@dataclass
class ImportStatus:
    state: str  # queued, started, finished, failed
    name: str
    phase: str = ""  # checking, importing
    done: int = 0
    total: int = 0
    result: dict | None = None  # the report, or {"error": ...}

    @property
    def running(self) -> bool:
        return self.state in tracking.RUNNING


def import_status(*, org_id, job_id: str) -> ImportStatus | None:
    """Where an import of this organisation stands; None for an unknown job or another
    organisation's (the same answer: missing)."""
    job = tracking.tracked_job(IMPORT_QUEUE, org_id=org_id, job_id=job_id)
    if job is None:
        return None
    result = job.result
    if job.state == "failed":
        result = {"error": "the import stopped unexpectedly; nothing was imported. The worker's log says why."}
    return ImportStatus(state=job.state, name=job.meta.get("name", ""), phase=job.meta.get("phase", ""),
                        done=job.meta.get("done", 0), total=job.meta.get("total", job.meta.get("size", 0)),
                        result=result)
