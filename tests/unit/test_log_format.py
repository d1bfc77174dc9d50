"""Log lines carry no values: exceptions by type and frames, requests by their route's pattern."""

import io
import logging
import sys

import pytest
from django.conf import settings
from django.http import HttpResponseGone, HttpResponseNotFound
from django.test import RequestFactory
from django.utils.log import log_response

from memory_platform import gunicorn_conf
from memory_platform.log_format import UNMATCHED, NoValuesFormatter, RequestPathsAsRoutes, route_of

SCOPE = "users/jane.doe@example.com"  # a value the code handles; frames show code, not values


def test_an_exception_is_logged_by_type_and_frames_without_its_message():
    def store(scope):
        raise ValueError(f"duplicate key (scope)=({scope}) already exists")

    try:
        store(SCOPE)
    except ValueError:
        record = logging.LogRecord("memories", logging.ERROR, __file__, 1, "write failed", None, sys.exc_info())
    line = NoValuesFormatter("%(levelname)s %(message)s").format(record)
    assert line.startswith("ERROR write failed\nTraceback") and "in store" in line
    assert "builtins.ValueError (message not logged" in line
    assert "jane.doe" not in line


def test_the_access_log_names_the_path_without_the_query_string_referer_or_user_agent():
    fields = {"%(r)s", "%(q)s", "%(f)s", "%(a)s"}
    assert "%(U)s" in gunicorn_conf.access_log_format
    assert not {field for field in fields if field in gunicorn_conf.access_log_format}


@pytest.mark.parametrize(("path", "route"), [
    ("/api/v1/memories/0b0e7a9e-1111-4111-8111-111111111111/tags/jane.doe@example.com",
     "/api/v1/memories/<memory_id>/tags/<tag>"),
    ("/api/v1/store/items", "/api/v1/store/items"),
    ("/health", "/health"),
    ("/", "/"),
    ("/admin/tenants/", "/admin/<app_label>/"),  # a regex route: its named group, no anchors
    ("/admin/tenants/apikey/42/change/", "/admin/tenants/apikey/<object_id>/change/"),
    ("/static/console/app.css", "/static/<file>"),
    ("/api/v1/memories/not-a-uuid/tags/x", UNMATCHED),  # the converter refuses it: no route
    ("/users/jane.doe@example.com/secrets", UNMATCHED),
])
def test_a_request_is_named_by_its_routes_pattern_not_its_values(path, route):
    assert route_of(path) == route


def test_djangos_request_lines_name_the_route_not_the_path():
    """Django logs "Not Found: <path>" and "<reason>: <path>" itself (django.utils.log.log_response)."""
    handler = logging.StreamHandler(io.StringIO())
    handler.addFilter(RequestPathsAsRoutes())
    logger = logging.getLogger("tests.request_lines")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        for path in ("/users/jane.doe@example.com/secrets", "/api/v1/memories/0b0e7a9e-1111-4111-8111-111111111111"
                                                            "/tags/jane.doe@example.com"):
            request = RequestFactory().get(path)
            log_response("Not Found: %s", request.path, response=HttpResponseNotFound(), request=request,
                         logger=logger)
            log_response("%s: %s", "Gone", request.path, response=HttpResponseGone(), request=request, logger=logger)
    finally:
        logger.removeHandler(handler)
    lines = handler.stream.getvalue().splitlines()
    assert lines == [f"Not Found: {UNMATCHED}", f"Gone: {UNMATCHED}",
                     "Not Found: /api/v1/memories/<memory_id>/tags/<tag>", "Gone: /api/v1/memories/<memory_id>/tags/<tag>"]
    assert "jane.doe" not in "".join(lines)


def test_the_served_settings_filter_every_console_line():
    handler_filters = settings.LOGGING["handlers"]["console"]["filters"]
    assert "request_routes" in handler_filters
