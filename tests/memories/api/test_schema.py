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
        "type": "http", "scheme": "bearer", "description": "An agent's API key: `Authorization: Bearer mp_...`"}
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
