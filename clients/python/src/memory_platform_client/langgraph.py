"""PlatformStore: a LangGraph BaseStore kept in the Memory Platform, so that

    graph.compile(store=PlatformStore("http://127.0.0.1:8000", api_key="mp_..."))

gives any graph the platform as its long-term memory: every item a memory with its history,
found by meaning, shown in the console, kept apart per organisation.

Needs the `langgraph` extra (langgraph-checkpoint, where BaseStore lives). Each operation of a
batch is one request of the store API (docs/adr/0040), sent in the order given, so a get after a
put in the same batch reads what the put wrote.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)

from memory_platform_client.client import AsyncMemoryPlatform, MemoryPlatform, _Calls

__all__ = ["PlatformStore"]


def _item(raw: dict | None) -> Item | None:
    if raw is None:
        return None
    return Item(value=raw["value"], key=raw["key"], namespace=tuple(raw["namespace"]),
                created_at=datetime.fromisoformat(raw["created_at"]), updated_at=datetime.fromisoformat(raw["updated_at"]))


def _search_item(raw: dict) -> SearchItem:
    return SearchItem(namespace=tuple(raw["namespace"]), key=raw["key"], value=raw["value"],
                      created_at=datetime.fromisoformat(raw["created_at"]),
                      updated_at=datetime.fromisoformat(raw["updated_at"]), score=raw.get("score"))


def _match(op: ListNamespacesOp) -> dict:
    """A ListNamespacesOp's conditions as list_namespaces' prefix and suffix (one of each)."""
    found: dict = {}
    for condition in op.match_conditions or ():
        if condition.match_type in found:
            raise ValueError(f"the platform takes one {condition.match_type} condition per listing")
        if condition.match_type not in ("prefix", "suffix"):
            raise ValueError(f"unknown match type {condition.match_type!r}")
        found[condition.match_type] = list(condition.path)
    return found


class PlatformStore(BaseStore):
    """A LangGraph BaseStore over the platform's store API. url: the server; api_key: an agent's
    key (its organisation, and the namespaces it may reach, are the store). ttl: LangGraph's
    TTLConfig (refresh_on_read, default_ttl in minutes); the platform sweeps expired items itself."""

    supports_ttl = True

    def __init__(self, url: str, api_key: str, *, ttl: TTLConfig | None = None, timeout: float = 30.0,
                 client: MemoryPlatform | None = None, async_client: AsyncMemoryPlatform | None = None) -> None:
        self.ttl_config = ttl
        self._url, self._api_key, self._timeout = url, api_key, timeout
        self._client = client
        self._async_client = async_client

    @property
    def client(self) -> MemoryPlatform:
        if self._client is None:
            self._client = MemoryPlatform(self._url, self._api_key, timeout=self._timeout)
        return self._client

    @property
    def async_client(self) -> AsyncMemoryPlatform:
        if self._async_client is None:
            self._async_client = AsyncMemoryPlatform(self._url, self._api_key, timeout=self._timeout)
        return self._async_client

    def close(self) -> None:
        """Close the synchronous client's connections (aclose closes the asynchronous one's)."""
        if self._client is not None:
            self._client.close()

    async def aclose(self) -> None:
        if self._async_client is not None:
            await self._async_client.aclose()

    @staticmethod
    def _call(calls: _Calls, op: Op):
        """The request an operation is, and how its answer becomes the operation's result."""
        validate_op_namespace(op)  # a label holding "." would address another namespace
        if isinstance(op, GetOp):
            return calls._get_item(op.namespace, op.key, refresh_ttl=op.refresh_ttl), _item
        if isinstance(op, PutOp):
            if op.value is None:
                return calls._delete_item(op.namespace, op.key), lambda _: None
            return calls._put_item(op.namespace, op.key, op.value, index=op.index, ttl=op.ttl), lambda _: None
        if isinstance(op, SearchOp):
            return (calls._search_items(op.namespace_prefix, filter=op.filter, limit=op.limit, offset=op.offset,
                                        query=op.query, refresh_ttl=op.refresh_ttl),
                    lambda found: [_search_item(raw) for raw in found])
        if isinstance(op, ListNamespacesOp):
            return (calls._list_namespaces(**_match(op), max_depth=op.max_depth, limit=op.limit, offset=op.offset),
                    lambda found: [tuple(namespace) for namespace in found])
        raise ValueError(f"unknown operation {type(op).__name__}")

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results = []
        for op in ops:
            call, result = self._call(self.client, op)
            results.append(result(self.client.send(call)))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        results = []
        for op in ops:
            call, result = self._call(self.async_client, op)
            results.append(result(await self.async_client.send(call)))
        return results
