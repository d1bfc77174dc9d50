"""The building blocks of every write: who makes it (Actor), what is stored (redacted,
normalised, hashed), the version row it leaves, and what follows its commit (the embedding
job, the agent's hot set). The action modules (create, change, review, tagging, store,
conflicts) build on these public functions only.
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from memories import jobs
from memories.access import Actor  # noqa: F401 (who makes a change; the writes take it from here)
from memories.caching import cache
from memories.errors import InvalidInput, NotFound, StaleVersion, VersionRequired
from memories.intake.redaction import IdentifierHoldsSecret, Redactor
from memories.models import CONTENT_MAX_CHARS, EMBEDDING_DIMENSIONS, LIVE, Memory, MemoryTag, MemoryVersion
from memories.vectors.embeddings import Embedded, EmbeddingError, embed_contents, get_embedder
from memories.writes.entities import speakers_of

logger = logging.getLogger(__name__)

# Fields a client may set when writing a memory; everything else is the server's. `ttl` (a
# time to live in seconds) is stored as expires_at and ttl_seconds (lifetime).
WRITABLE_FIELDS = (
    "category", "memory_type", "source", "confidence", "importance", "sensitivity", "namespace", "key",
    "session_id", "metadata", "provenance", "expires_at", "ttl", "valid_from", "valid_until", "event_time",
    "decay_rate",
)
UPDATABLE_FIELDS = ("content", "indexed", *(f for f in WRITABLE_FIELDS
                                            if f not in ("source", "session_id", "provenance", "decay_rate")))
SNAPSHOT_FIELDS = (
    "memory_type", "source", "importance", "usefulness_score", "sensitivity", "validation_status", "namespace", "key",
    "expires_at", "ttl_seconds", "valid_from", "valid_until", "event_time", "is_protected", "decay_rate",
    "superseded_by_id", "merged_into_id", "deleted_at", "session_id", "indexed",
)
# A snapshot keeps the namespace under "scope", its column's name: the versions written before
# the field was renamed hold that key, and the API answers snapshots as they are stored.
SNAPSHOT_KEYS = {"namespace": "scope"}
# The longest time to live a write may give, in seconds (ten years).
TTL_MAX_SECONDS = 10 * 365 * 86400
# How fast a memory fades (memories.lifecycle.strength) unless the writer says otherwise: episodes, the
# record of what happened, do not.
DEFAULT_DECAY_RATE = {Memory.MemoryType.EPISODIC: 0.0}
DECAY_RATE_MAX = 10.0


# --------------------------------------------------------------------------- what is stored


def normalise(content: str) -> str:
    """What makes two memories the same memory: Unicode-normalised, case-folded, with runs
    of whitespace collapsed."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", content)).strip().casefold()


def content_hash(content: str) -> str:
    return hashlib.sha256(normalise(content).encode()).hexdigest()


@dataclass
class Redacted:
    content: str
    metadata: dict
    provenance: dict


def redact(redactor: Redactor, content: str, metadata: dict, provenance: dict) -> Redacted:
    """Content, metadata and provenance as they are stored: secrets (and, by the organisation's
    policy, personal data) replaced, and what was replaced counted in the provenance."""
    result = redactor.text(content)
    metadata, kinds = redactor.json(metadata, result.kinds)
    provenance, kinds = redactor.json(provenance, kinds)
    if kinds:
        provenance = {**provenance, "redaction": {"applied": True, "count": sum(kinds.values()),
                                                  "kinds": dict(sorted(kinds.items()))}}
    return Redacted(result.text.strip(), metadata, provenance)


def check_identifiers(redactor: Redactor, *, namespace: str | None = None, key: str | None = None,
                      tags: list[str] = (), sensitivity: str | None = None) -> None:
    """Refuse a namespace, key, tag or sensitivity label that holds a secret (or, by policy,
    personal data): redacting an identifier would merge identities."""
    try:
        redactor.check_identifier(namespace, field="namespace")
        redactor.check_identifier(key, field="key")
        redactor.check_identifier(sensitivity, field="sensitivity")
        for tag in tags:
            redactor.check_identifier(tag, field="tags")
    except IdentifierHoldsSecret as exc:
        raise InvalidInput(str(exc), field=exc.field) from None


def recorded(actor: Actor, redactor: Redactor) -> Actor:
    """The actor as its version rows keep it: the reason is free text, redacted like content."""
    return actor.because(redactor.plain(actor.reason)) if actor.reason else actor


def check_content(content: str) -> None:
    if not content.strip():
        raise InvalidInput("content must not be empty", field="content")
    if len(content) > CONTENT_MAX_CHARS:
        raise InvalidInput(f"content must be at most {CONTENT_MAX_CHARS} characters", field="content")


def embed_one(content: str) -> Embedded | None:
    """The content's embedding by the active model (its transcript lines as "Name: words":
    embeddings.embed_contents), or None when the model fails: the write goes on with its
    embedding pending, and the sweep (memories.jobs.embed_pending) completes it."""
    try:
        embedder = get_embedder()
        return Embedded(embed_contents(embedder, [content])[0], embedder.model_name)
    except EmbeddingError as exc:
        logger.warning("embedding deferred: %s", type(exc).__name__)
        return None


def embedding_fields(embedded: Embedded | None) -> dict:
    if embedded is None:
        return {"embedding": None, "embedding_model": "", "embedding_dimensions": None, "embedded_at": None}
    return {"embedding": embedded.vector, "embedding_model": embedded.model,
            "embedding_dimensions": EMBEDDING_DIMENSIONS, "embedded_at": timezone.now()}


def find_live_duplicate(org_id, agent_id, namespace: str, digest: str) -> Memory | None:
    """The live unkeyed memory this agent keeps with this content in this namespace: a
    namespace is an end user's boundary, so another namespace's equal memory is not one."""
    # At most one (the unique index of live unkeyed memories), so no ORDER BY.
    equal = Memory.objects.filter(LIVE, org_id=org_id, agent_id=agent_id, namespace=namespace, content_hash=digest,
                                  key__isnull=True).order_by()
    return next(iter(equal[:1]), None)


def lifetime(fields: dict, now: datetime) -> dict:
    """The fields with a time to live (`ttl`, seconds) as they are stored: expires_at that far
    from now, and ttl_seconds, which a read may refresh. An explicit expires_at replaces a
    time to live the memory had."""
    fields = dict(fields)
    ttl = fields.pop("ttl", None)
    if ttl is None:
        if "expires_at" in fields:
            fields["ttl_seconds"] = None
        return fields
    if fields.get("expires_at") is not None:
        raise InvalidInput("give ttl or expires_at, not both", field="ttl")
    if isinstance(ttl, bool) or not isinstance(ttl, int) or not 0 < ttl <= TTL_MAX_SECONDS:
        raise InvalidInput(f"ttl must be a whole number of seconds from 1 to {TTL_MAX_SECONDS}", field="ttl")
    return {**fields, "expires_at": now + timedelta(seconds=ttl), "ttl_seconds": ttl}


def decay_fields(fields: dict) -> dict:
    """The fields with the memory's decay rate: the writer's, or its type's default."""
    rate = fields.get("decay_rate")
    if rate is None:
        default = Memory._meta.get_field("decay_rate").default
        return {**fields, "decay_rate": DEFAULT_DECAY_RATE.get(fields.get("memory_type"), default)}
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= DECAY_RATE_MAX:
        raise InvalidInput(f"decay_rate must be a number from 0 to {DECAY_RATE_MAX:g}", field="decay_rate")
    return {**fields, "decay_rate": float(rate)}


# --------------------------------------------------------------------------- history


def tags_of(memory: Memory) -> list[str]:
    return sorted(MemoryTag.objects.filter(org_id=memory.org_id, memory_id=memory.pk).values_list("tag", flat=True))


NOT_READ = object()


def snapshot(memory: Memory, tags: list[str] | None = None, speaker=NOT_READ) -> dict:
    """The memory's fields a version row keeps beside its content, as JSON; with who said it
    (`speaker`, the name of the person linked as speaker, or None) when the caller read it."""
    values = {}
    for name in SNAPSHOT_FIELDS:
        value = getattr(memory, name)
        values[SNAPSHOT_KEYS.get(name, name)] = value.isoformat() if hasattr(value, "isoformat") else (
            str(value) if isinstance(value, (Decimal, uuid.UUID)) else value)
    values["tags"] = tags_of(memory) if tags is None else sorted(tags)
    if speaker is not NOT_READ:
        values["speaker"] = speaker
    return values


def version_row(memory: Memory, operation: str, actor: Actor, tags: list[str] | None = None,
                speaker=NOT_READ) -> MemoryVersion:
    """The version row recording memory as it now is (unsaved: a batch saves many at once)."""
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
        snapshot=snapshot(memory, tags, speaker),
        changed_by_type=actor.changed_by_type,
        changed_by_agent_id=actor.agent_id,
        changed_by_user=actor.user,
        change_reason=actor.reason,
    )


def record_version(memory: Memory, operation: str, actor: Actor, tags: list[str] | None = None) -> MemoryVersion:
    version = version_row(memory, operation, actor, tags, speaker=speakers_of(memory.org_id, [memory.pk]).get(memory.pk))
    version.save(force_insert=True)
    return version


# --------------------------------------------------------------------------- concurrency


def locked(org_id, memory_id) -> Memory:
    """The memory, its row locked until the transaction ends."""
    try:
        return Memory.objects.select_for_update().get(org_id=org_id, pk=memory_id)
    except (Memory.DoesNotExist, ValueError, TypeError):
        raise NotFound(f"memory {memory_id} not found") from None


def check_version(memory: Memory, expected_version: int | None, *, require: bool) -> None:
    """Optimistic concurrency: the caller changes the version it read, or nothing."""
    if expected_version is None:
        if require:
            raise VersionRequired("send If-Match with the memory's current version (its ETag), or `version`")
        return
    if expected_version != memory.version:
        raise StaleVersion(
            f"memory {memory.pk} is at version {memory.version}, not {expected_version}",
            current_version=memory.version,
        )


# --------------------------------------------------------------------------- after commit


def enqueue_embedding(org_id, memory_ids: list) -> None:
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


def refresh_hot_set(memory: Memory) -> None:
    """After commit, keep the agent's hot set (Redis) in step: live memories in, others out."""
    if memory.is_live:
        transaction.on_commit(lambda: cache.hot_memory_update(memory))
    else:
        transaction.on_commit(lambda: cache.hot_memory_remove(memory))
