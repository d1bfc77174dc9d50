"""The REST API (/api/v1) as typed methods, sync (MemoryPlatform) and async (AsyncMemoryPlatform).

Each method describes its request as plain data (a Call: method, path, query, body, and how to
read the answer); one place sends it, over httpx.Client or httpx.AsyncClient. So both clients
are one list of methods, and what goes over the wire is the same whichever is used.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypedDict, TypeVar

import httpx

from memory_platform_client.errors import error_from

T = TypeVar("T")
API = "/api/v1"
DEFAULT_TIMEOUT = 30.0


class Item(TypedDict):
    """A store item, as LangGraph's Item: namespace, key, value, created_at, updated_at."""

    namespace: list[str]
    key: str
    value: dict[str, Any]
    created_at: str
    updated_at: str


class SearchItem(Item):
    score: float | None  # cosine similarity (0 to 1) for a search with a query; None otherwise


class Memory(TypedDict, total=False):
    """A memory as the API returns it (GET /memories/{id}); the fields most callers read."""

    id: str
    content: str
    namespace: list[str]
    key: str | None
    category: str
    memory_type: str
    status: str
    metadata: dict[str, Any]
    tags: list[str]
    version: int
    strength: float
    embedding_status: str
    created_at: str
    updated_at: str


class SearchResult(TypedDict):
    memory: Memory
    score: float
    signals: dict[str, Any]


class WriteResult(TypedDict, total=False):
    memory: Memory
    created: bool
    deduplicated: bool
    embedding_status: str
    near_duplicates: list[dict[str, Any]]


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request, and how to read its answer."""

    method: str
    path: str
    params: Mapping[str, Any] | None = None
    body: Any = None
    read: Callable[[httpx.Response], T] = field(default=lambda response: response.json())


def _json_or_none(response: httpx.Response) -> Any:
    return response.json() if response.content else None


def _nothing(response: httpx.Response) -> None:
    return None


def _given(**values: Any) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


def _labels(namespace: Sequence[str]) -> list[str]:
    return list(namespace)


class _Calls:
    """The API's requests, each a Call. The clients below send them."""

    # ----------------------------------------------------------------------- the store (LangGraph's shapes)

    def _put_item(self, namespace: Sequence[str], key: str, value: Mapping[str, Any], *,
                  index: Literal[False] | list[str] | None = None, ttl: float | None = None) -> Call[None]:
        return Call("PUT", "/store/items", body=_given(namespace=_labels(namespace), key=key, value=dict(value),
                                                       index=index, ttl=ttl), read=_nothing)

    def _get_item(self, namespace: Sequence[str], key: str, *, refresh_ttl: bool | None = None) -> Call[Item | None]:
        params = _given(namespace=".".join(namespace), key=key,
                        refresh_ttl=None if refresh_ttl is None else str(refresh_ttl).lower())
        return Call("GET", "/store/items", params=params, read=_json_or_none)

    def _delete_item(self, namespace: Sequence[str], key: str) -> Call[None]:
        return Call("DELETE", "/store/items", body={"namespace": _labels(namespace), "key": key}, read=_nothing)

    def _search_items(self, namespace_prefix: Sequence[str] = (), *, filter: Mapping[str, Any] | None = None,
                      limit: int = 10, offset: int = 0, query: str | None = None, refresh_ttl: bool | None = None,
                      threshold: float | None = None) -> Call[list[SearchItem]]:
        body = _given(namespace_prefix=_labels(namespace_prefix), filter=dict(filter) if filter else None, limit=limit,
                      offset=offset, query=query, refresh_ttl=refresh_ttl, threshold=threshold)
        return Call("POST", "/store/items/search", body=body, read=lambda response: response.json()["items"])

    def _list_namespaces(self, *, prefix: Sequence[str] | None = None, suffix: Sequence[str] | None = None,
                         max_depth: int | None = None, limit: int = 100, offset: int = 0) -> Call[list[list[str]]]:
        body = _given(prefix=_labels(prefix) if prefix else None, suffix=_labels(suffix) if suffix else None,
                      max_depth=max_depth, limit=limit, offset=offset)
        return Call("POST", "/store/namespaces", body=body, read=lambda response: response.json()["namespaces"])

    # ----------------------------------------------------------------------- memories

    def _create_memory(self, content: str, **fields: Any) -> Call[WriteResult]:
        return Call("POST", "/memories", body={"content": content, **fields})

    def _get_memory(self, memory_id: str) -> Call[Memory]:
        return Call("GET", f"/memories/{memory_id}")

    def _list_memories(self, **filters: Any) -> Call[dict[str, Any]]:
        return Call("GET", "/memories", params=filters)

    def _update_memory(self, memory_id: str, *, version: int, **changes: Any) -> Call[Memory]:
        return Call("PATCH", f"/memories/{memory_id}", body={**changes, "version": version})

    def _delete_memory(self, memory_id: str) -> Call[None]:
        return Call("DELETE", f"/memories/{memory_id}", read=_nothing)

    def _memory_history(self, memory_id: str) -> Call[list[dict[str, Any]]]:
        return Call("GET", f"/memories/{memory_id}/history", read=lambda response: response.json()["results"])

    def _search(self, query: str, *, limit: int = 10, mode: str | None = None, filters: Mapping[str, Any] | None = None,
                **options: Any) -> Call[list[SearchResult]]:
        body = _given(query=query, limit=limit, mode=mode, filters=dict(filters) if filters else None, **options)
        return Call("POST", "/search", body=body, read=lambda response: response.json()["results"])

    def _retrieve(self, query: str, *, scope: str, **options: Any) -> Call[list[dict[str, Any]]]:
        return Call("POST", "/retrieve", body={"query": query, "scope": scope, **options},
                    read=lambda response: response.json()["candidates"])


def _client_options(url: str, api_key: str, timeout: float) -> dict[str, Any]:
    return {"base_url": url.rstrip("/").removesuffix(API) + API, "timeout": timeout,
            "headers": {"Authorization": f"Bearer {api_key}", "User-Agent": "memory-platform-client/0.1"}}


def _request(call: Call[Any]) -> dict[str, Any]:
    return {"method": call.method, "url": call.path, "params": call.params,
            **({"json": call.body} if call.body is not None else {})}


def _answer(call: Call[T], response: httpx.Response) -> T:
    if response.status_code >= 400:
        raise error_from(response)
    return call.read(response)


class MemoryPlatform(_Calls):
    """The REST API, synchronous. url: the server (http://host:8000; /api/v1 is added)."""

    def __init__(self, url: str, api_key: str, *, timeout: float = DEFAULT_TIMEOUT,
                 http: httpx.Client | None = None) -> None:
        self.http = http or httpx.Client(**_client_options(url, api_key, timeout))

    def send(self, call: Call[T]) -> T:
        return _answer(call, self.http.request(**_request(call)))

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> MemoryPlatform:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def put_item(self, namespace: Sequence[str], key: str, value: Mapping[str, Any], *,
                 index: Literal[False] | list[str] | None = None, ttl: float | None = None) -> None:
        """Upsert a store item. index: None (the whole value), False (not searchable by meaning) or
        field paths; ttl: minutes."""
        return self.send(self._put_item(namespace, key, value, index=index, ttl=ttl))

    def get_item(self, namespace: Sequence[str], key: str, *, refresh_ttl: bool | None = None) -> Item | None:
        return self.send(self._get_item(namespace, key, refresh_ttl=refresh_ttl))

    def delete_item(self, namespace: Sequence[str], key: str) -> None:
        return self.send(self._delete_item(namespace, key))

    def search_items(self, namespace_prefix: Sequence[str] = (), *, filter: Mapping[str, Any] | None = None,
                     limit: int = 10, offset: int = 0, query: str | None = None, refresh_ttl: bool | None = None,
                     threshold: float | None = None) -> list[SearchItem]:
        return self.send(self._search_items(namespace_prefix, filter=filter, limit=limit, offset=offset, query=query,
                                            refresh_ttl=refresh_ttl, threshold=threshold))

    def list_namespaces(self, *, prefix: Sequence[str] | None = None, suffix: Sequence[str] | None = None,
                        max_depth: int | None = None, limit: int = 100, offset: int = 0) -> list[list[str]]:
        return self.send(self._list_namespaces(prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit,
                                               offset=offset))

    def create_memory(self, content: str, **fields: Any) -> WriteResult:
        """POST /memories: content, and any of namespace, key, category, metadata, tags, ttl..."""
        return self.send(self._create_memory(content, **fields))

    def get_memory(self, memory_id: str) -> Memory:
        return self.send(self._get_memory(memory_id))

    def list_memories(self, **filters: Any) -> dict[str, Any]:
        return self.send(self._list_memories(**filters))

    def update_memory(self, memory_id: str, *, version: int, **changes: Any) -> Memory:
        return self.send(self._update_memory(memory_id, version=version, **changes))

    def delete_memory(self, memory_id: str) -> None:
        return self.send(self._delete_memory(memory_id))

    def memory_history(self, memory_id: str) -> list[dict[str, Any]]:
        return self.send(self._memory_history(memory_id))

    def search(self, query: str, *, limit: int = 10, mode: str | None = None,
               filters: Mapping[str, Any] | None = None, **options: Any) -> list[SearchResult]:
        return self.send(self._search(query, limit=limit, mode=mode, filters=filters, **options))

    def retrieve(self, query: str, *, scope: str, **options: Any) -> list[dict[str, Any]]:
        return self.send(self._retrieve(query, scope=scope, **options))


class AsyncMemoryPlatform(_Calls):
    """The REST API, awaited: the same methods as MemoryPlatform."""

    def __init__(self, url: str, api_key: str, *, timeout: float = DEFAULT_TIMEOUT,
                 http: httpx.AsyncClient | None = None) -> None:
        self.http = http or httpx.AsyncClient(**_client_options(url, api_key, timeout))

    async def send(self, call: Call[T]) -> T:
        return _answer(call, await self.http.request(**_request(call)))

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncMemoryPlatform:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def put_item(self, namespace: Sequence[str], key: str, value: Mapping[str, Any], *,
                       index: Literal[False] | list[str] | None = None, ttl: float | None = None) -> None:
        return await self.send(self._put_item(namespace, key, value, index=index, ttl=ttl))

    async def get_item(self, namespace: Sequence[str], key: str, *, refresh_ttl: bool | None = None) -> Item | None:
        return await self.send(self._get_item(namespace, key, refresh_ttl=refresh_ttl))

    async def delete_item(self, namespace: Sequence[str], key: str) -> None:
        return await self.send(self._delete_item(namespace, key))

    async def search_items(self, namespace_prefix: Sequence[str] = (), *, filter: Mapping[str, Any] | None = None,
                           limit: int = 10, offset: int = 0, query: str | None = None,
                           refresh_ttl: bool | None = None, threshold: float | None = None) -> list[SearchItem]:
        return await self.send(self._search_items(namespace_prefix, filter=filter, limit=limit, offset=offset,
                                                  query=query, refresh_ttl=refresh_ttl, threshold=threshold))

    async def list_namespaces(self, *, prefix: Sequence[str] | None = None, suffix: Sequence[str] | None = None,
                              max_depth: int | None = None, limit: int = 100, offset: int = 0) -> list[list[str]]:
        return await self.send(self._list_namespaces(prefix=prefix, suffix=suffix, max_depth=max_depth, limit=limit,
                                                     offset=offset))

    async def create_memory(self, content: str, **fields: Any) -> WriteResult:
        return await self.send(self._create_memory(content, **fields))

    async def get_memory(self, memory_id: str) -> Memory:
        return await self.send(self._get_memory(memory_id))

    async def list_memories(self, **filters: Any) -> dict[str, Any]:
        return await self.send(self._list_memories(**filters))

    async def update_memory(self, memory_id: str, *, version: int, **changes: Any) -> Memory:
        return await self.send(self._update_memory(memory_id, version=version, **changes))

    async def delete_memory(self, memory_id: str) -> None:
        return await self.send(self._delete_memory(memory_id))

    async def memory_history(self, memory_id: str) -> list[dict[str, Any]]:
        return await self.send(self._memory_history(memory_id))

    async def search(self, query: str, *, limit: int = 10, mode: str | None = None,
                     filters: Mapping[str, Any] | None = None, **options: Any) -> list[SearchResult]:
        return await self.send(self._search(query, limit=limit, mode=mode, filters=filters, **options))

    async def retrieve(self, query: str, *, scope: str, **options: Any) -> list[dict[str, Any]]:
        return await self.send(self._retrieve(query, scope=scope, **options))
