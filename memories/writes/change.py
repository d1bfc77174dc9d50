"""Changes to a memory: edits, and the state changes of its life (delete, restore, confirm,
archive, unarchive, supersede), each a new version; and usefulness feedback, which is not.
Optimistic concurrency: a change names the version it read (required for an edit)."""

from __future__ import annotations

from decimal import Decimal

from django.db import IntegrityError, transaction
from django.utils import timezone

from memories.errors import Conflict, InvalidInput
from memories.intake.redaction import redactor_for
from memories.models import Memory, MemoryRelationship, MemoryVersion
from memories.writes.create import WriteResult, insert_memory
from memories.writes.entities import UNCHANGED, link_entities, named_speaker, relink_entities
from memories.writes.kernel import (
    UPDATABLE_FIELDS,
    Actor,
    check_content,
    check_identifiers,
    check_version,
    content_hash,
    embed_one,
    embedding_fields,
    enqueue_embedding,
    find_live_duplicate,
    lifetime,
    locked,
    record_version,
    recorded,
    refresh_hot_set,
)
from memory_platform.config import config


def memory_update(*, org_id, memory_id, changes: dict, expected_version: int | None, actor: Actor) -> Memory:
    """Change a memory's content or classification (optimistic concurrency: expected_version
    must be the current one)."""
    changes = dict(changes)
    speaker = changes.pop("speaker", UNCHANGED)  # a link, not a column (memories.writes.entities)
    unknown = set(changes) - set(UPDATABLE_FIELDS)
    if unknown:
        raise InvalidInput(f"cannot change {', '.join(sorted(unknown))}", field=sorted(unknown)[0])
    with transaction.atomic():
        memory = locked(org_id, memory_id)
        check_version(memory, expected_version, require=True)
        if memory.deleted_at is not None:
            raise Conflict(f"memory {memory.pk} is deleted; restore it first", code="deleted")
        changes = lifetime(changes, timezone.now())
        redactor = redactor_for(org_id)
        check_identifiers(redactor, namespace=changes.get("namespace"), key=changes.get("key"),
                          sensitivity=changes.get("sensitivity"))
        actor = recorded(actor, redactor)
        if "metadata" in changes:
            changes["metadata"], _ = redactor.json(changes["metadata"] or {})
        if "content" in changes:
            redacted = redactor.text(changes["content"])
            new_content = redacted.text.strip()
            check_content(new_content)
            if redacted.count:
                memory.provenance = {**memory.provenance, "redaction": redacted.as_provenance()}
            if new_content != memory.content:
                changes["content"], changes["content_hash"] = new_content, content_hash(new_content)
            else:
                changes.pop("content")
        identity_changed = bool({"content_hash", "namespace", "key"} & set(changes))
        for name, value in changes.items():
            setattr(memory, name, value)
        if identity_changed and memory.key is None and memory.status == Memory.Status.ACTIVE:
            duplicate = find_live_duplicate(org_id, memory.agent_id, memory.namespace, memory.content_hash)
            if duplicate and duplicate.pk != memory.pk:
                raise Conflict(f"an identical live memory exists in this namespace: {duplicate.pk}",
                               code="duplicate", field="content", existing_id=duplicate.pk)
        if not memory.indexed:  # kept out of search by meaning: no vector, none pending
            for name, value in embedding_fields(None).items():
                setattr(memory, name, value)
        elif "content" in changes or ("indexed" in changes and memory.embedding is None):
            for name, value in embedding_fields(embed_one(memory.content)).items():
                setattr(memory, name, value)
        memory.version += 1
        memory.reinforced_at = timezone.now()  # a memory someone changed is fresh in mind again
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
        if {"content", "namespace"} & set(changes) or speaker is not UNCHANGED:
            relink_entities(org_id, memory, speaker if speaker is UNCHANGED else redactor.plain(speaker or "") or None)
        record_version(memory, MemoryVersion.Operation.UPDATE, actor)
        refresh_hot_set(memory)
        if {"content", "indexed"} & set(changes) and memory.indexed and memory.embedding is None:
            enqueue_embedding(org_id, [memory.pk])
        return memory


def transition(org_id, memory_id, operation: str, actor: Actor, expected_version: int | None, apply) -> Memory:
    """One state change: lock the memory, check its version, apply(memory) (which refuses by
    raising), save it as the next version and record that version. A memory that goes live
    (approved, restored, unarchived) is linked to the entities it mentions, as a new live one
    is when written."""
    with transaction.atomic():
        actor = recorded(actor, redactor_for(org_id))
        memory = locked(org_id, memory_id)
        check_version(memory, expected_version, require=False)
        was_live = memory.is_live
        apply(memory)
        memory.version += 1
        if memory.is_live:  # confirmed, approved, restored, unarchived: its decay starts over
            memory.reinforced_at = timezone.now()
        try:
            with transaction.atomic():
                memory.save()
        except IntegrityError as exc:
            if "memories_content_hash_live_unique" in str(exc) or "memories_scope_key_live_unique" in str(exc):
                raise Conflict("an identical live memory (or the same key) exists", code="duplicate") from None
            raise
        record_version(memory, operation, actor)
        if memory.is_live and not was_live:
            link_entities(org_id, [memory])
        refresh_hot_set(memory)
        return memory


def memory_delete(*, org_id, memory_id, actor: Actor, expected_version: int | None = None) -> Memory:
    """Soft delete: the memory leaves every read path but keeps its history."""

    def apply(memory):
        if memory.deleted_at is not None:
            raise Conflict(f"memory {memory.pk} is already deleted", code="deleted")
        memory.deleted_at = timezone.now()

    return transition(org_id, memory_id, MemoryVersion.Operation.DELETE, actor, expected_version, apply)


def memory_restore(*, org_id, memory_id, actor: Actor, expected_version: int | None = None) -> Memory:
    def apply(memory):
        if memory.deleted_at is None:
            raise Conflict(f"memory {memory.pk} is not deleted", code="not_deleted")
        memory.deleted_at = None

    return transition(org_id, memory_id, MemoryVersion.Operation.RESTORE, actor, expected_version, apply)


def memory_confirm(*, org_id, memory_id, actor: Actor, expected_version: int | None = None) -> Memory:
    """Protect a memory from decay and set its confidence to 1.0 (spec §4 confirm_fact)."""

    def apply(memory):
        if memory.deleted_at is not None:
            raise Conflict(f"memory {memory.pk} is deleted; restore it first", code="deleted")
        memory.is_protected, memory.decay_rate, memory.confidence = True, 0.0, Decimal("1.000")

    return transition(org_id, memory_id, MemoryVersion.Operation.CONFIRM, actor, expected_version, apply)


def memory_archive(*, org_id, memory_id, actor: Actor, expected_version: int | None = None) -> Memory:
    """Take a memory out of retrieval without deleting it (an operator's call)."""

    def apply(memory):
        if memory.deleted_at is not None:
            raise Conflict(f"memory {memory.pk} is deleted; restore it first", code="deleted")
        if memory.status not in (Memory.Status.ACTIVE, Memory.Status.PENDING_REVIEW):
            raise Conflict(f"memory {memory.pk} is {memory.status}; only an active or pending memory can be archived",
                           code=memory.status)
        memory.status = Memory.Status.ARCHIVED

    return transition(org_id, memory_id, MemoryVersion.Operation.ARCHIVE, actor, expected_version, apply)


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

    return transition(org_id, memory_id, MemoryVersion.Operation.RESTORE, actor, expected_version, apply)


def memory_supersede(*, org_id, memory_id, agent_id, content: str, actor: Actor,
                     expected_version: int | None = None, reason: str = "", **fields) -> tuple[Memory, WriteResult]:
    """Correct a memory: a new memory replaces it, linked by a `supersedes` edge; the old one
    becomes `superseded` and names its successor."""
    with transaction.atomic():
        redactor = redactor_for(org_id)
        actor, reason = recorded(actor, redactor), redactor.plain(reason)
        old = locked(org_id, memory_id)
        check_version(old, expected_version, require=False)
        if old.deleted_at is not None or old.status != "active":
            state = "deleted" if old.deleted_at else old.status
            raise Conflict(f"memory {old.pk} is {state}; only an active memory can be superseded", code=state)
        # The correction is in the same person's words as what it corrects, unless it says otherwise.
        inherited = {"category": old.category, "memory_type": old.memory_type, "namespace": old.namespace,
                     "sensitivity": old.sensitivity, "importance": old.importance,
                     "speaker": named_speaker(org_id, old.pk)}
        result = insert_memory(org_id, agent_id, content, {**inherited, **fields}, [], actor, redactor=redactor)
        new = result.memory
        if new.pk == old.pk:
            raise Conflict("the correction is identical to the memory it corrects", code="duplicate", field="content")
        old.status, old.superseded_by = Memory.Status.SUPERSEDED, new
        old.version += 1
        old.save()
        record_version(old, MemoryVersion.Operation.SUPERSEDE, actor.because(reason or f"superseded by {new.pk}"))
        MemoryRelationship.objects.get_or_create(
            org_id=org_id, source=new, target=old, relation_type=MemoryRelationship.RelationType.SUPERSEDES,
        )
        refresh_hot_set(old)
        if result.created and new.embedding is None:
            enqueue_embedding(org_id, [new.pk])
        return old, result


def memory_feedback(*, org_id, memory_id, useful: bool | None = None, score: float | None = None) -> Memory:
    """Fold one usefulness signal into usefulness_score (an exponential moving average).
    A usage signal, like retrieval counts: it changes no content and writes no version."""
    signal = Decimal(str(score)) if score is not None else Decimal(1 if useful else 0)
    weight = Decimal(str(config().feedback_weight))
    with transaction.atomic():
        memory = locked(org_id, memory_id)
        if memory.deleted_at is not None:
            raise Conflict(f"memory {memory.pk} is deleted", code="deleted")
        memory.usefulness_score = (memory.usefulness_score + weight * (signal - memory.usefulness_score)).quantize(
            Decimal("0.001"))
        Memory.objects.filter(pk=memory.pk, org_id=org_id).update(usefulness_score=memory.usefulness_score)
        return memory
