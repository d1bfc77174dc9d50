"""Use cases of the human review loop: a pending memory approved or rejected, and a conflict
between two memories (a contradiction, a near-duplicate) resolved. Operators make them from
the console; each change is recorded as the caller's."""

from __future__ import annotations

from memories import keyset
from memories.access import Caller
from memories.errors import NotFound
from memories.models import DuplicateCandidate, Memory
from memories.use_cases.records import memory_get
from memories.writes import conflicts, review


def memory_approve(caller: Caller, memory_id) -> Memory:
    caller.check_writable()
    memory_get(caller, memory_id)
    return review.memory_approve(org_id=caller.org_id, memory_id=memory_id, actor=caller.actor())


def memory_reject(caller: Caller, memory_id, *, reason: str) -> Memory:
    caller.check_writable()
    memory_get(caller, memory_id)
    return review.memory_reject(org_id=caller.org_id, memory_id=memory_id, actor=caller.actor(reason))


def conflict_list(caller: Caller, *, limit: int = 100, cursor: str | None = None,
                  namespace: str | None = None) -> keyset.Page:
    """A page of the open conflicts whose both memories the caller reaches, oldest first, from
    the cursor (a next page's); `next` is the cursor of the page after (None after the last)."""
    after = None
    if cursor:
        after = keyset.cursor_decode(cursor, model=DuplicateCandidate, order=conflicts.DUPLICATES_ORDER).key
    found = conflicts.open_conflicts(org_id=caller.org_id, limit=limit + 1, after=after, namespace=namespace)
    shown = found[:limit]
    following = keyset.cursor_encode((shown[-1].detected_at, shown[-1].id)) if len(found) > limit else None
    return keyset.Page([conflict for conflict in shown
                        if caller.covers(conflict.first.namespace) and caller.covers(conflict.second.namespace)],
                       following, None)


def conflict_get(caller: Caller, *, kind: str, conflict_id) -> conflicts.MemoryConflict:
    """One open conflict whose both memories the caller reaches; NotFound otherwise."""
    conflict = conflicts.conflict_get(org_id=caller.org_id, kind=kind, conflict_id=conflict_id)
    if not (caller.covers(conflict.first.namespace) and caller.covers(conflict.second.namespace)):
        raise NotFound(f"no open {kind} conflict {conflict_id}")
    return conflict


def conflict_resolve(caller: Caller, *, kind: str, conflict_id, resolution: str, keep_id=None, content: str = "",
                     reason: str = "") -> Memory | None:
    """Resolve one open conflict; the memory that now stands for the pair, or None when both
    stay valid."""
    caller.check_writable()
    conflict_get(caller, kind=kind, conflict_id=conflict_id)
    return conflicts.conflict_resolve(org_id=caller.org_id, kind=kind, conflict_id=conflict_id,
                                      resolution=resolution, user=caller.user, keep_id=keep_id, content=content,
                                      reason=reason)
