"""An API key limited to namespace prefixes, or to reads, tries every door of the API.

By default a key reaches its whole organisation (agents of one organisation share what they
remember); these keys were issued narrower (memories.access)."""

from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.urls import get_resolver

from memories.models import Entity, Memory, MemoryRelationship, MemoryTag, MemoryVersion
from tenants.context import tenant_context
from tenants.models import Session
from tests import factories
from tests.memories.api.doors import (
    ENTITY_DOORS,
    EVENT_DOORS,
    MEMORY_DOORS,
    SESSION_DOORS,
    door_ids,
    fill,
)

pytestmark = pytest.mark.django_db

ALICE, BOB = "users/alice", "users/bob"


@pytest.fixture
def users(tenant_a):
    """Alice's and Bob's memories in one organisation, kept by one agent."""
    org, agent = tenant_a.org, tenant_a.agent

    def memory(namespace, content, key=None):
        return factories.memory(org=org, agent=agent, namespace=namespace, content=content, key=key)

    alice, bob = memory(ALICE, "Alice is allergic to peanuts"), memory(BOB, "Bob is allergic to peanuts")
    bob_other, alice_twin = memory(BOB, "Bob lives in Porto"), memory("users/alice2", "Alice2 likes peanuts")
    bob_item = memory(BOB, "Bob's diet is vegan", key="diet")
    with tenant_context(org.id):
        MemoryTag.objects.create(org=org, memory=bob, tag="health")
        relationship = MemoryRelationship.objects.create(org=org, source=bob, target=bob_other,
                                                         relation_type="supports")
        porto = Entity.objects.create(org=org, namespace=BOB, kind="place", name="Porto", key="porto")
        bob_session = Session.objects.create(org=org, agent=agent, namespace=BOB)
    return SimpleNamespace(alice=alice, bob=bob, bob_other=bob_other, alice_twin=alice_twin, bob_item=bob_item,
                           relationship=relationship, event=tenant_a.retrieval_event, bob_entity=porto,
                           bob_session=bob_session)


@pytest.fixture
def key_for(tenant_a):
    from rest_framework.test import APIClient

    def make(**reach):
        _, key = factories.api_key(agent=tenant_a.agent, name="limited", **reach)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        return client

    return make


@pytest.fixture
def alice_key(key_for):
    return key_for(namespaces=[ALICE])


def state(org, *memories):
    with tenant_context(org.id):
        return [(m.content, m.namespace, m.version, m.status, m.deleted_at, m.usefulness_score, m.is_protected,
                 sorted(MemoryTag.objects.filter(memory_id=m.pk).values_list("tag", flat=True)),
                 MemoryVersion.objects.filter(memory_id=m.pk).count())
                for m in Memory.objects.filter(pk__in=[m.pk for m in memories]).order_by("pk")]


BY_ID = MEMORY_DOORS + ENTITY_DOORS + SESSION_DOORS
EVENTS = [("get", "/api/v1/retrieval-events", None), *EVENT_DOORS]
COLLECTIONS = [
    ("get", "/api/v1/memories", None),
    ("post", "/api/v1/memories", {"content": "x"}),
    ("get", "/api/v1/memories/weak", None),
    ("get", "/api/v1/stats", None),
    ("get", "/api/v1/sessions", None),
    ("post", "/api/v1/sessions", {"namespace": ["users", "bob"]}),
    ("get", "/api/v1/entities", None),
    ("put", "/api/v1/store/items", {"namespace": ["users", "bob"], "key": "diet", "value": {"text": "omnivore"}}),
    ("get", "/api/v1/store/items", None),
    ("delete", "/api/v1/store/items", {"namespace": ["users", "bob"], "key": "diet"}),
    ("post", "/api/v1/store/items/search", {"namespace_prefix": ["users"]}),
    ("post", "/api/v1/store/namespaces", {}),
    ("post", "/api/v1/search", None),
    ("post", "/api/v1/retrieve", None),
    ("post", "/api/v1/context", None),
    ("get", "/api/v1/hot", None),
    ("post", "/api/v1/erase", {"namespace": ["users", "bob"]}),
]


def test_every_api_route_is_tried_here():
    """A new endpoint must be added to these lists (and so be tried with limited keys)."""
    routes = {"/api/v1/" + str(p.pattern).replace("<uuid:", "{").replace("<str:", "{").replace(">", "}")
              for api in get_resolver().url_patterns if str(api.pattern) == "api/v1/" for p in api.url_patterns}
    tried = {path.replace("{memory}", "{memory_id}").replace("{relationship}", "{relationship_id}")
             .replace("{event}", "{event_id}").replace("{entity}", "{entity_id}")
             .replace("{session}", "{session_id}")
             for _, path, _ in BY_ID + EVENTS + COLLECTIONS}
    assert routes <= tried, routes - tried


@pytest.mark.parametrize(("method", "path", "body"), BY_ID, ids=door_ids(BY_ID))
def test_a_key_limited_to_alice_finds_none_of_bobs_memories_by_id_and_changes_nothing(
        tenant_a, users, alice_key, method, path, body):
    before = state(tenant_a.org, users.bob, users.bob_other, users.alice)
    ids = {"memory": users.bob.id, "other": users.bob_other.id, "relationship": users.relationship.id,
           "entity": users.bob_entity.id, "tag": "health", "session": users.bob_session.id}
    response = getattr(alice_key, method)(fill(path, ids), fill(body, ids))
    assert response.status_code == 404, response.content
    assert response.json()["error"]["code"] == "not_found"
    assert state(tenant_a.org, users.bob, users.bob_other, users.alice) == before
    with tenant_context(tenant_a.org.id):
        assert MemoryRelationship.objects.filter(pk=users.relationship.id).exists()
        assert Session.objects.get(pk=users.bob_session.id).ended_at is None


def test_from_alices_memory_no_door_leads_to_bobs(tenant_a, users, alice_key):
    linked = alice_key.post(f"/api/v1/memories/{users.alice.id}/relationships",
                            {"target_id": str(users.bob.id), "relation_type": "contradicts"})
    assert linked.status_code == 404 and linked.json()["error"]["fields"] == {"target_id": [linked.json()["error"]["message"]]}
    with tenant_context(tenant_a.org.id):
        MemoryRelationship.objects.create(org=tenant_a.org, source=users.alice, target=users.bob,
                                          relation_type="contradicts")
    listed = alice_key.get(f"/api/v1/memories/{users.alice.id}/relationships")
    assert listed.status_code == 200 and listed.json()["results"] == []
    moved = alice_key.patch(f"/api/v1/memories/{users.alice.id}", {"namespace": ["users", "bob"], "version": 1})
    assert moved.status_code == 403 and moved.json()["error"]["code"] == "out_of_reach"
    assert state(tenant_a.org, users.alice)[0][1:4] == (ALICE, 1, "active")
    assert alice_key.get(f"/api/v1/memories/{users.alice.id}").status_code == 200


@pytest.mark.parametrize(("method", "path", "body"), EVENTS, ids=door_ids(EVENTS))
def test_a_key_limited_to_namespaces_reads_no_retrieval_events(users, alice_key, method, path, body):
    response = getattr(alice_key, method)(fill(path, {"event": users.event.id}), body)
    assert response.status_code == 403 and response.json()["error"]["code"] == "out_of_reach"


def test_a_key_limited_to_alice_lists_and_finds_only_alices_memories(users, alice_key, key_for):
    def ids(response):
        assert response.status_code == 200, response.content
        body = response.json()
        rows = body.get("results", body.get("candidates", []))
        return {str(row["memory"]["id"] if "memory" in row else row["id"]) for row in rows}

    alice, everyone = str(users.alice.id), key_for()
    assert ids(alice_key.get("/api/v1/memories")) == {alice}
    assert ids(alice_key.get("/api/v1/memories", {"namespace": BOB})) == set()
    assert str(users.bob.id) in ids(everyone.get("/api/v1/memories"))  # the default key reaches all
    for path, body in (("/api/v1/search", {"query": "allergic to peanuts"}),
                       ("/api/v1/search", {"query": "allergic to peanuts", "filters": {"namespace": "users"}}),
                       ("/api/v1/search", {"query": "Bob", "mode": "fulltext"}),
                       ("/api/v1/retrieve", {"query": "allergic to peanuts", "scope": "users"})):
        assert ids(alice_key.post(path, body)) <= {alice}, (path, body)
    assert ids(alice_key.post("/api/v1/search", {"query": "allergic to peanuts"})) == {alice}
    assert ids(alice_key.get("/api/v1/hot")) <= {alice}
    assert alice_key.get("/api/v1/entities").json()["results"] == []  # Alice's memories name no one yet
    assert [row["name"] for row in everyone.get("/api/v1/entities", {"namespace": BOB}).json()["results"]] == ["Porto"]

    # LangGraph's store door: Bob's item is missing to Alice's key (null, no results), and the
    # namespaces it lists are hers alone.
    alice_key.put("/api/v1/store/items", {"namespace": ["users", "alice"], "key": "diet", "value": {"text": "keto"}})
    assert alice_key.get("/api/v1/store/items", {"namespace": "users.bob", "key": "diet"}).content == b"null"
    for body in ({"namespace_prefix": ["users", "bob"]}, {"namespace_prefix": []},
                 {"namespace_prefix": ["users"], "query": "vegan diet"}, {"namespace_prefix": ["users", "bob"],
                                                                          "query": "vegan diet"}):
        found = alice_key.post("/api/v1/store/items/search", body).json()["items"]
        assert {tuple(item["namespace"]) for item in found} <= {("users", "alice")}, body
    assert alice_key.post("/api/v1/store/namespaces", {}).json()["namespaces"] == [["users", "alice"]]
    assert alice_key.post("/api/v1/store/namespaces", {"prefix": ["users", "bob"]}).json()["namespaces"] == []
    assert everyone.get("/api/v1/store/items", {"namespace": "users.bob", "key": "diet"}).json()["key"] == "diet"
    assert ["users", "bob"] in everyone.post("/api/v1/store/namespaces", {}).json()["namespaces"]


def test_a_key_limited_to_alice_writes_only_under_alice(tenant_a, users, alice_key):
    def count():
        with tenant_context(tenant_a.org.id):
            return Memory.objects.count()

    before = count()
    for body in ({"content": "No namespace"}, {"content": "Bob's", "namespace": ["users", "bob"]},
                 {"content": "Alice2's", "namespace": ["users", "alice2"]},
                 {"memories": [{"content": "Alice's", "namespace": ["users", "alice"]},
                               {"content": "Bob's", "namespace": ["users", "bob"]}]}):
        refused = alice_key.post("/api/v1/memories", body)
        assert refused.status_code == 403, (body, refused.content)
        assert refused.json()["error"]["code"] == "out_of_reach"
    assert alice_key.put("/api/v1/store/items", {"namespace": ["users", "bob"], "key": "diet",
                                                 "value": {"text": "omnivore"}}).status_code == 403
    deleted = alice_key.delete("/api/v1/store/items", {"namespace": ["users", "bob"], "key": "diet"})
    assert deleted.status_code == 403 and deleted.json()["error"]["code"] == "out_of_reach"
    assert count() == before
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.get(pk=users.bob_item.pk).deleted_at is None

    written = alice_key.post("/api/v1/memories", {"content": "Alice moved to Lisbon", "namespace": ["users", "alice",
                                                                                                   "home"]})
    assert written.status_code == 201 and written.json()["memory"]["namespace"] == ["users", "alice", "home"]
    put = alice_key.put("/api/v1/store/items", {"namespace": ["users", "alice"], "key": "diet", "value": {"v": 1}})
    assert put.status_code == 204


def test_a_read_only_key_reads_and_searches_but_writes_nothing(tenant_a, users, key_for):
    reader = key_for(read_only=True)
    before = state(tenant_a.org, users.bob, users.alice)
    with tenant_context(tenant_a.org.id):
        count = Memory.objects.count()
    ids = {"memory": users.bob.id, "other": users.bob_other.id, "relationship": users.relationship.id,
           "tag": "health", "session": users.bob_session.id}
    writes = [(m, p, b) for m, p, b in BY_ID + COLLECTIONS if m != "get" and "search" not in p
              and "retrieve" not in p and "context" not in p and "store/namespaces" not in p]
    for method, path, body in writes:
        response = getattr(reader, method)(fill(path, ids), fill(body, ids) or {"namespace": ["users", "x"], "key": "k",
                                                                                "content": "c"})
        assert response.status_code == 403, (method, path, response.content)
        assert response.json()["error"]["message"] == "this API key is read-only"
    assert state(tenant_a.org, users.bob, users.alice) == before
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.count() == count
        assert MemoryRelationship.objects.filter(pk=users.relationship.id).exists()

    assert reader.get(f"/api/v1/memories/{users.bob.id}").status_code == 200
    assert reader.post("/api/v1/search", {"query": "peanuts"}).status_code == 200
    assert reader.post("/api/v1/retrieve", {"query": "peanuts", "scope": "users"}).status_code == 200
    assert reader.get("/api/v1/retrieval-events").status_code == 200
    assert reader.get("/api/v1/store/items", {"namespace": "users.bob", "key": "diet"}).json()["key"] == "diet"
    for path, body in (("/api/v1/store/items/search", {"namespace_prefix": ["users"], "query": "diet"}),
                       ("/api/v1/store/namespaces", {"prefix": ["users"]})):
        assert reader.post(path, body).status_code == 200, path


def test_a_key_limited_to_alice_erases_nothing_of_bobs(tenant_a, users, alice_key):
    """Not Bob's namespace, not the namespaces above Alice's, and of a session that holds both
    users' memories, only Alice's (the session itself stays, for Bob's)."""
    for namespace in (["users", "bob"], ["users"], ["users", "alice2"]):
        refused = alice_key.post("/api/v1/erase", {"namespace": namespace})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "out_of_reach", namespace
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(pk__in=[users.alice.pk, users.bob.pk]).update(session=tenant_a.session)
    erased = alice_key.post("/api/v1/erase", {"session": str(tenant_a.session.id)})
    assert erased.status_code == 200 and erased.json()["erased"]["memories"] == 1, erased.content
    assert "sessions" not in erased.json()["erased"]
    with tenant_context(tenant_a.org.id):
        assert not Memory.objects.filter(pk=users.alice.pk).exists()
        assert Memory.objects.filter(pk__in=[users.bob.pk, users.bob_other.pk, users.alice_twin.pk]).count() == 3
        assert Memory.objects.filter(session=tenant_a.session).exists()


def test_issue_api_key_command_limits_a_key(tenant_a, capsys):
    call_command("issue_api_key", tenant_a.org.slug, tenant_a.agent.name, "--namespace", "/users/alice/",
                 "--namespace", "users/carol", "--read-only")
    printed = capsys.readouterr().out
    assert "reaches users/alice, users/carol; read-only" in printed
    with tenant_context(tenant_a.org.id):
        from tenants.models import ApiKey

        key = ApiKey.objects.filter(agent=tenant_a.agent).order_by("-created_at").first()
    assert key.namespaces == ["users/alice", "users/carol"] and key.read_only
    with pytest.raises(Exception, match="not a namespace"):
        call_command("issue_api_key", tenant_a.org.slug, tenant_a.agent.name, "--namespace", "users//x")


def test_the_hot_set_of_a_limited_key_holds_its_own_memories_first_in_line(tenant_a, users, alice_key):
    from memories.caching import cache

    hot = cache.HOT_KEY.format(org_id=tenant_a.org.id, agent_id=tenant_a.agent.id)
    cache.client().delete(hot)
    with tenant_context(tenant_a.org.id):  # Bob's rank above Alice's in the agent's hot set
        Memory.objects.filter(pk__in=[users.bob.pk, users.bob_other.pk]).update(confidence=1)
        Memory.objects.filter(pk=users.alice.pk).update(confidence=0.1)
    try:
        body = alice_key.get("/api/v1/hot", {"limit": 1}).json()
        assert [memory["id"] for memory in body["results"]] == [str(users.alice.id)]
    finally:
        cache.client().delete(hot)


def test_an_idempotent_retry_from_another_key_is_not_handed_the_first_keys_answer(tenant_a, users, key_for,
                                                                                     alice_key):
    everyone = key_for()
    body = {"content": "Bob's new phone number is private", "namespace": ["users", "bob"]}
    first = everyone.post("/api/v1/memories", body, HTTP_IDEMPOTENCY_KEY="retry-1")
    assert first.status_code == 201
    again = alice_key.post("/api/v1/memories", body, HTTP_IDEMPOTENCY_KEY="retry-1")
    assert again.status_code == 422 and again.json()["error"]["code"] == "idempotency_key_reused"
    assert "Bob" not in again.content.decode()
    assert everyone.post("/api/v1/memories", body, HTTP_IDEMPOTENCY_KEY="retry-1").json() == first.json()


def test_a_limited_key_sees_the_full_text_rank_but_not_the_score_drawn_from_the_whole_organisation(
        users, alice_key, api_a):
    """BM25 weighs words by how many of the organisation's memories hold them, Bob's too: a
    key limited to Alice's namespace, probing its own scores, would learn that. It is shown
    each result's full-text rank only; an organisation-wide key sees the score."""
    body = {"query": "allergic to peanuts", "mode": "fulltext"}
    [limited] = alice_key.post("/api/v1/search", body).json()["results"]
    assert limited["memory"]["id"] == str(users.alice.pk)
    assert limited["signals"]["fulltext"] == {"rank": 1}
    every = {result["memory"]["id"]: result for result in api_a.post("/api/v1/search", body).json()["results"]}
    assert every[str(users.alice.pk)]["signals"]["fulltext"]["bm25"] > 0
