"""Use cases of the namespace store (spec §3, in LangGraph's shapes; docs/adr/0040): put,
get, delete, search (by filter, or by meaning with a query), keys and namespaces. A read
refreshes the time to live of the items it returns unless asked not to, here and nowhere
else; an item out of the caller's reach is missing, as an absent one."""

from __future__ import annotations

from memories.access import Caller
from memories.errors import NotFound
from memories.models import Memory, RetrievalEvent
from memories.retrieval import events
from memories.retrieval.filters import SearchFilters
from memories.store import reads
from memories.store import search as store_search_by_meaning
from memories.store import writes as store
from memories.store.values import filter_conditions
from memories.writes.create import WriteResult


def store_put(caller: Caller, *, namespace: str, key: str, value: dict, index=None,
              ttl: int | None = None, speaker: str | None = None) -> WriteResult:
    caller.check_write(namespace)
    return store.store_put(org_id=caller.org_id, agent_id=caller.agent_id, namespace=namespace, key=key, value=value,
                           index=index, ttl=ttl, speaker=speaker, actor=caller.actor())


def store_get(caller: Caller, *, namespace: str, key: str, refresh_ttl: bool = True) -> Memory:
    """The item; NotFound when there is none, or the caller does not reach its namespace."""
    if not caller.covers(namespace):
        raise NotFound(f"no item {key!r} in namespace {namespace!r}", field="key")
    item = reads.store_get(org_id=caller.org_id, namespace=namespace, key=key)
    if refresh_ttl:
        store.store_refresh_ttl(org_id=caller.org_id, items=[item])
    return item


def store_delete(caller: Caller, *, namespace: str, key: str) -> bool:
    """Delete the item if there is one (its history stays); whether there was one."""
    caller.check_write(namespace)
    return store.store_delete(org_id=caller.org_id, namespace=namespace, key=key, actor=caller.actor())


def store_search(caller: Caller, *, namespace_prefix: str = "", value_filter: dict | None = None, limit: int = 10,
                 offset: int = 0, query: str | None = None, threshold: float | None = None,
                 refresh_ttl: bool = True) -> list[tuple[Memory, float | None]]:
    """Items under a namespace prefix whose value passes the filter: without a query, the last
    updated first (no score); with one, the nearest it by meaning, best first, scored by cosine
    similarity (None when the query could not be embedded and full text ranked instead), that
    search recorded as a retrieval event."""
    filter_conditions(value_filter or {})  # a bad filter is named before anything runs
    if not query:
        items = reads.store_items(org_id=caller.org_id, prefix=namespace_prefix, value_filter=value_filter,
                                      limit=limit, offset=offset, reach=caller.reach)
        found = [(item, None) for item in items]
    else:
        filters = SearchFilters(namespace=namespace_prefix or None, within=caller.reach.namespaces,
                                store_items=True, value_filter=value_filter or None)
        outcome = store_search_by_meaning.store_search(org_id=caller.org_id, query=query, filters=filters, limit=limit, offset=offset)
        if threshold is not None and not outcome.degraded:
            outcome.results = [result for result in outcome.results if result.score >= threshold]
        events.retrieval_event_record(
            org_id=caller.org_id, kind=RetrievalEvent.Kind.NAMESPACE_SEARCH, query=query, namespace=namespace_prefix,
            filters=filters, request={"limit": offset + limit, "offset": offset, "mode": "vector", "expand": 0,
                                      "threshold": threshold or 0.0},
            outcome=outcome, agent_id=caller.agent_id, user=caller.user, redactor=caller.redactor())
        found = [(result.memory, None if outcome.degraded else result.score) for result in outcome.results]
    if refresh_ttl:
        store.store_refresh_ttl(org_id=caller.org_id, items=[item for item, _ in found])
    return found


def store_keys(caller: Caller, *, namespace: str, limit: int) -> list[str]:
    """The keys holding an item in the namespace itself (none under it), in order."""
    items = reads.store_items(org_id=caller.org_id, prefix=namespace, exactly=True, limit=limit,
                                  reach=caller.reach)
    return sorted(item.key for item in items)


def store_namespaces(caller: Caller, *, prefix=(), suffix=(), max_depth: int | None = None, limit: int = 100,
                     offset: int = 0) -> list[list[str]]:
    return reads.store_namespaces(org_id=caller.org_id, prefix=prefix, suffix=suffix, max_depth=max_depth,
                                      limit=limit, offset=offset, reach=caller.reach)
