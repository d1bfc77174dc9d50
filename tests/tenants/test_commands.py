import io

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from tenants.context import tenant_context
from tenants.models import Agent, ApiKey

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_create_an_organisation_an_agent_and_use_the_printed_key():
    assert "slug acme" in run("create_organization", "Acme Inc", "--slug", "acme")
    output = run("create_agent", "acme", "support-bot", "--description", "answers tickets")
    key = output.strip().splitlines()[-1].split(": ")[-1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert client.post("/api/v1/memories", {"content": "Created from the command line"}).status_code == 201


def test_issue_and_revoke_a_key(tenant_a):
    key = run("issue_api_key", tenant_a.org.slug, tenant_a.agent.name, "--name", "ci").strip().splitlines()[-1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert client.get("/api/v1/memories").status_code == 200
    assert "revoked" in run("revoke_api_key", tenant_a.org.slug, key[:11])
    assert client.get("/api/v1/memories").status_code == 401
    with tenant_context(tenant_a.org.id):
        stored = ApiKey.objects.get(prefix=key[:11])
    assert stored.key_hash != key and key not in stored.prefix + stored.key_hash


def test_commands_say_what_is_missing(tenant_a):
    with pytest.raises(CommandError, match="no organisation"):
        run("create_agent", "nowhere", "bot")
    with pytest.raises(CommandError, match="no agent"):
        run("issue_api_key", tenant_a.org.slug, "ghost")
    with pytest.raises(CommandError, match="already has an agent"):
        run("create_agent", tenant_a.org.slug, tenant_a.agent.name)
    with tenant_context(tenant_a.org.id):
        assert Agent.objects.filter(name=tenant_a.agent.name).count() == 1


def test_add_member_creates_the_user_once_and_sets_the_role(client, tenant_a):
    output = run("add_member", tenant_a.org.slug, "alice", "--role", "viewer")
    password = output.strip().splitlines()[-1].split(": ")[-1]
    assert f"alice is viewer in {tenant_a.org.slug}" in output
    assert client.login(username="alice", password=password)
    assert client.get(f"/console/{tenant_a.org.slug}/").status_code == 200
    assert client.get(f"/console/{tenant_a.org.slug}/agents/").status_code == 403
    again = run("add_member", tenant_a.org.slug, "alice", "--role", "admin")
    assert "password" not in again and client.get(f"/console/{tenant_a.org.slug}/agents/").status_code == 200


def test_bootstrap_demo_prints_a_console_password_that_signs_in(client):
    output = run("bootstrap_demo")
    password = output.split("user demo, password ")[1].split()[0]
    assert client.login(username="demo", password=password)
    assert client.get("/console/demo/agents/").status_code == 200


def test_bootstrap_demo_prints_the_console_where_it_is_served(monkeypatch):
    """`manage.py run --bind` passes its URL; alone, the command reads MEMORY_PLATFORM_BIND."""
    assert "  console       http://127.0.0.1:9123/console/\n" in run("bootstrap_demo", "--url", "http://127.0.0.1:9123")
    monkeypatch.setenv("MEMORY_PLATFORM_BIND", "0.0.0.0:8765")
    output = run("bootstrap_demo")
    assert "  console       http://127.0.0.1:8765/console/\n" in output and ":8000" not in output


def _demo_key(output: str) -> str:
    return output.split("API key       ")[1].split()[0]


def test_bootstrap_demo_reuses_its_key_and_revokes_earlier_demo_keys(tmp_path, monkeypatch):
    """The key is kept in the data folder (this user only) and printed again while active; a
    key revoked meanwhile is replaced, and only one demo key is valid at a time."""
    import stat

    from tenants.models import Organization

    monkeypatch.setenv("MEMORY_PLATFORM_DATA_DIR", str(tmp_path))
    first = _demo_key(run("bootstrap_demo"))
    assert stat.S_IMODE((tmp_path / "demo_api_key").stat().st_mode) == 0o600
    again = run("bootstrap_demo")
    assert _demo_key(again) == first and "the same as last run" in again
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {first}")
    assert client.get("/api/v1/memories").status_code == 200

    org = Organization.objects.get(slug="demo")
    assert "revoked" in run("revoke_api_key", "demo", first[:11])
    replaced = run("bootstrap_demo")
    second = _demo_key(replaced)
    assert second != first and "earlier demo keys revoked" in replaced
    # An older demo key still active (made by a version that issued one per run) is revoked.
    with tenant_context(org.id):
        from tenants import services

        _, stray = services.api_key_issue(agent=Agent.objects.get(name="demo-agent"), name="demo key")
    (tmp_path / "demo_api_key").unlink()  # a new data folder's first run, against the same database
    third = _demo_key(run("bootstrap_demo"))
    for key, status in ((first, 401), (second, 401), (stray, 401), (third, 200)):
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        assert client.get("/api/v1/memories").status_code == status, key[:11]
    with tenant_context(org.id):
        assert ApiKey.objects.filter(name="demo key", revoked_at__isnull=True).count() == 1


def test_bootstrap_demo_prints_an_administrator_that_signs_into_the_admin(client, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMORY_PLATFORM_DATA_DIR", str(tmp_path))
    output = run("bootstrap_demo", "--url", "http://127.0.0.1:9123")
    assert "  admin         http://127.0.0.1:9123/admin/\n" in output
    password = output.split("user admin, password ")[1].split()[0]
    response = client.post("/admin/login/?next=/admin/", {"username": "admin", "password": password})
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200
    # The same password on the next run, while it is the password...
    assert f"user admin, password {password} " in run("bootstrap_demo")
    # ...and not printed once changed (the command never resets it).
    from django.contrib.auth import get_user_model

    admin = get_user_model().objects.get(username="admin")
    admin.set_password("changed-by-its-owner-" + "x" * 8)
    admin.save()
    after = run("bootstrap_demo")
    assert password not in after and "manage.py changepassword admin" in after
