"""Use cases of finding: search, retrieve, context, the hot set, and the record of what was
found (retrieval events, replay). Every search is recorded here, once, as the retrieval
event a replay can run again."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet

from memories.access import Caller
from memories.errors import OutOfReach
from memories.models import Memory, MemoryArtifact, RetrievalEvent
from memories.reads import selectors
from memories.retrieval import context, events, hot, pipeline
from memories.retrieval.filters import SearchFilters
from memories.retrieval.ranking import SearchOutcome
from memory_platform.config import config


@dataclass
class Found:
    """What a search found, and the retrieval event that records it."""

    outcome: SearchOutcome
    event: RetrievalEvent


def _within_reach(caller: Caller, filters: SearchFilters) -> SearchFilters:
    filters.within = caller.reach.namespaces
    return filters


def memory_search(caller: Caller, *, query: str, filters: SearchFilters, limit: int, mode: str = "hybrid",
                  expand: int = 0, threshold: float | None = None) -> Found:
    """The hybrid search within the caller's reach, recorded as a retrieval event."""
    filters = _within_reach(caller, filters)
    outcome = pipeline.memory_search(org_id=caller.org_id, query=query, filters=filters, limit=limit, mode=mode,
                                     expand=expand, threshold=threshold)
    asked = {"limit": limit, "mode": mode, "expand": expand} | ({"threshold": threshold}
                                                                   if threshold is not None else {})
    event = events.retrieval_event_record(
        org_id=caller.org_id, kind=RetrievalEvent.Kind.SEARCH, query=query, namespace=filters.namespace or "",
        filters=filters, request=asked, outcome=outcome, agent_id=caller.agent_id, user=caller.user,
        redactor=caller.redactor())
    return Found(outcome, event)


def memory_browse(caller: Caller, *, query: str, filters: SearchFilters, limit: int) -> SearchOutcome:
    """An operator browsing by meaning and words: the same search, not recorded as a
    retrieval event and counting no retrieval (it is not what an agent was shown)."""
    return pipeline.memory_search(org_id=caller.org_id, query=query, filters=_within_reach(caller, filters),
                                  limit=limit)


@dataclass
class Retrieved(Found):
    artifacts: dict  # memory id -> its artifact links


def memory_retrieve(caller: Caller, *, query: str, namespace: str, sensitivity: list[str],
                    require_verified: bool, limit: int) -> Retrieved:
    """Context candidates (identifiers and evidence, never a prompt), with the artifacts they
    refer to, recorded as a retrieval event."""
    filters = _within_reach(caller, SearchFilters(namespace=namespace, sensitivity=sensitivity,
                                                  require_verified=require_verified))
    outcome = pipeline.memory_search(org_id=caller.org_id, query=query, filters=filters, limit=limit)
    links: dict = {}
    for link in MemoryArtifact.objects.filter(org_id=caller.org_id,
                                              memory_id__in=[r.memory.pk for r in outcome.results]
                                              ).select_related("artifact"):
        links.setdefault(link.memory_id, []).append(link)
    event = events.retrieval_event_record(
        org_id=caller.org_id, kind=RetrievalEvent.Kind.RETRIEVE, query=query, namespace=namespace, filters=filters,
        request={"limit": limit, "mode": "hybrid", "expand": 0}, outcome=outcome, agent_id=caller.agent_id,
        user=caller.user, redactor=caller.redactor(),
        artifact_ids=sorted({link.artifact_id for group in links.values() for link in group}, key=str))
    return Retrieved(outcome, event, links)


@dataclass
class Assembled:
    assembly: context.Assembly
    event: RetrievalEvent
    candidates: int  # how many of the search's results were considered


def context_assemble(caller: Caller, *, query: str, filters: SearchFilters, max_tokens: int,
                     candidates: int | None, encoding: str, order: str) -> Assembled:
    """The memories for a prompt within a token budget, recorded as a retrieval event of kind
    `context` (what went into the prompt), which a replay assembles again. candidates: how many
    of the search's results are considered; None, as many as the budget could hold."""
    filters = _within_reach(caller, filters)
    candidates = candidates or context.candidates_for(max_tokens)
    assembly = context.assemble(org_id=caller.org_id, query=query, filters=filters, max_tokens=max_tokens,
                                candidates=candidates, encoding_name=encoding, order=order)
    parameters = {"max_tokens": max_tokens, "encoding": encoding, "candidates": candidates, "order": order}
    event = events.retrieval_event_record(
        org_id=caller.org_id, kind=RetrievalEvent.Kind.CONTEXT, query=query, namespace=filters.namespace or "",
        filters=filters, request=parameters, outcome=assembly.outcome, agent_id=caller.agent_id, user=caller.user,
        redactor=caller.redactor())
    return Assembled(assembly, event, candidates)


def hot_memories(caller: Caller, *, limit: int) -> list[Memory]:
    """The calling agent's hot memories in its reach (a limited caller's are read whole from the
    set, then cut)."""
    hottest = hot.hot_memories(org_id=caller.org_id, agent_id=caller.agent_id,
                               limit=config().hot_cache_size if caller.limited else limit)
    return [memory for memory in hottest if caller.covers(memory.namespace)][:limit]


# --------------------------------------------------------------------------- the record of retrievals


def _sees_every_retrieval(caller: Caller) -> None:
    """Retrieval events show what any caller of the organisation searched for and was shown:
    a caller limited to namespaces does not read them."""
    if caller.limited:
        raise OutOfReach("a key limited to namespaces cannot read the organisation's retrieval events")


def retrieval_event_list(caller: Caller, *, kind: str | None = None, agent=None, created_after=None,
                         created_before=None, query_contains: str | None = None) -> QuerySet[RetrievalEvent]:
    """The organisation's retrieval events, filtered (query_contains: a text within the query,
    whatever its case, from the start of a word: selectors.events_with_query_text)."""
    _sees_every_retrieval(caller)
    found = RetrievalEvent.objects.filter(org_id=caller.org_id)
    for lookup, value in (("kind", kind), ("agent_id", agent), ("created_at__gte", created_after),
                          ("created_at__lt", created_before)):
        if value is not None:
            found = found.filter(**{lookup: value})
    if query_contains is not None:
        found = selectors.events_with_query_text(found, org_id=caller.org_id, text=query_contains)
    return found


def retrieval_event_get(caller: Caller, event_id) -> RetrievalEvent:
    _sees_every_retrieval(caller)
    return events.retrieval_event_get(org_id=caller.org_id, event_id=event_id)


def retrieval_event_replay(caller: Caller, event_id) -> events.Replay:
    _sees_every_retrieval(caller)
    return events.retrieval_event_replay(org_id=caller.org_id, event_id=event_id, agent_id=caller.agent_id,
                                         user=caller.user)
