"""Cluster benchmark: the same memories and queries on a single PostgreSQL and on Citus clusters
of 1, 2 and 4 workers; recall@10 of the vector search, search and write latency, throughput.

    .venv/bin/python benchmarks/cluster/run.py --rows 20000
    .venv/bin/python benchmarks/cluster/run.py --rows 100000 --queries 100   # the full run

Each layout runs in a process of its own (the settings read MEMORY_PLATFORM_CITUS_WORKERS once)
on new embedded servers in .data/bench-cluster/<layout>, stopped after. The rows are the search
benchmark's kind (benchmarks/search/run.py: real sentence embeddings, augmented), with ids and
organisations fixed by a seed, so every layout holds exactly the same rows; results go to
results-<rows>.json beside this file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine, percentile  # noqa: E402

DATA_DIR = ROOT / ".data" / "bench-cluster"
CORPUS = DATA_DIR / "corpus.npz"
LAYOUTS = {"single": 0, "citus-1": 1, "citus-2": 2, "citus-4": 4}
K = 10
# Tenants as shares of the rows; the rest over small ones (as benchmarks/search does).
TENANTS = {"large": 0.3, "medium": 0.05, "small": 0.005}
OTHER_TENANTS = 30


def corpus(sentences: int, queries: int) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    """`sentences` docstring sentences and `queries` held-out ones, embedded by the product's
    model (cached): the search benchmark's corpus, smaller, so it is made in a minute or two."""
    if CORPUS.exists():
        data = np.load(CORPUS, allow_pickle=False)
        if len(data["texts"]) >= sentences and len(data["query_texts"]) >= queries:
            return (list(data["texts"][:sentences]), data["vectors"][:sentences],
                    list(data["query_texts"][:queries]), data["query_vectors"][:queries])
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_platform.settings.base")
    import django

    django.setup()
    from benchmarks.search.run import docstring_sentences
    from memories.vectors.embeddings import SentenceTransformerEmbedder

    found = docstring_sentences()
    random.Random(7).shuffle(found)
    texts, query_texts = found[:sentences], found[sentences:sentences + queries]
    embedder = SentenceTransformerEmbedder()
    vectors = [v for start in range(0, len(texts), 500) for v in embedder.embed(texts[start:start + 500])]
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    np.savez(CORPUS, texts=np.array(texts), vectors=np.asarray(vectors, dtype=np.float32),
             query_texts=np.array(query_texts),
             query_vectors=np.asarray(embedder.embed(query_texts), dtype=np.float32))
    return corpus(sentences, queries)


def tenants_plan(rows: int) -> dict[str, tuple[str, str, int]]:
    plan = {name: int(rows * share) for name, share in TENANTS.items()}
    rest = rows - sum(plan.values())
    for i in range(OTHER_TENANTS):
        plan[f"other_{i}"] = rest // OTHER_TENANTS + (1 if i < rest % OTHER_TENANTS else 0)
    rng = random.Random(5)
    return {name: (str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                   str(uuid.UUID(int=rng.getrandbits(128), version=4)), count) for name, count in plan.items()}


def load(rows: int, texts: list[str], vectors: np.ndarray, tenants: dict) -> None:
    """The rows, the same in every layout (ids from a seed), by COPY as the superuser (COPY is
    refused under row-level security); into the shards on a cluster."""
    import psycopg
    from pgvector.psycopg import register_vector

    from benchmarks.search.run import MEMORY_COLUMNS, augmented, insert_tenants
    from memory_platform import local_services

    vectors, source = augmented(vectors, rows)
    owners = np.concatenate([np.full(count, index) for index, (_, _, count) in enumerate(tenants.values())])
    owners = owners[np.random.default_rng(3).permutation(rows)]
    names = list(tenants)
    rng = random.Random(9)
    url = local_services.postgres_endpoint().url(user="postgres")
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        insert_tenants(conn, tenants)
        with conn.cursor() as cursor, cursor.copy(f"COPY memories ({MEMORY_COLUMNS}) FROM STDIN") as copy:
            for row in range(rows):
                org_id, agent_id, _ = tenants[names[owners[row]]]
                content = texts[source[row]] + ("" if row < len(texts) else f" (variant {row})")
                copy.write_row((uuid.UUID(int=rng.getrandbits(128), version=4), org_id, agent_id, content,
                                f"{row:064x}", vectors[row], "all-MiniLM-L6-v2", 384, "2026-01-01 00:00:00+00",
                                "factual", "semantic", "imported", "active", 0.8, 0.5, 0.0, "internal",
                                "unverified", "", "{}", "{}", 0.1, False, 1, "2026-01-01 00:00:00+00",
                                "2026-01-01 00:00:00+00"))
        conn.execute("VACUUM ANALYZE memories")


def plan(org_id: str, embedding: np.ndarray) -> list[str]:
    """EXPLAIN (ANALYZE, BUFFERS) of the vector search's statement for one query, run as the
    search runs it; on a cluster with the worker's own plan of its task."""
    from django.db import connection

    from memories.retrieval import vector
    from memories.retrieval.filters import SearchFilters
    from memory_platform.database import set_local
    from memory_platform.database import on_citus
    from tenants.context import tenant_context

    with tenant_context(org_id), connection.cursor() as cursor:
        query = vector.statement(cursor, org_id, embedding.tolist(), SearchFilters(), K)
        set_local(cursor, query.knobs)
        if on_citus():
            cursor.execute("SET LOCAL citus.explain_all_tasks = on")
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {query.sql}", query.params)
        return [line for (line,) in cursor.fetchall()]


def measure_layout(layout: str, rows: int, queries: int, writes: int, explain: bool = False) -> dict:
    """In this process: new servers for the layout, the rows, then every figure."""
    workers = LAYOUTS[layout]
    data_dir = DATA_DIR / layout
    os.environ[local_services_variable()] = str(workers) if workers else ""
    from benchmarks.common import fresh_django

    texts, vectors, _, query_vectors = corpus(max(2000, min(rows, 4000)), queries)
    fresh_django(data_dir)  # new servers, migrated (and distributed on a cluster)
    from django.db import connection

    from benchmarks.search.run import approximate, exact_neighbours
    from memories.models import Memory
    from memories.writes.create import memory_create
    from memory_platform import local_services
    from tenants.context import tenant_context

    try:
        tenants = tenants_plan(rows)
        started = time.perf_counter()
        load(rows, texts, vectors, tenants)
        loaded = time.perf_counter() - started
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'citus'")
            citus = cursor.fetchone()
        result = {"layout": layout, "workers": workers, "citus": citus[0] if citus else None,
                  "load_seconds": round(loaded, 1), "tenants": {}}
        for name in TENANTS:
            org_id, _, count = tenants[name]
            exact = exact_neighbours(org_id, query_vectors)
            found, timings, method = approximate(org_id, query_vectors)
            recall = np.mean([len(set(a) & set(e)) / max(len(e), 1) for a, e in zip(found, exact)])
            result["tenants"][name] = {
                "rows": count, "method": method, "recall_at_10": round(float(recall), 4),
                "search_sql_p50_ms": round(percentile(timings, 50), 2),
                "search_sql_p95_ms": round(percentile(timings, 95), 2),
                "search_per_second": round(1000 * len(timings) / sum(timings), 1),
                # The exact top 10s themselves: the same in every layout, or the data differ.
                "exact_top10_sha256": hashlib.sha256(json.dumps(exact).encode()).hexdigest()[:16],
            }
            if explain:
                result["tenants"][name]["plan"] = plan(org_id, query_vectors[0])
            print(layout, name, result["tenants"][name], flush=True)
        # Writes through the product's own service (the embedding left to the worker, as the API does).
        org_id, agent_id, _ = tenants["medium"]
        timings = []
        for number in range(writes):
            began = time.perf_counter()
            with tenant_context(org_id):
                memory_create(org_id=org_id, agent_id=agent_id, content=f"Benchmark write {number} on {layout}",
                              category=Memory.Category.FACTUAL)
            timings.append((time.perf_counter() - began) * 1000)
        result["write_p50_ms"] = round(percentile(timings, 50), 2)
        result["write_p95_ms"] = round(percentile(timings, 95), 2)
        result["writes_per_second"] = round(1000 * len(timings) / sum(timings), 1)
        print(layout, "writes", result["write_p50_ms"], result["write_p95_ms"], flush=True)
        return result
    finally:
        connection.close()
        local_services.stop_all()


def local_services_variable() -> str:
    return "MEMORY_PLATFORM_CITUS_WORKERS"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--layouts", default=",".join(LAYOUTS))
    parser.add_argument("--explain", action="store_true",
                        help="record each tenant's search plan (EXPLAIN ANALYZE, the worker's on a cluster)")
    parser.add_argument("--layout", help=argparse.SUPPRESS)  # one layout, in a child process
    args = parser.parse_args()
    if args.layout:
        out = measure_layout(args.layout, args.rows, args.queries, args.writes, args.explain)
        (DATA_DIR / f"{args.layout}-{args.rows}.json").write_text(json.dumps(out))
        return
    corpus(max(2000, min(args.rows, 4000)), args.queries)  # made once, before the layouts share it
    results = {"rows": args.rows, "queries": args.queries, "writes": args.writes,
               "recorded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(),
               "layouts": {}}
    for layout in args.layouts.split(","):
        started = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--layout", layout, "--rows", str(args.rows),
                        "--queries", str(args.queries), "--writes", str(args.writes),
                        *(["--explain"] if args.explain else [])], cwd=ROOT, check=True,
                       env={**os.environ, "DJANGO_SETTINGS_MODULE": "memory_platform.settings.base",
                            "LOG_LEVEL": "WARNING"})
        results["layouts"][layout] = json.loads((DATA_DIR / f"{layout}-{args.rows}.json").read_text())
        results["layouts"][layout]["seconds"] = round(time.perf_counter() - started, 1)
    out = Path(__file__).with_name(f"results-{args.rows}.json")
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
