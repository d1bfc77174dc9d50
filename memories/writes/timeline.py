"""Episodes in order: each new episodic memory is linked to the episode written just before it
in its session and namespace, or in its namespace when it has no session (spec §4: a
`temporal` edge, predicate "next" from the earlier to the later; read backwards it is "prev").
A session may hold several end users' namespaces (an agent in a group conversation): each
has its own timeline there, so no edge ever joins two users' memories.

Consecutive means consecutive writes, the order an agent records a conversation in. The edges
give a timeline to walk (GET /api/v1/memories/{id}/relationships) and to a search's graph
expansion. Episodes of different sessions are never linked, nor episodes with a session to
those without.
"""

from __future__ import annotations

from django.db import connection

from memories.models import LIVE, Memory, MemoryRelationship

NEXT = "next"


def timeline_of(memory: Memory) -> tuple[str, str]:
    """Which timeline an episode belongs to: (its session or "", its namespace)."""
    return str(memory.session_id or ""), memory.namespace


def latest_episode(org_id, timeline: tuple[str, str], *, before: list) -> Memory | None:
    """The live episode written last on this timeline, other than the memories `before`."""
    session, namespace = timeline
    episodes = Memory.objects.filter(LIVE, org_id=org_id, memory_type=Memory.MemoryType.EPISODIC, namespace=namespace)
    episodes = episodes.filter(session_id=session) if session else episodes.filter(session__isnull=True)
    return episodes.exclude(pk__in=before).order_by("-created_at", "-id").only("pk").first()


def episodes_of(memories: list[Memory]) -> list[Memory]:
    return [memory for memory in memories if memory.memory_type == Memory.MemoryType.EPISODIC and memory.is_live]


def hold_timelines(org_id, memories: list[Memory]) -> None:
    """Before the episodes among `memories` are inserted: take their timelines' turn until the
    transaction ends (an advisory lock each, in one order for every writer), so episodes of
    one timeline are written, and linked, one after the other."""
    with connection.cursor() as cursor:
        for session, namespace in sorted({timeline_of(memory) for memory in episodes_of(memories)}):
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                           [f"timeline:{org_id}:{session}:{namespace}"])


def link_episodes(org_id, memories: list[Memory]) -> list[MemoryRelationship]:
    """Once `memories` are inserted (hold_timelines taken before): chain their live episodic
    ones, in the order given (the order they were written), each to the episode before it on
    its timeline, inside the caller's transaction."""
    episodes = episodes_of(memories)
    new_ids = [memory.pk for memory in episodes]
    by_timeline: dict[tuple, list[Memory]] = {}
    for memory in episodes:
        by_timeline.setdefault(timeline_of(memory), []).append(memory)
    edges = []
    for timeline, chain in by_timeline.items():
        previous = latest_episode(org_id, timeline, before=new_ids)
        for memory in chain:
            if previous is not None:
                edges.append(MemoryRelationship(org_id=org_id, source_id=previous.pk, target_id=memory.pk,
                                                relation_type=MemoryRelationship.RelationType.TEMPORAL,
                                                predicate=NEXT, confidence=1))
            previous = memory
    return MemoryRelationship.objects.bulk_create(edges)
