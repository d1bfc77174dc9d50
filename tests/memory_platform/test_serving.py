"""The served app's edge (memory_platform.serving.ProductApp, served for real by uvicorn in a
thread): the access line names the route's pattern and the client as the configured proxies
saw it, never a path's values nor an X-Forwarded-For from anyone else; a request whose length
is ambiguous is refused."""

from __future__ import annotations

import json
import logging
import socket
import time
import uuid

import httpx
import pytest

from memory_platform.log_format import UNMATCHED
from tests.markers import committing

pytestmark = pytest.mark.slow

SECRET = "jane.doe@example.com"


@pytest.fixture
def lines(caplog):
    """The access lines and Django's request lines (its logger does not propagate to the root)."""
    django_logger = logging.getLogger("django")
    django_logger.addHandler(caplog.handler)
    caplog.set_level(logging.INFO)


    def logged(until: str) -> list[str]:
        """The lines so far, once one holds `until` (the access line is written as the response
        ends, just after the client has it)."""
        deadline = time.monotonic() + 30
        while True:
            found = [record.getMessage() for record in caplog.records
                     if record.name in ("gunicorn.access", "django.request")]
            if any(until in line for line in found) or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    yield logged
    django_logger.removeHandler(caplog.handler)


@committing
def test_the_access_line_names_the_route_never_the_path(served, lines):
    httpx.delete(f"{served.base}/api/v1/memories/{uuid.uuid4()}/tags/{SECRET}", timeout=30)
    httpx.get(f"{served.base}/users/{SECRET}/notes", timeout=30)
    logged = lines(until=f'"GET {UNMATCHED} HTTP/1.1"')
    assert any('"DELETE /api/v1/memories/<memory_id>/tags/<tag> HTTP/1.1" 401' in line for line in logged), logged
    assert any(f'"GET {UNMATCHED} HTTP/1.1" 404' in line for line in logged), logged
    assert f"Not Found: {UNMATCHED}" in logged
    assert not [line for line in logged if "jane.doe" in line]


@pytest.mark.parametrize(("proxies", "forwarded", "client"), [
    ("", "198.51.100.7", "127.0.0.1"),  # no proxy configured: any client can write the header
    ("127.0.0.1", "198.51.100.7", "198.51.100.7"),
    ("127.0.0.1", "<script>alert(1)</script>", "127.0.0.1"),  # not an address: not taken
    ("127.0.0.1", "203.0.113.9, 198.51.100.7", "198.51.100.7"),  # what the one proxy saw
])
@committing
def test_the_client_is_taken_from_x_forwarded_for_only_from_a_configured_proxy(served, lines, settings, proxies,
                                                                              forwarded, client):
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "PROXY_ADDRESSES": proxies}
    httpx.get(f"{served.base}/health", headers={"X-Forwarded-For": forwarded}, timeout=30)
    access = [line for line in lines(until='"GET /health HTTP/1.1"') if '"GET /health HTTP/1.1"' in line]
    assert access and access[-1].split()[0] == client, access


def raw_exchange(port: int, request: bytes) -> tuple[bytes, bool]:
    """(what the server answered, whether it then closed the connection)"""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(request)
        received = b""
        while b"\r\n\r\n" not in received or len(received.split(b"\r\n\r\n", 1)[1]) < _length(received):
            chunk = connection.recv(65536)
            if not chunk:
                return received, True
            received += chunk
        connection.settimeout(10)
        try:
            return received, connection.recv(1) == b""
        except TimeoutError:
            return received, False


def _length(received: bytes) -> int:
    head = received.split(b"\r\n\r\n", 1)[0].lower()
    return next((int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.startswith(b"content-length:")), 0)


@pytest.mark.parametrize("path", ["/api/v1/memories", "/mcp"])
@committing
def test_a_body_with_both_transfer_encoding_and_content_length_is_refused_and_the_connection_closed(served, path):
    """RFC 9112 6.3: such a message may be an attempt at request smuggling. Read by its chunks
    (as the server de-chunks it) and by its Content-Length (as Django and the MCP SDK read it),
    it would be two different bodies."""
    body = b'{"content": "the chunked body"}'
    request = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               f"Authorization: Bearer mp_unknown\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
               f"{len(body):x}\r\n").encode() + body + b"\r\n0\r\n\r\n"
    answer, closed = raw_exchange(served.port, request)
    head, payload = answer.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 400 ") and b"content-type: application/json" in head.lower()
    assert json.loads(payload)["error"]["code"] == "bad_request"
    assert closed
