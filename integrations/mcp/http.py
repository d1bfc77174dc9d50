"""The MCP server as an ASGI app for /mcp: Streamable HTTP, stateless, behind the API-key gate.

Stateless (a fresh transport per POST, no server-side session) so that any web worker can
answer any request: `manage.py run` serves several processes behind one port, and none of the
tools needs a session. JSON responses rather than an SSE stream: every tool answers once.
"""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

from django.conf import settings
from django.db import close_old_connections, transaction
from django.http.request import split_domain_port, validate_host
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from rest_framework import exceptions
from starlette.applications import Starlette

from integrations.mcp import tools
from integrations.mcp.boundary import CALLER_SCOPE_KEY, UNREACHABLE_SCOPE_KEY, on_call_thread
from memories.access import Caller
from memories.api.errors import database_unreachable_body, error_body
from memory_platform import database
from memory_platform.config import config
from tenants import throttles
from tenants.authentication import authenticate_bearer

PATH = "/mcp"
# What the site's responses carry too (memory_platform.settings.production): JSON-RPC answers
# are not to be sniffed, framed or cached.
RESPONSE_HEADERS = [(b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
                    (b"referrer-policy", b"same-origin"), (b"cache-control", b"no-store")]

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Long-term memory for this agent. Before answering anything that depends on what the user said or did "
    "before, call search_memory; when the user tells you something worth keeping, remember_fact (in the user's "
    "namespace, e.g. [\"users\", \"alice\"]); when a fact changed, correct_fact; when the user confirms one, "
    "confirm_fact. weak_facts lists what is fading, explain_fact says why a fact is held, get_entity_info what "
    "is known about a person or thing. assemble_context gives the memories for a prompt within a token budget. "
    "open_session when a conversation starts (remember_fact's session_id names it), close_session when it ends. "
    "When a user asks to be forgotten, erase_namespace, in two calls: it counts, you ask the user, then it "
    "erases. The store_* tools keep one value per namespace and key."
)


def mcp_server() -> MCPServer:
    # WARNING: the SDK logs a refused call's message at INFO, and a message may quote the
    # caller's data (a key, a namespace); logs carry no values (memory_platform.log_format).
    server = MCPServer("memory-platform", instructions=INSTRUCTIONS, log_level="WARNING")
    tools.register(server)
    return server


def mcp_app() -> Starlette:
    """The SDK's Streamable HTTP app at /mcp (its lifespan runs the session manager)."""
    return mcp_server().streamable_http_app(
        streamable_http_path=PATH, stateless_http=True, json_response=True,
        max_request_body_size=config().max_request_bytes,
        # The Host check is the gate's, by ALLOWED_HOSTS as for the rest of the site; a
        # browser page cannot send the API key a call needs, which is what DNS rebinding abuses.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )


def _admitted(header: bytes | None, meta: dict) -> Caller:
    """The caller, by the same authentication and rate limits as the REST API's
    (tenants.authentication, tenants.throttles), in a transaction of its own: a tool call opens
    its own, as the key's organisation. Raises the API's exceptions (401, 429)."""
    request = SimpleNamespace(META=meta)  # what the client address is read from (rate_limits)
    close_old_connections()
    try:
        if not header:
            throttles.unauthenticated_request_counted(request)
            raise exceptions.NotAuthenticated("send Authorization: Bearer <API key>")
        try:
            with transaction.atomic():
                principal = authenticate_bearer(header)
        except exceptions.AuthenticationFailed:
            throttles.unauthenticated_request_counted(request)
            raise
        wait = throttles.api_key_request_counted(principal.api_key.pk, *throttles.ApiKeyThrottle.rate_names)
        if wait is not None:
            raise throttles.RateLimited(wait=wait, detail="Too many requests for this API key.")
        return principal.caller
    finally:
        close_old_connections()


async def _json(send, status: int, body: dict, headers: list[tuple[bytes, bytes]] = ()) -> None:
    payload = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                            *RESPONSE_HEADERS, *headers]})
    await send({"type": "http.response.body", "body": payload})


class ApiKeyGate:
    """Answers before MCP does: 400 for a Host the site does not serve, 401 (JSON, as the REST
    API's) for a missing, unknown or revoked key, 429 past the key's (or, without a valid key,
    the address's) rate limit, 503 with Retry-After while the database is out of reach;
    otherwise hands the request on with the key's caller in its scope
    (integrations.mcp.boundary reads it). Its refusals are the API's JSON errors, the SDK's
    413 for a body too large included."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        host, _ = split_domain_port(headers.get(b"host", b"").decode("latin-1"))
        if not host or not validate_host(host, settings.ALLOWED_HOSTS):
            return await _json(send, 400, error_body("bad_request", "Bad Request"))
        meta = {"REMOTE_ADDR": (scope.get("client") or ("",))[0],
                "HTTP_X_FORWARDED_FOR": headers.get(b"x-forwarded-for", b"").decode("latin-1")}
        try:
            caller = await on_call_thread(_admitted, headers.get(b"authorization"), meta)
        except exceptions.APIException as refused:
            codes = refused.get_codes()
            extra = []
            if refused.status_code == 401:
                extra.append((b"www-authenticate", b'Bearer realm="api"'))
            if getattr(refused, "wait", None):
                extra.append((b"retry-after", str(int(refused.wait)).encode()))
            return await _json(send, refused.status_code,
                               error_body(codes if isinstance(codes, str) else refused.default_code,
                                          str(refused.detail)), extra)
        except Exception as failure:
            if database.unreachable(failure):
                logger.warning("database unreachable (%s): %s %s answered 503", type(failure).__name__,
                               scope["method"], PATH)
                return await _unreachable(send)
            # As the API's 500, logged without values.
            logger.error("MCP authentication failed", exc_info=failure)
            return await _json(send, 500, error_body("server_error", "internal error; it has been logged"))

        unreachable: list = []  # a tool call appends to it (integrations.mcp.boundary.in_tenant)
        replaced = False

        async def answer(message):
            """The MCP app's answer with the site's headers; as the API's JSON instead when a
            tool call found the database out of reach, or for the SDK's plain-text 413."""
            nonlocal replaced
            if message["type"] == "http.response.start":
                if unreachable:
                    replaced = True
                    return await _unreachable(send)
                if message["status"] == 413:
                    replaced = True
                    return await _json(send, 413, error_body(
                        "payload_too_large", f"request body exceeds the limit of {config().max_request_bytes} bytes"))
                message = {**message, "headers": [*message.get("headers", []), *RESPONSE_HEADERS]}
            elif replaced:
                return None  # the body of the answer replaced
            await send(message)

        await self.app({**scope, CALLER_SCOPE_KEY: caller, UNREACHABLE_SCOPE_KEY: unreachable}, receive, answer)


async def _unreachable(send) -> None:
    await _json(send, 503, database_unreachable_body(),
                [(b"retry-after", str(database.UNREACHABLE_RETRY_SECONDS).encode())])


def gated_mcp_app():
    """(the ASGI app to serve at /mcp, the app whose lifespan must run around it)"""
    app = mcp_app()
    return ApiKeyGate(app), app
