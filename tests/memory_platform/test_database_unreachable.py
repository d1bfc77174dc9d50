"""While PostgreSQL is out of reach (not listening, restarting, the connection lost mid-request),
every door answers 503 with Retry-After: the API and the LangGraph store door in the API's JSON
error shape, the console with a plain page; one log line says so, by route and error type.

Out of reach for real: the connection settings point at a port nothing listens on, or the
request's own backend is terminated (pg_terminate_backend) at the statement the test picks."""

from __future__ import annotations

import json
import logging
from contextlib import contextmanager

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections
from django.test import Client

from memory_platform.database import UNREACHABLE_RETRY_SECONDS
from tests import factories
from tests.console.conftest import operator
from tests.markers import committing
from tests.ports import free_port

pytestmark = committing

SECRET_TAG = "jane.doe@example.com"


@contextmanager
def database_out_of_reach():
    default = connections["default"]
    default.close()
    reachable = default.settings_dict["HOST"], default.settings_dict["PORT"]
    default.settings_dict["HOST"], default.settings_dict["PORT"] = "127.0.0.1", free_port()
    try:
        yield
    finally:
        default.close()
        default.settings_dict["HOST"], default.settings_dict["PORT"] = reachable


@contextmanager
def backend_terminated_at(fragment: str):
    """The request's database connection is killed by the server as it sends the first statement
    containing `fragment`: what a client sees when PostgreSQL goes away mid-request."""

    def terminate(execute, sql, params, many, context):
        if fragment in sql:
            execute("SELECT pg_terminate_backend(pg_backend_pid())", None, False, context)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(terminate):
        yield


@pytest.fixture
def key(db):
    org = factories.organization("Alpha Corp")
    return factories.api_key(agent=factories.agent(org=org, name="assistant"))[1]


@pytest.fixture
def request_log(caplog):
    """Every line logged under `django` too (its logger does not propagate to the root)."""
    django_logger = logging.getLogger("django")
    django_logger.addHandler(caplog.handler)
    caplog.set_level(logging.INFO)
    yield caplog
    django_logger.removeHandler(caplog.handler)


def assert_unavailable_json(response):
    assert response.status_code == 503, response.content[:300]
    assert response["Content-Type"] == "application/json"
    assert response["Retry-After"] == str(UNREACHABLE_RETRY_SECONDS)
    body = json.loads(response.content)
    assert body == {"error": {"code": "database_unavailable", "message": body["error"]["message"], "fields": {}}}
    assert f"retry in {UNREACHABLE_RETRY_SECONDS} s" in body["error"]["message"]


def test_the_api_answers_json_503_with_retry_after_while_the_database_is_down(key, request_log):
    api = Client(headers={"Authorization": f"Bearer {key}"})
    with database_out_of_reach():
        assert_unavailable_json(api.post("/api/v1/memories", {"content": "Written while it is down"},
                                         content_type="application/json"))
        assert_unavailable_json(api.delete(f"/api/v1/memories/0b0e7a9e-1111-4111-8111-111111111111/tags/{SECRET_TAG}"))
        assert_unavailable_json(Client().get("/api/v1/memories"))  # no key: the same answer, before any lookup
    # One line per request, by route and error type: no path value, no second line from Django.
    lines = [record.getMessage() for record in request_log.records if record.levelno >= logging.WARNING]
    assert lines == ["database unreachable (OperationalError): POST /api/v1/memories answered 503",
                     "database unreachable (OperationalError): DELETE /api/v1/memories/<memory_id>/tags/<tag> "
                     "answered 503",
                     "database unreachable (OperationalError): GET /api/v1/memories answered 503"]
    # Served again as soon as it is back.
    assert api.post("/api/v1/memories", {"content": "Written once it is back"},
                    content_type="application/json").status_code == 201


def test_the_langgraph_store_door_answers_the_same(key):
    store = Client(headers={"x-api-key": key})
    with database_out_of_reach():
        assert_unavailable_json(store.put("/api/v1/store/items", {"namespace": ["users", "alice"], "key": "diet",
                                                                  "value": {"text": "vegetarian"}},
                                          content_type="application/json"))


def test_the_console_shows_a_plain_503_page(db):
    with database_out_of_reach():
        response = Client().get("/console/")
    assert response.status_code == 503 and response["Retry-After"] == str(UNREACHABLE_RETRY_SECONDS)
    assert response["Content-Type"].startswith("text/html") and b"Service unavailable" in response.content


def test_a_connection_lost_as_the_console_saves_its_session_is_503_too(db):
    """Signing in saves the session twice: in the view, and again as the response leaves (the
    session middleware, after the view's own error handling)."""
    operator(factories.organization("Alpha Corp"), "operator",
             user=get_user_model().objects.create_user("dana", password="a long enough passphrase"))
    with backend_terminated_at('UPDATE "django_session"'):
        response = Client().post("/console/sign-in/", {"username": "dana", "password": "a long enough passphrase"})
    assert response.status_code == 503 and response["Retry-After"] == str(UNREACHABLE_RETRY_SECONDS)
    assert response["Content-Type"].startswith("text/html") and b"Service unavailable" in response.content
    signed_in = Client()
    assert signed_in.post("/console/sign-in/", {"username": "dana", "password": "a long enough passphrase"}
                          ).status_code == 302  # the next request, on a new connection, goes through


def test_a_connection_lost_at_the_api_key_lookup_is_503_too(key):
    api = Client(headers={"Authorization": f"Bearer {key}"})
    with backend_terminated_at("FROM api_keys"):
        response = api.post("/api/v1/memories", {"content": "Written as the connection dies"},
                            content_type="application/json")
    assert_unavailable_json(response)
    assert api.get("/api/v1/memories").status_code == 200  # a new connection serves the next request


def test_a_connection_lost_in_the_view_is_503_and_writes_nothing(key):
    api = Client(headers={"Authorization": f"Bearer {key}"})
    with backend_terminated_at("INSERT INTO"):
        response = api.post("/api/v1/memories", {"content": "Lost with its connection"},
                            content_type="application/json")
    assert_unavailable_json(response)
    assert api.get("/api/v1/memories").json()["results"] == []
