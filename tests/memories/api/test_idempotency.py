import pytest

from memories.models import Memory
from tenants.context import tenant_context
from tests import factories

pytestmark = pytest.mark.django_db


def count(org, content):
    with tenant_context(org.id):
        return Memory.objects.filter(content=content).count()


def test_a_retried_post_returns_the_first_response_and_creates_one_row(tenant_a, api_a):
    body = {"content": "Retried write", "tags": ["retry"]}
    first = api_a.post("/api/v1/memories", body, HTTP_IDEMPOTENCY_KEY="req-1")
    second = api_a.post("/api/v1/memories", body, HTTP_IDEMPOTENCY_KEY="req-1")
    assert first.status_code == second.status_code == 201
    assert second.json() == first.json() and second["Idempotent-Replayed"] == "true"
    assert count(tenant_a.org, "Retried write") == 1


def test_the_same_key_with_another_body_is_422(tenant_a, api_a):
    api_a.post("/api/v1/memories", {"content": "One thing"}, HTTP_IDEMPOTENCY_KEY="req-2")
    response = api_a.post("/api/v1/memories", {"content": "Another thing"}, HTTP_IDEMPOTENCY_KEY="req-2")
    assert response.status_code == 422 and response.json()["error"]["code"] == "idempotency_key_reused"
    assert count(tenant_a.org, "Another thing") == 0


def test_keys_are_scoped_per_agent(tenant_a, api_a, api_client_for):
    other_agent = factories.agent(org=tenant_a.org, name="second")
    other = api_client_for(other_agent)
    a = api_a.post("/api/v1/memories", {"content": "Agent one's fact"}, HTTP_IDEMPOTENCY_KEY="shared")
    b = other.post("/api/v1/memories", {"content": "Agent two's fact"}, HTTP_IDEMPOTENCY_KEY="shared")
    assert a.status_code == b.status_code == 201
    assert a.json()["memory"]["id"] != b.json()["memory"]["id"]


def test_a_failed_request_does_not_burn_its_key(tenant_a, api_a):
    bad = api_a.post("/api/v1/memories", {"content": ""}, HTTP_IDEMPOTENCY_KEY="req-3")
    assert bad.status_code == 400
    good = api_a.post("/api/v1/memories", {"content": ""}, HTTP_IDEMPOTENCY_KEY="req-3")
    assert good.status_code == 400  # evaluated again, not replayed as a success
    assert "Idempotent-Replayed" not in good


def test_an_overlong_key_is_refused(api_a):
    response = api_a.post("/api/v1/memories", {"content": "x"}, HTTP_IDEMPOTENCY_KEY="k" * 256)
    assert response.status_code == 400 and "Idempotency-Key" in response.json()["error"]["fields"]
