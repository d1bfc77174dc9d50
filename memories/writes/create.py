"""New memories: one (embedded inline) or a batch (embedded by a worker after commit).

The path (docs/architecture.md, "The write path"): validate (the API's serializers) ->
redact -> normalise and hash -> exact dedup within the namespace -> embed -> persist with a
version row -> near-duplicate candidates (found against the stored row).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from memories.access import under_namespace
from memories.errors import Conflict, InvalidInput, NotFound
from memories.intake.redaction import Redactor, redactor_for
from memories.models import LIVE, Memory, MemoryTag, MemoryVersion
from memories.writes.duplicates import near_duplicates, record_duplicates
from memories.writes.entities import link_entities, speaker_given, speakers_of
from memories.writes.kernel import (
    Actor,
    check_content,
    check_identifiers,
    content_hash,
    embed_one,
    decay_fields,
    embedding_fields,
    enqueue_embedding,
    find_live_duplicate,
    lifetime,
    record_version,
    recorded,
    redact,
    refresh_hot_set,
    version_row,
)
from memories.writes.timeline import hold_timelines, link_episodes


def redacted_entities(redactor: Redactor, given: list[dict] | None) -> list[dict]:
    """The entities an agent named with a write, their names and aliases redacted as the
    memory's own text is."""
    return [{**item, "name": redactor.plain(item["name"]),
             "aliases": [redactor.plain(alias) for alias in item.get("aliases", [])]} for item in given or []]


@dataclass
class WriteResult:
    memory: Memory
    created: bool
    deduplicated: bool = False
    near_duplicates: list[tuple[Memory, float]] = field(default_factory=list)

    @property
    def embedding_status(self) -> str:
        return "ready" if self.memory.embedding is not None else "pending"


def insert_memory(org_id, agent_id, content: str, fields: dict, tags: list[str], actor: Actor, *,
                  embed: bool = True, redactor: Redactor | None = None) -> WriteResult:
    """Insert one memory and its first version, inside the caller's transaction; an equal live
    memory in the same namespace is returned instead. embed=False leaves the embedding pending
    (the caller enqueues the job)."""
    fields = decay_fields(lifetime(fields, timezone.now()))
    redactor = redactor or redactor_for(org_id)
    given_entities = redacted_entities(redactor, [*(fields.pop("entities", None) or []),
                                                  *speaker_given(fields.pop("speaker", None))])
    check_identifiers(redactor, namespace=fields.get("namespace"), key=fields.get("key"), tags=tags,
                      sensitivity=fields.get("sensitivity"))
    actor = recorded(actor, redactor)
    redacted = redact(redactor, content, fields.pop("metadata", None) or {}, fields.pop("provenance", None) or {})
    check_content(redacted.content)
    digest = content_hash(redacted.content)
    key, namespace = fields.get("key"), fields.get("namespace") or ""
    if key is None and (existing := find_live_duplicate(org_id, agent_id, namespace, digest)):
        return WriteResult(existing, created=False, deduplicated=True)
    embedded = embed_one(redacted.content) if embed and fields.get("indexed", True) else None
    memory = Memory(org_id=org_id, agent_id=agent_id, content=redacted.content, content_hash=digest,
                    metadata=redacted.metadata, provenance=redacted.provenance,
                    **fields, **embedding_fields(embedded))
    hold_timelines(org_id, [memory])
    try:
        with transaction.atomic():
            memory.save(force_insert=True)
    except IntegrityError as exc:
        if "memories_content_hash_live_unique" in str(exc):  # a concurrent equal write won
            return WriteResult(find_live_duplicate(org_id, agent_id, namespace, digest), created=False,
                               deduplicated=True)
        if "memories_scope_key_live_unique" in str(exc):
            raise Conflict(f"key {key!r} already exists in this namespace", code="key_exists", field="key") from None
        if "memories_session_id_fkey" in str(exc):
            raise NotFound("session not found", field="session_id") from None
        raise
    link_episodes(org_id, [memory])
    link_entities(org_id, [memory], {memory.pk: given_entities} if given_entities else None)
    tags = sorted(set(tags))
    if tags:
        MemoryTag.objects.bulk_create([MemoryTag(org_id=org_id, memory=memory, tag=tag) for tag in tags])
    record_version(memory, MemoryVersion.Operation.CREATE, actor, tags)
    refresh_hot_set(memory)
    found = []
    if embedded is not None:
        duplicates = near_duplicates(org_id, [memory.pk])
        record_duplicates(org_id, duplicates)
        found = duplicates.get(memory.pk, [])
    return WriteResult(memory, created=True, near_duplicates=found)


def hold_open_sessions(org_id, named: dict) -> None:
    """The sessions writes name ({field: (session id, the memory's namespace)}) must exist, be
    open, and hold the memory's namespace: a session kept under users/bob (Bob's conversation)
    takes none of Alice's memories, while one without a namespace takes any. Each is read FOR
    SHARE, held until the write commits: closing a session (an update of its row) waits for
    the writes in flight, so its consolidation sees them, and a write after the close is
    refused."""
    wanted = {name: (uuid.UUID(str(session_id)), namespace)
              for name, (session_id, namespace) in named.items() if session_id}
    if not wanted:
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, ended_at, scope FROM sessions WHERE org_id = %s AND id = ANY(%s::uuid[]) "
                       "ORDER BY id FOR SHARE", [org_id, sorted({str(session_id) for session_id, _ in wanted.values()})])
        sessions = {session_id: (ended_at, namespace) for session_id, ended_at, namespace in cursor.fetchall()}
    for name, (session_id, namespace) in wanted.items():
        if session_id not in sessions:
            raise NotFound(f"session {session_id} not found", field=name)
        ended_at, session_namespace = sessions[session_id]
        if ended_at is not None:
            raise Conflict(f"session {session_id} is closed; open a new session for new memories",
                           code="session_closed", field=name)
        if session_namespace and not under_namespace(namespace or "", session_namespace):
            raise InvalidInput(f"session {session_id} is kept under {session_namespace}: a memory of "
                               f"{namespace or '(no namespace)'} cannot join it", field=name)


def memory_create(*, org_id, agent_id, content: str, tags: list[str] = (), actor: Actor | None = None,
                  **fields) -> WriteResult:
    """Create one memory, embedded inline (pending if the model fails)."""
    actor = actor or Actor(agent_id=agent_id)
    with transaction.atomic():
        hold_open_sessions(org_id, {"session_id": (fields.get("session_id"), fields.get("namespace", ""))})
        result = insert_memory(org_id, agent_id, content, fields, list(tags), actor)
        if result.created and result.memory.embedding is None and result.memory.indexed:
            enqueue_embedding(org_id, [result.memory.pk])
        return result


def _create_one_by_one(org_id, agent_id, items: list[dict], actor: Actor, redactor: Redactor) -> list[WriteResult]:
    results = []
    for item in map(dict, items):
        content, tags = item.pop("content"), item.pop("tags", [])
        results.append(insert_memory(org_id, agent_id, content, item, list(tags), actor, embed=False,
                                     redactor=redactor))
    pending = [result.memory.pk for result in results if result.created]
    if pending:
        enqueue_embedding(org_id, pending)
    return results


def memory_create_batch(*, org_id, agent_id, items: list[dict], actor: Actor | None = None) -> list[WriteResult]:
    """Create many memories in one transaction, with a handful of statements whatever their
    number. They are stored with their embeddings pending and embedded by a worker after
    commit (which also finds their near-duplicates)."""
    actor = actor or Actor(agent_id=agent_id)
    with transaction.atomic():
        hold_open_sessions(org_id, {f"memories[{index}].session_id": (item.get("session_id"), item.get("namespace", ""))
                                    for index, item in enumerate(items)})
        redactor = redactor_for(org_id)
        actor = recorded(actor, redactor)
        prepared, given, now = [], {}, timezone.now()
        for index, item in enumerate(items):
            try:
                item = decay_fields(lifetime(item, now))
            except InvalidInput as exc:
                raise InvalidInput(exc.message, field=f"memories[{index}].{exc.field}") from None
            content, tags = item.pop("content"), sorted(set(item.pop("tags", [])))
            named = redacted_entities(redactor, [*(item.pop("entities", None) or []),
                                                 *speaker_given(item.pop("speaker", None))])
            try:
                check_identifiers(redactor, namespace=item.get("namespace"), key=item.get("key"), tags=tags,
                                  sensitivity=item.get("sensitivity"))
            except InvalidInput as exc:
                raise InvalidInput(exc.message, field=f"memories[{index}].{exc.field}") from None
            redacted = redact(redactor, content, item.pop("metadata", None) or {}, item.pop("provenance", None) or {})
            check_content(redacted.content)
            memory = Memory(org_id=org_id, agent_id=agent_id, content=redacted.content,
                            content_hash=content_hash(redacted.content), metadata=redacted.metadata,
                            provenance=redacted.provenance, **item, **embedding_fields(None))
            prepared.append((memory, tags))
            if named:
                given[id(memory)] = named

        # Equal means equal content in the same namespace (see find_live_duplicate).
        unkeyed = {(memory.namespace, memory.content_hash) for memory, _ in prepared if memory.key is None}
        existing = {(m.namespace, m.content_hash): m for m in Memory.objects.filter(
            LIVE, org_id=org_id, agent_id=agent_id, namespace__in={namespace for namespace, _ in unkeyed},
            content_hash__in={digest for _, digest in unkeyed}, key__isnull=True)}
        results, new, first_of = [], [], {}
        for memory, tags in prepared:
            identity = (memory.namespace, memory.content_hash)
            twin = existing.get(identity) or first_of.get(identity) if memory.key is None else None
            if twin is not None:
                results.append(WriteResult(twin, created=False, deduplicated=True))
                continue
            if memory.key is None:
                first_of[identity] = memory
            results.append(WriteResult(memory, created=True))
            new.append((memory, tags))
        hold_timelines(org_id, [memory for memory, _ in new])
        try:
            with transaction.atomic():
                Memory.objects.bulk_create([memory for memory, _ in new])
        except IntegrityError:
            # A concurrent equal write, a taken key or an unknown session: one at a time sorts
            # each of these out (and names the item that is wrong).
            return _create_one_by_one(org_id, agent_id, items, actor, redactor)
        link_episodes(org_id, [memory for memory, _ in new])
        link_entities(org_id, [memory for memory, _ in new],
                      {memory.pk: given[id(memory)] for memory, _ in new if id(memory) in given})
        MemoryTag.objects.bulk_create([MemoryTag(org_id=org_id, memory=memory, tag=tag)
                                       for memory, tags in new for tag in tags])
        spoken = speakers_of(org_id, [memory.pk for memory, _ in new])
        MemoryVersion.objects.bulk_create([version_row(memory, MemoryVersion.Operation.CREATE, actor, tags,
                                                       speaker=spoken.get(memory.pk)) for memory, tags in new])
        for memory, _ in new:
            refresh_hot_set(memory)
        if new:
            enqueue_embedding(org_id, [memory.pk for memory, _ in new])
    return results
