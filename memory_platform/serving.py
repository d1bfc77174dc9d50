"""One port, two apps (docs/adr/0041): /mcp goes to the MCP server (ASGI: the MCP SDK serves
nothing else), everything else to Django's WSGI app, unchanged, on a thread of its own.

gunicorn runs it with `Worker` (uvicorn's worker class): the same master, the same process
count and `post_worker_init` hook, the same trust of X-Forwarded-Proto (FORWARDED_ALLOW_IPS).
The client's address is the app's to find, from X-Forwarded-For of the configured proxies only
(MEMORY_PLATFORM_PROXY_ADDRESSES), not uvicorn's, which trusts any client on this machine and
takes any text as an address.
"""

from __future__ import annotations

import json
import logging
import os
import time

from a2wsgi import WSGIMiddleware
from uvicorn_worker import UvicornWorker

from memory_platform import security
from memory_platform.config import config
from memory_platform.log_format import UNMATCHED, route_of

access_log = logging.getLogger("gunicorn.access")

# gunicorn's own default for FORWARDED_ALLOW_IPS, when the app is served without `Worker`.
DEFAULT_SCHEME_PROXIES = "127.0.0.1,::1"

# Django requests in flight per process: one, as a sync gunicorn worker serves them (the
# embedding model runs on one thread per process; docs/adr/0041). MCP calls have threads of
# their own (integrations.mcp.boundary).
DJANGO_THREADS = 1


class ProductApp:
    def __init__(self, django_wsgi_app):
        # Here, not at the top: gunicorn's master imports this module for `Worker` before
        # Django is set up, and the MCP server's tools import models.
        from integrations.mcp.http import PATH, gated_mcp_app

        self.django = WSGIMiddleware(_InputTerminated(django_wsgi_app), workers=DJANGO_THREADS)
        self.mcp, self.mcp_lifespan_app = gated_mcp_app()
        self.mcp_path = PATH
        self.trust_scheme_from(os.environ.get("FORWARDED_ALLOW_IPS", DEFAULT_SCHEME_PROXIES).split(","))

    def trust_scheme_from(self, addresses: list[str]) -> None:
        """The peers whose X-Forwarded-Proto says the scheme (gunicorn's forwarded_allow_ips)."""
        addresses = [address.strip() for address in addresses if address.strip()]
        self.any_scheme_proxy = "*" in addresses
        self.scheme_proxies = security.proxy_networks(",".join(a for a in addresses if a != "*"))

    def forwarded(self, scope) -> dict:
        """The scope as the client sent the request: its address and scheme as the trusted
        proxies saw them."""
        peer, port = scope.get("client") or ("", 0)
        forwarded_for = ", ".join(value.decode("latin-1") for name, value in scope["headers"]
                                  if name == b"x-forwarded-for")
        client = security.client_address(peer, forwarded_for, security.proxy_networks(config().proxy_addresses))
        scope = {**scope, "client": (client, port if client == peer else 0)}
        proto = _header(scope, b"x-forwarded-proto").strip().lower()
        if proto in ("http", "https") and (self.any_scheme_proxy or security.is_among(peer, self.scheme_proxies)):
            scope["scheme"] = proto
        return scope

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await self.lifespan(receive, send)
        if scope["type"] != "http":
            return  # no websockets here: the server closes the connection
        started = time.monotonic()
        answered = {"status": 0, "bytes": 0}
        scope = self.forwarded(scope)

        async def counted(message):
            if message["type"] == "http.response.start":
                answered["status"] = message["status"]
            elif message["type"] == "http.response.body":
                answered["bytes"] += len(message.get("body", b""))
            await send(message)

        path = scope["path"]
        mcp = path == self.mcp_path or path.startswith(self.mcp_path + "/")
        try:
            if _header(scope, b"transfer-encoding") and _header(scope, b"content-length"):
                await _ambiguous_length(counted)
            else:
                await (self.mcp if mcp else self.django)(scope, receive, counted)
        finally:
            # gunicorn's access line (memory_platform.gunicorn_conf.access_log_format): the route's
            # pattern, not the path (a tag, a key or anything a client typed), no query string,
            # no referer, no user agent.
            route = (path if path == self.mcp_path else UNMATCHED) if mcp else route_of(path)
            access_log.info('%s "%s %s HTTP/%s" %s %s %dms', scope["client"][0] or "-", scope["method"], route,
                            scope.get("http_version", "1.1"), answered["status"], answered["bytes"],
                            (time.monotonic() - started) * 1000)

    async def lifespan(self, receive, send):
        """Runs the MCP session manager for as long as the server serves."""
        await receive()  # lifespan.startup
        started = False
        try:
            async with self.mcp_lifespan_app.router.lifespan_context(self.mcp_lifespan_app):
                await send({"type": "lifespan.startup.complete"})
                started = True
                await receive()  # lifespan.shutdown
        except BaseException:
            if not started:
                await send({"type": "lifespan.startup.failed", "message": "the MCP server did not start"})
                return
            raise
        await send({"type": "lifespan.shutdown.complete"})


def _header(scope, name: bytes) -> str:
    return next((value.decode("latin-1") for key, value in scope["headers"] if key == name), "")


async def _ambiguous_length(send) -> None:
    """A request with both Transfer-Encoding and Content-Length is refused, and its connection
    closed: RFC 9112 (6.3) calls it an error that may be an attempt at request smuggling. Read
    by the chunks (what the server does) the body would be at odds with the Content-Length
    Django and the MCP SDK read it by."""
    from memories.api.errors import error_body

    body = json.dumps(error_body("bad_request", "send either Transfer-Encoding or Content-Length, not both")).encode()
    await send({"type": "http.response.start", "status": 400,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class _InputTerminated:
    """The ASGI server de-chunks a request body, and the bridge reads it to its end: say so, as
    gunicorn does, so a chunked body is read rather than refused (memories.api.parsers)."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        environ["wsgi.input_terminated"] = True
        return self.app(environ, start_response)


class Worker(UvicornWorker):
    # uvicorn's own access line carries the query string; ProductApp writes gunicorn's instead.
    # ProductApp reads the forwarded headers itself (ProductApp.forwarded).
    CONFIG_KWARGS = {**UvicornWorker.CONFIG_KWARGS, "access_log": False, "lifespan": "on", "proxy_headers": False}

    def load_wsgi(self):
        super().load_wsgi()
        self.wsgi.trust_scheme_from(list(self.cfg.forwarded_allow_ips))
