"""One port, two apps (docs/adr/0041): /mcp goes to the MCP server (ASGI: the MCP SDK serves
nothing else), everything else to Django's WSGI app, unchanged, on a thread of its own.

gunicorn runs it with `Worker` (uvicorn's worker class): the same master, the same process
count and `post_worker_init` hook, the same forwarded-header trust (FORWARDED_ALLOW_IPS).
"""

from __future__ import annotations

import logging
import time

from a2wsgi import WSGIMiddleware
from uvicorn_worker import UvicornWorker

access_log = logging.getLogger("gunicorn.access")

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

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await self.lifespan(receive, send)
        if scope["type"] != "http":
            return  # no websockets here: the server closes the connection
        started = time.monotonic()
        answered = {"status": 0, "bytes": 0}

        async def counted(message):
            if message["type"] == "http.response.start":
                answered["status"] = message["status"]
            elif message["type"] == "http.response.body":
                answered["bytes"] += len(message.get("body", b""))
            await send(message)

        path = scope["path"]
        app = self.mcp if path == self.mcp_path or path.startswith(self.mcp_path + "/") else self.django
        try:
            await app(scope, receive, counted)
        finally:
            # gunicorn's access line (memory_platform.gunicorn_conf.access_log_format): the path
            # without its query string, no referer, no user agent.
            client = (scope.get("client") or ("-",))[0]
            access_log.info('%s "%s %s HTTP/%s" %s %s %dms', client, scope["method"], path,
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
    CONFIG_KWARGS = {**UvicornWorker.CONFIG_KWARGS, "access_log": False, "lifespan": "on"}
