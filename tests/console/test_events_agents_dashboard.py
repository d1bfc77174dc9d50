"""Retrieval events and replay, agents and keys, and the dashboard."""

import re

import pytest
from rest_framework.test import APIClient

from memories.models import RetrievalEvent
from memories.writes import change, kernel
from tenants.context import tenant_context
from tenants.models import Agent, ApiKey
from tests import factories
from tests.console.conftest import remember

pytestmark = pytest.mark.django_db


def test_an_event_shows_what_the_agent_was_shown_in_order(console_as, tenant_a, api_a):
    remember(tenant_a, "The user's dog is called Rex")
    remember(tenant_a, "The user walks the dog at seven")
    api_a.post("/api/v1/search", {"query": "what is the dog's name?", "limit": 2})
    client = console_as(tenant_a.org, "viewer")
    listing = client.get(client.base + "events/", {"kind": "search"}).content.decode()
    event_id = re.search(r'events/([0-9a-f-]{36})/">', listing).group(1)
    assert "what is the dog&#x27;s name?" in listing and tenant_a.agent.name in listing
    detail = client.get(client.base + f"events/{event_id}/").content.decode()
    shown = re.findall(r'<li value="(\d)">\s*<span class="score">([\d.]+)</span>\s*<a href="[^"]+/memories/([0-9a-f-]+)/"', detail)
    with tenant_context(tenant_a.org.id):
        event = RetrievalEvent.objects.get(pk=event_id)
    assert [memory_id for _, _, memory_id in shown] == [str(m) for m in event.returned_memory_ids]
    assert [float(score) for _, score, _ in shown] == [round(s, 4) for s in event.returned_scores]
    assert [rank for rank, _, _ in shown] == ["1", "2"] and "vector #" in detail


def test_replay_reports_what_changed(console_as, tenant_a, api_a, htmx):
    first = remember(tenant_a, "The user's dog is called Rex")
    api_a.post("/api/v1/search", {"query": "what is the dog's name?", "limit": 1})
    with tenant_context(tenant_a.org.id):
        change.memory_delete(org_id=tenant_a.org.id, memory_id=first.pk, actor=kernel.Actor())
    client = console_as(tenant_a.org, "operator")
    event_id = re.search(r'events/([0-9a-f-]{36})/">', client.get(client.base + "events/").content.decode()).group(1)
    response = client.post(client.base + f"events/{event_id}/replay", **htmx("replay"))
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="replay"') and "gone from #1 (deleted)" in body
    assert client.post(client.base + f"events/{event_id}/replay").status_code == 200  # without JavaScript too


def test_a_search_asked_with_secrets_is_not_replayed_and_the_operator_is_told_why(console_as, tenant_a, api_a, htmx):
    asked = api_a.post("/api/v1/search", {"query": "deploy with password=hunter2-hunter2"}).json()
    client = console_as(tenant_a.org, "operator")
    response = client.post(client.base + f"events/{asked['retrieval_event_id']}/replay", **htmx("replay"))
    assert response.status_code == 409 and "cannot be run again" in response.content.decode()
    detail = client.get(client.base + f"events/{asked['retrieval_event_id']}/").content.decode()
    assert "hunter2" not in detail and "[REDACTED:" in detail


def test_events_filter_by_agent(console_as, tenant_a, api_a, api_client_for):
    other = factories.agent(org=tenant_a.org, name="other-agent")
    api_client_for(other).post("/api/v1/search", {"query": "from the other agent"})
    api_a.post("/api/v1/search", {"query": "from the first agent"})
    client = console_as(tenant_a.org, "viewer")
    page = client.get(client.base + "events/", {"agent": str(other.pk)}).content.decode()
    assert "from the other agent" in page and "from the first agent" not in page


def test_admins_create_agents_and_issue_and_revoke_keys(console_as, tenant_a, htmx):
    client = console_as(tenant_a.org, "admin")
    created = client.post(client.base + "agents/", {"name": "support-bot", "description": "answers tickets"})
    assert created.status_code == 302
    with tenant_context(tenant_a.org.id):
        agent = Agent.objects.get(name="support-bot")
    duplicate = client.post(client.base + "agents/", {"name": "support-bot"})
    assert duplicate.status_code == 422 and "already has an agent with that name" in duplicate.content.decode()

    issued = client.post(client.base + f"agents/{agent.pk}/keys", {"name": "prod"}, **htmx("keys"))
    key = re.search(r'value="(mp_[A-Za-z0-9_\-]+)"', issued.content.decode()).group(1)
    assert "shown only this once" in issued.content.decode()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert api.post("/api/v1/memories", {"content": "hello from the console's key", "category": "factual"}).status_code == 201
    with tenant_context(tenant_a.org.id):
        api_key = ApiKey.objects.get(agent=agent)
    detail = client.get(client.base + f"agents/{agent.pk}/").content.decode()
    assert key not in detail and f"{api_key.prefix}…" in detail  # the prefix only, from now on
    revoked = client.post(client.base + f"agents/{agent.pk}/keys/{api_key.pk}/revoke", **htmx("keys"))
    assert "revoked" in revoked.content.decode()
    assert api.get("/api/v1/memories").status_code == 401


def test_admins_issue_a_key_limited_to_namespaces_and_reads(console_as, tenant_a, htmx):
    client = console_as(tenant_a.org, "admin")
    agent = tenant_a.agent
    refused = client.post(client.base + f"agents/{agent.pk}/keys", {"name": "bad", "namespaces": "users//x"},
                          **htmx("keys"))
    assert refused.status_code == 422 and "is not a namespace" in refused.content.decode()
    issued = client.post(client.base + f"agents/{agent.pk}/keys",
                         {"name": "alice only", "namespaces": "users/alice, /users/carol/", "read_only": "on"},
                         **htmx("keys"))
    key = re.search(r'value="(mp_[A-Za-z0-9_\-]+)"', issued.content.decode()).group(1)
    assert "users/alice, users/carol; read-only" in issued.content.decode()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert api.post("/api/v1/memories", {"content": "x", "namespace": ["users", "alice"]}).status_code == 403
    assert api.get("/api/v1/memories").json()["results"] == []  # the tenant's memories are elsewhere


def test_the_dashboard_counts_and_charts(console_as, tenant_a):
    remember(tenant_a, "waiting one", status="pending_review", category="preference")
    client = console_as(tenant_a.org, "viewer")
    page = client.get(client.base).content.decode()
    assert re.search(r"<strong>3</strong> memories", page)
    assert re.search(r"<strong>1</strong> waiting for review", page)
    assert re.search(r"<strong>1</strong> open conflicts", page)
    assert re.search(r'status=pending_review">pending_review</a></th><td>1</td>', page)
    assert re.search(r'category=preference">preference</a></th><td>1</td>', page)
    assert f"<th>{tenant_a.agent.name}</th><td>3</td>" in page
    chart = page[page.index('<figure class="chart"'):page.index("</figure>")]
    assert "<svg" in chart and "Memories added per day, last 30 days" in chart and "<script" not in chart
    # Nothing the Content-Security-Policy (style-src 'self') would refuse: presentation attributes only.
    assert "<style" not in chart and ' style="' not in chart and 'fill="#3465a4"' in chart
    assert re.search(r"<th>embeddings</th><td>\d+</td>", page)


def test_the_dashboard_shows_the_lifecycle_jobs_and_what_is_fading(console_as, tenant_a, tenant_b):
    from datetime import timedelta

    from django.utils import timezone

    from memories.lifecycle import decay
    from memories.models import LifecycleRun, Memory

    fading = remember(tenant_a, "The user's gym is on Elm Street")
    other = remember(tenant_b, "Organisation B's own fading fact")
    for memory in (fading, other):
        with tenant_context(memory.org_id):
            Memory.objects.filter(pk=memory.pk).update(created_at=timezone.now() - timedelta(days=45))
    with tenant_context(tenant_a.org.id):
        LifecycleRun.objects.all().delete()
    decay.decay_organisation(org_id=tenant_a.org.id)
    decay.decay_organisation(org_id=tenant_b.org.id)

    client = console_as(tenant_a.org, "viewer")
    page = client.get(client.base).content.decode()
    lifecycle = page[page.index('id="lifecycle"'):page.index("Job queues")]
    decay_row = lifecycle[lifecycle.index("<th>Decay"):lifecycle.index("Expiry sweep")]
    assert "1 in 24 h" in decay_row and "archived 0" in decay_row and "fading 1" in decay_row
    expiry_row = lifecycle[lifecycle.index("Expiry sweep"):lifecycle.index("Session consolidation")]
    assert "never" in expiry_row
    assert re.search(r"<strong>\d+</strong> strong, <strong>1</strong> fading", lifecycle)
    weakest = lifecycle[lifecycle.index("Weakest"):]
    assert f"memories/{fading.pk}/" in weakest and "gym is on Elm" in weakest and "Organisation B" not in weakest


def test_the_events_page_by_key_while_searches_are_recorded(console_as, tenant_a):
    """Events recorded between two pages (newest first) skip and repeat none of the others."""
    from tests.console.test_memories import link

    viewer = console_as(tenant_a.org, "viewer")
    with tenant_context(tenant_a.org.id):
        RetrievalEvent.objects.all().delete()
        ids = {str(RetrievalEvent.objects.create(org=tenant_a.org, agent=tenant_a.agent, kind="search",
                                                 query=f"question {i}").pk) for i in range(120)}
    seen, url = [], ""
    while True:
        response = viewer.get(viewer.base + "events/" + url)
        page = response.content.decode()
        assert "in all" not in page
        seen += re.findall(r"/events/([0-9a-f-]{36})/", page)
        with tenant_context(tenant_a.org.id):
            RetrievalEvent.objects.create(org=tenant_a.org, agent=tenant_a.agent, kind="search", query="later")
        following = link(response, "next")
        if not following:
            break
        url = "?" + following
    assert len(seen) == len(set(seen)) and ids <= set(seen)
