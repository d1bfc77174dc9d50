"""Work left for after the response: run when the server closes the response, never lost to
an earlier failure, and at once outside a request."""

import logging

import pytest
from django.core.signals import request_finished, request_started

from memories.caching import cache
from memory_platform.after_response import after_response


@pytest.mark.django_db  # the signals' other receivers close stale connections
def test_inside_a_request_work_waits_for_the_response_to_close(caplog):
    done = []
    request_started.send(sender=None)
    try:
        after_response(lambda: done.append("cache"))
        after_response(lambda: 1 / 0)
        after_response(lambda: done.append("counts"))
        assert done == []  # the response is still being made
    finally:
        with caplog.at_level(logging.ERROR, logger="memory_platform.after_response"):
            request_finished.send(sender=None)
    assert done == ["cache", "counts"]  # the failure in between stopped neither
    assert "ZeroDivisionError" in caplog.text
    after_response(lambda: done.append("later"))  # no request any more: at once
    assert done == ["cache", "counts", "later"]


def test_a_search_caches_its_query_embedding_once_the_response_is_out(api_a):
    text = "a question no search has asked before 41d7"
    key = cache.query_key(text)
    cache.client().delete(key)
    cache._embed_query_cached.cache_clear()
    assert api_a.post("/api/v1/search", {"query": text, "limit": 1}).status_code == 200
    assert cache.client().ttl(key) > 0
