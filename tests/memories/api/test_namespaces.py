"""A namespace is an end user's boundary (docs/architecture.md, "Namespaces"): one agent
keeping the same sentence for two users keeps two memories, and nothing done to one user's
touches the other's."""

import pytest

from memories.errors import Conflict
from memories.models import DuplicateCandidate, Memory, MemoryVersion
from memories.writes import conflicts
from tenants.context import tenant_context

pytestmark = pytest.mark.django_db

FACT = "Prefers to be called by their first name"
ALICE, BOB = ["users", "alice"], ["users", "bob"]


def remember(client, namespace, content=FACT, **fields):
    response = client.post("/api/v1/memories", {"content": content, "namespace": namespace, **fields})
    assert response.status_code in (200, 201), response.content
    return response.json()


def listed(client, namespace) -> list[str]:
    response = client.get("/api/v1/memories", {"namespace": "/".join(namespace)})
    assert response.status_code == 200, response.content
    return [memory["id"] for memory in response.json()["results"]]


def searched(client, namespace, query=FACT) -> list[str]:
    response = client.post("/api/v1/search", {"query": query, "filters": {"namespace": "/".join(namespace)}})
    assert response.status_code == 200, response.content
    return [result["memory"]["id"] for result in response.json()["results"]]


def test_the_same_sentence_for_two_users_is_two_memories_each_with_its_own_fields(api_a):
    alice = remember(api_a, ALICE, metadata={"user": "alice"}, tags=["alice"])
    bob = remember(api_a, BOB, metadata={"user": "bob"}, tags=["bob"])

    assert bob["created"] is True and bob["deduplicated"] is False
    assert bob["memory"]["id"] != alice["memory"]["id"]
    assert bob["memory"]["namespace"] == BOB and bob["memory"]["metadata"] == {"user": "bob"}
    assert bob["memory"]["tags"] == ["bob"]
    # Still one memory per user: the same sentence again for bob is bob's memory.
    again = remember(api_a, BOB, content="  prefers to be CALLED by their first name ")
    assert again["deduplicated"] is True and again["memory"]["id"] == bob["memory"]["id"]


def test_each_user_lists_and_finds_their_own_memory_and_deleting_one_leaves_the_other(api_a):
    alice = remember(api_a, ALICE)["memory"]["id"]
    bob = remember(api_a, BOB)["memory"]["id"]

    assert listed(api_a, BOB) == [bob] and listed(api_a, ALICE) == [alice]
    assert searched(api_a, BOB) == [bob] and searched(api_a, ALICE) == [alice]

    assert api_a.delete(f"/api/v1/memories/{bob}").status_code in (200, 204)
    assert listed(api_a, BOB) == [] and searched(api_a, BOB) == []
    assert listed(api_a, ALICE) == [alice] and searched(api_a, ALICE) == [alice]
    alice_now = api_a.get(f"/api/v1/memories/{alice}").json()
    assert alice_now["deleted_at"] is None and alice_now["status"] == "active"


def test_a_batch_keeps_equal_sentences_of_different_users_apart(tenant_a, api_a):
    response = api_a.post("/api/v1/memories", {"memories": [
        {"content": FACT, "namespace": ALICE},
        {"content": FACT, "namespace": BOB},
        {"content": FACT.upper(), "namespace": BOB},  # bob's twice: one memory
    ]})
    assert response.status_code == 201, response.content
    first, second, third = response.json()["results"]
    assert first["created"] and second["created"] and first["id"] != second["id"]
    assert third["deduplicated"] and third["id"] == second["id"]
    remember(api_a, ALICE)  # after the batch: alice's again, deduplicated
    with tenant_context(tenant_a.org.id):
        assert sorted(Memory.objects.filter(content=FACT).values_list("namespace", flat=True)) == [
            "users/alice", "users/bob"]


def test_near_duplicates_are_only_looked_for_in_the_same_namespace(tenant_a, api_a, settings):
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "NEAR_DUPLICATE_SIMILARITY": 0.8}
    alice = remember(api_a, ALICE, content="The user lives in Lisbon, Portugal")["memory"]["id"]
    bob = remember(api_a, BOB, content="The user lives in Lisbon in Portugal")
    assert bob["near_duplicates"] == []
    alice_again = remember(api_a, ALICE, content="The user lives in Lisbon in Portugal")
    assert [near["id"] for near in alice_again["near_duplicates"]] == [alice]
    with tenant_context(tenant_a.org.id):
        assert not DuplicateCandidate.objects.filter(memory_id=bob["memory"]["id"]).exists()


def test_an_edit_that_would_make_two_equal_memories_in_one_namespace_is_refused(api_a):
    alice = remember(api_a, ALICE)["memory"]
    other = remember(api_a, BOB, content="Works night shifts")["memory"]
    # Bob's memory may take alice's sentence: it stays in bob's namespace.
    changed = api_a.patch(f"/api/v1/memories/{other['id']}", {"content": FACT}, HTTP_IF_MATCH='"1"')
    assert changed.status_code == 200, changed.content
    # Moved into alice's namespace it would be her memory twice.
    moved = api_a.patch(f"/api/v1/memories/{other['id']}", {"namespace": ALICE}, HTTP_IF_MATCH='"2"')
    assert moved.status_code == 409, moved.content
    assert moved.json()["error"]["existing_id"] == alice["id"]
    assert api_a.get(f"/api/v1/memories/{other['id']}").json()["namespace"] == BOB


def test_an_operator_cannot_resolve_one_users_memory_into_anothers(tenant_a, api_a):
    alice = remember(api_a, ALICE, content="Is vegetarian")["memory"]["id"]
    bob = remember(api_a, BOB, content="Eats meat every day")["memory"]["id"]
    link = api_a.post(f"/api/v1/memories/{alice}/relationships", {"target_id": bob, "relation_type": "contradicts"})
    assert link.status_code == 201, link.content
    with tenant_context(tenant_a.org.id):
        [conflict] = [c for c in conflicts.open_conflicts(org_id=tenant_a.org.id) if str(c.first.pk) == alice]
    for resolution, extra in ((conflicts.KEEP, {"keep_id": alice}), (conflicts.MERGE, {})):
        with pytest.raises(Conflict, match="different namespaces"):
            with tenant_context(tenant_a.org.id):
                conflicts.conflict_resolve(org_id=tenant_a.org.id, kind=conflict.kind, conflict_id=conflict.id,
                                           resolution=resolution, user=None, **extra)
    with tenant_context(tenant_a.org.id):
        assert set(Memory.objects.filter(pk__in=[alice, bob]).values_list("status", flat=True)) == {"active"}
        assert not MemoryVersion.objects.filter(memory_id__in=[alice, bob]).exclude(operation="create").exists()
        assert conflicts.conflict_resolve(org_id=tenant_a.org.id, kind=conflict.kind, conflict_id=conflict.id,
                                          resolution=conflicts.BOTH_VALID, user=None) is None


# --------------------------------------------------------------------------- one shape rule


def test_every_door_takes_a_namespace_as_labels_or_joined_with_a_slash_and_answers_with_labels(tenant_a, api_a):
    def ok(response, status=200):
        assert response.status_code == status, response.content
        return response.json()

    # Writes: the joined form is the same namespace as the labels.
    alice = remember(api_a, "users/alice", content="Keeps bees")["memory"]
    bob = remember(api_a, BOB, content="Keeps bees")["memory"]
    assert alice["namespace"] == ALICE and alice["scope"] == "users/alice" and bob["id"] != alice["id"]
    assert remember(api_a, ALICE, content="keeps BEES")["memory"]["id"] == alice["id"]  # deduplicated
    moved = ok(api_a.patch(f"/api/v1/memories/{bob['id']}", {"namespace": "/users/bob/garden/"},
                           HTTP_IF_MATCH='"1"'))
    assert moved["namespace"] == ["users", "bob", "garden"]
    session = ok(api_a.post("/api/v1/sessions", {"namespace": "users/alice"}), 201)
    assert session["namespace"] == ALICE

    # Filters: labels in a body, repeated in a query string, or the joined form.
    def ids(results):
        return [result["memory"]["id"] if "memory" in result else result["id"] for result in results]

    for namespace in ("users/alice", ["users", "alice"]):
        assert ids(ok(api_a.post("/api/v1/search", {"query": "bees", "filters": {"namespace": namespace}}))[
            "results"]) == [alice["id"]]
        assert ok(api_a.post("/api/v1/retrieve", {"query": "bees", "scope": namespace}))["candidates"][0]["id"] == \
            alice["id"]
        assert [m["id"] for m in ok(api_a.post("/api/v1/context", {"query": "bees", "filters": {
            "namespace": namespace}}))["memories"]] == [alice["id"]]
    for query in ({"namespace": "users/alice"}, {"namespace": ["users", "alice"]}):
        assert ids(ok(api_a.get("/api/v1/memories", query))["results"]) == [alice["id"]]
        assert ids(ok(api_a.get("/api/v1/sessions", query))["results"]) == [session["id"]]
        assert ok(api_a.get("/api/v1/stats", query))["memories"]["live"] == 1
    assert ok(api_a.post("/api/v1/erase", {"namespace": "users/bob", "dry_run": True}))["erased"]["memories"] == 1


@pytest.mark.parametrize("namespace", ["users//alice", "/", "", [], ["users/alice"], ["users", " "], 7,
                                       "x" * 257])
def test_a_namespace_of_neither_shape_is_refused_by_name_at_writes_and_filters(tenant_a, api_a, namespace):
    with tenant_context(tenant_a.org.id):
        before = Memory.objects.count()
    for response in (api_a.post("/api/v1/memories", {"content": "Keeps bees", "namespace": namespace}),
                     api_a.post("/api/v1/search", {"query": "bees", "filters": {"namespace": namespace}}),
                     api_a.post("/api/v1/sessions", {"namespace": namespace})):
        assert response.status_code == 400, response.content
        assert list(response.json()["error"]["fields"]) in (["namespace"], ["filters.namespace"]), response.json()
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.count() == before
