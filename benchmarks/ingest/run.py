"""Ingest benchmark: memories per second through the REST API, single and batch, next to the
raw embedder's throughput on the same machine.

    .venv/bin/python benchmarks/ingest/run.py            # writes benchmarks/ingest/results.md

It runs the product as `scripts/run` does (`manage.py run`: gunicorn + an RQ worker) on
embedded servers in a data folder of its own (.data/bench, removed first), then:
  1. raw embedder: sentences/s embedding in calls of 100 (as the worker does), and the latency
     of one sentence;
  2. single writes: POST /api/v1/memories one at a time (embedded inline): p50/p95 latency;
  3. batch writes: POST /api/v1/memories with 100 memories each, timed from the first POST
     until the worker has embedded the last memory.
"""

from __future__ import annotations

import json
import os
import platform
import random
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import api, pending_count, percentile, product  # noqa: E402

DATA_DIR = ROOT / ".data" / "bench"
PORT = 8765
SINGLE_WRITES = 300
BATCHES, BATCH_SIZE = 20, 100
RAW_SENTENCES = 2000

SUBJECTS = ["The user", "Our customer", "The team lead", "Maria", "The on-call engineer", "The client in Lisbon",
            "The finance team", "Dr. Okafor", "The support bot", "The product manager"]
VERBS = ["prefers", "asked about", "complained about", "scheduled", "approved", "rejected", "mentioned",
         "is allergic to", "wants a reminder about", "changed the plan for"]
OBJECTS = ["green tea in the morning", "the quarterly budget review", "a refund for order {n}", "deploys on Fridays",
           "the new onboarding flow", "peanuts and shellfish", "a call with the vendor on {day}",
           "dark mode in every tool", "the migration to PostgreSQL {v}", "weekly status emails"]
TAILS = ["because the last attempt failed.", "before the end of the month.", "after the incident {n}.",
         "as discussed in ticket {n}.", "and expects an answer by {day}.", "since the team grew to {v} people.", ""]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]


def sentences(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        text = " ".join([rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS), rng.choice(TAILS)])
        out.append(text.format(n=rng.randrange(10_000), day=rng.choice(DAYS), v=rng.randrange(9, 19)).strip()
                   + f" (note {seed}-{i})")
    return out


def request(method: str, path: str, key: str, body=None) -> tuple[int, dict]:
    return api(PORT, method, path, key, body)


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    memory_kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
    from importlib.metadata import version

    from memories.vectors.embeddings import get_embedder

    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(memory_kb / 1024 / 1024, 1),
            "python": platform.python_version(), "embedder": type(get_embedder()).__name__,
            "onnxruntime": version("onnxruntime"), "torch": version("torch"), "os": platform.platform()}


def raw_embedder() -> dict:
    from memories.vectors.embeddings import get_embedder

    embedder = get_embedder()  # as the worker has it: every core for its batches
    texts = sentences(RAW_SENTENCES, seed=1)
    embedder.embed(texts[:BATCH_SIZE])  # warm up
    started = time.perf_counter()
    # The same calls the worker makes: one per batch of BATCH_SIZE (the model's own batch
    # size inside them is the embedder's, as in the worker).
    for start in tqdm(range(0, len(texts), BATCH_SIZE), desc=f"raw embedder (calls of {BATCH_SIZE})"):
        embedder.embed(texts[start:start + BATCH_SIZE])
    batched = len(texts) / (time.perf_counter() - started)
    singles = []
    for text in tqdm(texts[:200], desc="raw embedder (one sentence)"):
        began = time.perf_counter()
        embedder.embed([text])
        singles.append((time.perf_counter() - began) * 1000)
    return {"sentences_per_second": round(batched, 1), "one_sentence_p50_ms": round(percentile(singles, 50), 2),
            "one_sentence_p95_ms": round(percentile(singles, 95), 2)}


def main() -> None:
    shutil.rmtree(DATA_DIR, ignore_errors=True)
    env = {**os.environ, "MEMORY_PLATFORM_DATA_DIR": str(DATA_DIR), "DJANGO_SETTINGS_MODULE": "memory_platform.settings.base",
           "DJANGO_DEBUG": "false", "LOG_LEVEL": "INFO"}
    os.environ.update(env)
    import django

    django.setup()
    raw = raw_embedder()

    DATA_DIR.mkdir(parents=True, exist_ok=True)
    server_log = DATA_DIR / "server.log"
    with product(DATA_DIR, PORT, env) as key:
        request("POST", "/api/v1/memories", key, {"content": "warm-up write"})

        latencies = []
        started = time.perf_counter()
        for text in tqdm(sentences(SINGLE_WRITES, seed=2), desc="single writes"):
            began = time.perf_counter()
            status, body = request("POST", "/api/v1/memories", key, {"content": text})
            latencies.append((time.perf_counter() - began) * 1000)
            assert status == 201 and body["embedding_status"] == "ready", body
        single_rate = SINGLE_WRITES / (time.perf_counter() - started)

        texts = sentences(BATCHES * BATCH_SIZE, seed=3)
        started = time.perf_counter()
        for start in tqdm(range(0, len(texts), BATCH_SIZE), desc="batch writes"):
            status, _ = request("POST", "/api/v1/memories", key,
                                {"memories": [{"content": t} for t in texts[start:start + BATCH_SIZE]]})
            assert status == 201
        posted = time.perf_counter() - started
        with tqdm(total=len(texts), desc="worker embedding") as bar:
            done = 0
            while True:
                left = pending_count()
                bar.update(len(texts) - left - done)
                done = len(texts) - left
                if left == 0:
                    break
                time.sleep(0.5)
        batch_elapsed = time.perf_counter() - started

    batch_rate = len(texts) / batch_elapsed
    jobs = [tuple(map(float, m.groups())) for m in
            re.finditer(r"embedded (\d+) memories: model (\d+) ms, database (\d+) ms", server_log.read_text())]
    worker = {"jobs": len(jobs), "memories": int(sum(j[0] for j in jobs)),
              "model_seconds": round(sum(j[1] for j in jobs) / 1000, 2),
              "database_seconds": round(sum(j[2] for j in jobs) / 1000, 2)}
    results = {
        "machine": machine(),
        "raw_embedder": raw,
        "recorded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "single_write": {"count": SINGLE_WRITES, "p50_ms": round(percentile(latencies, 50), 1),
                         "p95_ms": round(percentile(latencies, 95), 1), "p99_ms": round(percentile(latencies, 99), 1),
                         "mean_ms": round(statistics.mean(latencies), 1), "memories_per_second": round(single_rate, 1)},
        "batch_write": {"memories": len(texts), "batch_size": BATCH_SIZE, "seconds_to_accept": round(posted, 2),
                        "seconds_until_all_embedded": round(batch_elapsed, 2),
                        "memories_per_second": round(batch_rate, 1),
                        "ratio_to_raw_embedder": round(batch_rate / raw["sentences_per_second"], 3),
                        "worker": worker},
        "single_write_ratio_to_raw_embedder": round(single_rate / raw["sentences_per_second"], 3),
    }
    results["raw_embedder_after"] = raw_embedder()  # the same measurement again: how noisy was the machine?
    out = Path(__file__).with_name("results.json")
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
