"""Use cases of memory over time and at a glance: stats, the weak list, entities, sessions,
erasure."""

from __future__ import annotations

from django.db.models import QuerySet

from memories.access import Caller
from memories.errors import NotFound
from memories.lifecycle import decay, erasure, sessions, stats, tallies
from memories.models import Entity
from memories.reads import selectors
from memories.writes import conflicts
from tenants.models import Agent, Session


def memory_stats(caller: Caller, *, namespace: str | None = None) -> dict:
    return stats.memory_stats(org_id=caller.org_id, namespace=namespace, reach=caller.reach)


def dashboard(caller: Caller) -> stats.Dashboard:
    """What the console's dashboard shows of the organisation (the whole of it: an operator's)."""
    return stats.dashboard(caller.org_id)


def open_conflicts(caller: Caller) -> int:
    return conflicts.open_conflict_count(org_id=caller.org_id)


def lifecycle_runs(caller: Caller, jobs: list[str]) -> dict:
    """Each job's last run for the organisation and how many runs in the last day."""
    return stats.lifecycle_runs(caller.org_id, jobs)


def agent_names(caller: Caller) -> dict:
    return dict(Agent.objects.filter(org_id=caller.org_id).values_list("id", "name"))


def weak_memories(caller: Caller, *, below: float | None = None, namespace: str | None = None, limit: int = 50,
                  offset: int = 0) -> decay.WeakPage:
    return decay.weak_page(org_id=caller.org_id, below=below, namespace=namespace, limit=limit, offset=offset,
                           reach=caller.reach)


def namespace_tallies(caller: Caller, *, roots: tuple[str, ...]) -> list[dict]:
    """The namespaces two labels deep under each root label ("users": users/alice, users/bob)
    that hold live memories in reach, in order: each as {"root", "name", "memories" (those under
    it counted in), "first_created_at", "last_updated_at"} (its first and last activity:
    tallies.NamespaceTally). Read from the namespace tallies: a row per namespace, whatever the
    number of memories (docs/adr/0057)."""
    grouped: dict[tuple[str, str], dict] = {}
    for tally in tallies.live_namespaces(caller.org_id):
        labels = tally.namespace.split("/")
        if labels[0] not in roots or len(labels) < 2 or not labels[1] or not caller.covers(tally.namespace):
            continue
        row = grouped.setdefault((labels[0], labels[1]), {"root": labels[0], "name": labels[1], "memories": 0,
                                                          "first_created_at": None, "last_updated_at": None})
        row["memories"] += tally.memories
        row["first_created_at"] = min(filter(None, (row["first_created_at"], tally.first_at)), default=None)
        row["last_updated_at"] = max(filter(None, (row["last_updated_at"], tally.last_at)), default=None)
    return [grouped[key] for key in sorted(grouped)]


# --------------------------------------------------------------------------- entities


def entity_list(caller: Caller, *, namespace: str | None = None, kind: str | None = None,
                query: str | None = None) -> QuerySet[Entity]:
    return selectors.entity_list(org_id=caller.org_id, namespace=namespace, kind=kind, query=query,
                                 reach=caller.reach)


def entity_detail(caller: Caller, entity: Entity | None = None, *, entity_id=None, facts: int,
                  timeline: int) -> Entity:
    """An entity in reach (given, or by id) with `facts` (the latest memories that mention it)
    and `timeline` (those that say when, the earliest first)."""
    if entity is None:
        entity = selectors.entity_get(org_id=caller.org_id, entity_id=entity_id, reach=caller.reach)
    entity.facts = selectors.entity_facts(org_id=caller.org_id, entity=entity, limit=facts,
                                          reach=caller.reach)
    entity.timeline = selectors.entity_timeline(org_id=caller.org_id, entity=entity, limit=timeline,
                                                reach=caller.reach)
    return entity


# --------------------------------------------------------------------------- sessions


def session_list(caller: Caller, *, agent=None, status: str | None = None, namespace: str | None = None,
                 external_id: str | None = None, session_ids=None) -> QuerySet[Session]:
    return sessions.session_list(org_id=caller.org_id, agent=agent, status=status, namespace=namespace,
                                 external_id=external_id, session_ids=session_ids, reach=caller.reach)


def session_open(caller: Caller, *, external_id: str = "", namespace: str = "",
                 metadata: dict | None = None) -> tuple[Session, bool]:
    caller.check_writable()
    return sessions.session_open(org_id=caller.org_id, agent_id=caller.agent_id, external_id=external_id,
                                 namespace=namespace, metadata=metadata, reach=caller.reach)


def session_get(caller: Caller, session_id) -> Session:
    return sessions.session_get(org_id=caller.org_id, session_id=session_id, reach=caller.reach)


def session_close(caller: Caller, session_id, *, consolidate: bool = True) -> Session:
    caller.check_writable()
    return sessions.session_close(org_id=caller.org_id, session_id=session_id, reach=caller.reach,
                                  consolidate=consolidate)


def session_memories(caller: Caller, session_id) -> QuerySet:
    """A session's memories in reach (not deleted, not expired, whatever their status)."""
    session = session_get(caller, session_id)
    return selectors.memory_list(org_id=caller.org_id, session=session.pk).filter(caller.memories())


# --------------------------------------------------------------------------- erasure


def erase(caller: Caller, *, namespace: str | None = None, session_id=None, dry_run: bool = False,
          expected_digest: str | None = None) -> tuple[erasure.ErasureScope, erasure.Outcome]:
    """Erase, for good, the calling agent's memories under a namespace or in a session (only
    those in its reach). dry_run counts instead; expected_digest (a dry run's Outcome.digest)
    erases only the very memories that dry run counted (a Conflict, `scope_changed`, erasing
    nothing, when they are no longer exactly those)."""
    if namespace is not None:
        caller.check_write(namespace)
    else:
        caller.check_writable()
    scope = erasure.ErasureScope(namespace=namespace, session_id=session_id, agent_id=caller.agent_id,
                                 within=caller.reach.namespaces)
    return scope, erasure.erase(caller.org_id, scope, via="api", agent_id=caller.agent_id, dry_run=dry_run,
                                expected_digest=expected_digest)


def erase_run(caller: Caller, *, namespace: str, external_id: str) -> list[erasure.Outcome]:
    """Erase, for good, the calling agent's memories in the sessions named external_id (a
    thread's or a run's id, by any agent) under a namespace, those in its reach; a write under
    the namespace it must be allowed. A run holding none of them is no error: no outcome."""
    caller.check_write(namespace)
    outcomes = []
    for session in sessions.session_list(org_id=caller.org_id, namespace=namespace, external_id=external_id,
                                         reach=caller.reach):
        scope = erasure.ErasureScope(session_id=session.pk, agent_id=caller.agent_id, within=caller.reach.namespaces)
        try:
            outcomes.append(erasure.erase(caller.org_id, scope, via="api", agent_id=caller.agent_id))
        except NotFound:
            continue
    return outcomes
