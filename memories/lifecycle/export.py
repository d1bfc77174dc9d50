"""Export (JSONL): an organisation's memories, one agent's, or those under a namespace, with
everything they are made of, as lines of the format memories.lifecycle.portability describes.

Streamed: rows are read through server-side cursors a chunk at a time, and each chunk's
versions, tags, links and provenance with a handful of statements, so memory stays the same
whatever the organisation's size. One snapshot: the boundary opens the export with
`export_snapshot()`, so a write while it runs is in it whole or not at all.

What a memory's erasure deletes (memories.lifecycle.erasure), the export carries, but for
what is this deployment's own record rather than the memory's: retrieval events (what
searches here showed; their provenance with them), idempotency records (a day's retries,
whose responses name this deployment's ids), the admin log, and Redis's hot sets, counters
and cached query embeddings. The word statistics are not carried either: the import's rows
count their own words. Nor are the vectors of other models than the active one
(memory_embeddings: a build under way, the model kept to roll back to): a memory carries the
vector searches here use, and the importing deployment builds its other models itself.

A relationship or a near-duplicate pair with one end outside the scope is left out, and
counted in the `end` record; a memory's superseded_by or merged_into may name a memory
outside it, which the import then leaves empty.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import islice
from typing import Callable

from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from memories.lifecycle import tallies
from memories.lifecycle.portability import (
    EMBEDDING_ENCODING,
    FORMAT,
    VERSION,
    ExportScope,
    embedding_text,
    line,
    origin_of,
    without_origin,
)
from memories.models import (
    EMBEDDING_DIMENSIONS,
    Artifact,
    DuplicateCandidate,
    Entity,
    EntityAlias,
    Memory,
    MemoryArtifact,
    MemoryEntity,
    MemoryRelationship,
    MemoryTag,
    MemoryUsage,
    MemoryVersion,
    Provenance,
)
from memories.vectors.embeddings import active_model
from tenants.models import Agent, Organization, Session

CHUNK = 1_000  # memories read, and written out, at a time

# A memory's own columns, written as they are (its ids and references are renamed).
COPIED = (
    "content", "category", "memory_type", "source", "status", "confidence", "usefulness_score", "importance",
    "sensitivity", "validation_status", "scope", "key", "metadata", "last_injected_at", "decay_rate",
    "is_protected", "valid_from", "valid_until", "event_time", "expires_at", "deleted_at", "version",
    "created_at", "updated_at", "indexed",
)
MEMORY_FIELDS = ("id", "agent_id", "session_id", "provenance", "superseded_by_id", "merged_into_id", *COPIED)
# The file keeps a namespace under "scope", its column's name (memories.lifecycle.portability).
AS_FILED = {"scope": F("namespace")}


def filed(rows, fields: tuple, *, stream: bool = True) -> Iterator[dict]:
    """The rows' values under the names the file gives them, in the order of `fields` (streamed
    from a server-side cursor unless stream is false)."""
    values = rows.values(*(name for name in fields if name not in AS_FILED),
                         **{name: AS_FILED[name] for name in fields if name in AS_FILED})
    for row in values.iterator(chunk_size=CHUNK) if stream else values:
        yield {name: row[name] for name in fields}


@contextmanager
def export_snapshot():
    """One snapshot for everything an export reads (REPEATABLE READ, read only), when this
    opens the transaction; inside one already open (a test's), that one's."""
    if connection.in_atomic_block:
        with transaction.atomic():
            yield
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def memory_count(*, org_id, scope: ExportScope) -> int:
    """How many memories the scope holds: an export's length, for its progress. The whole
    organisation's are counted without reading its memories (docs/adr/0056)."""
    if scope.everything:
        return tallies.memories_held(org_id)
    return Memory.objects.without_usage().filter(scope.memories(), org_id=org_id).count()


def memories_export(*, org: Organization, scope: ExportScope, embeddings: bool = True,
                    progress: Callable[[int], None] | None = None) -> Iterator[str]:
    """The scope's lines, header first and `end` last. The caller has set the tenant (and
    should have opened export_snapshot). progress(memories written) is called a chunk at a time."""
    counts: dict[str, int] = defaultdict(int)

    def counted(kind: str, records: Iterator[dict]) -> Iterator[str]:
        for record in records:
            counts[kind] += 1
            yield line({"type": kind, **record})

    org_id = org.id
    in_scope = Memory.objects.without_usage().filter(scope.memories(), org_id=org_id).values("pk")
    yield line({"type": "header", "format": FORMAT, "version": VERSION,
                "organisation": {"slug": org.slug, "name": org.name}, "scope": scope.as_json(),
                "exported_at": timezone.now(),
                "embedding": {"model": active_model(), "dimensions": EMBEDDING_DIMENSIONS,
                              "encoding": EMBEDDING_ENCODING} if embeddings else None})
    yield from counted("agent", _agents(org_id, scope, in_scope))
    yield from counted("session", _sessions(org_id, scope, in_scope))
    yield from counted("entity", _entities(org_id, scope, in_scope))
    yield from counted("artifact", _artifacts(org_id, scope, in_scope))
    yield from counted("memory", _memories(org_id, scope, embeddings, progress))
    both_ends = Q(source__in=in_scope, target__in=in_scope)
    one_end = Q(source__in=in_scope) | Q(target__in=in_scope)
    yield from counted("relationship", _relationships(org_id, scope, both_ends))
    pair = Q(memory__in=in_scope, candidate__in=in_scope)
    either = Q(memory__in=in_scope) | Q(candidate__in=in_scope)
    yield from counted("duplicate_candidate", _duplicate_candidates(org_id, scope, pair))
    left_out = {"relationships": 0, "duplicate_candidates": 0}
    if not scope.everything:
        left_out = {
            "relationships": MemoryRelationship.objects.filter(one_end, org_id=org_id).exclude(both_ends).count(),
            "duplicate_candidates": DuplicateCandidate.objects.filter(either, org_id=org_id).exclude(pair).count(),
        }
    yield line({"type": "end", "records": dict(counts), "left_out": left_out})


# --------------------------------------------------------------------------- what memories need


def _agents(org_id, scope: ExportScope, in_scope) -> Iterator[dict]:
    """Every agent a record names: the memories' writers, the sessions' agents, and whoever
    changed a version."""
    agents = Agent.objects.filter(org_id=org_id)
    if not scope.everything:
        agents = agents.filter(Q(pk__in=Memory.objects.without_usage().filter(org_id=org_id, pk__in=in_scope)
                                 .values("agent_id"))
                               | Q(pk__in=MemoryVersion.objects.filter(org_id=org_id, memory__in=in_scope)
                                   .values("changed_by_agent_id"))
                               | Q(pk__in=Session.objects.filter(org_id=org_id, memories__in=in_scope)
                                   .values("agent_id")))
    for agent in agents.order_by("name").values("id", "name", "description", "is_active"):
        yield agent


def _sessions(org_id, scope: ExportScope, in_scope) -> Iterator[dict]:
    sessions = Session.objects.filter(org_id=org_id)
    if not scope.everything:
        sessions = sessions.filter(pk__in=Memory.objects.without_usage().filter(org_id=org_id, pk__in=in_scope)
                                   .values("session_id"))
    fields = ("id", "agent_id", "scope", "external_id", "metadata", "started_at", "ended_at")
    for session in filed(sessions.order_by("started_at", "id"), fields):
        yield {"id": session["id"], "origin": origin_of(session["id"], session["metadata"]),
               "agent": session["agent_id"], "scope": session["scope"], "external_id": session["external_id"],
               "metadata": without_origin(session["metadata"]), "started_at": session["started_at"],
               "ended_at": session["ended_at"]}


def _needed(rows, scope: ExportScope, linked: Q):
    """The rows the scope's memories link to, and for a namespace those kept under it."""
    if scope.everything:
        return rows
    under = scope.kept_under()
    return rows.filter(linked | under if under is not None else linked)


def _entities(org_id, scope: ExportScope, in_scope) -> Iterator[dict]:
    entities = _needed(Entity.objects.filter(org_id=org_id), scope, Q(pk__in=MemoryEntity.objects.filter(
        org_id=org_id, memory__in=in_scope).values("entity_id")))
    fields = ("id", "scope", "kind", "name", "summary", "attributes", "mention_count", "first_seen_at",
              "last_seen_at")
    rows = filed(entities.order_by("namespace", "kind", "key", "id"), fields)
    while chunk := list(islice(rows, CHUNK)):
        aliases = defaultdict(list)
        for alias in EntityAlias.objects.filter(org_id=org_id, entity_id__in=[e["id"] for e in chunk]).order_by(
                "key", "id").values("entity_id", "alias", "created_at"):
            aliases[alias.pop("entity_id")].append(alias)
        for entity in chunk:
            yield {**entity, "aliases": aliases[entity["id"]]}


def _artifacts(org_id, scope: ExportScope, in_scope) -> Iterator[dict]:
    artifacts = _needed(Artifact.objects.filter(org_id=org_id), scope, Q(pk__in=MemoryArtifact.objects.filter(
        org_id=org_id, memory__in=in_scope).values("artifact_id")))
    fields = ("id", "scope", "sha256", "storage_uri", "artifact_type", "metadata", "created_at")
    rows = filed(artifacts.order_by("created_at", "id"), fields)
    while chunk := list(islice(rows, CHUNK)):
        records = _provenance(org_id, artifact_id__in=[a["id"] for a in chunk])
        for artifact in chunk:
            yield {**artifact, "origin": origin_of(artifact["id"], artifact["metadata"]),
                   "metadata": without_origin(artifact["metadata"]),
                   "provenance_records": records[artifact["id"]]}


def _provenance(org_id, **subjects) -> dict:
    """The provenance records of a chunk of memories or artifacts, by subject."""
    by_subject = defaultdict(list)
    key = "memory_id" if "memory_id__in" in subjects else "artifact_id"
    for record in Provenance.objects.filter(org_id=org_id, **subjects).order_by("created_at", "id").values(
            key, "source_identity", "source_event", "details", "created_at"):
        by_subject[record.pop(key)].append(record)
    return by_subject


# --------------------------------------------------------------------------- memories

# The scope's memory ids in the order they are written: a memory after the ones it was
# superseded by or merged into (its depth: the longest such chain it starts, 0 for most),
# then by age. An import then inserts each after what it refers to.
ORDERED_IDS = """
    WITH RECURSIVE referring AS (
        SELECT m.id, m.superseded_by, m.merged_into FROM memories m
        WHERE m.org_id = %s AND {scope} AND (m.superseded_by IS NOT NULL OR m.merged_into IS NOT NULL)
    ), depths(id, depth) AS (
        SELECT id, 1 FROM referring
        UNION ALL
        SELECT r.id, d.depth + 1 FROM referring r JOIN depths d ON d.id IN (r.superseded_by, r.merged_into)
        WHERE d.depth < 64
    )
    SELECT m.id FROM memories m
    LEFT JOIN (SELECT id, max(depth) AS depth FROM depths GROUP BY id) d ON d.id = m.id
    WHERE m.org_id = %s AND {scope}
    ORDER BY coalesce(d.depth, 0), m.created_at, m.id
"""


def _ordered_ids(org_id, scope: ExportScope) -> Iterator[list]:
    """The scope's memory ids in ORDERED_IDS's order, a chunk at a time, from a server-side
    cursor."""
    condition, params = scope.memories_sql("m")
    with connection.chunked_cursor() as cursor:
        cursor.execute(ORDERED_IDS.format(scope=condition), [org_id, *params, org_id, *params])
        while rows := cursor.fetchmany(CHUNK):
            yield [row[0] for row in rows]


def _memories(org_id, scope: ExportScope, embeddings: bool, progress) -> Iterator[dict]:
    fields = MEMORY_FIELDS + (("embedding", "embedding_model", "embedding_dimensions", "embedded_at")
                              if embeddings else ())
    written = 0
    for ids in _ordered_ids(org_id, scope):
        rows = {row["id"]: row for row in filed(Memory.objects.without_usage().filter(org_id=org_id, pk__in=ids),
                                                fields, stream=False)}
        inline = _inline(org_id, ids)
        for memory_id in ids:
            yield _memory_record(rows[memory_id], inline, embeddings)
        written += len(ids)
        if progress:
            progress(written)


def _inline(org_id, ids: list) -> dict[str, dict]:
    """What each memory of a chunk carries inline, by kind and memory id."""
    by_memory = {kind: defaultdict(list) for kind in ("versions", "tags", "entities", "artifacts")}
    versions = MemoryVersion.objects.filter(org_id=org_id, memory_id__in=ids).order_by("memory_id", "version_num")
    for version in versions.values("memory_id", "version_num", "operation", "content", "category", "confidence",
                                   "status", "metadata", "snapshot", "changed_by_type", "changed_by_agent_id",
                                   "changed_by_user__username", "change_reason", "created_at"):
        version["changed_by_agent"] = version.pop("changed_by_agent_id")
        version["changed_by_user"] = version.pop("changed_by_user__username")
        by_memory["versions"][version.pop("memory_id")].append(version)
    for tag in MemoryTag.objects.filter(org_id=org_id, memory_id__in=ids).order_by("tag").values(
            "memory_id", "tag", "created_at"):
        by_memory["tags"][tag.pop("memory_id")].append(tag)
    for link in MemoryEntity.objects.filter(org_id=org_id, memory_id__in=ids).order_by("created_at", "id").values(
            "memory_id", "entity_id", "mention", "source", "role", "created_at"):
        link["entity"] = link.pop("entity_id")
        by_memory["entities"][link.pop("memory_id")].append(link)
    for link in MemoryArtifact.objects.filter(org_id=org_id, memory_id__in=ids).order_by("created_at", "id").values(
            "memory_id", "artifact_id", "created_at"):
        link["artifact"] = link.pop("artifact_id")
        by_memory["artifacts"][link.pop("memory_id")].append(link)
    by_memory["provenance_records"] = _provenance(org_id, memory_id__in=ids)
    by_memory["usage"] = {usage["memory_id"]: usage for usage in MemoryUsage.objects.filter(
        org_id=org_id, memory_id__in=ids).values("memory_id", "retrieval_count", "last_retrieved_at")}
    return by_memory


def _memory_record(row: dict, inline: dict, embeddings: bool) -> dict:
    memory_id = row["id"]
    usage = inline["usage"].get(memory_id, {})
    record = {
        "id": memory_id, "origin": origin_of(memory_id, row["provenance"]), "agent": row["agent_id"],
        "session": row["session_id"], **{name: row[name] for name in COPIED},
        "provenance": without_origin(row["provenance"]),
        "superseded_by": row["superseded_by_id"], "merged_into": row["merged_into_id"],
        "retrieval_count": usage.get("retrieval_count", 0), "last_retrieved_at": usage.get("last_retrieved_at"),
        "embedding": None,
        **{kind: inline[kind][memory_id] for kind in ("tags", "versions", "entities", "artifacts",
                                                      "provenance_records")},
    }
    if embeddings and row["embedding"] is not None:
        record["embedding"] = {"model": row["embedding_model"], "dimensions": row["embedding_dimensions"],
                               "embedded_at": row["embedded_at"], "vector": embedding_text(row["embedding"])}
    return record


# --------------------------------------------------------------------------- between memories


def _relationships(org_id, scope: ExportScope, both_ends: Q) -> Iterator[dict]:
    relationships = MemoryRelationship.objects.filter(org_id=org_id)
    if not scope.everything:
        relationships = relationships.filter(both_ends)
    fields = ("source_id", "target_id", "relation_type", "predicate", "weight", "confidence", "evidence",
              "metadata", "valid_from", "valid_until", "created_at")
    for relationship in relationships.order_by("created_at", "id").values(*fields).iterator(chunk_size=CHUNK):
        relationship["source"], relationship["target"] = relationship.pop("source_id"), relationship.pop("target_id")
        yield relationship


def _duplicate_candidates(org_id, scope: ExportScope, pair: Q) -> Iterator[dict]:
    candidates = DuplicateCandidate.objects.filter(org_id=org_id)
    if not scope.everything:
        candidates = candidates.filter(pair)
    fields = ("memory_id", "candidate_id", "similarity", "detected_at", "resolved_at", "resolution")
    for candidate in candidates.order_by("detected_at", "id").values(*fields).iterator(chunk_size=CHUNK):
        candidate["memory"], candidate["candidate"] = candidate.pop("memory_id"), candidate.pop("candidate_id")
        yield candidate
