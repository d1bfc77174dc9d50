import pytest
from rest_framework.test import APIClient

from tenants import services
from tenants.context import tenant_context
from tenants.models import ApiKey

pytestmark = pytest.mark.django_db


def error(response):
    assert response["Content-Type"].startswith("application/json")
    return response.json()["error"]


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (None, "Authentication credentials were not provided."),
        ("Bearer", "Authorization header must be `Bearer <API key>`"),
        ("Token abc", "Authorization header must be `Bearer <API key>`"),
        ("Bearer mp_not-a-real-key", "unknown API key"),
    ],
)
def test_missing_malformed_or_unknown_keys_get_401_json(tenant_a, header, message):
    client = APIClient()
    if header:
        client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/v1/memories")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert error(response)["message"] == message


def test_a_revoked_key_gets_401(tenant_a, api_a):
    assert api_a.get("/api/v1/memories").status_code == 200
    with tenant_context(tenant_a.org.id):
        key = ApiKey.objects.get(key_hash=services.api_key_hash(api_a.key))
        services.api_key_revoke(api_key=key)
    response = api_a.get("/api/v1/memories")
    assert response.status_code == 401 and error(response)["message"] == "this API key has been revoked"


def test_a_disabled_agent_cannot_use_its_key(tenant_a, api_a):
    with tenant_context(tenant_a.org.id):
        type(tenant_a.agent).objects.filter(pk=tenant_a.agent.pk).update(is_active=False)
    assert api_a.get("/api/v1/memories").status_code == 401


def test_a_disabled_organisation_cannot_use_its_agents_keys(tenant_a, api_a):
    from tenants.context import service_account

    assert api_a.get("/api/v1/memories").status_code == 200
    with service_account():
        type(tenant_a.org).objects.filter(pk=tenant_a.org.pk).update(is_active=False)
    response = api_a.get("/api/v1/memories")
    assert response.status_code == 401
    assert error(response)["message"] == "the organisation or agent of this API key is disabled"


def test_a_key_resolves_to_its_own_organisation_and_agent(tenant_a, tenant_b, api_b):
    created = api_b.post("/api/v1/memories", {"content": "Beta's fact"}).json()["memory"]
    assert created["org_id"] == str(tenant_b.org.id) and created["agent_id"] == str(tenant_b.agent.id)


def test_use_is_recorded_as_last_used_at(tenant_a, api_a):
    api_a.get("/api/v1/memories")
    with tenant_context(tenant_a.org.id):
        assert ApiKey.objects.get(key_hash=services.api_key_hash(api_a.key)).last_used_at is not None


def test_knowing_a_hash_policy_shows_only_that_key(tenant_a, tenant_b):
    """The lookup policy opens exactly one row: the key whose hash was set."""
    from django.db import connection

    from memory_platform.database import set_local

    with connection.cursor() as cursor:
        set_local(cursor, {"app.api_key_hash": tenant_b.api_key.key_hash})
        cursor.execute("SELECT org_id FROM api_keys")
        rows = cursor.fetchall()
        cursor.execute("SELECT count(*) FROM memories")
        memories = cursor.fetchone()[0]
    assert rows == [(tenant_b.org.id,)]
    assert memories == 0


def test_a_key_names_its_organisation_and_is_looked_for_there_only(tenant_a, tenant_b, api_a):
    """A key ends with its organisation's id; the same secret ending with another
    organisation's id is unknown there (the lookup reads that organisation's keys only)."""
    assert services.api_key_org(api_a.key) == tenant_a.org.id
    with tenant_context(tenant_a.org.id):  # the displayed prefix is the secret's start, not the organisation
        stored = ApiKey.objects.get(key_hash=services.api_key_hash(api_a.key))
    assert stored.prefix == api_a.key[:services.DISPLAY_PREFIX_LENGTH]
    assert services._org_part(tenant_a.org.id) not in stored.prefix
    moved = api_a.key[:-services.ORG_PART_LENGTH] + services._org_part(tenant_b.org.id)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {moved}")
    assert client.get("/api/v1/memories").status_code == 401
    assert api_a.get("/api/v1/memories").status_code == 200


def test_a_key_issued_before_keys_named_their_organisation_still_works(tenant_a):
    """Keys of the earlier shape (no organisation at the end) are looked for among all keys."""
    old_key = services.API_KEY_PREFIX + "x" * services.SECRET_LENGTH
    with tenant_context(tenant_a.org.id):
        ApiKey.objects.create(org_id=tenant_a.org.id, agent=tenant_a.agent, name="old", prefix=old_key[:11],
                              key_hash=services.api_key_hash(old_key))
    assert services.api_key_org(old_key) is None
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {old_key}")
    assert client.get("/api/v1/memories").status_code == 200
