"""A reviewer's decision on a memory waiting for review (status pending_review)."""

from __future__ import annotations

from memories.errors import Conflict, InvalidInput
from memories.models import Memory, MemoryVersion
from memories.writes.change import transition
from memories.writes.kernel import Actor


def _review(org_id, memory_id, actor: Actor, apply) -> Memory:
    def checked(memory):
        if memory.deleted_at is not None or memory.status != Memory.Status.PENDING_REVIEW:
            state = "deleted" if memory.deleted_at else memory.status
            raise Conflict(f"memory {memory.pk} is {state}, not waiting for review", code="not_pending")
        apply(memory)

    return transition(org_id, memory_id, MemoryVersion.Operation.REVIEW, actor, None, checked)


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
