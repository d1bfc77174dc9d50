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
