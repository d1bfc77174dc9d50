"""The API boundary: JSON errors for everything, 415 for non-JSON, 413 for oversized bodies."""

import pytest

from memories.models import Memory
from tenants.context import tenant_context

pytestmark = pytest.mark.django_db


def test_non_json_writes_get_415(tenant_a, api_a):
    for content_type, body in (("application/x-www-form-urlencoded", "content=hello"),
                               ("text/plain", "hello"), ("multipart/form-data; boundary=x", "--x--")):
        response = api_a.generic("POST", "/api/v1/memories", body, content_type=content_type)
        assert response.status_code == 415, content_type
        assert response.json()["error"]["code"] == "unsupported_media_type"


def test_malformed_json_is_a_400_without_a_stack_trace(api_a):
    response = api_a.generic("POST", "/api/v1/memories", '{"content": "unterminated', content_type="application/json")
    assert response.status_code == 400
    problem = response.json()["error"]
    assert problem["code"] == "parse_error" and "Traceback" not in response.content.decode()


def test_a_json_array_where_an_object_belongs_is_a_400(api_a):
    response = api_a.post("/api/v1/memories", ["content"])
    assert response.status_code == 400 and response.json()["error"]["fields"] == {
        "non_field_errors": ["expected a JSON object"]}


def test_bodies_over_the_limit_get_413_and_change_nothing(tenant_a, api_a, settings):
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "MAX_REQUEST_BYTES": 1000}
    response = api_a.post("/api/v1/memories", {"content": "x" * 2000})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    with tenant_context(tenant_a.org.id):
        assert not Memory.objects.filter(content="x" * 2000).exists()


def test_unknown_api_paths_and_methods_answer_json(api_a):
    missing = api_a.get("/api/v1/no-such-thing")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    wrong = api_a.put("/api/v1/memories", {})
    assert wrong.status_code == 405 and wrong.json()["error"]["code"] == "method_not_allowed"
    not_a_uuid = api_a.get("/api/v1/memories/123")
    assert not_a_uuid.status_code == 404 and not_a_uuid.json()["error"]["code"] == "not_found"


def test_the_schema_and_docs_are_served(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/api/v1/memories" in paths and "/api/v1/store/items" in paths and "/api/v1/store/namespaces" in paths
    docs = client.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()


def test_djangos_own_refusals_of_a_request_are_client_errors_not_500s():
    """Anything under /api/ that reads request.body past DATA_UPLOAD_MAX_MEMORY_SIZE, or that
    Django finds suspicious, is the client's 413 or 400, not a logged server error."""
    from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
    from django.test import RequestFactory

    from memories.api.errors import JsonErrorMiddleware

    middleware = JsonErrorMiddleware(lambda request: None)
    request = RequestFactory().post("/api/v1/memories")
    too_big = middleware.process_exception(request, RequestDataTooBig("too big"))
    assert too_big.status_code == 413 and b'"payload_too_large"' in too_big.content
    suspicious = middleware.process_exception(request, SuspiciousOperation("odd"))
    assert suspicious.status_code == 400 and b'"bad_request"' in suspicious.content
