"""The OpenAPI schema describes every endpoint, with request and response examples."""

import pytest
import yaml
from django.urls import get_resolver

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(client):
    response = client.get("/api/schema/")
    assert response.status_code == 200
    return yaml.safe_load(response.content)


def api_routes() -> set[str]:
    routes = set()
    for pattern in get_resolver().url_patterns:
        if str(pattern.pattern) == "api/v1/":
            for inner in pattern.url_patterns:
                routes.add("/api/v1/" + str(inner.pattern).replace("<uuid:", "{").replace("<str:", "{").replace(">", "}"))
    return routes


def test_every_api_route_is_in_the_schema(schema):
    assert api_routes() == set(schema["paths"])


def test_every_operation_has_request_and_response_examples_and_the_api_key_scheme(schema):
    assert schema["components"]["securitySchemes"]["ApiKey"] == {
        "type": "http", "scheme": "bearer",
        "description": "An agent's API key: `Authorization: Bearer mp_...` (or `x-api-key: mp_...`, as LangGraph's "
                       "SDK sends it)"}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            where = f"{method.upper()} {path}"
            assert operation["security"] == [{"ApiKey": []}], where
            if "requestBody" in operation:
                assert any("examples" in content for content in operation["requestBody"]["content"].values()), where
            success = [code for code in operation["responses"] if code.startswith("2")]
            assert success, where
            if success != ["204"]:
                assert any("examples" in content for code in success
                           for content in operation["responses"][code].get("content", {}).values()), where
            assert "401" in operation["responses"], where


def test_every_operation_documents_the_errors_it_can_answer(schema):
    """What the API really returns, so generated clients and schema checks (test_schema_fuzz)
    know every status: bodies can be too large or not JSON, If-Match can be stale or missing,
    an Idempotency-Key can be reused."""
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            where, codes = f"{method.upper()} {path}", set(operation["responses"])
            headers = {p["name"] for p in operation.get("parameters", []) if p["in"] == "header"}
            assert {"400", "401", "404"} <= codes, where
            if "requestBody" in operation:
                assert {"413", "415"} <= codes, where
            if "If-Match" in headers:
                assert {"412", "428"} <= codes, where
            if "Idempotency-Key" in headers:
                assert "422" in codes, where
    assert {"200", "201"} <= set(schema["paths"]["/api/v1/memories"]["post"]["responses"])
    assert {"204", "422"} <= set(schema["paths"]["/api/v1/store/items"]["put"]["responses"])


def test_lists_are_documented_as_the_objects_they_are(schema):
    def body(path, method="get"):
        content = schema["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"]
        name = content["$ref"].rsplit("/", 1)[-1]
        return schema["components"]["schemas"][name]

    for path in ("/api/v1/memories/{memory_id}/history", "/api/v1/memories/{memory_id}/relationships", "/api/v1/hot"):
        assert body(path)["properties"]["results"]["type"] == "array", path
    for path in ("/api/v1/memories", "/api/v1/retrieval-events"):
        assert {"next", "previous", "results"} <= set(body(path)["properties"]), path


def component(schema, reference: dict) -> dict:
    return schema["components"]["schemas"][reference["$ref"].rsplit("/", 1)[-1]]


def test_a_tags_answer_may_be_empty_though_a_request_adds_at_least_one(schema):
    tags = schema["paths"]["/api/v1/memories/{memory_id}/tags"]
    request = component(schema, tags["post"]["requestBody"]["content"]["application/json"]["schema"])
    assert request["properties"]["tags"]["minItems"] == 1
    answers = [tags["get"], tags["post"], schema["paths"]["/api/v1/memories/{memory_id}/tags/{tag}"]["delete"]]
    for operation in answers:
        answer = component(schema, operation["responses"]["200"]["content"]["application/json"]["schema"])
        assert "minItems" not in answer["properties"]["tags"]  # removing the last tag answers {"tags": []}


def test_a_namespace_is_documented_as_labels_or_them_joined_with_a_slash_at_writes_and_filters(schema):
    shapes = [{"type": "array", "items": {"type": "string", "minLength": 1}},
              {"type": "string", "description": 'The labels joined with "/", e.g. "users/alice".'}]
    for name in ("MemoryCreateRequest", "SessionCreateRequest", "SearchFiltersRequest", "EraseRequestRequest"):
        assert schema["components"]["schemas"][name]["properties"]["namespace"]["oneOf"] == shapes, name
    listed = {p["name"]: p for p in schema["paths"]["/api/v1/memories"]["get"]["parameters"]}
    assert listed["namespace"]["schema"]["oneOf"] == shapes
    # LangGraph's store keeps its own shape: labels only.
    assert schema["components"]["schemas"]["PutItemRequest"]["properties"]["namespace"]["type"] == "array"


def test_the_store_s_delete_documents_the_body_langgraph_sends_on_delete(schema):
    """delete_item sends {namespace, key} as JSON on DELETE; generated clients (clients/typescript)
    send only what the schema documents."""
    body = schema["paths"]["/api/v1/store/items"]["delete"]["requestBody"]
    assert body["required"] is True
    request = component(schema, body["content"]["application/json"]["schema"])
    assert set(request["required"]) == {"namespace", "key"}
    assert {"413", "415", "422"} <= set(schema["paths"]["/api/v1/store/items"]["delete"]["responses"])
