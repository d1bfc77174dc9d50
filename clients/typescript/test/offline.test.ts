// The hand-written layer alone, over a stand-in fetch (no server): the base URL and the key,
// the retries on 429 and 503, the errors.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  InvalidInput, MemoryPlatform, PlatformError, RateLimited, retryAfterSeconds, ServerError, serverUrl,
} from "memory-platform-client";

interface Sent { method: string; url: string; authorization: string | null; body: string }

/** A fetch answering from a list, recording what it was sent. */
function answering(...answers: Array<() => Response>) {
  const sent: Sent[] = [];
  const fetch = async (request: Request) => {
    sent.push({ method: request.method, url: request.url, authorization: request.headers.get("Authorization"),
                body: await request.text() });
    const next = answers.shift();
    assert.ok(next, "more requests than answers");
    return next();
  };
  return { sent, fetch };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => () =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
const limited = (retryAfter: string) =>
  json(429, { error: { code: "rate_limited", message: "Too many requests.", fields: {} } }, { "Retry-After": retryAfter });
const created = json(201, { memory: { id: "m1" }, created: true, deduplicated: false, embedding_status: "ready",
                               near_duplicates: [] });

test("the server's URL with or without /api/v1, the key as a bearer token", async () => {
  assert.equal(serverUrl("http://h:8000/"), "http://h:8000");
  assert.equal(serverUrl("http://h:8000/api/v1/"), "http://h:8000");
  const { sent, fetch } = answering(json(200, { results: [] }));
  await new MemoryPlatform({ url: "http://h:8000/api/v1", apiKey: "mp_k", fetch }).get("/api/v1/hot");
  assert.equal(sent[0].url, "http://h:8000/api/v1/hot");
  assert.equal(sent[0].authorization, "Bearer mp_k");
});

test("a 429 is sent again, body and all, after Retry-After", async () => {
  const { sent, fetch } = answering(limited("0"), limited("0"), created);
  const retries: number[] = [];
  const platform = new MemoryPlatform({ url: "http://h", apiKey: "k", fetch, onRetry: (r) => retries.push(r.attempt) });
  await platform.post("/api/v1/memories", { body: { content: "Alice likes tea" } });
  assert.equal(sent.length, 3);
  assert.deepEqual(new Set(sent.map((s) => s.body)), new Set([JSON.stringify({ content: "Alice likes tea" })]));
  assert.deepEqual(retries, [1, 2]);
});

test("past maxRetries, or a Retry-After longer than maxDelay, the 429 is a RateLimited", async () => {
  const tooMany = answering(limited("0"), limited("0"));
  const refused = await new MemoryPlatform({ url: "http://h", apiKey: "k", fetch: tooMany.fetch, maxRetries: 1 })
    .get("/api/v1/stats").catch((error: unknown) => error);
  assert.ok(refused instanceof RateLimited && refused.code === "rate_limited" && refused.retryAfter === 0);
  assert.equal(tooMany.sent.length, 2);

  const tooLong = answering(limited("3600"));
  const waited = await new MemoryPlatform({ url: "http://h", apiKey: "k", fetch: tooLong.fetch, maxDelay: 60 })
    .get("/api/v1/stats").catch((error: unknown) => error);
  assert.ok(waited instanceof RateLimited && waited.retryAfter === 3600);
  assert.equal(tooLong.sent.length, 1);
});

test("a 503 is sent again only when it says when; other errors never", async () => {
  const unavailable = json(503, { error: { code: "database_unavailable", message: "retry in 2 s", fields: {} } });
  const { sent, fetch } = answering(json(503, { error: { code: "database_contended", message: "again", fields: {} } },
                                         { "Retry-After": "0" }), unavailable);
  const error = await new MemoryPlatform({ url: "http://h", apiKey: "k", fetch }).get("/api/v1/stats")
    .catch((e: unknown) => e);
  assert.ok(error instanceof ServerError && error.code === "database_unavailable");
  assert.equal(sent.length, 2);

  const invalid = answering(json(400, { error: { code: "invalid", message: "content: blank",
                                                 fields: { content: ["blank"] } } }));
  const refused = await new MemoryPlatform({ url: "http://h", apiKey: "k", fetch: invalid.fetch })
    .post("/api/v1/memories", { body: { content: "" } }).catch((e: unknown) => e);
  assert.ok(refused instanceof InvalidInput);
  assert.deepEqual(refused.fields, { content: ["blank"] });
  assert.equal(invalid.sent.length, 1);
});

test("an answer that is not the platform's JSON error is still a PlatformError", async () => {
  const { fetch } = answering(() => new Response("Bad Gateway", { status: 502 }));
  const error = await new MemoryPlatform({ url: "http://h", apiKey: "k", fetch }).get("/api/v1/stats")
    .catch((e: unknown) => e);
  assert.ok(error instanceof ServerError && error instanceof PlatformError);
  assert.equal(error.message, "Bad Gateway");
  assert.equal(error.code, "error");
  assert.equal(error.body, "Bad Gateway");
});

test("aborting stops the wait for a retry", async () => {
  const { fetch } = answering(limited("30"));
  const controller = new AbortController();
  const pending = new MemoryPlatform({ url: "http://h", apiKey: "k", fetch }).get("/api/v1/stats",
                                                                             { signal: controller.signal });
  setTimeout(() => controller.abort(new Error("stopped")), 20);
  await assert.rejects(pending, /stopped/);
});

test("Retry-After in seconds or as an HTTP date", () => {
  assert.equal(retryAfterSeconds("12"), 12);
  assert.equal(retryAfterSeconds(null), undefined);
  assert.equal(retryAfterSeconds("soon"), undefined);
  const now = Date.parse("Wed, 21 Oct 2026 07:28:00 GMT");
  assert.equal(retryAfterSeconds("Wed, 21 Oct 2026 07:28:05 GMT", now), 5);
  assert.equal(retryAfterSeconds("Wed, 21 Oct 2026 07:27:00 GMT", now), 0);
});
