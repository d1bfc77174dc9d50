"""The boundary of one MCP tool call: who calls (the API key the HTTP request carried), the
tenant context its work runs in, and how what goes wrong becomes a tool error.

Django's ORM is synchronous, and the tenant is a transaction-local setting (tenants.context),
so a call's whole database work runs in one worker thread, in one transaction that first makes
the key's organisation the tenant. Anything the call raises rolls that transaction back: a
refused call writes nothing.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable
from functools import partial
from typing import TypeVar

import anyio
from django.db import close_old_connections, transaction
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from rest_framework import exceptions

from memories.access import Caller
from memories.api import storable
from memories.api.errors import database_unreachable_body, flatten
from memories.errors import MemoryServiceError
from memory_platform import database
from tenants import context, throttles

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Where the HTTP layer (integrations.mcp.http) leaves the caller in the request's ASGI scope.
CALLER_SCOPE_KEY = "memory_platform.mcp_caller"
# ...and a list a tool call appends to when it found the database out of reach, so that the
# HTTP layer answers 503 with Retry-After, as every door does, instead of a tool error.
UNREACHABLE_SCOPE_KEY = "memory_platform.mcp_database_unreachable"

# MCP database work in flight per process (per event loop): authentications and tool calls,
# each on a thread that keeps its own database connection.
CALL_THREADS = 4
_limiters: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class RateLimitedCall(MemoryServiceError):
    code = "rate_limited"


class DatabaseUnreachable(ToolError):
    """A tool call that could not reach the database (the HTTP layer answers 503 for it)."""


def count_against(caller: Caller, rate_name: str) -> None:
    """A heavier call's own rate (the REST API's search scope): refused past it."""
    wait = throttles.api_key_request_counted(caller.api_key_id, rate_name)
    if wait is not None:
        raise RateLimitedCall(f"too many {rate_name} calls for this API key; retry after {wait} s")


def caller_of(ctx: Context) -> Caller:
    request = ctx.request_context.request
    caller = request.scope.get(CALLER_SCOPE_KEY) if request is not None else None
    if caller is None:  # only reachable if the app were served without its HTTP gate
        raise ToolError("not authenticated")
    return caller


def tool_error(exc: Exception) -> ToolError:
    """A service's or a serializer's refusal, as the message a tool error carries."""
    if isinstance(exc, MemoryServiceError):
        where = f"{exc.field}: " if exc.field and exc.field not in exc.message else ""
        return ToolError(f"{exc.code}: {where}{exc.message}")
    if isinstance(exc, exceptions.ValidationError):
        fields = flatten(exc.detail)
        return ToolError("invalid: " + "; ".join(f"{name}: {' '.join(map(str, messages))}"
                                                 if name != "non_field_errors" else " ".join(map(str, messages))
                                                 for name, messages in fields.items()))
    return ToolError("internal error; it has been logged")


def call_in_tenant(caller: Caller, arguments: dict, work: Callable[[Caller], T]) -> T:
    """work(caller) in one transaction as the caller's organisation, on this thread; a refusal
    (or any failure) rolls it back and comes out as a ToolError."""
    close_old_connections()
    try:
        try:
            storable.check(arguments)  # NUL, unpaired surrogates, JSON nested too deep: named, before any write
            with transaction.atomic():
                context.activate_org(caller.org_id)
                return work(caller)
        except (MemoryServiceError, exceptions.ValidationError) as exc:
            raise tool_error(exc) from None
        except Exception as exc:
            if database.unreachable(exc):
                logger.warning("database unreachable (%s): an MCP tool call answered 503", type(exc).__name__)
                raise DatabaseUnreachable(database_unreachable_body()["error"]["message"]) from None
            # By type and frames only (memory_platform.log_format): the message may hold data.
            logger.error("MCP tool call failed", exc_info=exc)
            raise tool_error(exc) from None
    finally:
        close_old_connections()


async def on_call_thread(function: Callable[..., T], *arguments) -> T:
    """Run function(*arguments) on one of this process's call threads (at most CALL_THREADS: each
    keeps a database connection of its own)."""
    loop = asyncio.get_running_loop()
    limiter = _limiters.get(loop)
    if limiter is None:
        limiter = _limiters[loop] = anyio.CapacityLimiter(CALL_THREADS)
    return await anyio.to_thread.run_sync(partial(function, *arguments), limiter=limiter)


async def in_tenant(ctx: Context, arguments: dict, work: Callable[[Caller], T]) -> T:
    """Run work(caller) on a call thread, in one transaction as the caller's organisation."""
    try:
        return await on_call_thread(call_in_tenant, caller_of(ctx), arguments, work)
    except DatabaseUnreachable:
        request = ctx.request_context.request
        unreachable = request.scope.get(UNREACHABLE_SCOPE_KEY) if request is not None else None
        if unreachable is not None:
            unreachable.append(True)
        raise
