"""MCP tool-call latency beside the REST API's, and the REST API served two ways.

    .venv/bin/python benchmarks/mcp/run.py [--memories 5000] [--queries 200]

Starts the product as `scripts/run` does (`manage.py run`, embedded servers in
.data/bench-mcp), writes --memories memories through the REST API's batch endpoint and waits for
the worker to embed them, then measures, with the same queries and the same key:

- REST `POST /api/v1/search` (hybrid, limit 10) and MCP `search_memory` (the official client,
  one connection, one tools/call per query) on the served app;
- REST `GET /api/v1/stats` beside MCP `memory_stats`, and REST `POST /api/v1/memories` beside
  MCP `remember_fact` (new sentences each);
  REST and MCP in alternate blocks, four rounds, so the machine's drift falls on both;
- REST search through the served ASGI app (uvicorn's worker, Django behind a2wsgi) and through
  gunicorn's sync worker serving the WSGI app alone, as before the MCP server, alternately on
  the same data (a second gunicorn on another port, the same servers, two workers each).

Writes results.json beside this file, with the machine (benchmarks.common.machine).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import api, machine, pending_count, percentile, product, wait_until_healthy  # noqa: E402

DATA = ROOT / ".data" / "bench-mcp"
NAMES = ["Alice", "Bob", "Carmen", "Dmitri", "Ewa", "Farid", "Grace", "Hiro", "Ines", "Jonas"]
FACTS = ["likes {x}", "is allergic to {x}", "bought {x} last week", "wants to learn about {x}",
         "asked about {x} yesterday", "keeps {x} in the kitchen", "gave {x} to a friend", "dislikes {x}"]
THINGS = ["green tea", "peanuts", "a bicycle", "Portuguese grammar", "jazz records", "sourdough bread",
          "the tax return", "hiking boots", "a cast iron pan", "orchids", "chess openings", "oat milk",
          "the train to Porto", "watercolours", "a used piano", "running shoes", "olive oil", "a sea kayak"]
PLACES = ["in Lisbon", "at work", "on holiday", "at the market", "before the meeting", "with the kids"]


def sentences(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    made: set[str] = set()
    while len(made) < count:
        made.add(f"{rng.choice(NAMES)} {rng.choice(FACTS).format(x=rng.choice(THINGS))} {rng.choice(PLACES)} "
                 f"(note {rng.randrange(10**6)})")
    return sorted(made)


def questions(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"What does {rng.choice(NAMES)} think about {rng.choice(THINGS)}?" for _ in range(count)]


def summary(milliseconds: list[float]) -> dict:
    return {"n": len(milliseconds), "p50_ms": round(percentile(milliseconds, 50), 1),
            "p95_ms": round(percentile(milliseconds, 95), 1), "max_ms": round(max(milliseconds), 1)}


def timed(function, *arguments) -> float:
    started = time.perf_counter()
    function(*arguments)
    return (time.perf_counter() - started) * 1000


def rest_search(port: int, key: str, query: str) -> None:
    status, body = api(port, "POST", "/api/v1/search", key, {"query": query, "limit": 10})
    assert status == 200 and len(body["results"]) == 10, (status, body)


def measure_doors(port: int, key: str, queries: list[str], facts: list[str]) -> dict:
    """The same operations through REST and through MCP (one connection), in alternate blocks
    (REST then MCP, four rounds) so that the machine's drift falls on both alike."""
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    times: dict = {door: {"search": [], "stats": [], "remember": []} for door in ("rest", "mcp")}

    async def main():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120) as http:
            async with Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client:

                async def call(name, arguments) -> float:
                    started = time.perf_counter()
                    result = await client.call_tool(name, arguments)
                    assert not result.is_error, result
                    return (time.perf_counter() - started) * 1000

                rest_search(port, key, "warm up")
                await call("search_memory", {"query": "warm up"})
                rounds = 4
                for r in range(rounds):
                    block = queries[r::rounds]
                    written = facts[r::rounds]
                    times["rest"]["search"] += [timed(rest_search, port, key, q) for q in block]
                    times["mcp"]["search"] += [await call("search_memory", {"query": q}) for q in block]
                    times["rest"]["stats"] += [timed(api, port, "GET", "/api/v1/stats", key) for _ in block[::4]]
                    times["mcp"]["stats"] += [await call("memory_stats", {}) for _ in block[::4]]
                    times["rest"]["remember"] += [timed(api, port, "POST", "/api/v1/memories", key,
                                                        {"content": "REST " + f}) for f in written]
                    times["mcp"]["remember"] += [await call("remember_fact", {"content": "MCP " + f})
                                                 for f in written]

    anyio.run(main)
    return {door: {operation: summary(values) for operation, values in operations.items()}
            for door, operations in times.items()}


def sync_gunicorn(port: int, env: dict) -> subprocess.Popen:
    """The WSGI app alone under gunicorn's sync workers (what `manage.py run` served before)."""
    return subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "memory_platform.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "2",
         "--config", "python:memory_platform.gunicorn_conf"],
        cwd=ROOT, env=env, stdout=(DATA / "sync-gunicorn.log").open("w"), stderr=subprocess.STDOUT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--port", type=int, default=8741)
    args = parser.parse_args()

    DATA.mkdir(parents=True, exist_ok=True)
    env = {**{k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}},
           "MEMORY_PLATFORM_DATA_DIR": str(DATA), "MEMORY_PLATFORM_BATCH_LIMIT": "1000",
           # One key sends every request here, faster than an agent would.
           **{f"MEMORY_PLATFORM_RATE_LIMIT_{name}": "1000000/min" for name in ("API_KEY", "SEARCH", "BATCH")},
           "MEMORY_PLATFORM_RATE_LIMIT_API_KEY_BURST": "100000/s"}
    os.environ["MEMORY_PLATFORM_DATA_DIR"] = str(DATA)  # pending_count() reads the embedded PostgreSQL there
    queries = questions(args.queries, seed=2)
    results: dict = {"recorded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "memories": args.memories,
                     "queries": args.queries}
    with product(DATA, args.port, env) as key:
        corpus = sentences(args.memories, seed=1)
        for start in range(0, len(corpus), 1000):
            status, _ = api(args.port, "POST", "/api/v1/memories", key,
                            {"memories": [{"content": c} for c in corpus[start:start + 1000]]})
            assert status in (200, 201), status
        while pending_count():
            time.sleep(2)
        run_mark = time.strftime("%Y%m%d%H%M%S")  # new sentences on every run: never deduplicated
        facts = [f"{run_mark} fact {i}: " + s for i, s in enumerate(sentences(len(queries) // 4, seed=3))]
        results.update(measure_doors(args.port, key, queries, facts))
        print("REST", results["rest"], "\nMCP ", results["mcp"])

        # The same REST search, served both ways, alternately.
        sync_port = args.port + 1
        served_env = {**env, "DJANGO_SETTINGS_MODULE": "memory_platform.settings.production"}
        sync = sync_gunicorn(sync_port, served_env)
        try:
            wait_until_healthy(sync_port, 180)
            rest_search(sync_port, key, "warm up")
            rounds: dict = {"asgi_app_uvicorn_worker": [], "wsgi_app_sync_worker": []}
            for round_queries in (queries[: len(queries) // 2], queries[len(queries) // 2:]) * 2:
                rounds["asgi_app_uvicorn_worker"] += [timed(rest_search, args.port, key, q) for q in round_queries]
                rounds["wsgi_app_sync_worker"] += [timed(rest_search, sync_port, key, q) for q in round_queries]
            results["rest_search_served"] = {name: summary(values) for name, values in rounds.items()}
            print(results["rest_search_served"])
        finally:
            sync.terminate()
            sync.wait(timeout=60)
    results["machine"] = machine()
    (Path(__file__).parent / "results.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
