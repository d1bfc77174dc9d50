"""What /mcp answers before (or instead of) the MCP server, on the product's ASGI app served for
real: the REST API's JSON errors, 503 with Retry-After while the database is out of reach (the
gate's key lookup or a tool call's transaction), and 413 for a body too large."""

from __future__ import annotations

import json
from contextlib import contextmanager

import httpx
import pytest
from django.db import connections
from django.db.backends.signals import connection_created

from memories.models import Memory
from memory_platform.config import config
from memory_platform.database import UNREACHABLE_RETRY_SECONDS
from tenants.context import tenant_context
from tests import factories
from tests.markers import committing
from tests.ports import free_port

pytestmark = pytest.mark.slow

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def tool_call(name: str, arguments: dict) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}})


@contextmanager
def database_out_of_reach():
    """Every thread's connection settings (one dict, shared) point at a port nothing listens on."""
    shared = connections.settings["default"]
    connections["default"].close()
    reachable = shared["HOST"], shared["PORT"]
    shared["HOST"], shared["PORT"] = "127.0.0.1", free_port()
    try:
        yield
    finally:
        shared["HOST"], shared["PORT"] = reachable


@contextmanager
def server_connections_terminated_at(fragment: str):
    """Each connection the server opens is killed by PostgreSQL as it sends its first statement
    containing `fragment` (the server's threads open one per call: CONN_MAX_AGE 0)."""

    def terminate(execute, sql, params, many, context):
        if fragment in sql:
            execute("SELECT pg_terminate_backend(pg_backend_pid())", None, False, context)
        return execute(sql, params, many, context)

    wrapped = []

    def wrap(sender, connection, **kwargs):
        connection.execute_wrappers.append(terminate)
        wrapped.append(connection)

    connection_created.connect(wrap)
    try:
        yield
    finally:
        connection_created.disconnect(wrap)
        for connection in wrapped:  # a thread's connection object outlives its database session
            connection.execute_wrappers.remove(terminate)


@pytest.fixture
def tenant(tenant_a):
    return tenant_a.org, factories.api_key(agent=tenant_a.agent)[1]


def assert_unavailable_json(response: httpx.Response):
    assert response.status_code == 503, response.text[:300]
    assert response.headers["content-type"] == "application/json"
    assert response.headers["retry-after"] == str(UNREACHABLE_RETRY_SECONDS)
    assert response.json()["error"]["code"] == "database_unavailable"


@committing
def test_mcp_answers_json_503_with_retry_after_while_the_database_is_down(tenant, served):
    _, key = tenant
    with database_out_of_reach():
        response = httpx.post(served.url, content=tool_call("memory_stats", {}),
                              headers={**MCP_HEADERS, "Authorization": f"Bearer {key}"}, timeout=30)
    assert_unavailable_json(response)


@committing
def test_a_tool_call_that_loses_its_database_answers_503_and_writes_nothing(tenant, served):
    org, key = tenant
    with tenant_context(org.id):
        before = Memory.objects.filter(org_id=org.id).count()
    with server_connections_terminated_at("INSERT INTO"):
        response = httpx.post(served.url, content=tool_call("remember_fact", {"content": "Lost with its connection"}),
                              headers={**MCP_HEADERS, "Authorization": f"Bearer {key}"}, timeout=30)
    assert_unavailable_json(response)
    with tenant_context(org.id):
        assert Memory.objects.filter(org_id=org.id).count() == before
    # The next call, on a new connection, is served.
    response = httpx.post(served.url, content=tool_call("remember_fact", {"content": "Written once it is back"}),
                          headers={**MCP_HEADERS, "Authorization": f"Bearer {key}"}, timeout=30)
    assert response.status_code == 200 and not response.json()["result"]["isError"], response.text


@committing
def test_a_body_too_large_is_refused_with_the_apis_json_413(tenant, served):
    _, key = tenant
    limit = config().max_request_bytes
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "pad": "' + b"x" * limit + b'"}'

    def chunks():  # no Content-Length: the server reads it to its limit
        for start in range(0, len(body), 65536):
            yield body[start:start + 65536]

    headers = {**MCP_HEADERS, "Authorization": f"Bearer {key}"}
    for content in (body, chunks()):
        response = httpx.post(served.url, content=content, headers=headers, timeout=60)
        assert response.status_code == 413 and response.headers["content-type"] == "application/json"
        assert response.json()["error"]["code"] == "payload_too_large"
        assert response.headers["x-content-type-options"] == "nosniff"
