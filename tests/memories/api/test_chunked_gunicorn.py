"""Chunked request bodies through gunicorn, the production server: read, bounded, validated; both
as the WSGI app alone and as `manage.py run` serves it (the ASGI app with uvicorn's worker, Django
behind a2wsgi: docs/adr/0041)."""

import http.client
import json
import subprocess
import sys
import time

import pytest
from django.conf import settings

from memories.models import Memory, MemoryTag
from tenants.context import tenant_context
from tests.markers import committing
from tests.memories.test_jobs import worker_env
from tests.ports import free_port

LIMIT = 1000  # the server's MAX_REQUEST_BYTES, small so a refused body fits in socket buffers


SERVED = {
    "wsgi": ["memory_platform.wsgi"],
    "asgi": ["memory_platform.asgi", "--worker-class", "memory_platform.serving.Worker"],
}


@pytest.fixture(params=sorted(SERVED))
def gunicorn(request):
    port = free_port()
    env = {**worker_env(), "MEMORY_PLATFORM_MAX_REQUEST_BYTES": str(LIMIT)}
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", *SERVED[request.param], "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=settings.BASE_DIR, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                connection.request("GET", "/api/v1/hot")
                connection.getresponse().read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"gunicorn did not start: {server.stderr.read().decode()[-2000:]}")
                time.sleep(0.3)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=30)


def post_chunked(port, path, key, pieces):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    # An iterable body without Content-Length goes out as Transfer-Encoding: chunked.
    connection.request("POST", path, body=iter(pieces), encode_chunked=True,
                       headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, json.loads(response.read())


@pytest.mark.slow
@committing
def test_gunicorn_hands_chunked_bodies_to_the_api_within_its_limit(tenant_a, api_a, gunicorn):
    memory = tenant_a.memory
    path = f"/api/v1/memories/{memory.pk}/tags"

    status, body = post_chunked(gunicorn, path, api_a.key, [b'{"tags": ', b'["sent-in-', b'chunks"]}'])
    assert status == 200 and "sent-in-chunks" in body["tags"], body

    # Read, not taken for empty: the error names the field that was sent.
    status, body = post_chunked(gunicorn, "/api/v1/memories", api_a.key,
                                [b'{"content": "x", ', b'"confidence": 1e308}'])
    assert status == 400 and list(body["error"]["fields"]) == ["confidence"], body

    status, body = post_chunked(gunicorn, path, api_a.key,
                                [b'{"tags": ["', *[b"a" * 100] * 20, b'"]}'])
    assert status == 413 and body["error"]["code"] == "payload_too_large", body

    with tenant_context(tenant_a.org.id):
        assert sorted(MemoryTag.objects.filter(memory=memory).values_list("tag", flat=True)) == [
            "drinks", "sent-in-chunks"]
        assert not Memory.objects.filter(content="x").exists()
