"""Use cases of one memory and its surroundings: read, list, write, change, history, tags,
relationships, explain."""

from __future__ import annotations

from django.db.models import QuerySet

from memories.access import Caller
from memories.errors import NotFound
from memories.lifecycle import sessions
from memories.models import Memory, MemoryRelationship, MemoryVersion
from memories.reads import selectors
from memories.retrieval import explain
from memories.writes import change, create, tagging
from memories.writes.create import WriteResult


def memory_get(caller: Caller, memory_id, *, field: str | None = None) -> Memory:
    """The memory, if the caller reaches it; missing otherwise, as another organisation's is.
    The one place where "out of reach" becomes "not found"."""
    memory = selectors.memory_get(org_id=caller.org_id, memory_id=memory_id)
    if not caller.covers(memory.namespace):
        raise NotFound(f"memory {memory_id} not found", field=field)
    return memory


def _reached(caller: Caller, memory_id, *, field: str | None = None) -> None:
    """memory_get's check alone: a caller of the whole organisation needs no read for it (the
    service that follows says whether the memory exists)."""
    if caller.limited:
        memory_get(caller, memory_id, field=field)


def _writable(caller: Caller, memory_id) -> None:
    caller.check_writable()
    _reached(caller, memory_id)


def memory_list(caller: Caller, *, session_external_id: str | None = None, **filters) -> QuerySet:
    """Memories in reach, filtered (selectors.memory_list's filters; session_external_id: those
    in the sessions any agent named so), for a door to page."""
    memories = selectors.memory_list(org_id=caller.org_id, **filters).filter(caller.memories())
    if session_external_id is not None:
        memories = memories.filter(session__external_id=session_external_id)
    return memories


def _sessions_reached(caller: Caller, named: dict) -> None:
    """A session a write names that the caller does not reach is missing to it (the write
    would otherwise be told which namespace the session is kept under)."""
    if not caller.limited:
        return
    for field, session_id in named.items():
        if session_id is not None:
            try:
                sessions.session_get(org_id=caller.org_id, session_id=session_id, reach=caller.reach)
            except NotFound:
                raise NotFound(f"session {session_id} not found", field=field) from None


def memory_create(caller: Caller, fields: dict) -> WriteResult:
    """Remember one memory (fields: the serializer's)."""
    caller.check_write(fields.get("namespace", ""))
    _sessions_reached(caller, {"session_id": fields.get("session_id")})
    return create.memory_create(org_id=caller.org_id, agent_id=caller.agent_id, actor=caller.actor(), **fields)


def memory_create_batch(caller: Caller, items: list[dict]) -> list[WriteResult]:
    """Remember a batch; one item out of reach refuses the whole batch, naming it."""
    for index, item in enumerate(items):
        caller.check_write(item.get("namespace", ""), field=f"memories[{index}].namespace")
    _sessions_reached(caller, {f"memories[{index}].session_id": item.get("session_id")
                               for index, item in enumerate(items)})
    return create.memory_create_batch(org_id=caller.org_id, agent_id=caller.agent_id, items=items,
                                      actor=caller.actor())


def memory_update(caller: Caller, memory_id, *, changes: dict, expected_version: int | None,
                  reason: str = "") -> Memory:
    _writable(caller, memory_id)
    if "namespace" in changes:
        caller.check_write(changes["namespace"])
    change.memory_update(org_id=caller.org_id, memory_id=memory_id, changes=changes,
                         expected_version=expected_version, actor=caller.actor(reason))
    return memory_get(caller, memory_id)


def _changed(caller: Caller, memory_id, service, *, expected_version: int | None, reason: str) -> Memory:
    """A change of state by one of memories.writes.change's transitions, as the caller."""
    _writable(caller, memory_id)
    service(org_id=caller.org_id, memory_id=memory_id, actor=caller.actor(reason), expected_version=expected_version)
    return memory_get(caller, memory_id)


def memory_delete(caller: Caller, memory_id, *, expected_version: int | None = None, reason: str = "") -> Memory:
    return _changed(caller, memory_id, change.memory_delete, expected_version=expected_version, reason=reason)


def memory_restore(caller: Caller, memory_id, *, expected_version: int | None = None, reason: str = "") -> Memory:
    return _changed(caller, memory_id, change.memory_restore, expected_version=expected_version, reason=reason)


def memory_confirm(caller: Caller, memory_id, *, expected_version: int | None = None, reason: str = "") -> Memory:
    return _changed(caller, memory_id, change.memory_confirm, expected_version=expected_version, reason=reason)


def memory_archive(caller: Caller, memory_id, *, expected_version: int | None = None, reason: str = "") -> Memory:
    return _changed(caller, memory_id, change.memory_archive, expected_version=expected_version, reason=reason)


def memory_unarchive(caller: Caller, memory_id, *, expected_version: int | None = None,
                     reason: str = "") -> Memory:
    return _changed(caller, memory_id, change.memory_unarchive, expected_version=expected_version, reason=reason)


def memory_supersede(caller: Caller, memory_id, *, content: str, reason: str = "",
                     expected_version: int | None = None, **fields) -> tuple[Memory, WriteResult]:
    """Correct a memory: the new one replaces it, kept by the calling agent (an operator's
    correction stays the original agent's memory). Returns the old one as it now is, and the
    new one's write result."""
    caller.check_writable()
    agent_id = caller.agent_id or memory_get(caller, memory_id).agent_id
    _reached(caller, memory_id)
    old, result = change.memory_supersede(org_id=caller.org_id, memory_id=memory_id, agent_id=agent_id,
                                          content=content, reason=reason, actor=caller.actor(reason),
                                          expected_version=expected_version, **fields)
    return memory_get(caller, old.pk), result


def memory_feedback(caller: Caller, memory_id, **feedback) -> Memory:
    _writable(caller, memory_id)
    change.memory_feedback(org_id=caller.org_id, memory_id=memory_id, **feedback)
    return memory_get(caller, memory_id)


def memory_versions(caller: Caller, memory_id) -> QuerySet[MemoryVersion]:
    _reached(caller, memory_id)
    return selectors.memory_versions(org_id=caller.org_id, memory_id=memory_id)


def memory_tags(caller: Caller, memory_id) -> list[str]:
    _reached(caller, memory_id)
    return selectors.memory_tags(org_id=caller.org_id, memory_id=memory_id)


def memory_tags_add(caller: Caller, memory_id, *, tags: list[str]) -> list[str]:
    _writable(caller, memory_id)
    return tagging.memory_tags_add(org_id=caller.org_id, memory_id=memory_id, tags=tags, actor=caller.actor())


def memory_tag_remove(caller: Caller, memory_id, *, tag: str) -> list[str]:
    _writable(caller, memory_id)
    return tagging.memory_tag_remove(org_id=caller.org_id, memory_id=memory_id, tag=tag, actor=caller.actor())


def memory_entities(caller: Caller, memory_id) -> QuerySet:
    """The entities a memory mentions, by kind and name."""
    _reached(caller, memory_id)
    return selectors.memory_entities(org_id=caller.org_id, memory_id=memory_id)


def memory_relationships(caller: Caller, memory_id) -> QuerySet[MemoryRelationship]:
    """Both directions; those whose both ends the caller reaches."""
    _reached(caller, memory_id)
    return selectors.memory_relationships(org_id=caller.org_id, memory_id=memory_id, reach=caller.reach)


def relationship_create(caller: Caller, memory_id, *, target_id, **fields) -> MemoryRelationship:
    _writable(caller, memory_id)
    _reached(caller, target_id, field="target_id")
    return tagging.relationship_create(org_id=caller.org_id, source_id=memory_id, target_id=target_id, **fields)


def relationship_delete(caller: Caller, relationship_id) -> None:
    caller.check_writable()
    if caller.limited and not selectors.relationships_in_reach(org_id=caller.org_id, reach=caller.reach).filter(
            pk=relationship_id).exists():
        raise NotFound(f"relationship {relationship_id} not found")
    tagging.relationship_delete(org_id=caller.org_id, relationship_id=relationship_id)


def memory_explain(caller: Caller, memory_id) -> explain.Explanation:
    """Why a memory is held and ranks as it does. The searches that returned it are the
    organisation's, shown only to a caller that reaches all of it."""
    return explain.memory_explain(org_id=caller.org_id, memory=memory_get(caller, memory_id), reach=caller.reach,
                                  with_retrievals=not caller.limited)
