"""Query embeddings in float32 or int8: what the quantized model (memories.vectors.embeddings.quantized_graph)
gains in time and what it changes in what a search finds.

    .venv/bin/python benchmarks/search/query_precision.py

On the search benchmark's corpus (run.py makes it: .data/bench-search/corpus.npz) and its 300
held-out query sentences:
- the time to embed one query on one thread, as a web worker does, float32 and int8 in turn
  for every query (three rounds), p50/p95;
- the cosine of each query's int8 vector to its float32 one;
- how much of the exact top 10 found with the float32 vector the int8 one finds in its own
  top 10 (and in its top 20), among the 40,000 corpus sentences and among the 1,000,000
  vectors the benchmark loads;
- how far the similarity of the float32 top 10 moves when the int8 vector scores them (what
  spec §3's store search compares with its 0.7 threshold), p50/p95/max.

Writes results-query-precision.json beside this file. Everything runs in this process: no
database, no server.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine, percentile  # noqa: E402
from benchmarks.search import run  # noqa: E402  (sets the data folder and settings module)

ROUNDS = 3
K = run.K


def top_k(table: np.ndarray, queries: np.ndarray, k: int, chunk: int = 25) -> np.ndarray:
    found = []
    for start in range(0, len(queries), chunk):
        scores = queries[start:start + chunk] @ table.T
        found.append(np.argpartition(-scores, k, axis=1)[:, :k])
    return np.concatenate(found)


def overlap(exact: np.ndarray, quantized: np.ndarray) -> dict:
    """How much of float32's top 10 the int8 vector finds: in its top 10, and in its top 2 x 10
    (how far down what it misses went)."""
    shares = [len(set(x) & set(y[:K])) / K for x, y in zip(exact, quantized)]
    deeper = [len(set(x) & set(y)) / K for x, y in zip(exact, quantized)]
    return {"mean": round(float(np.mean(shares)), 4), "min": round(float(np.min(shares)), 2),
            "queries_identical": round(float(np.mean([s == 1.0 for s in shares])), 4),
            "within_int8_top_20": round(float(np.mean(deeper)), 4)}


def main() -> None:
    import django

    django.setup()
    from memories.vectors import embeddings

    _, vectors, query_texts, _ = run.corpus()
    exact = embeddings.load_onnx_embedder(threads=1)
    quantized = embeddings.load_onnx_embedder(threads=1, quantized=True)
    for embedder in (exact, quantized):  # the first call of a session is slow
        embedder.embed(["warming up the session"])

    timings: dict[str, list[float]] = {"float32": [], "int8": []}
    fp32, int8 = [], []
    for round_ in range(ROUNDS):
        for text in tqdm(query_texts, desc=f"embedding the queries, round {round_ + 1}/{ROUNDS}"):
            for name, embedder, out in (("float32", exact, fp32), ("int8", quantized, int8)):
                started = time.perf_counter()
                vector = embedder.embed([text])[0]
                timings[name].append((time.perf_counter() - started) * 1000)
                if round_ == 0:
                    out.append(vector)
    fp32, int8 = np.asarray(fp32, dtype=np.float32), np.asarray(int8, dtype=np.float32)
    cosine = (fp32 * int8).sum(axis=1)

    results = {"recorded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(),
               "queries": len(query_texts),
               "embed_one_query_ms": {name: {"p50": round(percentile(t, 50), 2), "p95": round(percentile(t, 95), 2)}
                                      for name, t in timings.items()},
               "cosine_int8_to_float32": {"mean": round(float(cosine.mean()), 4), "min": round(float(cosine.min()), 4)},
               "top10_overlap": {}}
    for label, rows in (("40k corpus sentences", len(vectors)), ("1M benchmark vectors", 1_000_000)):
        table = vectors if rows == len(vectors) else run.augmented(vectors, rows)[0]
        found_fp32 = top_k(table, fp32, K)
        found_int8 = top_k(table, int8, 2 * K)
        # top_k's rows are unordered: order int8's 20 by score, so its first 10 are its top 10
        found_int8 = np.array([row[np.argsort(-(table[row] @ query))] for row, query in zip(found_int8, int8)])
        results["top10_overlap"][label] = overlap(found_fp32, found_int8)
        if rows == len(vectors):
            moved = np.abs(np.take_along_axis(fp32 @ table.T, found_fp32, 1)
                           - np.take_along_axis(int8 @ table.T, found_fp32, 1)).ravel()
            results["top10_similarity_shift"] = {"p50": round(float(np.percentile(moved, 50)), 4),
                                                 "p95": round(float(np.percentile(moved, 95)), 4),
                                                 "max": round(float(moved.max()), 4)}
        del table
        print(label, results["top10_overlap"][label])
    out = Path(__file__).with_name("results-query-precision.json")
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(out.read_text())


if __name__ == "__main__":
    main()
