"""Tags (each change a version of the memory) and relationships between memories."""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import F

from memories.errors import Conflict, InvalidInput, NotFound
from memories.intake.redaction import redactor_for
from memories.models import Memory, MemoryRelationship, MemoryTag, MemoryVersion
from memories.writes.kernel import Actor, check_identifiers, locked, record_version, tags_of


def _new_version(memory: Memory, actor: Actor, reason: str) -> None:
    """A tag change is a change of the memory: its version moves on, and is recorded."""
    memory.version += 1
    Memory.objects.filter(pk=memory.pk, org_id=memory.org_id).update(version=F("version") + 1)
    record_version(memory, MemoryVersion.Operation.UPDATE, actor.because(reason))


def memory_tags_add(*, org_id, memory_id, tags: list[str], actor: Actor) -> list[str]:
    with transaction.atomic():
        check_identifiers(redactor_for(org_id), tags=tags)
        memory = locked(org_id, memory_id)
        new = sorted(set(tags) - set(tags_of(memory)))
        if new:
            MemoryTag.objects.bulk_create([MemoryTag(org_id=org_id, memory=memory, tag=t) for t in new])
            _new_version(memory, actor, f"tags added: {', '.join(new)}")
        return tags_of(memory)


def memory_tag_remove(*, org_id, memory_id, tag: str, actor: Actor) -> list[str]:
    with transaction.atomic():
        memory = locked(org_id, memory_id)
        removed, _ = MemoryTag.objects.filter(org_id=org_id, memory_id=memory.pk, tag=tag).delete()
        if not removed:
            raise NotFound(f"memory {memory.pk} has no tag {tag!r}", field="tag")
        _new_version(memory, actor, f"tag removed: {tag}")
        return tags_of(memory)


def relationship_create(*, org_id, source_id, target_id, relation_type: str, confidence=None,
                        predicate: str = "", weight: float = 1.0, metadata: dict | None = None) -> MemoryRelationship:
    if str(source_id) == str(target_id):
        raise InvalidInput("a memory cannot be related to itself", field="target_id")
    with transaction.atomic():
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
    with transaction.atomic():
        deleted, _ = MemoryRelationship.objects.filter(org_id=org_id, pk=relationship_id).delete()
        if not deleted:
            raise NotFound(f"relationship {relationship_id} not found")
