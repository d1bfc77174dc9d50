"""Schema-driven fuzzing (schemathesis): requests generated from the OpenAPI schema, valid and
invalid, sent with a valid API key. No answer may be a server error, and every answer must be
one the schema documents: its status code, its content type, its shape.

Bounded for CI: a fixed number of examples per operation, derandomized (the same cases on
every run), no example database. Path ids point at a real memory, relationship, retrieval
event and entity of the caller's organisation, so the operations do more than answer 404.
"""

import json

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, Phase, settings
from schemathesis import checks

EXAMPLES_PER_OPERATION = 120

CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
]


def served_schema() -> dict:
    """What GET /api/schema/ serves, built by the same generator and renderer; built here, at
    collection, where neither a request nor the database is available yet (schemathesis's
    lazy loader, which would allow them, does not run on pytest 9)."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(document))


schema = schemathesis.openapi.from_dict(served_schema())
schema.app = get_wsgi_application()  # cases go to the real WSGI application, in this process
schema.location = "/api/schema/"


@pytest.fixture(autouse=True)
def connections_kept_across_requests():
    """Requests run inside this test's database transaction; like Django's test client, keep
    the end of a request from closing the connection under it."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def real_ids(tenant) -> dict:
    return {"memory_id": str(tenant.memory.pk), "relationship_id": str(tenant.relationship.pk),
            "event_id": str(tenant.retrieval_event.pk), "entity_id": str(tenant.entity.pk)}


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, derandomize=True, database=None, deadline=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
def test_the_api_answers_every_generated_request_as_its_schema_says(case, tenant_a, api_a):
    if case.path_parameters:
        for name, value in real_ids(tenant_a).items():
            if name in case.path_parameters:
                case.path_parameters[name] = value
    response = case.call(headers={"Authorization": f"Bearer {api_a.key}"})
    case.validate_response(response, checks=CHECKS)
