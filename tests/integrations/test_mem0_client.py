"""Mem0's own client (mem0ai's MemoryClient and AsyncMemoryClient), unchanged but for its host,
against the product served for real (uvicorn, a free port): every method the door serves, the
answers in Mem0's shapes; and the same tenancy as every door: another organisation's key sees
nothing, a key limited to users/alice reaches none of Bob's memories by id, filter, delete-all
or batch, a read-only key writes nothing. The methods that need Mem0's language model answer
501, and the client raises it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from mem0 import AsyncMemoryClient, MemoryClient
from mem0.exceptions import AuthenticationError, MemoryError, MemoryNotFoundError, ValidationError

from memories.models import Memory
from tenants.context import tenant_context
from tests import factories
from tests.markers import committing

pytestmark = [committing, pytest.mark.slow]

ALICE_TURNS = [
    {"role": "system", "content": "You are a helpful travel assistant."},
    {"role": "user", "content": "I'm vegetarian and allergic to peanuts."},
    {"role": "assistant", "content": "Noted: vegetarian meals, and nothing with peanuts."},
]
MEMORY_FIELDS = {"id", "memory", "user_id", "agent_id", "app_id", "session_id", "metadata", "categories",
                 "created_at", "updated_at", "expiration_date", "structured_attributes", "replaced_by", "synthesized"}


def host(served) -> str:
    return f"{served.base}/api/mem0"


@pytest.fixture
def connect(served):
    """MemoryClient(api_key=key, host=...), closed after the test (a client keeps its connection
    to the server open, and the server's thread for it)."""
    opened = []

    def make(key: str) -> MemoryClient:
        client = MemoryClient(api_key=key, host=host(served))
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.client.close()


@pytest.fixture
def keys(tenant_a, tenant_b):
    return {"full": factories.api_key(agent=tenant_a.agent)[1],
            "alice": factories.api_key(agent=tenant_a.agent, namespaces=["users/alice"])[1],
            "read_only": factories.api_key(agent=tenant_a.agent, read_only=True)[1],
            "other": factories.api_key(agent=tenant_b.agent)[1]}


def stored(org, memory_id) -> Memory:
    with tenant_context(org.id):
        return Memory.objects.get(org_id=org.id, pk=memory_id)


def test_the_client_adds_finds_changes_and_deletes_memories_unchanged(tenant_a, keys, connect):
    client = connect(keys["full"])
    assert (client.org_id, client.project_id) == (str(tenant_a.org.id), str(tenant_a.agent.id))

    verbatim = client.add(ALICE_TURNS, user_id="alice", infer=False, metadata={"source": "chat"})
    assert verbatim["status"] == "SUCCEEDED"
    assert [(r["event"], r["data"]["memory"]) for r in verbatim["results"]] == [
        ("ADD", ALICE_TURNS[1]["content"]), ("ADD", ALICE_TURNS[2]["content"])]  # the system prompt is not kept
    said = client.add([{"role": "user", "content": "I moved to Lisbon in May."},
                       {"role": "assistant", "content": "Lisbon is lovely in spring!"}],
                      user_id="alice", run_id="trip-1", metadata={"topic": "home"})
    assert [r["data"]["memory"] for r in said["results"]] == ["I moved to Lisbon in May."]  # what the user said
    assert client.add("I moved to Lisbon in May.", user_id="alice", run_id="trip-1")["results"] == []  # the same
    planner = client.add("Always book aisle seats.", agent_id="planner")["results"][0]["id"]
    run_only = client.add("Check the boarding gate twice.", run_id="r-9")["results"][0]["id"]

    food_id, reply_id = (r["id"] for r in verbatim["results"])
    lisbon_id = said["results"][0]["id"]
    food = client.get(food_id)
    assert set(food) == MEMORY_FIELDS
    assert (food["memory"], food["user_id"], food["agent_id"], food["session_id"]) == (
        ALICE_TURNS[1]["content"], "alice", None, None)
    assert food["metadata"] == {"source": "chat", "role": "user"} and food["categories"] == []
    assert client.get(reply_id)["metadata"]["role"] == "assistant"
    lisbon = client.get(lisbon_id)
    assert (lisbon["session_id"], lisbon["metadata"]) == ("trip-1", {"topic": "home"})
    assert stored(tenant_a.org, lisbon_id).namespace == "users/alice"
    assert (client.get(planner)["agent_id"], client.get(planner)["user_id"]) == ("planner", None)
    assert client.get(run_only)["session_id"] == "r-9"

    everything = client.get_all(filters={"user_id": "alice"})
    assert everything["count"] == 3 and everything["next"] is None and everything["previous"] is None
    assert [m["id"] for m in everything["results"]] == [lisbon_id, reply_id, food_id]  # the latest first
    first = client.get_all(filters={"user_id": "alice"}, page=1, page_size=2)
    assert [m["id"] for m in first["results"]] == [lisbon_id, reply_id] and first["count"] == 3
    assert "page=2" in first["next"] and first["previous"] is None
    second = client.get_all(filters={"user_id": "alice"}, page=2, page_size=2)
    assert [m["id"] for m in second["results"]] == [food_id] and second["next"] is None
    with pytest.raises(MemoryNotFoundError):
        client.get_all(filters={"user_id": "alice"}, page=3, page_size=2)
    assert [m["id"] for m in client.get_all(filters={"AND": [{"user_id": "alice"}, {"run_id": "trip-1"}]})[
        "results"]] == [lisbon_id]
    assert [m["id"] for m in client.get_all(filters={"agent_id": "planner"})["results"]] == [planner]
    today = datetime.now(UTC).date().isoformat()
    assert client.get_all(filters={"AND": [{"user_id": "alice"}, {"created_at": {"gte": today}}]})["count"] == 3
    assert client.get_all(filters={"user_id": "alice", "created_at": {"lt": "2001-01-01"}})["count"] == 0
    assert client.get_all(filters={"user_id": "alice"}, fields=["id", "memory"])["results"][0].keys() == {
        "id", "memory"}

    found = client.search("What is she allergic to?", filters={"user_id": "alice"}, top_k=2)["results"]
    assert found[0]["id"] == food_id and 0 < found[0]["score"] <= 1 and len(found) <= 2
    assert set(found[0]) == MEMORY_FIELDS - {"session_id"} | {"run_id", "score"}
    in_run = client.search("where does she live?", filters={"AND": [{"user_id": "alice"}, {"run_id": "trip-1"}]})
    assert [r["id"] for r in in_run["results"]] == [lisbon_id] and in_run["results"][0]["run_id"] == "trip-1"
    assert client.search("seats", filters={"agent_id": "planner"})["results"][0]["id"] == planner

    changed = client.update(food_id, text="Alice is vegan and allergic to peanuts.")
    assert changed["memory"] == "Alice is vegan and allergic to peanuts." and changed["id"] == food_id
    assert client.update(food_id, metadata={"source": "profile"})["metadata"] == {"source": "profile"}
    assert client.update(food_id, expiration_date="2999-12-31")["expiration_date"] == "2999-12-31"
    assert client.update(food_id, expiration_date=None)["expiration_date"] is None
    assert client.feedback(food_id, feedback="POSITIVE")["feedback"] == "POSITIVE"
    assert float(stored(tenant_a.org, food_id).usefulness_score) > 0.5

    history = client.history(food_id)
    assert [entry["event"] for entry in history] == ["ADD", "UPDATE", "UPDATE", "UPDATE", "UPDATE"]
    assert (history[0]["old_memory"], history[0]["new_memory"]) == (None, ALICE_TURNS[1]["content"])
    assert history[1]["old_memory"] == ALICE_TURNS[1]["content"] and history[1]["user_id"] == "alice"

    assert client.batch_update([{"memory_id": reply_id, "text": "Noted: vegan meals."}])["message"] == \
        "Successfully updated 1 memories"
    assert client.get(reply_id)["memory"] == "Noted: vegan meals."
    assert client.delete(reply_id) == {"message": "Memory deleted successfully!"}
    with pytest.raises(MemoryNotFoundError):
        client.get(reply_id)
    assert client.history(reply_id)[-1]["event"] == "DELETE"
    assert client.batch_delete([{"memory_id": planner}])["message"] == "Successfully deleted 1 memories"

    users = client.users()
    assert {(e["type"], e["name"], e["total_memories"]) for e in users["results"]} == {
        ("user", "alice", 2), ("run", "r-9", 1)}
    assert (users["count"], users["total_users"], users["total_agents"], users["total_runs"]) == (2, 1, 0, 1)

    client.delete_all(user_id="alice", run_id="trip-1")
    assert [m["id"] for m in client.get_all(filters={"user_id": "alice"})["results"]] == [food_id]
    assert client.delete_all(user_id="nobody")["message"] == "Memories deleted successfully!"
    assert client.delete_users(user_id="alice") == {"message": "Entity deleted successfully."}
    assert client.get_all(filters={"user_id": "alice"})["count"] == 0
    client.reset()
    assert client.users()["results"] == []
    with tenant_context(tenant_a.org.id):
        assert not Memory.objects.filter(pk__in=[food_id, lisbon_id, run_only]).exists()

    for needs_a_model in (lambda: client.create_memory_export("{}", filters={"user_id": "alice"}),
                          lambda: client.get_memory_export(filters={"user_id": "alice"}),
                          lambda: client.get_summary(filters={"user_id": "alice"})):
        with pytest.raises(MemoryError) as refused:  # 501
            needs_a_model()
        assert "language model" in refused.value.message


def test_the_async_client_works_unchanged(keys, served):
    async def scenario():
        async with AsyncMemoryClient(api_key=keys["full"], host=host(served)) as client:
            added = await client.add("My daughter Mia turns seven in March.", user_id="carol", run_id="chat-3")
            memory_id = added["results"][0]["id"]
            assert (await client.get(memory_id))["session_id"] == "chat-3"
            found = await client.search("When is Mia's birthday?", filters={"user_id": "carol"})
            assert found["results"][0]["id"] == memory_id
            assert (await client.get_all(filters={"user_id": "carol"}))["count"] == 1
            assert (await client.update(memory_id, text="Mia turns seven on 12 March."))["memory"] == \
                "Mia turns seven on 12 March."
            assert [entry["event"] for entry in await client.history(memory_id)] == ["ADD", "UPDATE"]
            await client.delete(memory_id)
            assert (await client.get_all(filters={"user_id": "carol"}))["count"] == 0

    asyncio.run(scenario())


def test_another_organisation_s_key_sees_and_changes_nothing_of_this_one(tenant_a, keys, connect):
    mine, theirs = connect(keys["full"]), connect(keys["other"])
    alice_id = mine.add("The door code is kept in the blue box.", user_id="alice")["results"][0]["id"]

    for call in (lambda: theirs.get(alice_id), lambda: theirs.history(alice_id), lambda: theirs.delete(alice_id),
                 lambda: theirs.update(alice_id, text="Planted"), lambda: theirs.feedback(alice_id, "NEGATIVE"),
                 lambda: theirs.batch_update([{"memory_id": alice_id, "text": "Planted"}]),
                 lambda: theirs.batch_delete([{"memory_id": alice_id}])):
        with pytest.raises(MemoryNotFoundError):
            call()
    assert theirs.get_all(filters={"user_id": "alice"})["count"] == 0
    assert theirs.search("door code", filters={"user_id": "alice"})["results"] == []
    assert theirs.users()["results"] == []
    theirs.delete_all(user_id="alice")
    theirs.delete_users(user_id="alice")
    theirs.add("Their Alice likes jazz.", user_id="alice")  # their own users/alice, in their organisation

    assert mine.get(alice_id)["memory"] == "The door code is kept in the blue box."
    assert [m["id"] for m in mine.get_all(filters={"user_id": "alice"})["results"]] == [alice_id]
    assert [(e["name"], e["total_memories"]) for e in mine.users()["results"]] == [("alice", 1)]


def test_a_key_limited_to_alice_reaches_none_of_bob_s_memories(tenant_a, keys, connect):
    full, alice = connect(keys["full"]), connect(keys["alice"])
    bob_id = full.add("Bob keeps bees on the roof of his flat.", user_id="bob")["results"][0]["id"]
    hive_id = full.add("The hive needs a new queen.", user_id="bob", run_id="hive")["results"][0]["id"]
    planner_id = full.add("Always book aisle seats.", agent_id="planner")["results"][0]["id"]
    alice_id = alice.add("Alice bakes sourdough on Sundays.", user_id="alice", run_id="hive")["results"][0]["id"]

    for write in (lambda: alice.add("Planted", user_id="bob"), lambda: alice.add("Planted", agent_id="planner"),
                  lambda: alice.add("Planted", run_id="hive"), lambda: alice.delete_all(user_id="bob"),
                  lambda: alice.delete_all(user_id="bob", run_id="hive"), lambda: alice.delete_users(user_id="bob"),
                  lambda: alice.delete_users(agent_id="planner")):
        with pytest.raises(AuthenticationError):  # 403: a write out of its reach
            write()
    for memory_id in (bob_id, hive_id, planner_id):  # by id: missing, as another organisation's
        for call in (lambda: alice.get(memory_id), lambda: alice.history(memory_id),
                     lambda: alice.update(memory_id, text="Planted"), lambda: alice.delete(memory_id),
                     lambda: alice.feedback(memory_id, "NEGATIVE")):
            with pytest.raises(MemoryNotFoundError):
                call()
    for batch in (lambda: alice.batch_delete([{"memory_id": alice_id}, {"memory_id": bob_id}]),
                  lambda: alice.batch_update([{"memory_id": alice_id, "text": "Changed"},
                                              {"memory_id": bob_id, "text": "Planted"}])):
        with pytest.raises(MemoryNotFoundError):  # one out of reach: the whole batch refused
            batch()
    assert alice.get_all(filters={"user_id": "bob"})["count"] == 0  # by filter: nothing
    assert alice.get_all(filters={"AND": [{"user_id": "bob"}, {"run_id": "hive"}]})["count"] == 0
    assert alice.get_all(filters={"agent_id": "planner"})["count"] == 0
    assert alice.search("bees", filters={"user_id": "bob"})["results"] == []
    assert [e["name"] for e in alice.users()["results"]] == ["alice"]
    assert [m["id"] for m in alice.get_all(filters={"run_id": "hive", "user_id": "alice"})["results"]] == [alice_id]

    assert alice.get(alice_id)["memory"] == "Alice bakes sourdough on Sundays."  # the batch changed nothing
    assert {m["id"] for m in full.get_all(filters={"user_id": "bob"})["results"]} == {bob_id, hive_id}
    assert full.get(planner_id)["agent_id"] == "planner"
    alice.delete_all(user_id="alice")  # its own
    assert full.get_all(filters={"user_id": "alice"})["count"] == 0
    assert full.get_all(filters={"user_id": "bob"})["count"] == 2


def test_a_read_only_key_reads_and_searches_but_writes_nothing(tenant_a, keys, connect):
    full, reader = connect(keys["full"]), connect(keys["read_only"])
    memory_id = full.add("Dana runs the Lisbon half marathon in October.", user_id="dana")["results"][0]["id"]

    assert reader.get(memory_id)["user_id"] == "dana"
    assert reader.get_all(filters={"user_id": "dana"})["count"] == 1
    assert reader.search("Which race is Dana running?", filters={"user_id": "dana"})["results"][0]["id"] == memory_id
    assert len(reader.history(memory_id)) == 1 and reader.users()["count"] == 1
    for write in (lambda: reader.add("Planted", user_id="dana"), lambda: reader.update(memory_id, text="Planted"),
                  lambda: reader.delete(memory_id), lambda: reader.feedback(memory_id, "NEGATIVE"),
                  lambda: reader.batch_update([{"memory_id": memory_id, "text": "Planted"}]),
                  lambda: reader.batch_delete([{"memory_id": memory_id}]), lambda: reader.delete_all(user_id="dana"),
                  lambda: reader.delete_users(user_id="dana")):
        with pytest.raises(AuthenticationError) as refused:
            write()
        assert refused.value.message == "this API key is read-only"
    assert full.get(memory_id)["memory"] == "Dana runs the Lisbon half marathon in October."
    assert len(full.history(memory_id)) == 1 and full.get_all(filters={"user_id": "dana"})["count"] == 1


def test_bad_input_reaches_the_caller_as_mem0_s_errors_naming_the_field(keys, connect, served):
    client = connect(keys["full"])
    for call, named in ((lambda: client.add("Hello"), "user_id"),
                        (lambda: client.add("Hello", user_id="alice", app_id="shop"), "app_id"),
                        (lambda: client.add("Hello", user_id="users/alice"), "user_id"),
                        (lambda: client.add([{"role": "tool", "content": "x"}], user_id="alice"), "messages[0].role"),
                        (lambda: client.get_all(filters={"OR": [{"user_id": "a"}, {"user_id": "b"}]}), "filters.OR"),
                        (lambda: client.get_all(filters={"user_id": "*"}), "filters.user_id"),
                        (lambda: client.search("x", filters={"AND": [{"user_id": {"in": ["a"]}}]}),
                         "filters.AND[0].user_id"),
                        (lambda: client.search("x", filters={"user_id": "a"}, top_k=1000), "top_k"),
                        (lambda: client.get("not-an-id"), "memory_id"),
                        (lambda: client.delete_all(), "user_id"),
                        (lambda: client.delete_users(app_id="shop"), "entity_type")):
        with pytest.raises(ValidationError) as refused:
            call()
        assert refused.value.message.startswith(f"{named}: "), refused.value.message
    with pytest.raises(ValueError, match="API Key"):  # the client's own check, before any request
        MemoryClient(api_key="", host=host(served))
    with pytest.raises(ValueError, match="unknown API key"):  # the server's answer to its first call, /v1/ping/
        MemoryClient(api_key="mp_unknown", host=host(served))
