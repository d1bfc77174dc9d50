"""Decay and expiry through the API (issue 19, items 1 and 2): GET /memories/weak, a write's
decay_rate and ttl, expired memories gone from every read at once and swept away for good,
and reads that refresh a time to live. Each tried across organisations and key reach."""

from datetime import timedelta
from uuid import UUID

import pytest
from django.db.models.functions import Now
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memories.lifecycle import decay, expiry
from memories.models import Erasure, LifecycleRun, Memory, MemoryVersion, RetrievalEvent
from tenants.context import tenant_context
from tests import factories

pytestmark = pytest.mark.django_db


def ok(response, *statuses):
    assert response.status_code in (statuses or (200, 201)), response.content
    return response.json() if response.content else None


def write(api, content: str, **fields) -> dict:
    return ok(api.post("/api/v1/memories", {"content": content, **fields}))["memory"]


def age(org_id, memory_id, days: float) -> None:
    with tenant_context(org_id):
        Memory.objects.filter(pk=memory_id).update(created_at=timezone.now() - timedelta(days=days))


def expire_now(org_id, memory_id) -> None:
    # An hour before the database's clock: the test's transaction fixes now() when it begins,
    # which on a slow machine is seconds before Python's clock reads here; and on a Citus
    # cluster a worker's transaction, which began later, has a later now() than the coordinator's.
    with tenant_context(org_id):
        Memory.objects.filter(pk=memory_id).update(expires_at=Now() - timedelta(hours=1))


# --------------------------------------------------------------------------- decay


def test_weak_lists_the_fading_memories_of_the_keys_reach_only(tenant_a, tenant_b, api_a, api_b, api_client_for):
    alice = write(api_a, "Alice's sister lives in Lyon", namespace=["users", "alice"])
    bob = write(api_a, "Bob once had a broken bike", namespace=["users", "bob"])
    episode = write(api_a, "Alice: we talked about Lyon", namespace=["users", "alice"], memory_type="episodic")
    for memory in (alice, bob, episode):
        age(tenant_a.org.id, memory["id"], 45)

    everything = ok(api_a.get("/api/v1/memories/weak"))
    assert {row["memory"]["id"] for row in everything["results"]} == {alice["id"], bob["id"]}
    assert everything["count"] == 2
    row = everything["results"][0]
    assert 0.05 < row["strength"] < 0.5 and row["memory"]["strength"] == pytest.approx(row["strength"], abs=1e-3)
    assert parse_datetime(row["archived_after"]) > timezone.now()

    assert [r["memory"]["id"] for r in ok(api_a.get("/api/v1/memories/weak", {"namespace": "users/alice"}))[
        "results"]] == [alice["id"]]
    _, key = factories.api_key(agent=tenant_a.agent, namespaces=["users/bob"])
    limited = api_client_for(tenant_a.agent)
    limited.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert [r["memory"]["id"] for r in ok(limited.get("/api/v1/memories/weak"))["results"]] == [bob["id"]]
    assert ok(api_b.get("/api/v1/memories/weak")) == {"count": 0, "results": []}
    assert ok(api_a.get("/api/v1/memories/weak", {"below": 0.01}))["count"] == 0


def test_a_confirmed_memory_leaves_the_weak_list(tenant_a, api_a):
    memory = write(api_a, "The user's blood type is O negative")
    age(tenant_a.org.id, memory["id"], 50)
    assert ok(api_a.get("/api/v1/memories/weak"))["count"] == 1
    confirmed = ok(api_a.post(f"/api/v1/memories/{memory['id']}/confirm", {}))
    assert confirmed["strength"] == 1.0 and confirmed["decay_rate"] == 0.0
    assert ok(api_a.get("/api/v1/memories/weak"))["count"] == 0


def test_the_organisations_weak_list_says_when_its_weakest_were_counted_and_never_crosses_a_keys_reach(
        tenant_a, tenant_b, api_a, api_b, api_client_for):
    alice = write(api_a, "Alice's sister lives in Lyon", namespace=["users", "alice"])
    bob = write(api_a, "Bob once had a broken bike", namespace=["users", "bob"])
    other = write(api_b, "Another organisation's fading memory")
    for org, memory, days in ((tenant_a, alice, 45), (tenant_a, bob, 60), (tenant_b, other, 70)):
        age(org.org.id, memory["id"], days)
    assert "as_of" not in ok(api_a.get("/api/v1/memories/weak"))  # never counted: the scan, exact
    for tenant in (tenant_a, tenant_b):
        decay.count_organisation_bands(org_id=tenant.org.id)

    everything = ok(api_a.get("/api/v1/memories/weak"))
    assert everything["about"] is True and parse_datetime(everything["as_of"]) <= timezone.now()
    assert [row["memory"]["id"] for row in everything["results"]] == [bob["id"], alice["id"]]
    assert everything["count"] == 2
    _, key = factories.api_key(agent=tenant_a.agent, namespaces=["users/alice"])
    limited = api_client_for(tenant_a.agent)
    limited.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    within = ok(limited.get("/api/v1/memories/weak"))
    assert [row["memory"]["id"] for row in within["results"]] == [alice["id"]] and "as_of" not in within
    assert [row["memory"]["id"] for row in ok(api_b.get("/api/v1/memories/weak"))["results"]] == [other["id"]]


@pytest.mark.parametrize("query, field", [({"below": 2}, "below"), ({"limit": 0}, "limit"),
                                          ({"offset": -1}, "offset"), ({"colour": "red"}, "colour")])
def test_weak_refuses_bad_filters_by_name(api_a, query, field):
    response = api_a.get("/api/v1/memories/weak", query)
    assert response.status_code == 400 and field in response.json()["error"]["fields"], response.content


def test_episodes_do_not_decay_unless_the_writer_says_so(api_a):
    assert write(api_a, "Alice: hello", memory_type="episodic")["decay_rate"] == 0.0
    assert write(api_a, "Alice: bye", memory_type="episodic", decay_rate=0.2)["decay_rate"] == 0.2
    assert write(api_a, "A plain fact")["decay_rate"] == 0.1
    refused = api_a.post("/api/v1/memories", {"content": "A fact", "decay_rate": -1})
    assert refused.status_code == 400 and "decay_rate" in refused.json()["error"]["fields"]


# --------------------------------------------------------------------------- time to live


def test_a_write_with_a_ttl_expires_that_long_after(api_a):
    before = timezone.now()
    memory = write(api_a, "The user is in Paris this week", ttl=3600)
    assert memory["ttl_seconds"] == 3600
    expires = parse_datetime(memory["expires_at"])
    assert before + timedelta(seconds=3600) <= expires <= timezone.now() + timedelta(seconds=3600)


@pytest.mark.parametrize("body, field", [
    ({"ttl": 0}, "ttl"), ({"ttl": -5}, "ttl"), ({"ttl": "soon"}, "ttl"), ({"ttl": 1.5}, "ttl"),
    ({"ttl": 10, "expires_at": "2030-01-01T00:00:00Z"}, "ttl"),
])
def test_a_bad_ttl_is_a_400_naming_it_and_writes_nothing(tenant_a, api_a, body, field):
    with tenant_context(tenant_a.org.id):
        before = Memory.objects.count()
    response = api_a.post("/api/v1/memories", {"content": "Never stored", **body})
    assert response.status_code == 400 and field in response.json()["error"]["fields"], response.content
    batch = api_a.post("/api/v1/memories", {"memories": [{"content": "Never stored either", **body}]})
    assert batch.status_code == 400, batch.content
    if "expires_at" not in body and body["ttl"] != 1.5:  # the store's ttl is minutes (fractions too)
        store = api_a.put("/api/v1/store/items", {"namespace": ["users", "x"], "key": "k", "value": {}, **body})
        assert store.status_code == 422 and "ttl" in store.json()["error"]["fields"], store.content
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.count() == before


def test_an_expired_memory_is_gone_from_every_read_at_once(tenant_a, api_a):
    memory = write(api_a, "The door code is 4711 until Friday", ttl=600, namespace=["users", "alice"])
    ok(api_a.put("/api/v1/store/items", {"namespace": ["users", "alice"], "key": "code", "value": {"code": 4711},
                                         "ttl": 10}), 204)
    kept = write(api_a, "The user's door is green", namespace=["users", "alice"])
    with tenant_context(tenant_a.org.id):
        item = Memory.objects.get(namespace="users/alice", key="code")
    expire_now(tenant_a.org.id, memory["id"])
    expire_now(tenant_a.org.id, item.pk)

    assert api_a.get(f"/api/v1/memories/{memory['id']}").status_code == 404
    listed = [m["id"] for m in ok(api_a.get("/api/v1/memories", {"namespace": "users/alice"}))["results"]]
    assert listed == [kept["id"]]
    assert memory["id"] in [m["id"] for m in ok(api_a.get("/api/v1/memories", {"include_expired": "true"}))[
        "results"]]
    found = ok(api_a.post("/api/v1/search", {"query": "door code", "filters": {"namespace": "users/alice"}}))
    assert [r["memory"]["id"] for r in found["results"]] == [kept["id"]]
    assert ok(api_a.get("/api/v1/store/items", {"namespace": "users.alice", "key": "code"})) is None
    assert ok(api_a.post("/api/v1/store/items/search", {"namespace_prefix": ["users", "alice"]}))["items"] == []


def test_the_sweep_removes_expired_memories_for_good_and_records_it(tenant_a, tenant_b, api_a, api_b):
    gone = write(api_a, "A one-time password was sent", ttl=60)
    theirs = write(api_b, "Beta's memory that lives on", ttl=3600)
    expire_now(tenant_a.org.id, gone["id"])

    removed = expiry.expire()

    assert removed == 1
    with tenant_context(tenant_a.org.id):
        assert not Memory.objects.filter(pk=gone["id"]).exists()
        assert not MemoryVersion.objects.filter(memory_id=gone["id"]).exists()
        erasure = Erasure.objects.get(via="expiry")
        assert erasure.scope == {"expired": True} and erasure.counts["memories"] == 1
        assert LifecycleRun.objects.get(job="expiry").counts["memories"] == 1
    assert ok(api_b.get(f"/api/v1/memories/{theirs['id']}"))["content"] == "Beta's memory that lives on"
    assert expiry.expire() == 0  # nothing left: idempotent


def test_a_put_without_ttl_keeps_the_item_for_good_and_an_explicit_expiry_replaces_the_ttl(tenant_a, api_a):
    ok(api_a.put("/api/v1/store/items", {"namespace": ["users", "a"], "key": "k", "value": {"n": 1}, "ttl": 1}), 204)
    ok(api_a.put("/api/v1/store/items", {"namespace": ["users", "a"], "key": "k", "value": {"n": 2}}), 204)
    with tenant_context(tenant_a.org.id):
        stored = Memory.objects.get(namespace="users/a", key="k")
        assert stored.expires_at is None and stored.ttl_seconds is None
    memory = write(api_a, "Temporary", ttl=60)
    changed = ok(api_a.patch(f"/api/v1/memories/{memory['id']}", {"expires_at": "2031-01-01T00:00:00Z"},
                             HTTP_IF_MATCH='"1"'))
    assert changed["ttl_seconds"] is None and changed["expires_at"].startswith("2031-01-01")


# --------------------------------------------------------------------------- explain


def test_explain_says_why_a_memory_is_held_and_ranks_as_it_does(tenant_a, api_a, api_b):
    old = write(api_a, "The user's first dog was called Rex", importance=0.5, namespace=["users", "alice"])
    new = ok(api_a.post(f"/api/v1/memories/{old['id']}/supersede",
                        {"content": "The user's first dog was called Max", "reason": "misheard"}))["memory"]
    age(tenant_a.org.id, new["id"], 20)
    ok(api_a.post("/api/v1/search", {"query": "dog called Max", "filters": {"namespace": "users/alice"}}))

    explained = ok(api_a.get(f"/api/v1/memories/{new['id']}/explain"))

    assert explained["memory"]["id"] == new["id"]
    held = explained["strength"]
    assert 0.05 < held["value"] < 1 and held["decay_rate"] == 0.1 and held["threshold"] == 0.05
    assert parse_datetime(held["archived_after"]) > timezone.now()
    parts, weights = explained["ranking"]["parts"], explained["ranking"]["weights"]
    assert parts["strength"] == pytest.approx(held["value"], abs=1e-3) and parts["importance"] == 0.5
    assert explained["ranking"]["without_relevance"] == pytest.approx(
        sum(weights[name] * value for name, value in parts.items()), abs=1e-5)
    assert [v["operation"] for v in explained["versions"]] == ["create"]
    [edge] = explained["relationships"]
    assert edge == {**edge, "direction": "outgoing", "relation_type": "supersedes", "memory_id": old["id"]}
    [seen] = explained["retrievals"]
    assert seen["query"] == "dog called Max" and seen["rank"] == 1
    assert api_b.get(f"/api/v1/memories/{new['id']}/explain").status_code == 404


# --------------------------------------------------------------------------- stats


def test_stats_count_what_the_key_reaches_with_strength_bands_and_the_last_runs(tenant_a, tenant_b, api_a, api_b,
                                                                               api_client_for):
    from memories.lifecycle import decay

    with tenant_context(tenant_a.org.id):
        LifecycleRun.objects.all().delete()  # the fixture's
    fresh = write(api_a, "Alice likes jazz", namespace=["users", "alice"])
    fading = write(api_a, "Alice once visited Oslo", namespace=["users", "alice"])
    faded = write(api_a, "Bob had a cold in spring", namespace=["users", "bob"])
    write(api_a, "Bob: hello there", namespace=["users", "bob"], memory_type="episodic")
    age(tenant_a.org.id, fading["id"], 30)
    age(tenant_a.org.id, faded["id"], 300)

    everything = ok(api_a.get("/api/v1/stats", {"namespace": "users"}))
    memories = everything["memories"]
    assert memories["total"] == 4 and memories["live"] == 4 and memories["by_memory_type"]["episodic"] == 1
    assert memories["strength"] == {"strong": 1, "fading": 1, "faded": 1, "not_decaying": 1}
    assert sum(day["created"] for day in everything["growth"]) == 2  # the aged two were written long ago
    assert everything["lifecycle"] == {"decay": None, "expiry": None, "consolidation": None}

    decay.decay_organisation(org_id=tenant_a.org.id)
    after = ok(api_a.get("/api/v1/stats", {"namespace": "users"}))
    assert after["memories"]["by_status"] == {"active": 3, "archived": 1}
    assert after["lifecycle"]["decay"]["counts"]["archived"] == 1

    _, key = factories.api_key(agent=tenant_a.agent, namespaces=["users/alice"])
    alice_only = api_client_for(tenant_a.agent)
    alice_only.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    hers = ok(alice_only.get("/api/v1/stats"))
    assert hers["memories"]["total"] == 2 and "counts" not in hers["lifecycle"]["decay"]
    theirs = ok(api_b.get("/api/v1/stats", {"namespace": "users"}))
    assert theirs["memories"]["total"] == 0 and theirs["lifecycle"]["decay"]["counts"]["archived"] == 0
    assert fresh["id"] not in str(theirs)


@pytest.mark.parametrize("few", [1_000, -1])  # found through the returned ids' index; by walking the latest events
def test_explain_shows_the_latest_searches_that_returned_the_memory_whichever_way_they_are_found(
        tenant_a, api_a, monkeypatch, few):
    """A memory returned by few searches has its events found through the index of returned
    ids, one returned by many by walking the organisation's latest events (its retrieval count
    says which: memories.retrieval.explain.FEW_RETRIEVALS): the same ten, the latest first,
    with another memory's searches between them."""
    from memories.retrieval import explain

    monkeypatch.setattr(explain, "FEW_RETRIEVALS", few)
    fact = write(api_a, "The user's cat is called Miso", namespace=["users", "alice"])
    other = write(api_a, "The user plays the cello", namespace=["users", "alice"])
    for number in range(14):
        ok(api_a.post("/api/v1/search", {"query": f"cat called Miso {number}", "filters": {"namespace": "users/alice"}}))
        ok(api_a.post("/api/v1/search", {"query": f"cello {number}", "filters": {"namespace": "users/alice"}}))
    with tenant_context(tenant_a.org.id):
        holding = [event for event in RetrievalEvent.objects.filter(org_id=tenant_a.org.id).order_by("-created_at", "-id")
                   if UUID(fact["id"]) in event.returned_memory_ids]
    explained = ok(api_a.get(f"/api/v1/memories/{fact['id']}/explain"))["retrievals"]
    assert len(holding) > explain.RETRIEVALS_SHOWN and other["id"] != fact["id"]
    assert [seen["event_id"] for seen in explained] == [str(event.pk) for event in holding][:explain.RETRIEVALS_SHOWN]
    assert [seen["created_at"] for seen in explained] == sorted((seen["created_at"] for seen in explained), reverse=True)
