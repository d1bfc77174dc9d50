"""LangGraph's store API over HTTP (integrations.langgraph_store), request by request: the shapes
langgraph_sdk sends and reads, what each item is as a memory, and what is refused. Filters and
namespace listings are checked against LangGraph's own InMemoryStore holding the same items.
The SDK itself drives a live server in test_langgraph_sdk.py."""

import json
from datetime import timedelta

import pytest
from django.db.models.functions import Now
from django.utils import timezone
from langgraph.store.memory import InMemoryStore

from memories.models import Memory, MemoryVersion, RetrievalEvent
from tenants.context import tenant_context

pytestmark = pytest.mark.django_db

ITEMS = "/api/v1/store/items"


def put(api, namespace, key, value, **extra):
    response = api.put(ITEMS, {"namespace": namespace, "key": key, "value": value, **extra})
    assert response.status_code == 204, response.content
    assert response.content == b""
    return response


def get(api, namespace, key, **params):
    response = api.get(ITEMS, {"namespace": ".".join(namespace), "key": key, **params})
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("application/json")
    return json.loads(response.content)


def search(api, prefix=(), **body):
    response = api.post(f"{ITEMS}/search", {"namespace_prefix": list(prefix), **body})
    assert response.status_code == 200, response.content
    return response.json()["items"]


def invalid(response, field):
    assert response.status_code == 422, response.content
    error = response.json()["error"]
    assert field in error["fields"], error
    assert field in error["message"] or error["message"]
    return error


def memory_of(org, namespace, key):
    with tenant_context(org.id):
        return Memory.objects.get(namespace="/".join(namespace), key=key, deleted_at__isnull=True)


def test_an_item_is_put_got_updated_and_deleted_in_langgraph_s_shapes(tenant_a, api_a):
    put(api_a, ["users", "alice"], "diet", {"text": "vegetarian", "since": 2019})
    item = get(api_a, ["users", "alice"], "diet")
    assert set(item) == {"namespace", "key", "value", "created_at", "updated_at"}
    assert item["namespace"] == ["users", "alice"] and item["key"] == "diet"
    assert item["value"] == {"text": "vegetarian", "since": 2019}

    put(api_a, ["users", "alice"], "diet", {"text": "vegan"})  # last write wins
    again = get(api_a, ["users", "alice"], "diet")
    assert again["value"] == {"text": "vegan"} and again["created_at"] == item["created_at"]
    assert again["updated_at"] > item["updated_at"]

    memory = memory_of(tenant_a.org, ["users", "alice"], "diet")  # a memory like any other
    assert (memory.metadata, memory.content, memory.version, memory.agent_id) == (
        {"text": "vegan"}, '{"text": "vegan"}', 2, tenant_a.agent.id)
    assert memory.indexed and memory.embedding is not None and memory.decay_rate == 0
    with tenant_context(tenant_a.org.id):
        versions = MemoryVersion.objects.filter(memory=memory).order_by("version_num")
        assert [(v.operation, v.metadata) for v in versions] == [
            ("create", {"text": "vegetarian", "since": 2019}), ("update", {"text": "vegan"})]

    deleted = api_a.delete(ITEMS, {"namespace": ["users", "alice"], "key": "diet"})
    assert deleted.status_code == 204 and deleted.content == b""
    missing = api_a.get(ITEMS, {"namespace": "users.alice", "key": "diet"})
    assert missing.status_code == 200 and missing.content == b"null"  # JSON null, as the reference server
    assert api_a.delete(ITEMS, {"namespace": ["users", "alice"], "key": "diet"}).status_code == 204
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.get(pk=memory.pk).deleted_at is not None  # its history stays


def test_index_decides_what_is_embedded_and_what_search_by_meaning_finds(tenant_a, api_a):
    put(api_a, ["docs"], "tea", {"text": "Green tea in the morning", "id": 17}, index=["text"])
    put(api_a, ["docs"], "coffee", {"text": "Espresso after lunch"}, index=False)
    put(api_a, ["docs"], "nothing", {"other": "Matcha"}, index=["text"])  # no text at its paths
    tea, coffee, nothing = (memory_of(tenant_a.org, ["docs"], key) for key in ("tea", "coffee", "nothing"))
    assert (tea.content, tea.indexed, tea.embedding is not None) == ("Green tea in the morning", True, True)
    assert (coffee.content, coffee.indexed, coffee.embedding) == ('{"text": "Espresso after lunch"}', False, None)
    assert (nothing.indexed, nothing.embedding) == (False, None)

    found = search(api_a, ["docs"], query="a hot drink")
    assert [item["key"] for item in found] == ["tea"]  # only what was embedded is found by meaning
    assert 0 < found[0]["score"] <= 1
    assert {item["key"] for item in search(api_a, ["docs"])} == {"tea", "coffee", "nothing"}

    put(api_a, ["docs"], "coffee", {"text": "Espresso after lunch"})  # indexed now: embedded
    coffee = memory_of(tenant_a.org, ["docs"], "coffee")
    assert coffee.indexed and coffee.embedding is not None
    put(api_a, ["docs"], "tea", {"text": "Green tea in the morning"}, index=False)  # and back: its vector goes
    tea = memory_of(tenant_a.org, ["docs"], "tea")
    assert (tea.indexed, tea.embedding, tea.version) == (False, None, 2)
    assert api_a.get(f"/api/v1/memories/{tea.pk}").json()["embedding_status"] == "not_indexed"


def test_search_by_meaning_orders_by_similarity_pages_and_is_recorded(tenant_a, api_a):
    for key, text in (("a", "The user is allergic to peanuts"), ("b", "The user lives in Porto"),
                      ("c", "The user likes hiking in the mountains"), ("d", "Peanut butter makes the user ill")):
        put(api_a, ["users", "u1"], key, {"text": text}, index=["text"])
    put(api_a, ["users", "u10"], "z", {"text": "The user is allergic to peanuts too"}, index=["text"])
    everything = search(api_a, ["users", "u1"], query="food allergy: peanuts", limit=4)
    scores = [item["score"] for item in everything]
    assert scores == sorted(scores, reverse=True) and {item["key"] for item in everything[:2]} == {"a", "d"}
    assert all(item["namespace"] == ["users", "u1"] for item in everything)  # u10 is not under users/u1
    assert search(api_a, ["users", "u1"], query="food allergy: peanuts", limit=2, offset=1) == everything[1:3]
    with tenant_context(tenant_a.org.id):
        event = RetrievalEvent.objects.filter(kind="namespace_search").latest("created_at")
    assert event.namespace == "users/u1" and len(event.returned_memory_ids) == 2


def test_search_without_a_query_lists_the_last_updated_first_with_a_null_score(api_a):
    for key in ("one", "two", "three"):
        put(api_a, ["notes"], key, {"n": key})
    put(api_a, ["notes"], "one", {"n": "one, again"})
    listed = search(api_a, ["notes"])
    assert [item["key"] for item in listed] == ["one", "three", "two"]
    assert all(item["score"] is None for item in listed)
    assert [item["key"] for item in search(api_a, ["notes"], limit=1, offset=1)] == ["three"]
    assert search(api_a, ["no", "such"]) == []
    assert {item["key"] for item in search(api_a, [])} >= {"one", "two", "three"}  # the whole store


VALUES = {
    "a": {"kind": "note", "score": 3, "tags": ["x"], "author": {"name": "Ana"}, "word": "apple"},
    "b": {"kind": "note", "score": 7.5, "tags": ["x", "y"], "word": "banana"},
    "c": {"kind": "task", "score": 10, "author": {"name": "Bo"}, "word": "cherry"},
    "d": {"kind": "task", "score": "10", "word": "Damson"},
    "e": {"kind": None, "score": True},
    "f": {"other": 1},
}
FILTERS = [
    {"kind": "note"}, {"kind": {"$eq": "task"}}, {"kind": {"$ne": "note"}}, {"kind": None},
    {"score": 3}, {"score": 3.0}, {"score": {"$gt": 3}}, {"score": {"$gte": 3}}, {"score": {"$lt": 10}},
    {"score": {"$lte": 7.5}}, {"score": {"$gte": 3, "$lt": 10}}, {"tags": ["x"]}, {"tags": ["x", "y"]},
    {"author": {"name": "Ana"}}, {"kind": "note", "score": {"$gt": 5}}, {"absent": {"$ne": 1}},
]


@pytest.mark.parametrize("value_filter", FILTERS, ids=[json.dumps(f) for f in FILTERS])
def test_a_filter_over_the_value_selects_what_langgraph_s_own_store_selects(api_a, value_filter):
    reference = InMemoryStore()
    ranges = any(isinstance(v, dict) and {"$gt", "$gte", "$lt", "$lte"} & set(v) for v in value_filter.values())
    for key, value in VALUES.items():
        put(api_a, ["filtered"], key, value, index=False)
        # LangGraph's in-memory store compares ranges with float(), and fails on what is no
        # number; here a field that is no number never matches a numeric range.
        if not ranges or type(value.get("score")) in (int, float):
            reference.put(("filtered",), key, value, index=False)
    expected = {item.key for item in reference.search(("filtered",), filter=value_filter, limit=100)}
    assert {item["key"] for item in search(api_a, ["filtered"], filter=value_filter, limit=100)} == expected
    # The same filter narrows a search by meaning.
    for key, value in VALUES.items():
        put(api_a, ["filtered-embedded"], key, value)
    found = search(api_a, ["filtered-embedded"], filter=value_filter, query="a note about fruit", limit=100)
    assert {item["key"] for item in found} == expected


def test_range_filters_compare_strings_with_strings_by_code_point(api_a):
    for key, value in VALUES.items():
        put(api_a, ["filtered"], key, value, index=False)
    assert {i["key"] for i in search(api_a, ["filtered"], filter={"word": {"$gte": "banana"}})} == {"b", "c"}
    assert {i["key"] for i in search(api_a, ["filtered"], filter={"word": {"$lt": "apple"}})} == {"d"}  # "D" < "a"
    assert {i["key"] for i in search(api_a, ["filtered"], filter={"score": {"$gte": "10"}})} == {"d"}


NAMESPACES = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f"),
              ("users", "alice", "prefs"), ("users", "bob", "prefs"), ("users", "alice2")]
LISTINGS = [{}, {"prefix": ["a", "b"]}, {"prefix": ["a", "b"], "max_depth": 3}, {"suffix": ["f"]},
            {"prefix": ["users", "*", "prefs"]}, {"suffix": ["*", "prefs"]}, {"prefix": ["a"], "suffix": ["f"]},
            {"max_depth": 1}, {"max_depth": 2, "limit": 2, "offset": 1}, {"prefix": ["users", "alice"]},
            {"prefix": ["nothing"]}]


@pytest.mark.parametrize("listing", LISTINGS, ids=[json.dumps(listing) for listing in LISTINGS])
def test_namespaces_are_listed_as_langgraph_s_own_store_lists_them(api_a, listing):
    reference = InMemoryStore()
    for namespace in NAMESPACES:
        put(api_a, list(namespace), "k", {"v": 1}, index=False)
        reference.put(namespace, "k", {"v": 1}, index=False)
    expected = [list(namespace) for namespace in reference.list_namespaces(
        prefix=tuple(listing.get("prefix", ())) or None, suffix=tuple(listing.get("suffix", ())) or None,
        max_depth=listing.get("max_depth"), limit=listing.get("limit", 100), offset=listing.get("offset", 0))]
    response = api_a.post("/api/v1/store/namespaces", listing)
    assert response.status_code == 200, response.content
    assert response.json() == {"namespaces": expected}


def test_ttl_is_in_minutes_and_reads_refresh_it_unless_told_not_to(tenant_a, api_a):
    put(api_a, ["users", "alice"], "mood", {"text": "calm"}, ttl=90)
    memory = memory_of(tenant_a.org, ["users", "alice"], "mood")
    assert memory.ttl_seconds == 5400
    assert timedelta(minutes=89) < memory.expires_at - timezone.now() <= timedelta(minutes=90)

    def pull_back():
        with tenant_context(tenant_a.org.id):
            Memory.objects.filter(pk=memory.pk).update(expires_at=timezone.now() + timedelta(minutes=5))

    def minutes_left():
        with tenant_context(tenant_a.org.id):
            return (Memory.objects.get(pk=memory.pk).expires_at - timezone.now()).total_seconds() / 60

    pull_back()
    get(api_a, ["users", "alice"], "mood", refresh_ttl="false")
    search(api_a, ["users"], refresh_ttl=False)
    search(api_a, ["users"], query="calm", refresh_ttl=False)
    assert minutes_left() < 6
    get(api_a, ["users", "alice"], "mood")
    assert minutes_left() > 89
    for read in (lambda: search(api_a, ["users"]), lambda: search(api_a, ["users"], query="calm")):
        pull_back()
        read()
        assert minutes_left() > 89

    put(api_a, ["users", "alice"], "mood", {"text": "calm"}, ttl=0.5)  # fractions of a minute
    assert memory_of(tenant_a.org, ["users", "alice"], "mood").ttl_seconds == 30
    put(api_a, ["users", "alice"], "mood", {"text": "calm"})  # without ttl: for good
    assert memory_of(tenant_a.org, ["users", "alice"], "mood").expires_at is None

    put(api_a, ["users", "alice"], "gone", {"text": "soon"}, ttl=1)
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(key="gone").update(expires_at=Now() - timedelta(hours=1))
    assert get(api_a, ["users", "alice"], "gone") is None
    assert "gone" not in {item["key"] for item in search(api_a, ["users"])}


BAD_PUTS = [
    ({"namespace": ["users", "a.b"]}, "namespace"), ({"namespace": ["users", ""]}, "namespace"),
    ({"namespace": ["users", "a/b"]}, "namespace"), ({"namespace": []}, "namespace"),
    ({"namespace": "users.alice"}, "namespace"), ({"namespace": ["langgraph", "x"]}, "namespace"),
    ({"namespace": ["users", 7]}, "namespace"), ({"namespace": ["x" * 300]}, "namespace"),
    ({"key": ""}, "key"), ({"value": "vegetarian"}, "value"), ({"value": ["a"]}, "value"), ({"value": None}, "value"),
    ({"value": {"text": "x" * 300_000}}, "value"), ({"ttl": 0}, "ttl"), ({"ttl": -5}, "ttl"),
    ({"ttl": "ten"}, "ttl"), ({"ttl": 10 * 366 * 24 * 60}, "ttl"), ({"ttl": 1e308}, "ttl"), ({"ttl": 0.001}, "ttl"), ({"index": True}, "index"),
    ({"index": "text"}, "index"), ({"index": ["text", ""]}, "index"), ({"colour": "red"}, "colour"),
]


@pytest.mark.parametrize(("change", "field"), BAD_PUTS, ids=[f"{field}:{json.dumps(c)[:40]}" for c, field in BAD_PUTS])
def test_a_bad_put_is_a_422_naming_the_field_and_writes_nothing(tenant_a, api_a, change, field):
    with tenant_context(tenant_a.org.id):
        before = Memory.objects.count()
    body = {"namespace": ["users", "alice"], "key": "diet", "value": {"text": "vegetarian"}, **change}
    invalid(api_a.put(ITEMS, body), field)
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.count() == before


def test_who_said_an_item_is_the_put_s_speaker_or_a_name_in_its_value(tenant_a, api_a):
    """Issue 34: `speaker` in the put's body, or else a name the value holds under "speaker"
    (LangGraph's clients send no other field), is linked as the item's speaker; a put replaces
    the item whole, speaker included; anything else under the value's "speaker" is its data."""
    def speaker(key):
        memory = memory_of(tenant_a.org, ["users", "alice"], key)
        with tenant_context(tenant_a.org.id):
            return list(memory.entity_links.filter(role="speaker").values_list("entity__name", flat=True))

    put(api_a, ["users", "alice"], "diet", {"text": "I am vegetarian"}, speaker="Alice")
    put(api_a, ["users", "alice"], "pet", {"text": "I have a cat", "speaker": "Alice"})
    put(api_a, ["users", "alice"], "device", {"text": "the kitchen speaker", "speaker": {"model": "X1"}})
    assert (speaker("diet"), speaker("pet"), speaker("device")) == (["Alice"], ["Alice"], [])
    assert get(api_a, ["users", "alice"], "device")["value"]["speaker"] == {"model": "X1"}
    put(api_a, ["users", "alice"], "diet", {"text": "I am vegan now"}, speaker="Bob")
    assert speaker("diet") == ["Bob"]
    put(api_a, ["users", "alice"], "diet", {"text": "I am vegan now, really"})
    assert speaker("diet") == []
    invalid(api_a.put(ITEMS, {"namespace": ["users", "alice"], "key": "x", "value": {"text": "hi"},
                              "speaker": ""}), "speaker")
    with tenant_context(tenant_a.org.id):
        assert not Memory.objects.filter(key="x").exists()


def test_bad_reads_are_422s_naming_the_field(api_a):
    invalid(api_a.get(ITEMS, {"namespace": "users..alice", "key": "k"}), "namespace")
    invalid(api_a.get(ITEMS, {"namespace": "", "key": "k"}), "namespace")
    invalid(api_a.get(ITEMS, {"namespace": "users.alice"}), "key")
    invalid(api_a.get(ITEMS, {"namespace": "users.alice", "key": "k", "refresh_ttl": "maybe"}), "refresh_ttl")
    invalid(api_a.delete(ITEMS, {"namespace": ["users", "a.b"], "key": "k"}), "namespace")
    invalid(api_a.post(f"{ITEMS}/search", {"namespace_prefix": ["a.b"]}), "namespace_prefix")
    invalid(api_a.post(f"{ITEMS}/search", {"namespace_prefix": [], "filter": {"n": {"$in": [1]}}}), "filter.n")
    invalid(api_a.post(f"{ITEMS}/search", {"namespace_prefix": [], "filter": {"n": {"$gt": None}}}), "filter.n")
    invalid(api_a.post(f"{ITEMS}/search", {"namespace_prefix": [], "limit": 0}), "limit")
    invalid(api_a.post(f"{ITEMS}/search", {"namespace_prefix": [], "query": "x", "offset": 995, "limit": 10}),
            "offset")
    invalid(api_a.post("/api/v1/store/namespaces", {"prefix": ["a."]}), "prefix")
    invalid(api_a.post("/api/v1/store/namespaces", {"max_depth": 0}), "max_depth")


def test_the_api_key_may_come_in_x_api_key_as_langgraph_s_sdk_sends_it(tenant_a, api_a):
    from rest_framework.test import APIClient

    plain = APIClient()
    plain.credentials(HTTP_X_API_KEY=api_a.key)
    assert plain.put(ITEMS, {"namespace": ["k"], "key": "k", "value": {}}).status_code == 204
    assert plain.get("/api/v1/memories").status_code == 200  # any route: it is the same key
    both = APIClient()
    both.credentials(HTTP_X_API_KEY=api_a.key, HTTP_AUTHORIZATION=f"Bearer {api_a.key}")
    assert both.get(ITEMS, {"namespace": "k", "key": "k"}).json()["key"] == "k"
    mixed = APIClient()
    mixed.credentials(HTTP_X_API_KEY="mp_not-a-key", HTTP_AUTHORIZATION=f"Bearer {api_a.key}")
    assert mixed.get(ITEMS, {"namespace": "k", "key": "k"}).status_code == 401
    unknown = APIClient()
    unknown.credentials(HTTP_X_API_KEY="mp_not-a-key")
    assert unknown.get(ITEMS, {"namespace": "k", "key": "k"}).status_code == 401
