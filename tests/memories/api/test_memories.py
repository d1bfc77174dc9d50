"""The memories endpoints: success paths and what happens to bad input."""

import uuid

import pytest

from memories.models import DuplicateCandidate, Memory, MemoryVersion
from tenants.context import tenant_context

pytestmark = pytest.mark.django_db


def error(response, status):
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    return response.json()["error"]


def create(client, **fields):
    response = client.post("/api/v1/memories", {"content": "The user's favourite colour is teal", **fields})
    assert response.status_code in (200, 201), response.content
    return response.json()


def versions_of(org, memory_id):
    with tenant_context(org.id):
        return list(MemoryVersion.objects.filter(memory_id=memory_id).order_by("version_num")
                    .values_list("version_num", "operation"))


# --------------------------------------------------------------------------- create


def test_create_stores_an_embedded_memory_with_its_first_version(tenant_a, api_a):
    body = create(api_a, category="preference", memory_type="semantic", confidence=0.9, importance=0.7,
                  namespace=["memories", "user-1"], tags=["colour", "ui"], metadata={"turn": 4},
                  provenance={"source_event": "chat-12"}, session_id=str(tenant_a.session.id))
    memory = body["memory"]
    assert body["created"] is True and body["deduplicated"] is False
    assert body["embedding_status"] == "ready" and memory["embedding_model"] == "all-MiniLM-L6-v2"
    assert memory["category"] == "preference" and memory["confidence"] == 0.9 and memory["importance"] == 0.7
    assert memory["scope"] == "memories/user-1" and memory["namespace"] == ["memories", "user-1"]
    assert memory["tags"] == ["colour", "ui"] and memory["metadata"] == {"turn": 4}
    assert memory["status"] == "active" and memory["version"] == 1 and memory["source"] == "extracted"
    assert memory["session_id"] == str(tenant_a.session.id)
    assert versions_of(tenant_a.org, memory["id"]) == [(1, "create")]
    with tenant_context(tenant_a.org.id):
        stored = Memory.objects.get(pk=memory["id"])
        assert len(stored.embedding) == 384 and stored.content_hash == memory["content_hash"]


def test_exact_duplicate_returns_the_existing_memory_and_adds_no_row(tenant_a, api_a):
    first = create(api_a)["memory"]
    again = api_a.post("/api/v1/memories", {"content": "  the USER'S favourite   colour is teal "})
    assert again.status_code == 200
    body = again.json()
    assert body["deduplicated"] is True and body["created"] is False and body["memory"]["id"] == first["id"]
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.filter(content_hash=first["content_hash"]).count() == 1
    assert versions_of(tenant_a.org, first["id"]) == [(1, "create")]


def test_near_duplicates_are_returned_and_recorded_for_review(tenant_a, api_a, settings):
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "NEAR_DUPLICATE_SIMILARITY": 0.8}
    first = create(api_a, content="The user lives in Lisbon, Portugal")["memory"]
    body = create(api_a, content="The user lives in Lisbon in Portugal")
    [near] = body["near_duplicates"]
    assert near["id"] == first["id"] and 0.8 <= near["similarity"] <= 1
    with tenant_context(tenant_a.org.id):
        candidate = DuplicateCandidate.objects.get(memory_id=body["memory"]["id"])
    assert str(candidate.candidate_id) == first["id"]
    unrelated = create(api_a, content="Quarterly revenue grew by twelve percent")
    assert unrelated["near_duplicates"] == []


def test_batch_create_stores_all_with_embeddings_pending(tenant_a, api_a):
    response = api_a.post("/api/v1/memories", {"memories": [
        {"content": "Batch fact one"}, {"content": "Batch fact two", "category": "episodic"},
        {"content": "batch fact ONE"},  # a duplicate of the first, inside the same batch
    ]})
    assert response.status_code == 201
    results = response.json()["results"]
    assert [r["created"] for r in results] == [True, True, False]
    assert results[2]["deduplicated"] and results[2]["id"] == results[0]["id"]
    assert set(results[0]) == {"id", "created", "deduplicated", "embedding_status", "content_hash", "version"}
    assert {r["embedding_status"] for r in results} == {"pending"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "content"),
        ({"content": ""}, "content"),
        ({"content": "   "}, "content"),
        ({"content": "x" * 8193}, "content"),
        ({"content": "ok", "category": "opinion"}, "category"),
        ({"content": "ok", "memory_type": "long"}, "memory_type"),
        ({"content": "ok", "source": "rumour"}, "source"),
        ({"content": "ok", "confidence": 1.5}, "confidence"),
        ({"content": "ok", "confidence": "high"}, "confidence"),
        ({"content": "ok", "importance": -0.1}, "importance"),
        ({"content": "ok", "session_id": "not-a-uuid"}, "session_id"),
        ({"content": "ok", "expires_at": "next tuesday"}, "expires_at"),
        ({"content": "ok", "valid_from": "2026-05-01T00:00:00Z", "valid_until": "2026-04-01T00:00:00Z"}, "valid_until"),
        ({"content": "ok", "metadata": ["not", "an", "object"]}, "metadata"),
        ({"content": "ok", "namespace": ["only/slashes"]}, "namespace"),
        ({"content": "ok", "namespace": ["memories", ""]}, "namespace"),
        ({"content": "ok", "namespace": ["a"], "scope": "a"}, "namespace"),
        ({"content": "ok", "scope": "a//b"}, "scope"),
        ({"content": "ok", "scope": "s" * 257}, "scope"),
        ({"content": "ok", "key": ""}, "key"),
        ({"content": "ok", "sensitivity": ""}, "sensitivity"),
        ({"content": "ok", "tags": ["t" * 65]}, "tags[0]"),
        ({"content": "ok", "status": "active"}, "status"),
        ({"content": "ok", "org_id": str(uuid.uuid4())}, "org_id"),
        ({"content": "ok", "agent_id": str(uuid.uuid4())}, "agent_id"),
        ({"content": "ok", "retrieval_count": 99}, "retrieval_count"),
        ({"content": "ok", "content_hash": "0" * 64}, "content_hash"),
        ({"content": "ok", "embedding": [0.1] * 384}, "embedding"),
        ({"content": "ok", "validation_status": "verified"}, "validation_status"),
        ({"memories": []}, "memories"),
        ({"memories": [{"content": "fine"}, {"content": ""}]}, "memories[1].content"),
    ],
)
def test_create_rejects_bad_input_naming_the_field_and_changes_nothing(tenant_a, api_a, body, field):
    with tenant_context(tenant_a.org.id):
        before = Memory.objects.count()
    problem = error(api_a.post("/api/v1/memories", body), 400)
    assert problem["code"] == "invalid" and field in problem["fields"], problem
    assert problem["message"].startswith(field) or field in problem["message"]
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.count() == before


def test_a_batch_over_the_limit_is_refused(api_a, settings):
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "BATCH_LIMIT": 3}
    problem = error(api_a.post("/api/v1/memories", {"memories": [{"content": f"m{i}"} for i in range(4)]}), 400)
    assert problem["fields"] == {"memories": ["at most 3 memories per batch"]}


def test_an_unknown_session_is_a_404_naming_the_field(api_a):
    problem = error(api_a.post("/api/v1/memories", {"content": "ok", "session_id": str(uuid.uuid4())}), 404)
    assert "session_id" in problem["fields"]


def test_a_taken_key_is_a_conflict(api_a):
    create(api_a, content="first", scope="prefs", key="colour")
    problem = error(api_a.post("/api/v1/memories", {"content": "second", "scope": "prefs", "key": "colour"}), 409)
    assert problem["code"] == "key_exists"


# --------------------------------------------------------------------------- read


def test_get_returns_the_memory_with_its_etag(tenant_a, api_a):
    response = api_a.get(f"/api/v1/memories/{tenant_a.memory.id}")
    assert response.status_code == 200 and response["ETag"] == '"1"'
    assert response.json()["tags"] == ["drinks"]


def test_get_of_an_unknown_id_is_404_json(api_a):
    assert error(api_a.get(f"/api/v1/memories/{uuid.uuid4()}"), 404)["code"] == "not_found"


def test_list_filters(tenant_a, api_a):
    a = create(api_a, content="Teal is the favourite colour", category="preference", memory_type="episodic",
               namespace=["memories", "user-7"], tags=["colour"])["memory"]
    b = create(api_a, content="Stand-up is at nine", category="procedural", namespace=["team", "ops"],
               tags=["schedule", "colour"])["memory"]

    def ids(**query):
        response = api_a.get("/api/v1/memories", query)
        assert response.status_code == 200, response.content
        return {m["id"] for m in response.json()["results"]}

    assert ids(category="preference") == {a["id"]}
    assert ids(memory_type="episodic") == {a["id"]}
    assert ids(namespace="memories") == {a["id"], str(tenant_a.memory.id), str(tenant_a.other_memory.id)}
    assert ids(namespace="memories/user-7") == {a["id"]}
    assert ids(namespace="team/ops") == {b["id"]}
    assert ids(tag=["colour"]) == {a["id"], b["id"]}
    assert ids(tag=["colour", "schedule"]) == {b["id"]}
    assert ids(session=str(tenant_a.session.id)) == {str(tenant_a.memory.id)}
    assert ids(agent=str(tenant_a.agent.id)) >= {a["id"], b["id"]}
    assert ids(created_after=a["created_at"]) == {a["id"], b["id"]}
    assert ids(created_before=a["created_at"]) == {str(tenant_a.memory.id), str(tenant_a.other_memory.id)}
    api_a.delete(f"/api/v1/memories/{b['id']}", HTTP_IF_MATCH='"1"')
    assert b["id"] not in ids()
    assert b["id"] in ids(include_deleted="true")
    assert ids(status="active") >= {a["id"]}


@pytest.mark.parametrize(
    ("query", "field"),
    [({"category": "nope"}, "category"), ({"status": "gone"}, "status"), ({"session": "x"}, "session"),
     ({"created_after": "yesterday"}, "created_after"), ({"limit": "0"}, "limit"), ({"limit": "500"}, "limit"),
     ({"colour": "teal"}, "colour"),
     ({"created_after": "2026-05-01T00:00:00Z", "created_before": "2026-04-01T00:00:00Z"}, "created_before")],
)
def test_list_rejects_bad_filters(api_a, query, field):
    assert field in error(api_a.get("/api/v1/memories", query), 400)["fields"]


def test_list_pages_with_a_cursor_and_a_constant_number_of_queries(tenant_a, api_a, django_assert_max_num_queries):
    for i in range(7):
        create(api_a, content=f"Paged memory number {i}", tags=[f"t{i}"])
    seen, url = [], "/api/v1/memories?limit=3"
    while url:
        with django_assert_max_num_queries(12):
            page = api_a.get(url).json()
        seen += [m["id"] for m in page["results"]]
        url = page["next"]
    assert len(seen) == len(set(seen)) == 9


# --------------------------------------------------------------------------- update


def test_patch_needs_a_version_and_refuses_a_stale_one(tenant_a, api_a):
    url = f"/api/v1/memories/{tenant_a.memory.id}"
    assert error(api_a.patch(url, {"confidence": 0.5}), 428)["code"] == "version_required"
    ok = api_a.patch(url, {"confidence": 0.5, "content": "Alpha Corp prefers green tea"}, HTTP_IF_MATCH='"1"')
    assert ok.status_code == 200 and ok["ETag"] == '"2"'
    assert ok.json()["confidence"] == 0.5 and ok.json()["content"] == "Alpha Corp prefers green tea"
    stale = error(api_a.patch(url, {"confidence": 0.7}, HTTP_IF_MATCH='"1"'), 412)
    assert stale["code"] == "version_mismatch" and stale["current_version"] == 2
    assert api_a.patch(url, {"confidence": 0.7, "version": 2}).status_code == 200
    assert versions_of(tenant_a.org, tenant_a.memory.id)[-2:] == [(2, "update"), (3, "update")]


def test_patch_re_embeds_changed_content(tenant_a, api_a):
    with tenant_context(tenant_a.org.id):
        before = list(Memory.objects.get(pk=tenant_a.memory.id).embedding)
    api_a.patch(f"/api/v1/memories/{tenant_a.memory.id}", {"content": "Completely different words"},
                HTTP_IF_MATCH='"1"')
    with tenant_context(tenant_a.org.id):
        after = Memory.objects.get(pk=tenant_a.memory.id)
    assert list(after.embedding) != before and after.embedding_model == "all-MiniLM-L6-v2"


@pytest.mark.parametrize(
    ("body", "field"),
    [({"confidence": 2}, "confidence"), ({"status": "archived"}, "status"), ({"content": ""}, "content"),
     ({"version": 0}, "version"), ({}, "non_field_errors"), ({"usefulness_score": 1}, "usefulness_score")],
)
def test_patch_rejects_bad_input(tenant_a, api_a, body, field):
    problem = error(api_a.patch(f"/api/v1/memories/{tenant_a.memory.id}", body, HTTP_IF_MATCH='"1"'), 400)
    assert field in problem["fields"]
    assert versions_of(tenant_a.org, tenant_a.memory.id) == [(1, "create")]


def test_patch_with_a_malformed_if_match_is_400(tenant_a, api_a):
    problem = error(api_a.patch(f"/api/v1/memories/{tenant_a.memory.id}", {"confidence": 0.5},
                                HTTP_IF_MATCH="yesterday"), 400)
    assert "If-Match" in problem["fields"]


def test_patch_into_an_existing_content_is_a_conflict(tenant_a, api_a):
    problem = error(api_a.patch(f"/api/v1/memories/{tenant_a.memory.id}",
                                {"content": tenant_a.other_memory.content}, HTTP_IF_MATCH='"1"'), 409)
    assert problem["code"] == "duplicate" and problem["existing_id"] == str(tenant_a.other_memory.id)


# --------------------------------------------------------------------------- lifecycle


def test_delete_restore_and_history(tenant_a, api_a):
    url = f"/api/v1/memories/{tenant_a.memory.id}"
    deleted = api_a.delete(url)
    assert deleted.status_code == 200 and deleted.json()["deleted_at"] is not None
    assert error(api_a.delete(url), 409)["code"] == "deleted"
    assert error(api_a.patch(url, {"confidence": 0.2}, HTTP_IF_MATCH='"2"'), 409)["code"] == "deleted"
    restored = api_a.post(f"{url}/restore")
    assert restored.status_code == 200 and restored.json()["deleted_at"] is None
    assert error(api_a.post(f"{url}/restore"), 409)["code"] == "not_deleted"
    history = api_a.get(f"{url}/history").json()["results"]
    assert [(v["version_num"], v["operation"], v["changed_by_type"]) for v in history] == [
        (1, "create", "agent"), (2, "delete", "agent"), (3, "restore", "agent")]
    assert history[1]["snapshot"]["deleted_at"] is not None and history[2]["snapshot"]["deleted_at"] is None


def test_supersede_creates_the_correction_and_retires_the_old_memory(tenant_a, api_a):
    url = f"/api/v1/memories/{tenant_a.memory.id}"
    response = api_a.post(f"{url}/supersede", {"content": "Alpha Corp now prefers coffee", "reason": "user said so"})
    assert response.status_code == 201
    body = response.json()
    new, old = body["memory"], body["superseded"]
    assert old["status"] == "superseded" and old["superseded_by"] == new["id"]
    assert new["status"] == "active" and new["category"] == old["category"]
    relationships = api_a.get(f"/api/v1/memories/{new['id']}/relationships").json()["results"]
    assert [(r["source_id"], r["target_id"], r["relation_type"]) for r in relationships] == [
        (new["id"], old["id"], "supersedes")]
    assert versions_of(tenant_a.org, old["id"])[-1] == (2, "supersede")
    assert error(api_a.post(f"{url}/correct", {"content": "again"}), 409)["code"] == "superseded"


def test_confirm_protects_from_decay(tenant_a, api_a):
    body = api_a.post(f"/api/v1/memories/{tenant_a.memory.id}/confirm").json()
    assert body["is_protected"] is True and body["decay_rate"] == 0 and body["confidence"] == 1.0
    assert versions_of(tenant_a.org, tenant_a.memory.id)[-1] == (2, "confirm")


def test_feedback_moves_usefulness_without_a_version(tenant_a, api_a):
    url = f"/api/v1/memories/{tenant_a.memory.id}/feedback"
    assert api_a.post(url, {"useful": True}).json()["usefulness_score"] == 0.6
    assert api_a.post(url, {"score": 0.0}).json()["usefulness_score"] == 0.48
    assert "non_field_errors" in error(api_a.post(url, {"useful": True, "score": 1}), 400)["fields"]
    assert "score" in error(api_a.post(url, {"score": 3}), 400)["fields"]
    assert versions_of(tenant_a.org, tenant_a.memory.id) == [(1, "create")]


# --------------------------------------------------------------------------- tags and relationships


def test_tags_add_list_and_remove(tenant_a, api_a):
    url = f"/api/v1/memories/{tenant_a.memory.id}/tags"
    assert api_a.post(url, {"tags": ["tea", "drinks", "morning"]}).json() == {"tags": ["drinks", "morning", "tea"]}
    assert api_a.get(url).json() == {"tags": ["drinks", "morning", "tea"]}
    assert api_a.delete(f"{url}/morning").json() == {"tags": ["drinks", "tea"]}
    assert error(api_a.delete(f"{url}/morning"), 404)["fields"] == {"tag": ["memory %s has no tag 'morning'"
                                                                            % tenant_a.memory.id]}
    assert "tags" in error(api_a.post(url, {"tags": []}), 400)["fields"]
    operations = versions_of(tenant_a.org, tenant_a.memory.id)
    assert operations == [(1, "create"), (2, "update"), (3, "update")]


def test_relationships_create_list_delete(tenant_a, api_a):
    url = f"/api/v1/memories/{tenant_a.memory.id}/relationships"
    created = api_a.post(url, {"target_id": str(tenant_a.other_memory.id), "relation_type": "contradicts",
                               "confidence": 0.6})
    assert created.status_code == 201
    relationship = created.json()
    assert relationship["relation_type"] == "contradicts" and relationship["confidence"] == 0.6
    listed = api_a.get(url).json()["results"]
    assert relationship["id"] in [r["id"] for r in listed]
    again = api_a.post(url, {"target_id": str(tenant_a.other_memory.id), "relation_type": "contradicts"})
    assert error(again, 409)["code"] == "relationship_exists"
    assert "target_id" in error(api_a.post(url, {"target_id": str(tenant_a.memory.id), "relation_type": "supports"}),
                                400)["fields"]
    assert "relation_type" in error(api_a.post(url, {"target_id": str(tenant_a.other_memory.id),
                                                     "relation_type": "likes"}), 400)["fields"]
    assert "target_id" in error(api_a.post(url, {"target_id": str(uuid.uuid4()), "relation_type": "supports"}),
                                404)["fields"]
    assert api_a.delete(f"/api/v1/relationships/{relationship['id']}").status_code == 204
    assert error(api_a.delete(f"/api/v1/relationships/{relationship['id']}"), 404)["code"] == "not_found"


# --------------------------------------------------------------------------- the namespace store
# LangGraph's store API (tests/integrations/test_langgraph_store_api.py) writes memories: the
# memory API reads and changes them like any other.


def test_a_store_item_is_a_memory_the_memory_api_reads_and_versions(tenant_a, api_a):
    item = {"namespace": ["memories", "user-9"], "key": "diet", "value": {"text": "vegetarian"}, "index": ["text"]}
    assert api_a.put("/api/v1/store/items", item).status_code == 204
    assert api_a.put("/api/v1/store/items", {**item, "value": {"text": "vegan"}}).status_code == 204
    listed = api_a.get("/api/v1/memories", {"namespace": "memories/user-9"}).json()["results"]
    assert [(m["key"], m["content"], m["metadata"], m["version"]) for m in listed] == [
        ("diet", "vegan", {"text": "vegan"}, 2)]
    assert api_a.delete("/api/v1/store/items", {"namespace": ["memories", "user-9"], "key": "diet"}).status_code == 204
    assert versions_of(tenant_a.org, listed[0]["id"]) == [(1, "create"), (2, "update"), (3, "delete")]


def test_store_items_with_equal_values_under_different_keys_coexist(tenant_a, api_a):
    for key in ("likes-tea", "likes-coffee"):
        assert api_a.put("/api/v1/store/items", {"namespace": ["prefs", "u1"], "key": key, "value": {"yes": True}}
                         ).status_code == 204
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.filter(namespace="prefs/u1", deleted_at__isnull=True).count() == 2
