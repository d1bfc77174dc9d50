"""Writes to memories. Every change runs in one transaction, under its organisation's tenant
context, and leaves a MemoryVersion row. Side effects (embedding jobs) run on commit.

The write path (DESIGN.md 2.3): validate (the API's serializers) -> redact -> normalise and
hash -> exact dedup -> embed -> near-duplicate candidates -> persist with a version row.
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
import uuid
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from memories import jobs
from memories.embeddings import MODEL_NAME, EmbeddingError, get_embedder
from memories.errors import Conflict, InvalidInput, NotFound, StaleVersion, VersionRequired
from memories.models import (
    EMBEDDING_DIMENSIONS,
    DuplicateCandidate,
    Memory,
    MemoryRelationship,
    MemoryTag,
    MemoryVersion,
)
from memories.redaction import IdentifierHoldsSecret, Redactor, redactor_for
from tenants.context import tenant_context

logger = logging.getLogger(__name__)

# Fields a client may set when writing a memory; everything else is the server's.
WRITABLE_FIELDS = (
    "category", "memory_type", "source", "confidence", "importance", "sensitivity", "scope", "key",
    "session_id", "metadata", "provenance", "expires_at", "valid_from", "valid_until", "event_time",
)
UPDATABLE_FIELDS = ("content", *(f for f in WRITABLE_FIELDS if f not in ("source", "session_id", "provenance")))
SNAPSHOT_FIELDS = (
    "memory_type", "source", "importance", "usefulness_score", "sensitivity", "validation_status", "scope", "key",
    "expires_at", "valid_from", "valid_until", "event_time", "is_protected", "decay_rate", "superseded_by_id",
    "merged_into_id", "deleted_at", "session_id",
)


def knob(name: str):
    return settings.MEMORY_PLATFORM[name]


# --------------------------------------------------------------------------- building blocks


def normalise(content: str) -> str:
    """What makes two memories the same memory: Unicode-normalised, case-folded, with runs
    of whitespace collapsed."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", content)).strip().casefold()


def content_hash(content: str) -> str:
    return hashlib.sha256(normalise(content).encode()).hexdigest()


@dataclass
class Actor:
    """Who makes a change, as the version row records it."""

    changed_by_type: str = MemoryVersion.ChangedByType.AGENT
    agent_id: uuid.UUID | None = None
    user: Any = None
    reason: str = ""


@dataclass
class Redacted:
    content: str
    metadata: dict
    provenance: dict


def _redact(redactor: Redactor, content: str, metadata: dict, provenance: dict) -> Redacted:
    result = redactor.text(content)
    metadata, kinds = redactor.json(metadata, result.kinds)
    provenance, kinds = redactor.json(provenance, kinds)
    if kinds:
        provenance = {**provenance, "redaction": {"applied": True, "count": sum(kinds.values()),
                                                  "kinds": dict(sorted(kinds.items()))}}
    return Redacted(result.text.strip(), metadata, provenance)


def _check_identifiers(redactor: Redactor, *, scope: str | None = None, key: str | None = None,
                       tags: list[str] = (), sensitivity: str | None = None) -> None:
    """Refuse a namespace, key, tag or sensitivity label that holds a secret (or, by policy,
    personal data)."""
    try:
        redactor.check_identifier(scope, field="namespace")
        redactor.check_identifier(key, field="key")
        redactor.check_identifier(sensitivity, field="sensitivity")
        for tag in tags:
            redactor.check_identifier(tag, field="tags")
    except IdentifierHoldsSecret as exc:
        raise InvalidInput(str(exc), field=exc.field) from None


def _recorded(actor: Actor, redactor: Redactor) -> Actor:
    """The actor as its version rows keep it: the reason is free text, redacted like content."""
    return replace(actor, reason=redactor.plain(actor.reason)) if actor.reason else actor


def _check_content(content: str) -> None:
    if not content.strip():
        raise InvalidInput("content must not be empty", field="content")
    if len(content) > 8192:
        raise InvalidInput("content must be at most 8192 characters", field="content")


def _embed_one(content: str) -> list[float] | None:
    try:
        return get_embedder().embed([content])[0]
    except EmbeddingError as exc:
        # The write goes on with the embedding pending; the sweep completes it.
        logger.warning("embedding deferred: %s", type(exc).__name__)
        return None


def _embedding_fields(vector: list[float] | None) -> dict:
    if vector is None:
        return {"embedding": None, "embedding_model": "", "embedding_dimensions": None, "embedded_at": None}
    return {"embedding": vector, "embedding_model": MODEL_NAME, "embedding_dimensions": EMBEDDING_DIMENSIONS,
            "embedded_at": timezone.now()}


NEAR_DUPLICATES_SQL = """
    SELECT written.id, candidate.id, 1 - (candidate.embedding <=> written.embedding) AS similarity
    FROM memories written
    CROSS JOIN LATERAL (
        SELECT other.id, other.embedding FROM memories other
        WHERE other.org_id = written.org_id AND other.agent_id = written.agent_id AND other.scope = written.scope
          AND other.status = 'active' AND other.deleted_at IS NULL AND other.id <> written.id
        ORDER BY other.embedding <=> written.embedding
        LIMIT %(limit)s
    ) candidate
    WHERE written.org_id = %(org_id)s AND written.id = ANY(%(ids)s::uuid[]) AND written.embedding IS NOT NULL
      AND 1 - (candidate.embedding <=> written.embedding) >= %(threshold)s
    ORDER BY written.id, similarity DESC
"""


def near_duplicates(org_id, memory_ids: list, *, limit: int = 5) -> dict[uuid.UUID, list[tuple[Memory, float]]]:
    """For each written memory, the live memories of the same agent and namespace at or above
    the near-duplicate similarity, closest first: one statement for the whole batch."""
    with connection.cursor() as cursor:
        cursor.execute(NEAR_DUPLICATES_SQL, {"limit": limit, "org_id": org_id, "ids": [str(i) for i in memory_ids],
                                             "threshold": knob("NEAR_DUPLICATE_SIMILARITY")})
        rows = cursor.fetchall()
    candidates = Memory.objects.only("id", "content").in_bulk({candidate for _, candidate, _ in rows})
    found: dict[uuid.UUID, list[tuple[Memory, float]]] = {}
    for written, candidate, similarity in rows:
        found.setdefault(written, []).append((candidates[candidate], round(similarity, 6)))
    return found


def _record_duplicates(org_id, found: dict[uuid.UUID, list[tuple[Memory, float]]]) -> None:
    rows = [DuplicateCandidate(org_id=org_id, memory_id=written, candidate=other, similarity=similarity)
            for written, pairs in found.items() for other, similarity in pairs]
    if rows:
        DuplicateCandidate.objects.bulk_create(rows, ignore_conflicts=True)


def _tags_of(memory: Memory) -> list[str]:
    return sorted(MemoryTag.objects.filter(org_id=memory.org_id, memory_id=memory.pk).values_list("tag", flat=True))


def _snapshot(memory: Memory, tags: list[str] | None = None) -> dict:
    snapshot = {}
    for name in SNAPSHOT_FIELDS:
        value = getattr(memory, name)
        snapshot[name] = value.isoformat() if hasattr(value, "isoformat") else (
            str(value) if isinstance(value, (Decimal, uuid.UUID)) else value)
    snapshot["tags"] = _tags_of(memory) if tags is None else sorted(tags)
    return snapshot


def _version(memory: Memory, operation: str, actor: Actor, tags: list[str] | None = None) -> MemoryVersion:
    """The version row recording memory as it now is (unsaved)."""
    return MemoryVersion(
        org_id=memory.org_id,
        memory=memory,
        version_num=memory.version,
        operation=operation,
        content=memory.content,
        category=memory.category,
        confidence=memory.confidence,
        status=memory.status,
        metadata=memory.metadata,
        snapshot=_snapshot(memory, tags),
        changed_by_type=actor.changed_by_type,
        changed_by_agent_id=actor.agent_id,
        changed_by_user=actor.user,
        change_reason=actor.reason,
    )


def _record_version(memory: Memory, operation: str, actor: Actor, tags: list[str] | None = None) -> MemoryVersion:
    version = _version(memory, operation, actor, tags)
    version.save(force_insert=True)
    return version


def _enqueue_embedding(org_id, memory_ids: list) -> None:
    """After commit, ask a worker to embed these memories. If Redis is down the memories stay
    pending and the sweep (memories.jobs.embed_pending) completes them."""
    ids = [str(i) for i in memory_ids]

    def enqueue():
        try:
            jobs.enqueue_embedding(org_id=str(org_id), memory_ids=ids)
        except Exception as exc:  # Redis unreachable, or any queue failure: never fail a committed write
            logger.warning("embedding job not enqueued (%s); the sweep will embed %d memories",
                           type(exc).__name__, len(ids))

    transaction.on_commit(enqueue)


def _refresh_hot_set(memory: Memory) -> None:
    """After commit, keep the agent's hot set (Redis) in step: live memories in, others out."""
    from memories import cache

    if memory.status == Memory.Status.ACTIVE and memory.deleted_at is None:
        transaction.on_commit(lambda: cache.hot_memory_update(memory))
    else:
        transaction.on_commit(lambda: cache.hot_memory_remove(memory))


def _locked(org_id, memory_id) -> Memory:
    try:
        return Memory.objects.select_for_update().get(org_id=org_id, pk=memory_id)
    except (Memory.DoesNotExist, ValueError, TypeError):
        raise NotFound(f"memory {memory_id} not found") from None


def _bump(memory: Memory, expected_version: int | None, *, require: bool) -> None:
    if expected_version is None:
        if require:
            raise VersionRequired("send If-Match with the memory's current version (its ETag), or `version`")
        return
    if expected_version != memory.version:
        raise StaleVersion(
            f"memory {memory.pk} is at version {memory.version}, not {expected_version}",
            current_version=memory.version,
        )


# --------------------------------------------------------------------------- create


@dataclass
class WriteResult:
    memory: Memory
    created: bool
    deduplicated: bool = False
    near_duplicates: list[tuple[Memory, float]] = field(default_factory=list)

    @property
    def embedding_status(self) -> str:
        return "ready" if self.memory.embedding is not None else "pending"


def _find_live_duplicate(org_id, agent_id, scope: str, digest: str) -> Memory | None:
    """The live unkeyed memory this agent keeps with this content in this namespace: a
    namespace is an end user's boundary, so another namespace's equal memory is not one."""
    # At most one (the unique index of live unkeyed memories), so no ORDER BY.
    equal = Memory.objects.filter(org_id=org_id, agent_id=agent_id, scope=scope, content_hash=digest,
                                  status="active", deleted_at__isnull=True, key__isnull=True).order_by()
    return next(iter(equal[:1]), None)


def _insert(org_id, agent_id, content: str, fields: dict, tags: list[str], actor: Actor,
            vector: list[float] | None, redactor: Redactor | None = None) -> WriteResult:
    """Insert one memory and its first version; an equal live memory is returned instead."""
    embed = fields.pop("_embed", True)
    redactor = redactor or redactor_for(org_id)
    _check_identifiers(redactor, scope=fields.get("scope"), key=fields.get("key"), tags=tags,
                       sensitivity=fields.get("sensitivity"))
    actor = _recorded(actor, redactor)
    redacted = _redact(redactor, content, fields.pop("metadata", None) or {}, fields.pop("provenance", None) or {})
    _check_content(redacted.content)
    digest = content_hash(redacted.content)
    key, scope = fields.get("key"), fields.get("scope") or ""
    if key is None and (existing := _find_live_duplicate(org_id, agent_id, scope, digest)):
        return WriteResult(existing, created=False, deduplicated=True)
    if vector is None and embed:
        vector = _embed_one(redacted.content)
    memory = Memory(org_id=org_id, agent_id=agent_id, content=redacted.content, content_hash=digest,
                    metadata=redacted.metadata, provenance=redacted.provenance,
                    **fields, **_embedding_fields(vector))
    try:
        with transaction.atomic():
            memory.save(force_insert=True)
    except IntegrityError as exc:
        if "memories_content_hash_live_unique" in str(exc):  # a concurrent equal write won
            return WriteResult(_find_live_duplicate(org_id, agent_id, scope, digest), created=False, deduplicated=True)
        if "memories_scope_key_live_unique" in str(exc):
            raise Conflict(f"key {key!r} already exists in this namespace", code="key_exists", field="key") from None
        if "memories_session_id_fkey" in str(exc):
            raise NotFound("session not found", field="session_id") from None
        raise
    tags = sorted(set(tags))
    if tags:
        MemoryTag.objects.bulk_create([MemoryTag(org_id=org_id, memory=memory, tag=tag) for tag in tags])
    _record_version(memory, MemoryVersion.Operation.CREATE, actor, tags)
    _refresh_hot_set(memory)
    found = []
    if vector is not None:
        duplicates = near_duplicates(org_id, [memory.pk])
        _record_duplicates(org_id, duplicates)
        found = duplicates.get(memory.pk, [])
    return WriteResult(memory, created=True, near_duplicates=found)


def memory_create(*, org_id, agent_id, content: str, tags: list[str] = (), actor: Actor | None = None,
                  **fields) -> WriteResult:
    """Create one memory, embedded inline (pending if the model fails)."""
    actor = actor or Actor(agent_id=agent_id)
    with tenant_context(org_id), transaction.atomic():
        result = _insert(org_id, agent_id, content, dict(fields), list(tags), actor, vector=None)
        if result.created and result.memory.embedding is None:
            _enqueue_embedding(org_id, [result.memory.pk])
        return result


def _create_one_by_one(org_id, agent_id, items: list[dict], actor: Actor, redactor: Redactor) -> list[WriteResult]:
    results = []
    for item in map(dict, items):
        content, tags = item.pop("content"), item.pop("tags", [])
        results.append(_insert(org_id, agent_id, content, {**item, "_embed": False}, list(tags), actor, vector=None,
                               redactor=redactor))
    pending = [result.memory.pk for result in results if result.created]
    if pending:
        _enqueue_embedding(org_id, pending)
    return results


def memory_create_batch(*, org_id, agent_id, items: list[dict], actor: Actor | None = None) -> list[WriteResult]:
    """Create many memories in one transaction, with a handful of statements whatever their
    number. They are stored with their embeddings pending and embedded by a worker after
    commit (which also finds their near-duplicates)."""
    actor = actor or Actor(agent_id=agent_id)
    with tenant_context(org_id), transaction.atomic():
        redactor = redactor_for(org_id)
        actor = _recorded(actor, redactor)
        prepared = []
        for index, item in enumerate(items):
            item = dict(item)
            content, tags = item.pop("content"), sorted(set(item.pop("tags", [])))
            try:
                _check_identifiers(redactor, scope=item.get("scope"), key=item.get("key"), tags=tags,
                                   sensitivity=item.get("sensitivity"))
            except InvalidInput as exc:
                raise InvalidInput(exc.message, field=f"memories[{index}].{exc.field}") from None
            redacted = _redact(redactor, content, item.pop("metadata", None) or {}, item.pop("provenance", None) or {})
            _check_content(redacted.content)
            memory = Memory(org_id=org_id, agent_id=agent_id, content=redacted.content,
                            content_hash=content_hash(redacted.content), metadata=redacted.metadata,
                            provenance=redacted.provenance, **item, **_embedding_fields(None))
            prepared.append((memory, tags))

        # Equal means equal content in the same namespace (see _find_live_duplicate).
        unkeyed = {(memory.scope, memory.content_hash) for memory, _ in prepared if memory.key is None}
        existing = {(m.scope, m.content_hash): m for m in Memory.objects.filter(
            org_id=org_id, agent_id=agent_id, scope__in={scope for scope, _ in unkeyed},
            content_hash__in={digest for _, digest in unkeyed}, status="active",
            deleted_at__isnull=True, key__isnull=True)}
        results, new, first_of = [], [], {}
        for memory, tags in prepared:
            identity = (memory.scope, memory.content_hash)
            twin = existing.get(identity) or first_of.get(identity) if memory.key is None else None
            if twin is not None:
                results.append(WriteResult(twin, created=False, deduplicated=True))
                continue
            if memory.key is None:
                first_of[identity] = memory
            results.append(WriteResult(memory, created=True))
            new.append((memory, tags))
        try:
            with transaction.atomic():
                Memory.objects.bulk_create([memory for memory, _ in new])
        except IntegrityError:
            # A concurrent equal write, a taken key or an unknown session: one at a time sorts
            # each of these out (and names the item that is wrong).
            return _create_one_by_one(org_id, agent_id, items, actor, redactor)
        MemoryTag.objects.bulk_create([MemoryTag(org_id=org_id, memory=memory, tag=tag)
                                       for memory, tags in new for tag in tags])
        MemoryVersion.objects.bulk_create([_version(memory, MemoryVersion.Operation.CREATE, actor, tags)
                                           for memory, tags in new])
        for memory, _ in new:
            _refresh_hot_set(memory)
        if new:
            _enqueue_embedding(org_id, [memory.pk for memory, _ in new])
    return results


# --------------------------------------------------------------------------- change


def memory_update(*, org_id, memory_id, changes: dict, expected_version: int | None, actor: Actor) -> Memory:
    """Change a memory's content or classification (optimistic concurrency: expected_version
    must be the current one)."""
    unknown = set(changes) - set(UPDATABLE_FIELDS)
    if unknown:
        raise InvalidInput(f"cannot change {', '.join(sorted(unknown))}", field=sorted(unknown)[0])
    with tenant_context(org_id), transaction.atomic():
        memory = _locked(org_id, memory_id)
        _bump(memory, expected_version, require=True)
        if memory.deleted_at is not None:
            raise Conflict(f"memory {memory.pk} is deleted; restore it first", code="deleted")
        changes = dict(changes)
        redactor = redactor_for(org_id)
        _check_identifiers(redactor, scope=changes.get("scope"), key=changes.get("key"),
                           sensitivity=changes.get("sensitivity"))
        actor = _recorded(actor, redactor)
        if "metadata" in changes:
            changes["metadata"], _ = redactor.json(changes["metadata"] or {})
        if "content" in changes:
            redacted = redactor.text(changes["content"])
            new_content = redacted.text.strip()
            _check_content(new_content)
            if redacted.count:
                memory.provenance = {**memory.provenance, "redaction": redacted.as_provenance()}
            if new_content != memory.content:
                changes["content"], changes["content_hash"] = new_content, content_hash(new_content)
            else:
                changes.pop("content")
        identity_changed = bool({"content_hash", "scope", "key"} & set(changes))
        for name, value in changes.items():
            setattr(memory, name, value)
        if identity_changed and memory.key is None and memory.status == Memory.Status.ACTIVE:
            duplicate = _find_live_duplicate(org_id, memory.agent_id, memory.scope, memory.content_hash)
            if duplicate and duplicate.pk != memory.pk:
                raise Conflict(f"an identical live memory exists in this namespace: {duplicate.pk}",
                               code="duplicate", field="content", existing_id=duplicate.pk)
        if "content" in changes:
            for name, value in _embedding_fields(_embed_one(memory.content)).items():
                setattr(memory, name, value)
        memory.version += 1
        try:
            with transaction.atomic():
                memory.save()
        except IntegrityError as exc:
            if "memories_scope_key_live_unique" in str(exc):
                raise Conflict("that key already exists in this namespace", code="key_exists", field="key") from None
            if "memories_content_hash_live_unique" in str(exc):  # a concurrent equal write won
                raise Conflict("an identical live memory exists in this namespace", code="duplicate",
                               field="content") from None
            raise
        _record_version(memory, MemoryVersion.Operation.UPDATE, actor)
        _refresh_hot_set(memory)
        if "content" in changes and memory.embedding is None:
            _enqueue_embedding(org_id, [memory.pk])
        return memory


def _transition(org_id, memory_id, operation: str, actor: Actor, expected_version: int | None, apply) -> Memory:
    with tenant_context(org_id), transaction.atomic():
        actor = _recorded(actor, redactor_for(org_id))
        memory = _locked(org_id, memory_id)
        _bump(memory, expected_version, require=False)
        apply(memory)
        memory.version += 1
        try:
            with transaction.atomic():
                memory.save()
        except IntegrityError as exc:
            if "memories_content_hash_live_unique" in str(exc) or "memories_scope_key_live_unique" in str(exc):
                raise Conflict("an identical live memory (or the same key) exists", code="duplicate") from None
            raise
        _record_version(memory, operation, actor)
        _refresh_hot_set(memory)
        return memory


def memory_delete(*, org_id, memory_id, actor: Actor, expected_version: int | None = None) -> Memory:
    """Soft delete: the memory leaves every read path but keeps its history."""

    def apply(memory):
        if memory.deleted_at is not None:
            raise Conflict(f"memory {memory.pk} is already deleted", code="deleted")
        memory.deleted_at = timezone.now()

    return _transition(org_id, memory_id, MemoryVersion.Operation.DELETE, actor, expected_version, apply)


def memory_restore(*, org_id, memory_id, actor: Actor, expected_version: int | None = None) -> Memory:
    def apply(memory):
        if memory.deleted_at is None:
            raise Conflict(f"memory {memory.pk} is not deleted", code="not_deleted")
        memory.deleted_at = None

    return _transition(org_id, memory_id, MemoryVersion.Operation.RESTORE, actor, expected_version, apply)


def memory_confirm(*, org_id, memory_id, actor: Actor, expected_version: int | None = None) -> Memory:
    """Protect a memory from decay and set its confidence to 1.0 (seed 004 confirm_fact)."""

    def apply(memory):
        if memory.deleted_at is not None:
            raise Conflict(f"memory {memory.pk} is deleted; restore it first", code="deleted")
        memory.is_protected, memory.decay_rate, memory.confidence = True, 0.0, Decimal("1.000")

    return _transition(org_id, memory_id, MemoryVersion.Operation.CONFIRM, actor, expected_version, apply)


def memory_archive(*, org_id, memory_id, actor: Actor, expected_version: int | None = None) -> Memory:
    """Take a memory out of retrieval without deleting it (an operator's call)."""

    def apply(memory):
        if memory.deleted_at is not None:
            raise Conflict(f"memory {memory.pk} is deleted; restore it first", code="deleted")
        if memory.status not in (Memory.Status.ACTIVE, Memory.Status.PENDING_REVIEW):
            raise Conflict(f"memory {memory.pk} is {memory.status}; only an active or pending memory can be archived",
                           code=memory.status)
        memory.status = Memory.Status.ARCHIVED

    return _transition(org_id, memory_id, MemoryVersion.Operation.ARCHIVE, actor, expected_version, apply)


def memory_unarchive(*, org_id, memory_id, actor: Actor, expected_version: int | None = None) -> Memory:
    """Bring an archived memory back. One that never passed review (archived while pending,
    or rejected) goes back to the review queue, not live."""

    def apply(memory):
        if memory.status != Memory.Status.ARCHIVED:
            raise Conflict(f"memory {memory.pk} is {memory.status}, not archived", code="not_archived")
        before = (MemoryVersion.objects.filter(org_id=org_id, memory_id=memory.pk)
                  .exclude(status=Memory.Status.ARCHIVED).order_by("-version_num").values_list("status", flat=True)
                  .first())
        unreviewed = memory.validation_status == Memory.ValidationStatus.REJECTED or (
            before == Memory.Status.PENDING_REVIEW and memory.validation_status != Memory.ValidationStatus.VERIFIED)
        if unreviewed:
            memory.status, memory.validation_status = Memory.Status.PENDING_REVIEW, Memory.ValidationStatus.UNVERIFIED
        else:
            memory.status = Memory.Status.ACTIVE

    return _transition(org_id, memory_id, MemoryVersion.Operation.RESTORE, actor, expected_version, apply)


def _review(org_id, memory_id, actor: Actor, apply) -> Memory:
    def checked(memory):
        if memory.deleted_at is not None or memory.status != Memory.Status.PENDING_REVIEW:
            state = "deleted" if memory.deleted_at else memory.status
            raise Conflict(f"memory {memory.pk} is {state}, not waiting for review", code="not_pending")
        apply(memory)

    return _transition(org_id, memory_id, MemoryVersion.Operation.REVIEW, actor, None, checked)


def memory_approve(*, org_id, memory_id, actor: Actor) -> Memory:
    """A reviewer accepts a pending memory: it goes live, verified."""

    def apply(memory):
        memory.status, memory.validation_status = Memory.Status.ACTIVE, Memory.ValidationStatus.VERIFIED

    return _review(org_id, memory_id, actor, apply)


def memory_reject(*, org_id, memory_id, actor: Actor) -> Memory:
    """A reviewer turns a pending memory down; the reason is required and kept in its version."""
    if not actor.reason.strip():
        raise InvalidInput("say why the memory is rejected", field="reason")

    def apply(memory):
        memory.status, memory.validation_status = Memory.Status.ARCHIVED, Memory.ValidationStatus.REJECTED

    return _review(org_id, memory_id, actor, apply)


def memory_supersede(*, org_id, memory_id, agent_id, content: str, actor: Actor,
                     expected_version: int | None = None, reason: str = "", **fields) -> tuple[Memory, WriteResult]:
    """Correct a memory: a new memory replaces it, linked by a `supersedes` edge; the old one
    becomes `superseded` and names its successor."""
    with tenant_context(org_id), transaction.atomic():
        redactor = redactor_for(org_id)
        actor, reason = _recorded(actor, redactor), redactor.plain(reason)
        old = _locked(org_id, memory_id)
        _bump(old, expected_version, require=False)
        if old.deleted_at is not None or old.status != "active":
            state = "deleted" if old.deleted_at else old.status
            raise Conflict(f"memory {old.pk} is {state}; only an active memory can be superseded", code=state)
        inherited = {"category": old.category, "memory_type": old.memory_type, "scope": old.scope,
                     "sensitivity": old.sensitivity, "importance": old.importance}
        result = _insert(org_id, agent_id, content, {**inherited, **fields}, [], actor, vector=None,
                         redactor=redactor)
        new = result.memory
        if new.pk == old.pk:
            raise Conflict("the correction is identical to the memory it corrects", code="duplicate", field="content")
        old.status, old.superseded_by = Memory.Status.SUPERSEDED, new
        old.version += 1
        old.save()
        _record_version(old, MemoryVersion.Operation.SUPERSEDE,
                        Actor(actor.changed_by_type, actor.agent_id, actor.user, reason or f"superseded by {new.pk}"))
        MemoryRelationship.objects.get_or_create(
            org_id=org_id, source=new, target=old, relation_type=MemoryRelationship.RelationType.SUPERSEDES,
        )
        _refresh_hot_set(old)
        if result.created and new.embedding is None:
            _enqueue_embedding(org_id, [new.pk])
        return old, result


def memory_feedback(*, org_id, memory_id, useful: bool | None = None, score: float | None = None) -> Memory:
    """Fold one usefulness signal into usefulness_score (an exponential moving average).
    A usage signal, like retrieval counts: it changes no content and writes no version."""
    signal = Decimal(str(score)) if score is not None else Decimal(1 if useful else 0)
    weight = Decimal(str(knob("FEEDBACK_WEIGHT")))
    with tenant_context(org_id), transaction.atomic():
        memory = _locked(org_id, memory_id)
        if memory.deleted_at is not None:
            raise Conflict(f"memory {memory.pk} is deleted", code="deleted")
        memory.usefulness_score = (memory.usefulness_score + weight * (signal - memory.usefulness_score)).quantize(
            Decimal("0.001"))
        Memory.objects.filter(pk=memory.pk, org_id=org_id).update(usefulness_score=memory.usefulness_score)
        return memory


# --------------------------------------------------------------------------- tags and relationships


def memory_tags_add(*, org_id, memory_id, tags: list[str], actor: Actor) -> list[str]:
    with tenant_context(org_id), transaction.atomic():
        _check_identifiers(redactor_for(org_id), tags=tags)
        memory = _locked(org_id, memory_id)
        new = sorted(set(tags) - set(_tags_of(memory)))
        if new:
            MemoryTag.objects.bulk_create([MemoryTag(org_id=org_id, memory=memory, tag=t) for t in new])
            memory.version += 1
            Memory.objects.filter(pk=memory.pk, org_id=org_id).update(version=F("version") + 1)
            _record_version(memory, MemoryVersion.Operation.UPDATE,
                            Actor(actor.changed_by_type, actor.agent_id, actor.user, f"tags added: {', '.join(new)}"))
        return _tags_of(memory)


def memory_tag_remove(*, org_id, memory_id, tag: str, actor: Actor) -> list[str]:
    with tenant_context(org_id), transaction.atomic():
        memory = _locked(org_id, memory_id)
        removed, _ = MemoryTag.objects.filter(org_id=org_id, memory_id=memory.pk, tag=tag).delete()
        if not removed:
            raise NotFound(f"memory {memory.pk} has no tag {tag!r}", field="tag")
        memory.version += 1
        Memory.objects.filter(pk=memory.pk, org_id=org_id).update(version=F("version") + 1)
        _record_version(memory, MemoryVersion.Operation.UPDATE,
                        Actor(actor.changed_by_type, actor.agent_id, actor.user, f"tag removed: {tag}"))
        return _tags_of(memory)


def relationship_create(*, org_id, source_id, target_id, relation_type: str, confidence=None,
                        predicate: str = "", weight: float = 1.0, metadata: dict | None = None) -> MemoryRelationship:
    if str(source_id) == str(target_id):
        raise InvalidInput("a memory cannot be related to itself", field="target_id")
    with tenant_context(org_id), transaction.atomic():
        found = set(Memory.objects.filter(org_id=org_id, pk__in=[source_id, target_id]).values_list("pk", flat=True))
        for name, value in (("source_id", source_id), ("target_id", target_id)):
            if uuid.UUID(str(value)) not in found:
                raise NotFound(f"memory {value} not found", field=name)
        redactor = redactor_for(org_id)
        metadata, _ = redactor.json(metadata or {})
        predicate = redactor.plain(predicate)
        try:
            with transaction.atomic():
                return MemoryRelationship.objects.create(
                    org_id=org_id, source_id=source_id, target_id=target_id, relation_type=relation_type,
                    confidence=Decimal("0.8") if confidence is None else confidence, predicate=predicate,
                    weight=weight, metadata=metadata,
                )
        except IntegrityError as exc:
            if "memory_relationships_unique_per_type" in str(exc):
                raise Conflict(f"these memories are already linked by {relation_type}", code="relationship_exists") from None
            raise


def relationship_delete(*, org_id, relationship_id) -> None:
    with tenant_context(org_id), transaction.atomic():
        deleted, _ = MemoryRelationship.objects.filter(org_id=org_id, pk=relationship_id).delete()
        if not deleted:
            raise NotFound(f"relationship {relationship_id} not found")


# --------------------------------------------------------------------------- the namespace store (seed 003)


def store_put(*, org_id, agent_id, scope: str, key: str, content: str, metadata: dict | None = None,
              category: str = Memory.Category.FACTUAL, actor: Actor | None = None) -> WriteResult:
    """Upsert by namespace and key: last write wins, and every write leaves a version."""
    actor = actor or Actor(agent_id=agent_id)
    with tenant_context(org_id), transaction.atomic():
        current = (Memory.objects.select_for_update()
                   .filter(org_id=org_id, scope=scope, key=key, deleted_at__isnull=True).first())
        if current is None:
            try:
                with transaction.atomic():
                    return memory_create(org_id=org_id, agent_id=agent_id, content=content, scope=scope, key=key,
                                         metadata=metadata or {}, category=category, actor=actor)
            except Conflict:
                # A concurrent first put of the same key won; this write comes last, so it wins.
                current = Memory.objects.select_for_update().get(org_id=org_id, scope=scope, key=key,
                                                                deleted_at__isnull=True)
        changes = {"content": content, "metadata": metadata or {}}
        memory = memory_update(org_id=org_id, memory_id=current.pk, changes=changes,
                               expected_version=current.version, actor=actor)
        return WriteResult(memory, created=False)
