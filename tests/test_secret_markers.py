"""A secret marker sent through any door that takes free text (the REST API's sessions and
memories, the console's agents, API keys, tag and bulk-tag forms, a memory's edit form) is
kept nowhere and answered nowhere, and no door answers 500: free text has it redacted,
identifiers holding it are refused by name (memories.intake.cleaning). One marker of each kind the
doors must know: an AWS access key id, a GitHub token, a PEM private key block.
tests/memories/api/test_redaction_channels.py follows the REST API's other channels."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from memories.models import Memory
from tenants.context import tenant_context
from tenants.models import Agent, ApiKey, Membership
from tests.markers import committing
from tests.memories.api.test_redaction_channels import rows_holding

# Made up, in the real shapes; each with the part that must never be kept or shown.
AWS_KEY = "AKIA" + "Q7HLM2RT9VB4NC8K"
GITHUB_TOKEN = "ghp_" + "Zq4Lm8Rt2Vb6Nc0Kd3Fh7Jw1Ps5Ty9Ua4XeW"
PRIVATE_KEY_BODY = "MIIEowIBAAKCAQEA3Tz2mNwp8QkL5vXr7bq9"
PRIVATE_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{PRIVATE_KEY_BODY}\nQ2VzdGluZ0tleU1hdGVyaWFs\n-----END RSA PRIVATE KEY-----"
MARKERS = {"aws_key": (AWS_KEY, AWS_KEY), "github_token": (GITHUB_TOKEN, GITHUB_TOKEN),
           "private_key": (PRIVATE_KEY, PRIVATE_KEY_BODY)}


class Doors:
    """Every answer of the test, kept to check none was a 500 or shows the secret."""

    def __init__(self, needle: str):
        self.needle, self.answers = needle, []

    def __call__(self, response, *statuses):
        self.answers.append(response)
        body = response.content.decode()
        assert response.status_code < 500, body
        assert self.needle not in body, (response.status_code, body)
        assert response.status_code in statuses, (response.status_code, body)
        return response

    def refused(self, response, field: str, status: int = 400):
        fields = self(response, status).json()["error"]["fields"]
        assert list(fields) == [field], fields
        return fields

    def form_refused(self, response, status: int = 422):
        """A console form shown again with its error (a secret, or too long a text), and the
        text the operator typed shown redacted."""
        body = self(response, status).content.decode()
        assert 'class="error" role="alert"' in body, body
        return body


def admin_console(org) -> Client:
    user = get_user_model().objects.create_user("secret-marker-admin", password="a-long-password")
    with tenant_context(org.id):
        Membership.objects.create(org=org, user=user, role=Membership.Role.ADMIN)
    client = Client()
    client.force_login(user)
    client.base = f"/console/{org.slug}/"
    return client


@committing
@pytest.mark.parametrize("kind", MARKERS)
def test_a_secret_marker_is_kept_and_answered_nowhere_and_no_door_answers_500(tenant_a, api_a, kind):
    secret, needle = MARKERS[kind]
    door, org = Doors(needle), tenant_a.org
    htmx = {"HTTP_HX_REQUEST": "true"}

    # Sessions: the external_id identifies the conversation (refused), metadata is free text (redacted).
    door.refused(api_a.post("/api/v1/sessions", {"external_id": f"thread-{secret}"}), "external_id")
    door.refused(api_a.post("/api/v1/sessions", {"namespace": ["users", secret]}), "namespace")
    session = door(api_a.post("/api/v1/sessions", {"external_id": "thread-7", "namespace": "users/alice",
                                                   "metadata": {"note": f"uses {secret}", secret: "as a key"}}),
                   201).json()
    assert f"[REDACTED:{kind}]" in str(session["metadata"])
    door(api_a.get(f"/api/v1/sessions/{session['id']}"), 200)

    # A memory's fields: free text redacted (and recorded in its provenance), identifiers refused.
    memory = door(api_a.post("/api/v1/memories", {
        "content": f"The deploy uses {secret}", "metadata": {"note": secret}, "provenance": {"quote": secret},
        "entities": [{"name": "Deploy bot", "aliases": [f"bot {secret}"]}], "session_id": session["id"],
        "namespace": ["users", "alice"]}), 201).json()["memory"]
    assert memory["provenance"]["redaction"]["kinds"][kind] >= 1
    for field, value in (("tags", [secret]), ("key", f"k-{secret}"), ("namespace", f"users/{secret}"),
                         ("sensitivity", f"s-{secret}")):
        door.refused(api_a.post("/api/v1/memories", {"content": "Tagged or keyed", field: value}),
                     "tags[0]" if field == "tags" else field)
    door.refused(api_a.post(f"/api/v1/memories/{memory['id']}/tags", {"tags": [secret]}), "tags[0]")
    door(api_a.patch(f"/api/v1/memories/{memory['id']}", {"content": f"Rotated {secret}"}, HTTP_IF_MATCH='"1"'), 200)
    door(api_a.get(f"/api/v1/memories/{memory['id']}/history"), 200)

    # The console: agents and their keys.
    console = admin_console(org)
    door.form_refused(console.post(console.base + "agents/", {"name": f"bot {secret}", "description": secret}))
    door(console.post(console.base + "agents/", {"name": "deploy-helper", "description": f"uses {secret}"}), 302)
    with tenant_context(org.id):
        helper = Agent.objects.get(org=org, name="deploy-helper")
    assert helper.description == f"uses [REDACTED:{kind}]"
    keys = console.base + f"agents/{helper.pk}/keys"
    door(console.post(keys, {"name": f"key {secret}"}, **htmx, HTTP_HX_TARGET="keys"), 200)
    door.form_refused(console.post(keys, {"name": "limited", "namespaces": f"users/{secret}"}))
    with tenant_context(org.id):
        assert list(ApiKey.objects.filter(agent=helper).values_list("name", flat=True)) == [f"key [REDACTED:{kind}]"]
    door(console.get(console.base + "agents/"), 200)
    door(console.get(console.base + f"agents/{helper.pk}/"), 200)

    # The console: a memory's tags (the form and the bulk action) and its edit form.
    shown = console.base + f"memories/{memory['id']}/"
    for headers in ({}, {**htmx, "HTTP_HX_TARGET": "tags-and-history"}):
        door.form_refused(console.post(shown + "tags", {"tags": f"fine {secret}"}, **headers))
    door(console.post(console.base + "memories/bulk", {"action": "tag", "ids": [memory["id"]], "tags": secret}), 302)
    door(console.post(console.base + "memories/bulk", {"action": "tag", "ids": [memory["id"]], "tags": secret},
                      **htmx), 422)
    door(console.post(shown + "tags/remove", {"tag": secret}, **htmx), 422)
    current = door(api_a.get(f"/api/v1/memories/{memory['id']}"), 200).json()
    edit = {"content": current["content"], "category": "factual", "memory_type": "semantic", "confidence": "0.8",
            "importance": "0.5", "version": current["version"]}
    door.form_refused(console.post(shown + "edit", {**edit, "sensitivity": f"s-{secret}"}))
    door(console.post(shown + "edit", {**edit, "sensitivity": "internal", "reason": f"rotated {secret}"}), 302)
    door(console.post(shown + "archive", {"reason": f"leaked {secret}"}), 302)
    door(console.get(shown), 200)
    door(console.get(console.base + "memories/", {"tags": "drinks"}), 200)

    assert rows_holding(needle) == {}
    assert rows_holding(f"[REDACTED:{kind}]")  # the free text was really kept, redacted
    with tenant_context(org.id):
        assert Memory.objects.get(pk=memory["id"]).status == "archived"
