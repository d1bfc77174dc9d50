// The client against a live server, as the package is published (imported by its name, from
// dist/): run by tests/integrations/test_node_clients.py, which serves the product and sets
//   MEMORY_PLATFORM_URL, MEMORY_PLATFORM_API_KEY, MEMORY_PLATFORM_READ_ONLY_API_KEY, and
//   MEMORY_PLATFORM_BATCH_RATE (the batch-create rate limit it set low, e.g. "1/5s").
// Without MEMORY_PLATFORM_URL these tests are skipped.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, test } from "node:test";

import {
  InvalidInput, MemoryPlatform, NotAuthenticated, NotFound, OutOfReach, PreconditionFailed, RateLimited,
  type Retry, type Schemas,
} from "memory-platform-client";

const url = process.env.MEMORY_PLATFORM_URL ?? "";
const apiKey = process.env.MEMORY_PLATFORM_API_KEY ?? "";
const skip = url ? false : "MEMORY_PLATFORM_URL is not set: no server to test against";
const platform = new MemoryPlatform({ url, apiKey });
const alice = ["users", "alice"];

/** A memory written alone (not a batch): the answer's type says which it is. */
function single(written: Schemas["WriteResultOrBatch"]): Schemas["WriteResult"] {
  assert.ok("memory" in written, "a single write answers {memory, created...}");
  return written;
}

describe("against a live server", { skip }, () => {
  test("remember, search and assemble context", async () => {
    const written = single(await platform.post("/api/v1/memories", {
      body: { content: "Alice is allergic to peanuts", category: "factual", tags: ["health"], namespace: alice },
    }));
    assert.equal(written.created, true);
    assert.deepEqual(written.memory.namespace, alice);
    assert.deepEqual(written.memory.tags, ["health"]);
    const again = single(await platform.post("/api/v1/memories", {
      body: { content: "Alice is allergic to peanuts", namespace: "users/alice" },  // either shape of namespace
    }));
    assert.equal(again.deduplicated, true);
    assert.equal(again.memory.id, written.memory.id);
    await platform.post("/api/v1/memories", { body: { content: "Alice moved to Lisbon in May", namespace: alice } });

    const found = await platform.post("/api/v1/search", {
      body: { query: "What can't Alice eat?", limit: 5, filters: { namespace: "users/alice" } },
    });
    assert.equal(found.results[0]?.memory.id, written.memory.id);
    assert.ok(found.results[0].score > 0);

    const context = await platform.post("/api/v1/context", {
      body: { query: "What should I cook for Alice?", max_tokens: 200, filters: { namespace: alice } },
    });
    assert.match(context.context, /Alice is allergic to peanuts/);
    assert.ok(context.tokens > 0 && context.tokens <= 200, `${context.tokens} tokens`);
    assert.ok(context.memories.some((m) => m.id === written.memory.id));

    const memory = await platform.get("/api/v1/memories/{memory_id}", {
      params: { path: { memory_id: written.memory.id } },
    });
    assert.equal(memory.content, "Alice is allergic to peanuts");
  });

  test("the store: put, get, search, list namespaces, delete", async () => {
    const put = await platform.put("/api/v1/store/items", {
      body: { namespace: alice, key: "diet", value: { text: "vegetarian", since: 2019 }, index: ["text"] },
    });
    assert.equal(put, undefined);  // 204
    await platform.put("/api/v1/store/items", { body: { namespace: alice, key: "city", value: { text: "Lisbon" } } });

    const item = await platform.get("/api/v1/store/items", {
      params: { query: { namespace: "users.alice", key: "diet" } },
    });
    assert.deepEqual(item?.value, { text: "vegetarian", since: 2019 });
    assert.deepEqual(item?.namespace, alice);
    const none = await platform.get("/api/v1/store/items", { params: { query: { namespace: "users.alice", key: "x" } } });
    assert.equal(none, null);

    const byMeaning = await platform.post("/api/v1/store/items/search", {
      body: { namespace_prefix: alice, query: "what does she eat?", limit: 1 },
    });
    assert.equal(byMeaning.items[0]?.key, "diet");
    assert.ok((byMeaning.items[0].score ?? 0) > 0);
    const byFilter = await platform.post("/api/v1/store/items/search", {
      body: { namespace_prefix: ["users"], filter: { since: { $gte: 2018 } } },
    });
    assert.deepEqual(byFilter.items.map((i) => i.key), ["diet"]);
    assert.deepEqual(await platform.post("/api/v1/store/namespaces", { body: { prefix: ["users"] } }),
      { namespaces: [alice] });

    await platform.delete("/api/v1/store/items", { body: { namespace: alice, key: "city" } });
    assert.equal(await platform.get("/api/v1/store/items", { params: { query: { namespace: "users.alice", key: "city" } } }),
      null);
  });

  test("bad input is an InvalidInput naming the field, with the server's error shape", async () => {
    const refused = await platform.post("/api/v1/memories", { body: { content: "", namespace: alice } })
      .then(() => assert.fail("an empty content was accepted"), (error: unknown) => error);
    assert.ok(refused instanceof InvalidInput, String(refused));
    assert.equal(refused.status, 400);
    assert.equal(refused.code, "invalid");
    assert.ok(refused.fields.content?.length, JSON.stringify(refused.fields));
    assert.match(refused.message, /content/);
    assert.deepEqual(typeof refused.body === "object" && Object.keys(refused.body.error).sort(),
      ["code", "fields", "message"]);

    // The store's door answers validation errors with 422, as LangGraph's server does.
    await assert.rejects(
      platform.put("/api/v1/store/items", { body: { namespace: alice, key: "k", value: { v: 1 }, ttl: -1 } }),
      (error: unknown) => error instanceof InvalidInput && error.status === 422 && "ttl" in error.fields);
  });

  test("what is not there is a NotFound", async () => {
    await assert.rejects(
      platform.get("/api/v1/memories/{memory_id}", { params: { path: { memory_id: randomUUID() } } }),
      (error: unknown) => error instanceof NotFound && error.status === 404 && error.code === "not_found");
  });

  test("a wrong key is NotAuthenticated; a read-only key's write is OutOfReach", async () => {
    const stranger = new MemoryPlatform({ url, apiKey: "mp_unknown" });
    await assert.rejects(stranger.get("/api/v1/stats"),
      (error: unknown) => error instanceof NotAuthenticated && error.status === 401);
    const reader = new MemoryPlatform({ url, apiKey: process.env.MEMORY_PLATFORM_READ_ONLY_API_KEY ?? "" });
    await assert.rejects(reader.post("/api/v1/memories", { body: { content: "Bob likes tea" } }),
      (error: unknown) => error instanceof OutOfReach && error.message === "this API key is read-only");
    assert.ok((await reader.post("/api/v1/search", { body: { query: "peanuts" } })).results.length > 0);
  });

  test("openapi-fetch's own client answers {data, error, response}: a change with If-Match", async () => {
    const written = single(await platform.post("/api/v1/memories", { body: { content: "The deploy window is Tuesday" } }));
    const memoryPath = { path: { memory_id: written.memory.id } };
    const { data, error, response } = await platform.api.GET("/api/v1/memories/{memory_id}", { params: memoryPath });
    assert.equal(error, undefined);
    assert.equal(data?.version, 1);
    const etag = response.headers.get("ETag") ?? "";
    assert.match(etag, /1/);

    const changed = await platform.patch("/api/v1/memories/{memory_id}", {
      params: { ...memoryPath, header: { "If-Match": etag } }, body: { content: "The deploy window is Wednesday" },
    });
    assert.equal(changed.version, 2);
    await assert.rejects(  // the same version again: stale
      platform.patch("/api/v1/memories/{memory_id}", {
        params: { ...memoryPath, header: { "If-Match": etag } }, body: { content: "Thursday" },
      }),
      (error: unknown) => error instanceof PreconditionFailed && error.status === 412);
    const stale = await platform.api.PATCH("/api/v1/memories/{memory_id}", {
      params: { ...memoryPath, header: { "If-Match": etag } }, body: { content: "Thursday" },
    });
    assert.equal(stale.response.status, 412);
    assert.equal(stale.error?.error.code, "version_mismatch");
    const history = await platform.get("/api/v1/memories/{memory_id}/history", { params: memoryPath });
    assert.deepEqual(history.results.map((v) => v.operation), ["create", "update"]);
  });

  test("a 429 is sent again after its Retry-After; past the retries it is a RateLimited", {
    skip: process.env.MEMORY_PLATFORM_BATCH_RATE ? false : "MEMORY_PLATFORM_BATCH_RATE is not set",
  }, async () => {
    // The server allows one batch create per window (MEMORY_PLATFORM_BATCH_RATE): the first
    // opens one, the next is refused until it ends, waits as Retry-After says, and goes through.
    // (Should a slow machine let a window end between two batches, the next pair meets one.)
    const retries: Retry[] = [];
    const patient = new MemoryPlatform({ url, apiKey, onRetry: (retry) => retries.push(retry) });
    const batch = (content: string) => ({ body: { memories: [{ content, namespace: ["batches"] }] } });
    let waited = 0;
    for (let sent = 1; retries.length === 0 && sent <= 4; sent++) {
      const started = performance.now();
      const answer = await patient.post("/api/v1/memories", batch(`Batch ${sent}`));
      waited = (performance.now() - started) / 1000;
      assert.ok("results" in answer, "a batch answers {results: [...]}");
    }
    assert.equal(retries.length, 1, JSON.stringify(retries));
    assert.equal(retries[0].status, 429);
    const windowSeconds = Number(/\/(\d+)s$/.exec(process.env.MEMORY_PLATFORM_BATCH_RATE ?? "")?.[1]);
    assert.ok(retries[0].delay >= 1 && retries[0].delay <= windowSeconds, `Retry-After ${retries[0].delay}`);
    assert.ok(waited >= retries[0].delay - 0.05, `waited ${waited} s of ${retries[0].delay}`);

    const impatient = new MemoryPlatform({ url, apiKey, maxRetries: 0 });
    const refused = await impatient.post("/api/v1/memories", batch("Third batch"))
      .then(() => assert.fail("a third batch in one window was accepted"), (error: unknown) => error);
    assert.ok(refused instanceof RateLimited, String(refused));
    assert.equal(refused.status, 429);
    assert.equal(refused.code, "rate_limited");
    assert.ok((refused.retryAfter ?? 0) >= 1, `retryAfter ${refused.retryAfter}`);
  });
});

/** Never called: each line is checked by tsc alone, which must refuse what the schema does not allow. */
export async function refusedByTheTypes(platform: MemoryPlatform): Promise<void> {
  // @ts-expect-error: a path the API does not have
  await platform.get("/api/v1/nothing");
  // @ts-expect-error: content is required
  await platform.post("/api/v1/memories", { body: { category: "factual" } });
  // @ts-expect-error: not one of the categories
  await platform.post("/api/v1/memories", { body: { content: "x", category: "gossip" } });
  // @ts-expect-error: the path's memory_id is required
  await platform.get("/api/v1/memories/{memory_id}");
  // @ts-expect-error: search is a POST
  await platform.get("/api/v1/search");
  const found = await platform.post("/api/v1/search", { body: { query: "tea" } });  // the other fields have defaults
  // @ts-expect-error: a result has no such field
  found.results[0].nothing;
  const item = await platform.get("/api/v1/store/items", { params: { query: { namespace: "a", key: "k" } } });
  // @ts-expect-error: the item may be null
  item.value;
}
