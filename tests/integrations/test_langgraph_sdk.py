"""The peers' real clients against a live server (Django's live_server, committed data):
langgraph_sdk's StoreClient, async and sync, every method; the platform's own Python client
(clients/python) and its PlatformStore inside a LangGraph graph; and organisation B's key trying
A's items through each of them."""

import asyncio
import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.errors import AuthenticationError, UnprocessableEntityError
from memory_platform_client import InvalidInput, MemoryPlatform, NotAuthenticated, OutOfReach, PlatformStore
from typing_extensions import TypedDict

from memories.models import Memory
from tenants.context import tenant_context
from tests import factories
from tests.markers import committing

pytestmark = [committing, pytest.mark.slow]


def api_url(live_server) -> str:
    return f"{live_server.url}/api/v1"


@pytest.fixture
def closing():
    """Closes the clients a test opened: a client keeps its connection to the live server open
    (keep-alive), and the server's thread for it, with its database session, stays until then."""
    opened = []
    yield lambda client: opened.append(client) or client
    for client in opened:
        client.close()


def test_the_async_sdk_works_unchanged_against_the_platform(tenant_a, api_a, live_server):
    async def scenario():
        client = get_client(url=api_url(live_server), api_key=api_a.key)
        stranger = get_client(url=api_url(live_server), api_key="mp_unknown")
        try:
            await steps(client.store, stranger.store)
        finally:
            await client.aclose()
            await stranger.aclose()

    async def steps(store, stranger):
        await store.put_item(["users", "alice"], "diet", {"text": "vegetarian", "since": 2019}, index=["text"])
        await store.put_item(["users", "alice"], "city", {"text": "Lisbon", "since": 2023}, ttl=60)
        await store.put_item(["users", "alice", "work"], "role", {"text": "engineer", "since": 2021}, index=False)
        await store.put_item(["users", "bob"], "diet", {"text": "omnivore", "since": 2010})

        item = await store.get_item(["users", "alice"], "diet")
        assert item["value"] == {"text": "vegetarian", "since": 2019} and item["namespace"] == ["users", "alice"]
        assert await store.get_item(["users", "alice"], "nothing") is None
        assert (await store.get_item(["users", "alice"], "city", refresh_ttl=False))["key"] == "city"

        found = (await store.search_items(["users", "alice"], query="what food does she eat?", limit=2))["items"]
        assert found[0]["key"] == "diet" and 0 < found[0]["score"] <= 1
        listed = (await store.search_items(["users"], filter={"since": {"$gte": 2019}}, limit=10))["items"]
        assert {(tuple(i["namespace"]), i["key"]) for i in listed} == {
            (("users", "alice"), "diet"), (("users", "alice"), "city"), (("users", "alice", "work"), "role")}
        assert all(i["score"] is None for i in listed)
        assert len((await store.search_items(["users"], limit=1, offset=1, refresh_ttl=False))["items"]) == 1
        assert (await store.search_items(["users"], filter={"text": {"$ne": "omnivore"}}, query="job",
                                         limit=5))["items"][0]["namespace"][0] == "users"

        namespaces = await store.list_namespaces(prefix=["users"], max_depth=2)
        assert namespaces == {"namespaces": [["users", "alice"], ["users", "bob"]]}
        assert (await store.list_namespaces(suffix=["work"]))["namespaces"] == [["users", "alice", "work"]]
        assert (await store.list_namespaces(limit=1, offset=1))["namespaces"] == [["users", "alice", "work"]]

        await store.delete_item(["users", "bob"], "diet")
        assert await store.get_item(["users", "bob"], "diet") is None
        await store.delete_item(["users", "bob"], "diet")  # none left: no error

        with pytest.raises(UnprocessableEntityError) as refused:  # the server's message reaches the caller
            await store.put_item(["users", "alice"], "bad", {"x": 1}, ttl=-1)
        assert "ttl" in refused.value.message
        with pytest.raises(UnprocessableEntityError) as refused:
            await store.search_items(["users"], filter={"since": {"$in": [1]}})
        assert "unsupported operator $in" in refused.value.message
        with pytest.raises(ValueError):  # the SDK's own check, before any request
            await store.get_item(["users.alice"], "diet")
        with pytest.raises(AuthenticationError) as unknown:
            await stranger.get_item(["users"], "k")
        assert unknown.value.message == "unknown API key"

    asyncio.run(scenario())
    with tenant_context(tenant_a.org.id):
        city = Memory.objects.get(namespace="users/alice", key="city")
        role = Memory.objects.get(namespace="users/alice/work", key="role")
    assert city.ttl_seconds == 3600 and city.expires_at is not None
    assert (role.indexed, role.embedding) == (False, None)


def test_the_sync_sdk_works_unchanged_against_the_platform(api_a, live_server, closing):
    store = closing(get_sync_client(url=api_url(live_server), api_key=api_a.key)).store
    store.put_item(["notes"], "n1", {"text": "buy oat milk", "priority": 2})
    store.put_item(["notes"], "n2", {"text": "call the plumber", "priority": 5})
    assert store.get_item(["notes"], "n1")["value"]["priority"] == 2
    assert [i["key"] for i in store.search_items(["notes"], filter={"priority": {"$gt": 3}})["items"]] == ["n2"]
    assert store.search_items(["notes"], query="groceries", limit=1)["items"][0]["key"] == "n1"
    assert store.list_namespaces()["namespaces"] == [["notes"]]
    store.delete_item(["notes"], "n1")
    assert store.get_item(["notes"], "n1") is None
    with pytest.raises(UnprocessableEntityError) as refused:
        store.put_item(["langgraph", "x"], "k", {"v": 1})
    assert "langgraph" in refused.value.message


def test_a_key_of_another_organisation_sees_nothing_through_the_sdk_or_the_client(tenant_a, tenant_b, api_a, api_b,
                                                                                   live_server, closing):
    mine = closing(get_sync_client(url=api_url(live_server), api_key=api_a.key)).store
    theirs = closing(get_sync_client(url=api_url(live_server), api_key=api_b.key)).store
    mine.put_item(["users", "alice"], "secret", {"text": "the door code is 4711"})
    assert theirs.get_item(["users", "alice"], "secret") is None
    assert theirs.search_items(["users"])["items"] == []
    assert theirs.search_items([], query="door code")["items"] == []
    assert theirs.search_items([], filter={"text": "the door code is 4711"})["items"] == []
    assert theirs.list_namespaces()["namespaces"] == []
    theirs.delete_item(["users", "alice"], "secret")  # deletes B's nothing
    theirs.put_item(["users", "alice"], "secret", {"text": "B's own"})
    assert mine.get_item(["users", "alice"], "secret")["value"] == {"text": "the door code is 4711"}

    with MemoryPlatform(live_server.url, api_b.key) as client:
        assert client.get_item(["users", "alice"], "secret")["value"] == {"text": "B's own"}
        assert [i["value"] for i in client.search_items([], query="door code")] == [{"text": "B's own"}]
        assert client.search(tenant_a.memory.content, limit=50) == [] or all(
            r["memory"]["org_id"] == str(tenant_b.org.id) for r in client.search(tenant_a.memory.content, limit=50))
    store_b = closing(PlatformStore(live_server.url, api_b.key))
    assert store_b.get(("users", "alice"), "secret").value == {"text": "B's own"}
    assert [item.value for item in store_b.search(("users",))] == [{"text": "B's own"}]
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.get(key="secret", deleted_at__isnull=True).metadata == {"text": "the door code is 4711"}


class Conversation(TypedDict):
    user: str
    message: str
    recalled: list[str]


def remembering_graph():
    """A graph that recalls what it knows of the user, then keeps what it was told: the
    retrieve-before-answer, store-after-answer flow of spec §3."""

    def recall(state: Conversation, runtime: Runtime) -> dict:
        found = runtime.store.search(("users", state["user"], "facts"), query=state["message"], limit=3)
        return {"recalled": [item.value["text"] for item in found]}

    def remember(state: Conversation, runtime: Runtime) -> dict:
        namespace = ("users", state["user"], "facts")
        runtime.store.put(namespace, f"fact-{len(runtime.store.search(namespace, limit=100))}",
                          {"text": state["message"]}, index=["text"], ttl=60 * 24)
        return {}

    graph = StateGraph(Conversation)
    graph.add_node("recall", recall)
    graph.add_node("remember", remember)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "remember")
    graph.add_edge("remember", END)
    return graph


def test_a_langgraph_graph_keeps_its_memory_in_the_platform_through_platform_store(tenant_a, api_a, api_b,
                                                                                     live_server, closing):
    app = remembering_graph().compile(store=closing(PlatformStore(live_server.url, api_a.key)))
    app.invoke({"user": "alice", "message": "I am allergic to peanuts", "recalled": []})
    app.invoke({"user": "alice", "message": "I moved to Lisbon last spring", "recalled": []})
    answer = app.invoke({"user": "alice", "message": "Can I eat this peanut butter sandwich?", "recalled": []})
    assert answer["recalled"][0] == "I am allergic to peanuts"

    async def asynchronously():  # the same graph, awaited: abatch
        store = PlatformStore(live_server.url, api_a.key)
        try:
            app_async = remembering_graph().compile(store=store)
            return await app_async.ainvoke({"user": "alice", "message": "Where do I live now?", "recalled": []})
        finally:
            await store.aclose()

    assert asyncio.run(asynchronously())["recalled"][0] == "I moved to Lisbon last spring"

    other = remembering_graph().compile(store=closing(PlatformStore(live_server.url, api_b.key)))
    assert other.invoke({"user": "alice", "message": "peanuts?", "recalled": []})["recalled"] == []

    with tenant_context(tenant_a.org.id):  # each fact a memory, with its ttl (a day) and its history
        facts = Memory.objects.filter(namespace="users/alice/facts", deleted_at__isnull=True).order_by("key")
        assert [(m.key, m.content, m.ttl_seconds) for m in facts][:2] == [
            ("fact-0", "I am allergic to peanuts", 86400), ("fact-1", "I moved to Lisbon last spring", 86400)]


def test_platform_store_answers_every_operation_and_maps_errors(tenant_a, api_a, live_server, closing):
    from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, MatchCondition, PutOp, SearchOp

    store = closing(PlatformStore(live_server.url, api_a.key))
    results = store.batch([
        PutOp(("docs", "a"), "1", {"text": "pandas dataframes", "n": 1}),
        PutOp(("docs", "b"), "2", {"text": "cooking pasta", "n": 2}, index=False),
        GetOp(("docs", "a"), "1"),
        SearchOp(("docs",), filter={"n": {"$gte": 2}}),
        SearchOp(("docs",), query="python data analysis", limit=1),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("docs",)),), max_depth=2),
        PutOp(("docs", "a"), "1", None),
        GetOp(("docs", "a"), "1"),
    ])
    assert results[:2] == [None, None]
    assert results[2].value == {"text": "pandas dataframes", "n": 1} and results[2].namespace == ("docs", "a")
    assert [item.key for item in results[3]] == ["2"] and results[3][0].score is None
    assert results[4][0].key == "1" and 0 < results[4][0].score <= 1
    assert results[5] == [("docs", "a"), ("docs", "b")]
    assert results[6:] == [None, None]
    assert store.list_namespaces(suffix=("b",)) == [("docs", "b")]

    with pytest.raises(InvalidNamespaceError):  # LangGraph's own check, before any request
        store.put(("docs", "a.b"), "k", {"v": 1})
    with pytest.raises(InvalidInput) as refused:
        store.put(("docs",), "k", {"v": 1}, ttl=-5)
    assert refused.value.status == 422 and "ttl" in refused.value.fields and "ttl" in str(refused.value)
    with pytest.raises(NotAuthenticated):
        closing(PlatformStore(live_server.url, "mp_unknown")).get(("docs",), "k")
    _, read_only = factories.api_key(agent=tenant_a.agent, read_only=True)
    reader = closing(PlatformStore(live_server.url, read_only))
    with pytest.raises(OutOfReach) as forbidden:
        reader.put(("docs",), "k", {"v": 1})
    assert forbidden.value.message == "this API key is read-only"
    assert reader.get(("docs", "b"), "2").value["n"] == 2

    with MemoryPlatform(live_server.url, api_a.key) as client:  # the REST API beside the store
        written = client.create_memory("The deploy window is Tuesday", namespace=["ops"], category="procedural")
        memory_id = written["memory"]["id"]
        assert client.get_memory(memory_id)["content"] == "The deploy window is Tuesday"
        client.update_memory(memory_id, version=1, content="The deploy window is Wednesday")
        assert [v["operation"] for v in client.memory_history(memory_id)] == ["create", "update"]
        assert client.search("when do we deploy?", limit=1)[0]["memory"]["id"] == memory_id
        assert client.retrieve("when do we deploy?", scope="ops")[0]["id"] == memory_id
