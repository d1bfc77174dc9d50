"""Conflicts between memories and how an operator resolves them.

A conflict is a pair of live memories that cannot both stand unexamined: linked by a
`contradicts` relationship, or found to be near-duplicates when written. An operator keeps
one (the other is superseded by it), merges both into a new memory (both become `merged`),
or declares both valid. Every resolution writes versions with changed_by_type
`conflict_resolution` and marks the conflict resolved, so it leaves the queue but not history.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from memories import keyset
from memories.access import namespace_prefix_filter
from memories.errors import Conflict, InvalidInput, NotFound
from memories.intake.redaction import redactor_for
from memories.models import DuplicateCandidate, Memory, MemoryRelationship, MemoryTag, MemoryVersion
from memories.writes.create import insert_memory
from memories.writes.kernel import Actor, enqueue_embedding, record_version, refresh_hot_set

CONTRADICTION = "contradiction"
DUPLICATE = "duplicate"
KINDS = (CONTRADICTION, DUPLICATE)

KEEP, MERGE, BOTH_VALID = "keep", "merge", "both_valid"
RESOLUTIONS = (KEEP, MERGE, BOTH_VALID)

OPEN_STATUSES = (Memory.Status.ACTIVE, Memory.Status.PENDING_REVIEW)


@dataclass
class MemoryConflict:
    kind: str
    id: object
    first: Memory
    second: Memory
    detected_at: datetime
    similarity: float | None = None  # near-duplicates
    predicate: str = ""  # contradictions

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.id}"


def _both_open(prefix_first: str, prefix_second: str) -> Q:
    return Q(**{f"{prefix_first}__status__in": OPEN_STATUSES, f"{prefix_first}__deleted_at__isnull": True,
                f"{prefix_second}__status__in": OPEN_STATUSES, f"{prefix_second}__deleted_at__isnull": True})


def _contradictions(org_id):
    return (MemoryRelationship.objects.filter(org_id=org_id, relation_type=MemoryRelationship.RelationType.CONTRADICTS)
            .exclude(metadata__has_key="resolution").filter(_both_open("source", "target")))


def _duplicates(org_id):
    return DuplicateCandidate.objects.filter(org_id=org_id, resolved_at__isnull=True).filter(
        _both_open("memory", "candidate"))


# Both kinds in one order, by when each was found and then its id: a page of conflicts starts
# after the last one shown, in each table (memories.keyset).
CONTRADICTIONS_ORDER = keyset.Order(("created_at", "id"), descending=False)
DUPLICATES_ORDER = keyset.Order(("detected_at", "id"), descending=False)


def _unshown(*sides: str) -> list[str]:
    """What a list of conflicts never shows of their memories, left unread: the vector (384
    numbers parsed per memory) and the full-text vector."""
    return [f"{side}__{field}" for side in sides for field in ("embedding", "search_vector")]


def open_conflicts(*, org_id, limit: int = 100, after: tuple | None = None,
                   namespace: str | None = None) -> list[MemoryConflict]:
    """Unresolved conflicts whose memories are both still open, oldest first; after: the
    (detected_at, id) of the last one shown, to list those after it; namespace: those with a
    memory under this prefix (memories.access.namespace_bounds)."""
    contradictions, duplicates = _contradictions(org_id), _duplicates(org_id)
    if namespace:
        contradictions = contradictions.filter(namespace_prefix_filter(namespace, "source__")
                                               | namespace_prefix_filter(namespace, "target__"))
        duplicates = duplicates.filter(namespace_prefix_filter(namespace, "memory__")
                                       | namespace_prefix_filter(namespace, "candidate__"))
    if after is not None:
        contradictions = keyset.after(contradictions, order=CONTRADICTIONS_ORDER, key=after)
        duplicates = keyset.after(duplicates, order=DUPLICATES_ORDER, key=after)
    found = [MemoryConflict(CONTRADICTION, r.pk, r.source, r.target, r.created_at, predicate=r.predicate)
             for r in contradictions.select_related("source", "target").defer(*_unshown("source", "target"))
             .order_by("created_at", "id")[:limit]]
    found += [MemoryConflict(DUPLICATE, d.pk, d.memory, d.candidate, d.detected_at, similarity=d.similarity)
              for d in duplicates.select_related("memory", "candidate").defer(*_unshown("memory", "candidate"))
              .order_by("detected_at", "id")[:limit]]
    return sorted(found, key=lambda c: (c.detected_at, c.id))[:limit]


def open_conflict_count(*, org_id) -> int:
    return _contradictions(org_id).count() + _duplicates(org_id).count()


def conflict_get(*, org_id, kind: str, conflict_id, lock: bool = False) -> MemoryConflict:
    """An open conflict. lock=True (inside a transaction) holds its row until the end of it: a
    second resolver waits, then finds it resolved."""
    try:
        if kind == CONTRADICTION:
            rows = _contradictions(org_id).select_related("source", "target")
            r = (rows.select_for_update(of=("self",)) if lock else rows).get(pk=conflict_id)
            return MemoryConflict(kind, r.pk, r.source, r.target, r.created_at, predicate=r.predicate)
        if kind == DUPLICATE:
            rows = _duplicates(org_id).select_related("memory", "candidate")
            d = (rows.select_for_update(of=("self",)) if lock else rows).get(pk=conflict_id)
            return MemoryConflict(kind, d.pk, d.memory, d.candidate, d.detected_at, similarity=d.similarity)
    except (MemoryRelationship.DoesNotExist, DuplicateCandidate.DoesNotExist, ValueError):
        pass
    raise NotFound(f"no open {kind} conflict {conflict_id}")


def _actor(user, reason: str) -> Actor:
    return Actor(MemoryVersion.ChangedByType.CONFLICT_RESOLUTION, None, user, reason)


def _mark_resolved(conflict: MemoryConflict, resolution: str, user) -> None:
    now = timezone.now()
    if conflict.kind == CONTRADICTION:
        relationship = MemoryRelationship.objects.get(org_id=conflict.first.org_id, pk=conflict.id)
        relationship.metadata = {**relationship.metadata, "resolution": {
            "resolution": resolution, "resolved_at": now.isoformat(), "resolved_by": getattr(user, "pk", None)}}
        relationship.save(update_fields=["metadata"])
    else:
        DuplicateCandidate.objects.filter(org_id=conflict.first.org_id, pk=conflict.id).update(
            resolved_at=now, resolution=resolution)


def _retire(memory: Memory, *, status: str, successor: Memory, operation: str, actor: Actor) -> None:
    memory.status = status
    if status == Memory.Status.MERGED:
        memory.merged_into = successor
    else:
        memory.superseded_by = successor
    memory.version += 1
    memory.save()
    record_version(memory, operation, actor)
    refresh_hot_set(memory)


def _acknowledge(memory: Memory, actor: Actor) -> None:
    """A version that says an operator looked at this memory and let it stand."""
    memory.version += 1
    Memory.objects.filter(org_id=memory.org_id, pk=memory.pk).update(version=memory.version)
    record_version(memory, MemoryVersion.Operation.REVIEW, actor)


def conflict_resolve(*, org_id, kind: str, conflict_id, resolution: str, user, keep_id=None,
                     content: str = "", reason: str = "") -> Memory | None:
    """Resolve one open conflict. Returns the memory that now stands for the pair (the kept
    or the merged one), or None when both stay valid."""
    if resolution not in RESOLUTIONS:
        raise InvalidInput(f"resolution must be one of {', '.join(RESOLUTIONS)}", field="resolution")
    with transaction.atomic():
        conflict = conflict_get(org_id=org_id, kind=kind, conflict_id=conflict_id, lock=True)
        # Lock both, in a stable order, so two operators cannot resolve the same pair twice.
        pair = {m.pk: m for m in Memory.objects.select_for_update().filter(
            org_id=org_id, pk__in=[conflict.first.pk, conflict.second.pk]).order_by("pk")}
        first, second = pair[conflict.first.pk], pair[conflict.second.pk]
        if any(m.deleted_at or m.status not in OPEN_STATUSES for m in (first, second)):
            raise Conflict("this conflict was resolved meanwhile", code="resolved")
        redactor = redactor_for(org_id)
        reason = redactor.plain(reason.strip())  # kept in version rows: free text
        note = f" ({reason})" if reason else ""
        if resolution != BOTH_VALID and first.namespace != second.namespace:
            # Keeping one or merging both would put one end user's memory in place of another's.
            raise Conflict("these memories belong to different namespaces: mark both valid, or correct each "
                           "in its own namespace", code="other_namespace", field="resolution")

        if resolution == KEEP:
            if str(keep_id) not in (str(first.pk), str(second.pk)):
                raise InvalidInput("choose which of the two memories to keep", field="keep")
            kept, dropped = (first, second) if str(keep_id) == str(first.pk) else (second, first)
            _retire(dropped, status=Memory.Status.SUPERSEDED, successor=kept,
                    operation=MemoryVersion.Operation.SUPERSEDE, actor=_actor(user, f"conflict resolved: {kept.pk} kept{note}"))
            _acknowledge(kept, _actor(user, f"conflict resolved: kept over {dropped.pk}{note}"))
            MemoryRelationship.objects.get_or_create(org_id=org_id, source=kept, target=dropped,
                                                     relation_type=MemoryRelationship.RelationType.SUPERSEDES)
            standing = kept

        elif resolution == MERGE:
            content = content.strip() or f"{first.content}\n{second.content}"
            tags = sorted(set(MemoryTag.objects.filter(org_id=org_id, memory_id__in=[first.pk, second.pk])
                              .values_list("tag", flat=True)))
            fields = {"category": first.category, "memory_type": first.memory_type, "namespace": first.namespace,
                      "sensitivity": first.sensitivity, "importance": max(first.importance, second.importance),
                      "confidence": max(first.confidence, second.confidence),
                      "provenance": {"merged_from": [str(first.pk), str(second.pk)]}}
            result = insert_memory(org_id, first.agent_id, content, fields, tags,
                                   _actor(user, f"merged from {first.pk} and {second.pk}{note}"), redactor=redactor)
            if not result.created:
                raise Conflict(f"the merged text is identical to memory {result.memory.pk}: keep that one instead",
                               code="duplicate", field="content", existing_id=result.memory.pk)
            merged = result.memory
            for memory in (first, second):
                _retire(memory, status=Memory.Status.MERGED, successor=merged, operation=MemoryVersion.Operation.MERGE,
                        actor=_actor(user, f"conflict resolved: merged into {merged.pk}{note}"))
                MemoryRelationship.objects.create(org_id=org_id, source=merged, target=memory,
                                                  relation_type=MemoryRelationship.RelationType.DERIVED_FROM)
            if merged.embedding is None:
                enqueue_embedding(org_id, [merged.pk])
            standing = merged

        else:
            for memory, other in ((first, second), (second, first)):
                _acknowledge(memory, _actor(user, f"conflict resolved: valid alongside {other.pk}{note}"))
            standing = None

        _mark_resolved(conflict, resolution, user)
        return standing
