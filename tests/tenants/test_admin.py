"""Administrators create agents and issue and revoke keys in Django admin, across organisations."""

import re

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from tenants.context import service_account, tenant_context
from tenants.models import Agent, ApiKey

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client_logged_in(client):
    user = get_user_model().objects.create_superuser("root-admin", "admin@example.com", "a-long-password")
    client.force_login(user)
    return client


def test_admin_lists_agents_of_every_organisation(admin_client_logged_in, tenant_a, tenant_b):
    page = admin_client_logged_in.get("/admin/tenants/agent/").content.decode()
    assert tenant_a.agent.name in page and tenant_b.agent.name in page


def test_admin_creates_an_agent_and_issues_a_key_shown_once(admin_client_logged_in, tenant_a):
    response = admin_client_logged_in.post("/admin/tenants/agent/add/", {
        "org": str(tenant_a.org.id), "name": "admin-made", "description": "", "is_active": "on"})
    assert response.status_code == 302
    with tenant_context(tenant_a.org.id):
        agent = Agent.objects.get(name="admin-made")
    response = admin_client_logged_in.post("/admin/tenants/apikey/add/", {"agent": str(agent.id), "name": "from admin"},
                                           follow=True)
    key = re.search(r"\(shown only now\): (mp_[A-Za-z0-9_\-]+)", response.content.decode()).group(1)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    created = client.post("/api/v1/memories", {"content": "written with an admin-issued key"})
    assert created.status_code == 201 and created.json()["memory"]["agent_id"] == str(agent.id)

    with tenant_context(tenant_a.org.id):
        api_key = ApiKey.objects.get(agent=agent)
    assert key not in admin_client_logged_in.get(f"/admin/tenants/apikey/{api_key.id}/change/").content.decode()
    admin_client_logged_in.post("/admin/tenants/apikey/", {"action": "revoke", "_selected_action": [str(api_key.id)]})
    assert client.get("/api/v1/memories").status_code == 401


def test_a_non_staff_user_reaches_no_admin_page(client, tenant_a):
    user = get_user_model().objects.create_user("operator-only", password="a-long-password")
    client.force_login(user)
    response = client.get("/admin/tenants/agent/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


MEMORY_MODELS = ["memory", "memoryversion", "memoryrelationship", "memorytag", "artifact", "memoryartifact",
                 "retrievalevent", "provenance", "duplicatecandidate", "idempotencyrecord", "memoryusage",
                 "memoryembedding"]


@pytest.mark.parametrize("model", MEMORY_MODELS)
def test_admin_shows_every_memory_table_of_every_organisation_read_only(admin_client_logged_in, tenant_a,
                                                                        tenant_b, model):
    listing = admin_client_logged_in.get(f"/admin/memories/{model}/")
    assert listing.status_code == 200
    row = {"memory": tenant_b.memory, "memoryversion": tenant_b.version, "memoryrelationship": tenant_b.relationship,
           "memorytag": tenant_b.tag, "artifact": tenant_b.artifact, "memoryartifact": tenant_b.memory_artifact,
           "retrievalevent": tenant_b.retrieval_event, "provenance": tenant_b.provenance,
           "duplicatecandidate": tenant_b.duplicate_candidate, "idempotencyrecord": tenant_b.idempotency_record,
           "memoryusage": tenant_b.usage, "memoryembedding": tenant_b.memory_embedding}[model]
    with service_account():
        every_row = type(row).objects.count()
    assert listing.context["cl"].result_count == every_row  # both organisations' rows
    assert {tenant_a.org.id, tenant_b.org.id} <= {obj.org_id for obj in listing.context["cl"].result_list}
    detail = admin_client_logged_in.get(f"/admin/memories/{model}/{row.pk}/change/")
    assert detail.status_code == 200 and b'name="_save"' not in detail.content
    assert admin_client_logged_in.get(f"/admin/memories/{model}/add/").status_code == 403
    assert admin_client_logged_in.post(f"/admin/memories/{model}/{row.pk}/delete/", {"post": "yes"}).status_code == 403


def test_admin_search_finds_memories_by_content(admin_client_logged_in, tenant_a, tenant_b):
    page = admin_client_logged_in.get("/admin/memories/memory/", {"q": "Beta Corp"})
    assert page.context["cl"].result_count == 2
    assert str(tenant_b.memory.id).encode() in page.content and str(tenant_a.memory.id).encode() not in page.content


def test_admin_lists_the_deployments_embedding_models_read_only(admin_client_logged_in):
    listing = admin_client_logged_in.get("/admin/memories/embeddingmodel/")
    assert listing.status_code == 200 and "all-MiniLM-L6-v2" in listing.content.decode()
    assert admin_client_logged_in.get("/admin/memories/embeddingmodel/add/").status_code == 403
