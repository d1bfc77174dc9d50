"""One scenario through every door an agent uses (the REST API, the LangGraph store API, MCP,
Mem0's API), each with four keys: one reaching the whole organisation, one limited to users/alice, a
read-only one, and another organisation's. Every door must take the same decision for the
same key: the doors are adapters over one set of use cases (memories.use_cases), which alone
decide what a caller reaches.

Decisions: "ok" (done, or found), "refused" (a write the key may not make: 403 / out_of_reach)
and "missing" (out of reach or another organisation's: 404 / not_found / null). Searches and
assembled contexts are compared by what they found of the scenario's memories. An erasure is
its count, which erases nothing: REST's dry run, MCP's erase_namespace without a confirmation
(tests/integrations/mcp/test_erasure.py follows it to the erasure). Only the LangGraph store's
search has no MCP tool; Mem0's API has no confirm, store, context or counted erasure."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest

from tests import factories
from tests.integrations.mcp.client import mcp_client, text_of
from tests.markers import committing

pytestmark = pytest.mark.slow

OK, REFUSED, MISSING = "ok", "refused", "missing"
KEYS = ("full", "alice", "read_only", "other")
BOB_FACT = "Bob keeps bees on the roof of his flat in Porto"
ALICE_FACT = "Alice keeps a sourdough starter called Gertrude"

# The decision every door must take, per key.
EXPECTED = {
    "write users/alice": {"full": OK, "alice": OK, "read_only": REFUSED, "other": OK},
    "write users/bob": {"full": OK, "alice": REFUSED, "read_only": REFUSED, "other": OK},
    "read Bob's memory": {"full": OK, "alice": MISSING, "read_only": OK, "other": MISSING},
    "confirm Bob's memory": {"full": OK, "alice": MISSING, "read_only": REFUSED, "other": MISSING},
    "change Bob's memory": {"full": OK, "alice": MISSING, "read_only": REFUSED, "other": MISSING},
    "put users/bob": {"full": OK, "alice": REFUSED, "read_only": REFUSED, "other": OK},
    "get Bob's item": {"full": OK, "alice": MISSING, "read_only": OK, "other": MISSING},
    "delete Bob's item": {"full": OK, "alice": REFUSED, "read_only": REFUSED, "other": OK},
    # Counted, not erased (a dry run; MCP's first call); another organisation's key counts what it
    # wrote there itself, in its own.
    "erase users/bob": {"full": OK, "alice": REFUSED, "read_only": REFUSED, "other": OK},
}
# What a search for bees or for sourdough finds of the two facts, per key.
FOUND = {"full": {BOB_FACT, ALICE_FACT}, "alice": {ALICE_FACT}, "read_only": {BOB_FACT, ALICE_FACT}, "other": set()}
ITEMS_FOUND = {"full": {"users/alice/hobby", "users/bob/hobby"}, "alice": {"users/alice/hobby"},
               "read_only": {"users/alice/hobby", "users/bob/hobby"}, "other": set()}


def decision(status: int) -> str:
    if status < 300:
        return OK
    return {403: REFUSED, 404: MISSING}.get(status, f"HTTP {status}")


class Rest:
    """The REST API, and the LangGraph store API beside it (LangGraph's own shapes)."""

    name = "REST"

    def __init__(self, base: str, key: str):
        self.http = httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=60)

    def write(self, namespace: list[str], content: str) -> str:
        return decision(self.http.post("/memories", json={"content": content, "namespace": namespace}).status_code)

    def read(self, memory_id) -> str:
        return decision(self.http.get(f"/memories/{memory_id}").status_code)

    def confirm(self, memory_id) -> str:
        return decision(self.http.post(f"/memories/{memory_id}/confirm", json={}).status_code)

    def search(self, query: str) -> set[str]:
        response = self.http.post("/search", json={"query": query, "limit": 20})
        assert response.status_code == 200, response.text
        return {result["memory"]["content"] for result in response.json()["results"]}

    def context(self, query: str) -> str:
        response = self.http.post("/context", json={"query": query, "max_tokens": 500})
        assert response.status_code == 200, response.text
        return response.json()["context"]

    def erase(self, namespace: list[str]) -> str:
        return decision(self.http.post("/erase", json={"namespace": namespace, "dry_run": True}).status_code)

    # The LangGraph store API.
    def put(self, namespace: list[str], key: str, value: dict) -> str:
        return decision(self.http.put("/store/items", json={"namespace": namespace, "key": key,
                                                            "value": value}).status_code)

    def get(self, namespace: list[str], key: str) -> str:
        response = self.http.get("/store/items", params={"namespace": ".".join(namespace), "key": key})
        assert response.status_code == 200, response.text
        return MISSING if response.json() is None else OK

    def delete(self, namespace: list[str], key: str) -> str:
        return decision(self.http.request("DELETE", "/store/items",
                                          json={"namespace": namespace, "key": key}).status_code)

    def find_items(self, query: str) -> set[str]:
        response = self.http.post("/store/items/search", json={"namespace_prefix": ["users"], "query": query})
        assert response.status_code == 200, response.text
        return {"/".join(item["namespace"] + [item["key"]]) for item in response.json()["items"]}


class Mcp:
    """The MCP server's tools, through the official client."""

    name = "MCP"

    def __init__(self, url: str, key: str):
        self.url, self.key = url, key

    def call(self, tool: str, arguments: dict) -> tuple[str, object]:
        async def main():
            async with mcp_client(self.url, self.key) as client:
                return await client.call_tool(tool, arguments)

        result = anyio.run(main)
        text = text_of(result)
        if not result.is_error:
            return OK, json.loads(text)
        for code, meaning in (("out_of_reach", REFUSED), ("not_found", MISSING)):
            if code in text:
                return meaning, text
        return f"error: {text}", text

    def write(self, namespace: list[str], content: str) -> str:
        return self.call("remember_fact", {"content": content, "namespace": namespace})[0]

    def read(self, memory_id) -> str:
        return self.call("explain_fact", {"memory_id": str(memory_id)})[0]

    def confirm(self, memory_id) -> str:
        return self.call("confirm_fact", {"memory_id": str(memory_id)})[0]

    def search(self, query: str) -> set[str]:
        outcome, found = self.call("search_memory", {"query": query, "limit": 20})
        assert outcome == OK, found
        return {result["content"] for result in found["results"]}

    def context(self, query: str) -> str:
        outcome, assembled = self.call("assemble_context", {"query": query, "max_tokens": 500})
        assert outcome == OK, assembled
        return assembled["context"]

    def erase(self, namespace: list[str]) -> str:
        outcome, counted = self.call("erase_namespace", {"namespace": namespace})
        assert outcome != OK or (counted["erased"] is False and counted["confirmation"]), counted
        return outcome

    def put(self, namespace: list[str], key: str, value: dict) -> str:
        return self.call("store_put", {"namespace": namespace, "key": key, "value": value})[0]

    def get(self, namespace: list[str], key: str) -> str:
        return self.call("store_get", {"namespace": namespace, "key": key})[0]

    def delete(self, namespace: list[str], key: str) -> str:
        return self.call("store_delete", {"namespace": namespace, "key": key})[0]


class Mem0:
    """Mem0's API (integrations.mem0), as its client calls it: a user's memories by user_id."""

    name = "Mem0"

    def __init__(self, base: str, key: str):
        self.http = httpx.Client(base_url=f"{base}/api/mem0", headers={"Authorization": f"Token {key}"}, timeout=60)

    def write(self, namespace: list[str], content: str) -> str:
        response = self.http.post("/v3/memories/add/", json={"messages": [{"role": "user", "content": content}],
                                                              "user_id": namespace[1]})  # users/<user_id>
        return decision(response.status_code)

    def read(self, memory_id) -> str:
        return decision(self.http.get(f"/v1/memories/{memory_id}/").status_code)

    def change(self, memory_id) -> str:
        return decision(self.http.put(f"/v1/memories/{memory_id}/", json={"metadata": {"seen": True}}).status_code)

    def search(self, query: str) -> set[str]:
        found = set()
        for user_id in ("alice", "bob"):  # Mem0 searches one user at a time
            response = self.http.post("/v3/memories/search/", json={"query": query, "filters": {"user_id": user_id},
                                                                    "top_k": 20})
            assert response.status_code == 200, response.text
            found |= {result["memory"] for result in response.json()["results"]}
        return found


@pytest.fixture
def scenario(tenant_a, tenant_b, served):
    """Bob's and Alice's facts and store items in organisation A, written through the REST API
    by the full key; the four keys."""
    keys = {
        "full": factories.api_key(agent=tenant_a.agent)[1],
        "alice": factories.api_key(agent=tenant_a.agent, namespaces=["users/alice"])[1],
        "read_only": factories.api_key(agent=tenant_a.agent, read_only=True)[1],
        "other": factories.api_key(agent=tenant_b.agent)[1],
    }
    writer = Rest(served.base, keys["full"])
    held = {}
    for namespace, fact in ((["users", "bob"], BOB_FACT), (["users", "alice"], ALICE_FACT)):
        response = writer.http.post("/memories", json={"content": fact, "namespace": namespace})
        assert response.status_code == 201, response.text
        held[namespace[1]] = response.json()["memory"]["id"]
        assert writer.put(namespace, "hobby", {"text": f"{namespace[1]}'s hobby"}) == OK
    return keys, held


@committing
def test_every_door_takes_the_same_decisions_for_each_key(scenario, served):
    keys, held = scenario
    taken: dict[str, dict[str, dict[str, object]]] = {}
    for key_name in KEYS:
        key = keys[key_name]
        for door in (Rest(served.base, key), Mcp(served.url, key), Mem0(served.base, key)):
            seen = taken.setdefault(door.name, {}).setdefault(key_name, {})
            seen["write users/alice"] = door.write(["users", "alice"], f"{door.name} {key_name} wrote for Alice")
            seen["write users/bob"] = door.write(["users", "bob"], f"{door.name} {key_name} wrote for Bob")
            seen["read Bob's memory"] = door.read(held["bob"])
            if isinstance(door, Mem0):  # Mem0 has no confirm, and no store; a change of metadata instead
                seen["change Bob's memory"] = door.change(held["bob"])
            else:
                seen["confirm Bob's memory"] = door.confirm(held["bob"])
                seen["put users/bob"] = door.put(["users", "bob"], f"{door.name}-{key_name}", {"text": "a note"})
                seen["get Bob's item"] = door.get(["users", "bob"], "hobby")
                seen["delete Bob's item"] = door.delete(["users", "bob"], f"{door.name}-{key_name}")
            seen["found"] = door.search("who keeps bees or a sourdough starter?") & {BOB_FACT, ALICE_FACT}
            if not isinstance(door, Mem0):  # Mem0 assembles no context, and erases with no count first
                context = door.context("who keeps bees or a sourdough starter?")
                seen["in context"] = {fact for fact in (BOB_FACT, ALICE_FACT) if fact in context}
                seen["erase users/bob"] = door.erase(["users", "bob"])
            if isinstance(door, Rest):  # the LangGraph store's search: MCP has no such tool
                seen["items found"] = door.find_items("hobby")

    for door_name, by_key in taken.items():
        for key_name, seen in by_key.items():
            expected = {action: by_key_expected[key_name] for action, by_key_expected in EXPECTED.items()
                        if action in seen}
            expected["found"] = FOUND[key_name]
            if "in context" in seen:
                expected["in context"] = FOUND[key_name]
            if "items found" in seen:
                expected["items found"] = ITEMS_FOUND[key_name]
            assert seen == expected, f"{door_name} with the {key_name} key"
    # The doors agree with each other on everything both offer.
    for key_name in KEYS:
        rest = taken["REST"][key_name]
        for other in ("MCP", "Mem0"):
            theirs = taken[other][key_name]
            assert {action: rest[action] for action in theirs if action in rest} == \
                {action: decided for action, decided in theirs.items() if action in rest}, f"{other}, {key_name}"
        assert set(taken["Mem0"][key_name]) - set(rest) == {"change Bob's memory"}
