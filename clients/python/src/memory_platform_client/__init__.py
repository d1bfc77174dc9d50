"""A light client for the Memory Platform's REST API (no Django, httpx alone), and PlatformStore,
a LangGraph BaseStore (with the `langgraph` extra)."""

from memory_platform_client.client import (
    AsyncMemoryPlatform,
    Item,
    Memory,
    MemoryPlatform,
    SearchItem,
    SearchResult,
    WriteResult,
)
from memory_platform_client.errors import (
    Conflict,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    OutOfReach,
    PlatformError,
    PreconditionFailed,
    RateLimited,
    ServerError,
)

__all__ = [
    "AsyncMemoryPlatform", "Conflict", "InvalidInput", "Item", "Memory", "MemoryPlatform", "NotAuthenticated",
    "NotFound", "OutOfReach", "PlatformError", "PlatformStore", "PreconditionFailed", "RateLimited", "SearchItem",
    "SearchResult", "ServerError", "WriteResult",
]


def __getattr__(name: str):
    # PlatformStore needs LangGraph (the `langgraph` extra): imported when asked for, so the REST
    # client alone never loads it.
    if name == "PlatformStore":
        from memory_platform_client.langgraph import PlatformStore

        return PlatformStore
    raise AttributeError(name)
