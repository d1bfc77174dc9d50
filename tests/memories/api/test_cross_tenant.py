"""An agent of organisation B, holding a valid key, tries every endpoint on A's ids."""

import pytest

from memories.models import Memory, MemoryRelationship, MemoryTag
from tenants.context import tenant_context
from tenants.models import Session
from tests.memories.api.doors import (
    ENTITY_DOORS,
    EVENT_DOORS,
    MEMORY_DOORS,
    SESSION_DOORS,
    door_ids,
    fill,
)

pytestmark = pytest.mark.django_db


def a_ids(tenant):
    return {"memory": tenant.memory.id, "other": tenant.other_memory.id, "relationship": tenant.relationship.id,
            "event": tenant.retrieval_event.id, "entity": tenant.entity.id, "tag": "drinks",
            "session": tenant.session.id}


ENDPOINTS = MEMORY_DOORS + EVENT_DOORS + ENTITY_DOORS + SESSION_DOORS


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS, ids=door_ids(ENDPOINTS))
def test_b_gets_404_for_each_of_a_s_ids_and_changes_nothing(tenant_a, tenant_b, api_b, method, path, body):
    ids = a_ids(tenant_a)
    response = getattr(api_b, method)(fill(path, ids), fill(body, ids))
    assert response.status_code == 404, response.content
    assert response.json()["error"]["code"] == "not_found"
    with tenant_context(tenant_a.org.id):
        memory = Memory.objects.get(pk=tenant_a.memory.id)
        assert (memory.content, memory.version, memory.deleted_at, memory.status) == (
            tenant_a.memory.content, 1, None, "active")
        assert memory.usefulness_score == tenant_a.memory.usefulness_score
        assert MemoryRelationship.objects.filter(pk=tenant_a.relationship.id).exists()
        assert list(MemoryTag.objects.filter(memory_id=memory.pk).values_list("tag", flat=True)) == ["drinks"]
        assert Session.objects.get(pk=tenant_a.session.id).ended_at is None


def test_b_cannot_link_its_memory_to_a_s(tenant_a, tenant_b, api_b):
    response = api_b.post(f"/api/v1/memories/{tenant_b.memory.id}/relationships",
                          {"target_id": str(tenant_a.memory.id), "relation_type": "contradicts"})
    assert response.status_code == 404 and "target_id" in response.json()["error"]["fields"]


def test_b_cannot_attach_a_s_session(tenant_a, api_b):
    response = api_b.post("/api/v1/memories", {"content": "x", "session_id": str(tenant_a.session.id)})
    assert response.status_code == 404


def test_b_sees_none_of_a_s_rows_in_lists(tenant_a, tenant_b, api_b):
    a_memory_ids = {str(tenant_a.memory.id), str(tenant_a.other_memory.id)}
    listed = api_b.get("/api/v1/memories", {"include_deleted": "true"}).json()["results"]
    assert listed and not a_memory_ids & {m["id"] for m in listed}
    assert {m["org_id"] for m in listed} == {str(tenant_b.org.id)}
    assert api_b.get("/api/v1/memories", {"agent": str(tenant_a.agent.id)}).json()["results"] == []
    assert api_b.get("/api/v1/memories", {"session": str(tenant_a.session.id)}).json()["results"] == []


def test_the_store_is_per_organisation(tenant_a, api_a, api_b):
    """LangGraph's store door (integrations.langgraph_store): B's key, at every route, never
    reaches A's items; the same namespace and key in B is B's own item."""
    item = {"namespace": ["memories", "shared-name"], "key": "diet", "value": {"text": "vegetarian"}}
    assert api_a.put("/api/v1/store/items", item).status_code == 204
    assert api_b.get("/api/v1/store/items", {"namespace": "memories.shared-name", "key": "diet"}).content == b"null"
    for body in ({"namespace_prefix": []}, {"namespace_prefix": ["memories"], "query": "vegetarian"},
                 {"namespace_prefix": [], "filter": {"text": "vegetarian"}}):
        assert api_b.post("/api/v1/store/items/search", body).json()["items"] == []
    assert api_b.post("/api/v1/store/namespaces", {}).json()["namespaces"] == []
    assert api_b.delete("/api/v1/store/items", {"namespace": ["memories", "shared-name"], "key": "diet"}
                        ).status_code == 204  # deletes nothing: there is no such item in B
    assert api_b.put("/api/v1/store/items", {**item, "value": {"text": "carnivore"}}).status_code == 204
    assert api_a.get("/api/v1/store/items", {"namespace": "memories.shared-name", "key": "diet"}
                     ).json()["value"] == {"text": "vegetarian"}
    assert api_b.get("/api/v1/store/items", {"namespace": "memories.shared-name", "key": "diet"}
                     ).json()["value"] == {"text": "carnivore"}
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.get(key="diet").version == 1


def test_exact_dedup_never_matches_another_organisation(tenant_a, api_b):
    response = api_b.post("/api/v1/memories", {"content": tenant_a.memory.content})
    assert response.status_code == 201 and response.json()["memory"]["id"] != str(tenant_a.memory.id)


def test_b_s_searches_events_and_hot_set_hold_nothing_of_a(tenant_a, tenant_b, api_b):
    a_ids = {str(tenant_a.memory.id), str(tenant_a.other_memory.id)}
    for mode in ("hybrid", "vector", "fulltext"):
        results = api_b.post("/api/v1/search", {"query": tenant_a.memory.content, "mode": mode, "limit": 100,
                                                "filters": {"include_deleted": True, "include_expired": True}})
        assert not a_ids & {r["memory"]["id"] for r in results.json()["results"]}
    retrieved = api_b.post("/api/v1/retrieve", {"query": tenant_a.memory.content, "scope": "memories"}).json()
    assert not a_ids & {c["id"] for c in retrieved["candidates"]}
    events = api_b.get("/api/v1/retrieval-events").json()["results"]
    assert str(tenant_a.retrieval_event.id) not in {e["id"] for e in events}
    assert not a_ids & {m["id"] for m in api_b.get("/api/v1/hot").json()["results"]}
    stored = api_b.post("/api/v1/store/items/search", {"namespace_prefix": ["memories"],
                                                       "query": tenant_a.memory.content}).json()["items"]
    assert stored == []


def test_a_search_runs_as_the_tenant_its_caller_set_and_finds_nothing_without_it(tenant_a, tenant_b):
    """Retrieval never sets the tenant: the caller's boundary has (API authentication, the
    console's access check, tenant_context in jobs and tests). Run as A, a search finds A's
    memories only, even for B's words; run as no tenant or as another, it fails closed (row-level
    security): it finds nothing of any tenant, and its retrieval event cannot be written."""
    from django.db import DatabaseError, transaction

    from memories.models import RetrievalEvent
    from memories.retrieval.events import retrieval_event_record
    from memories.retrieval.filters import SearchFilters
    from memories.retrieval.pipeline import memory_search

    def search(tenant, mode="fulltext"):
        return memory_search(org_id=tenant.org.id, query=tenant.memory.content, filters=SearchFilters(), mode=mode)

    with tenant_context(tenant_a.org.id):  # what a view of A's has: A's memory is found
        assert tenant_a.memory.id in {r.memory.pk for r in search(tenant_a).results}
        for mode in ("hybrid", "vector", "fulltext"):
            found = memory_search(org_id=tenant_a.org.id, query=tenant_b.memory.content, filters=SearchFilters(),
                                  mode=mode, limit=100).results
            assert {r.memory.org_id for r in found} <= {tenant_a.org.id}
    for active in (None, tenant_b.org.id):
        with tenant_context(active) if active else transaction.atomic():
            outcome = search(tenant_a)
            assert outcome.results == []
            if active is None:
                assert search(tenant_b).results == []
            with pytest.raises(DatabaseError), transaction.atomic():
                retrieval_event_record(
                    org_id=tenant_a.org.id, kind=RetrievalEvent.Kind.SEARCH, query="q", namespace="",
                    filters=SearchFilters(), request={}, outcome=outcome)
    with tenant_context(tenant_a.org.id):
        assert not RetrievalEvent.objects.filter(org_id=tenant_a.org.id, query="q").exists()
