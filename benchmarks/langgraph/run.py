"""LangGraph store benchmark: put, get and search latency through LangGraph's store API (driven
by langgraph_sdk's own sync client) beside the REST API's equivalents, and the overhead as a
ratio of p95s.

    .venv/bin/python benchmarks/langgraph/run.py      # writes benchmarks/langgraph/results.json

It runs the product as `scripts/run` does (`manage.py run`: gunicorn + an RQ worker) on embedded
servers in a data folder of its own (.data/bench-langgraph, removed first), rate limits off, then
for each door, one request at a time over a kept-alive connection:

  put     LangGraph: PUT /store/items {namespace, key, value: {"text": ...}, index: ["text"]}
          REST:      POST /memories {content, namespace, key}            (both embed inline)
  get     LangGraph: GET /store/items?namespace=...&key=...               (refreshes the ttl)
          REST:      GET /memories/{id}
  search  LangGraph: POST /store/items/search {namespace_prefix, query, limit 10}
          REST:      POST /search {query, limit 10, mode "vector", filters.namespace}, and the
                     default hybrid search beside it

Both doors write into namespaces of their own that hold the same sentences, so each search
looks through as many memories.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine, percentile, product  # noqa: E402
from benchmarks.ingest.run import sentences  # noqa: E402

DATA_DIR = ROOT / ".data" / "bench-langgraph"
PORT = 8767
ITEMS = 300  # written through each door, then read and searched
SEARCHES = 200


def summary(timings: list[float]) -> dict:
    return {"n": len(timings), "p50_ms": round(percentile(timings, 50), 2), "p95_ms": round(percentile(timings, 95), 2),
            "mean_ms": round(sum(timings) / len(timings), 2)}


def timed(calls) -> list[float]:
    timings = []
    for call in calls:
        started = time.perf_counter()
        call()
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def side_by_side(pairs) -> tuple[list[float], list[float]]:
    """Each pair's two calls timed one after the other, the doors alternating, so what else the
    machine does at a moment weighs on both alike."""
    first, second = [], []
    for one, other in pairs:
        first += timed([one])
        second += timed([other])
    return first, second


def main() -> None:
    shutil.rmtree(DATA_DIR, ignore_errors=True)
    DATA_DIR.mkdir(parents=True)
    env = {**os.environ, "MEMORY_PLATFORM_DATA_DIR": str(DATA_DIR), "DJANGO_SETTINGS_MODULE": "memory_platform.settings.base",
           "DJANGO_DEBUG": "false", "LOG_LEVEL": "WARNING",
           **{f"MEMORY_PLATFORM_RATE_LIMIT_{name}": "off" for name in ("API_KEY", "API_KEY_BURST", "SEARCH")}}
    from langgraph_sdk import get_sync_client

    texts = sentences(ITEMS, seed=20)
    queries = [text.split(" (note")[0] for text in sentences(SEARCHES, seed=21)]
    rng = random.Random(22)
    with product(DATA_DIR, PORT, env) as key:
        base = f"http://127.0.0.1:{PORT}/api/v1"
        sdk = get_sync_client(url=base, api_key=key)
        rest = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120)
        store = sdk.store
        # Warm both doors (each web worker's model, the query cache is per query).
        for i in range(4):
            store.put_item(["warm"], f"w{i}", {"text": f"warm-up {i}"}, index=["text"])
            rest.post("/memories", json={"content": f"warm-up REST {i}"}).raise_for_status()
            store.search_items(["warm"], query=f"warm {i}")
            rest.post("/search", json={"query": f"warm {i}"}).raise_for_status()

        ids: list[str] = []

        def rest_put(i: int):
            response = rest.post("/memories", json={"content": texts[i], "namespace": ["rest", "items"],
                                                    "key": f"k{i}"})
            response.raise_for_status()
            ids.append(response.json()["memory"]["id"])

        figures: dict = {"langgraph": {}, "rest": {}}

        def record(operation: str, pairs) -> None:
            store_times, rest_times = side_by_side(pairs)
            figures["langgraph"][operation], figures["rest"][operation] = summary(store_times), summary(rest_times)

        record("put", ((lambda i=i: store.put_item(["store", "items"], f"k{i}", {"text": texts[i], "n": i},
                                                   index=["text"]),
                        lambda i=i: rest_put(i)) for i in range(ITEMS)))
        picks = [rng.randrange(ITEMS) for _ in range(ITEMS)]
        record("get", ((lambda i=i: store.get_item(["store", "items"], f"k{i}"),
                        lambda i=i: rest.get(f"/memories/{ids[i]}").raise_for_status()) for i in picks))
        # Each query a text new to the query-embedding cache on either door.
        record("search", ((lambda q=q: store.search_items(["store", "items"], query=q, limit=10),
                           lambda q=q: rest.post("/search", json={"query": f"{q} ", "limit": 10, "mode": "vector",
                                                                  "filters": {"namespace": "rest/items"}}
                                                 ).raise_for_status()) for q in queries))
        figures["rest"]["search_hybrid"] = summary(timed(
            lambda q=q: rest.post("/search", json={"query": q, "limit": 10,
                                                   "filters": {"namespace": "rest/items"}}).raise_for_status()
            for q in [f"{q}  " for q in queries]))
        figures["langgraph"]["search_filtered"] = summary(timed(
            lambda q=q: store.search_items(["store", "items"], query=q, limit=10, filter={"n": {"$gte": 150}})
            for q in [f"{q}   " for q in queries]))
        figures["langgraph"]["list"] = summary(timed(
            lambda: store.search_items(["store", "items"], limit=10, filter={"n": {"$lt": 100}})
            for _ in range(SEARCHES)))
        sdk.close()
        rest.close()

    ratios = {operation: round(figures["langgraph"][operation]["p95_ms"] / figures["rest"][operation]["p95_ms"], 2)
              for operation in ("put", "get", "search")}
    results = {"date": time.strftime("%Y-%m-%d"), "machine": machine(), "items": ITEMS, "searches": SEARCHES,
               "p95_ratio_langgraph_over_rest": ratios, **figures}
    out = Path(__file__).with_name("results.json")
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
