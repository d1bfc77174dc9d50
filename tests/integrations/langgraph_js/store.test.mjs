// LangGraph.js's own SDK (@langchain/langgraph-sdk) against the platform's store API, used as a
// JavaScript user would: a Client pointed at /api/v1 with the API key, client.store's methods.
// Run by tests/integrations/test_node_clients.py with a live server: MEMORY_PLATFORM_URL, and
// the keys of two organisations (MEMORY_PLATFORM_API_KEY, MEMORY_PLATFORM_OTHER_API_KEY).
import assert from "node:assert/strict";
import { test } from "node:test";

import { Client } from "@langchain/langgraph-sdk";

const apiUrl = `${process.env.MEMORY_PLATFORM_URL}/api/v1`;
const store = new Client({ apiUrl, apiKey: process.env.MEMORY_PLATFORM_API_KEY }).store;
const theirs = new Client({ apiUrl, apiKey: process.env.MEMORY_PLATFORM_OTHER_API_KEY }).store;

/** The SDK's error for a refused request: HTTP <status>: <the server's body>. */
function refusedWith(status, ...words) {
  return (error) => {
    assert.equal(error.status, status, error.message);
    for (const word of words) assert.ok(error.text.includes(word), `"${word}" not in ${error.text}`);
    return true;
  };
}

test("put, get, search, list and delete items as the SDK sends them", async () => {
  await store.putItem(["users", "alice"], "diet", { text: "vegetarian", since: 2019 }, { index: ["text"] });
  await store.putItem(["users", "alice"], "city", { text: "Lisbon", since: 2023 }, { ttl: 60 });
  await store.putItem(["users", "alice", "work"], "role", { text: "engineer", since: 2021 }, { index: false });
  await store.putItem(["users", "bob"], "diet", { text: "omnivore", since: 2010 }, { index: null, ttl: null });

  const item = await store.getItem(["users", "alice"], "diet");
  assert.deepEqual(item.value, { text: "vegetarian", since: 2019 });
  assert.deepEqual(item.namespace, ["users", "alice"]);
  assert.ok(item.createdAt && item.updatedAt && !Number.isNaN(Date.parse(item.updatedAt)));
  assert.equal(await store.getItem(["users", "alice"], "nothing"), null);
  assert.equal((await store.getItem(["users", "alice"], "city", { refreshTtl: false })).key, "city");
  assert.equal((await store.getItem(["users", "alice"], "city", { refreshTtl: true })).key, "city");

  const found = (await store.searchItems(["users", "alice"], { query: "what food does she eat?", limit: 2 })).items;
  assert.equal(found[0].key, "diet");
  assert.ok(found[0].score > 0 && found[0].score <= 1, `score ${found[0].score}`);
  const listed = (await store.searchItems(["users"], { filter: { since: { $gte: 2019 } }, limit: 10 })).items;
  assert.deepEqual(new Set(listed.map((i) => `${i.namespace.join("/")}:${i.key}`)),
    new Set(["users/alice:diet", "users/alice:city", "users/alice/work:role"]));
  assert.ok(listed.every((i) => i.score === null));
  assert.equal((await store.searchItems(["users"], { limit: 1, offset: 1, refreshTtl: false })).items.length, 1);
  const everything = (await store.searchItems([])).items;  // the SDK's defaults: limit 10, offset 0
  assert.equal(everything.length, 4);

  assert.deepEqual(await store.listNamespaces({ prefix: ["users"], maxDepth: 2 }),
    { namespaces: [["users", "alice"], ["users", "bob"]] });
  assert.deepEqual((await store.listNamespaces({ suffix: ["work"] })).namespaces, [["users", "alice", "work"]]);
  assert.deepEqual((await store.listNamespaces({ prefix: ["users", "*"], limit: 1, offset: 1 })).namespaces,
    [["users", "alice", "work"]]);
  assert.equal((await store.listNamespaces()).namespaces.length, 3);

  await store.deleteItem(["users", "bob"], "diet");
  assert.equal(await store.getItem(["users", "bob"], "diet"), null);
  await store.deleteItem(["users", "bob"], "diet");  // none left: no error
});

test("the server's refusals reach the caller as the SDK's errors", async () => {
  await assert.rejects(store.putItem(["users", "alice"], "bad", { x: 1 }, { ttl: -1 }), refusedWith(422, "ttl"));
  await assert.rejects(store.searchItems(["users"], { filter: { since: { $in: [1] } } }),
    refusedWith(422, "unsupported operator $in"));
  await assert.rejects(store.putItem(["langgraph", "x"], "k", { v: 1 }), refusedWith(422, "langgraph"));
  await assert.rejects(store.putItem(["users", "alice"], "list", ["not", "an", "object"]), refusedWith(422, "value"));
  // The SDK's own check, before any request.
  await assert.rejects(store.getItem(["users.alice"], "diet"), /Namespace labels cannot contain periods/);
  const stranger = new Client({ apiUrl, apiKey: "mp_unknown" }).store;
  await assert.rejects(stranger.getItem(["users"], "k"), refusedWith(401, "unknown API key"));
});

test("the key sent in a header of the caller's own, Authorization: Bearer, instead of x-api-key", async () => {
  const bearer = new Client({
    apiUrl, apiKey: null, defaultHeaders: { Authorization: `Bearer ${process.env.MEMORY_PLATFORM_API_KEY}` },
  }).store;
  await bearer.putItem(["users", "dave"], "pet", { text: "a cat called Miso" });
  assert.deepEqual((await store.getItem(["users", "dave"], "pet")).value, { text: "a cat called Miso" });
  const found = (await bearer.searchItems(["users", "dave"], { query: "animals", filter: { text: "a cat called Miso" } }))
    .items;
  assert.deepEqual(found.map((i) => i.key), ["pet"]);
});

test("another organisation's key sees none of these items", async () => {
  await store.putItem(["users", "carol"], "secret", { text: "the door code is 4711" });
  assert.equal(await theirs.getItem(["users", "carol"], "secret"), null);
  assert.deepEqual((await theirs.searchItems(["users"])).items, []);
  assert.deepEqual((await theirs.searchItems([], { query: "door code" })).items, []);
  assert.deepEqual((await theirs.listNamespaces()).namespaces, []);
  await theirs.deleteItem(["users", "carol"], "secret");  // deletes its own nothing
  await theirs.putItem(["users", "carol"], "secret", { text: "B's own" });
  assert.deepEqual((await store.getItem(["users", "carol"], "secret")).value, { text: "the door code is 4711" });
  assert.deepEqual((await theirs.getItem(["users", "carol"], "secret")).value, { text: "B's own" });
});
