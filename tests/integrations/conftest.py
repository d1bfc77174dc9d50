"""The product's ASGI app (memory_platform.serving: /mcp beside the Django site) served for real
by uvicorn on a free port, in a thread of this process, for the peers' own clients to call (the
official MCP client, Mem0's)."""

from __future__ import annotations

import os
import tempfile
import threading
import time

import pytest
import uvicorn

from tests.ports import free_port

# Mem0's client (mem0ai) reads these as it is imported: no telemetry sent to Mem0, and its config
# file (an anonymous id it writes on import) in a folder of the run's, not the home folder's.
os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("MEM0_DIR", os.path.join(tempfile.gettempdir(), "mem0-client"))


class Served:
    def __init__(self, port: int):
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.url = f"{self.base}/mcp"


@pytest.fixture(scope="module")
def served(django_db_setup, embedded_servers):
    from django.core.wsgi import get_wsgi_application
    from django.db import connections

    from memory_platform.serving import ProductApp

    # The server's threads close their connections after each request and tool call (one
    # settings dict, shared by every thread's connection), so none is left open on the test
    # database when the session drops it.
    shared = connections.settings["default"]
    kept_age, shared["CONN_MAX_AGE"] = shared["CONN_MAX_AGE"], 0
    port = free_port()
    # As memory_platform.serving.Worker serves it: the forwarded headers are the app's to read.
    server = uvicorn.Server(uvicorn.Config(ProductApp(get_wsgi_application()), host="127.0.0.1", port=port,
                                           lifespan="on", access_log=False, log_level="warning",
                                           proxy_headers=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    yield Served(port)
    server.should_exit = True
    thread.join(timeout=30)
    shared["CONN_MAX_AGE"] = kept_age
