"""Online re-embedding benchmark (docs/adr/0050): the switch to another model, and the rollback,
while a writer edits memories without pause and a reader searches without pause.

    .venv/bin/python benchmarks/lifecycle/reembed_online.py [--rows 20000] [--organisations 10]

On embedded servers in .data/bench-reembed (emptied first), loaded as benchmarks/lifecycle/
reembed.py loads them (`rows` generated memories over `organisations` organisations, embedded
with all-MiniLM-L6-v2, HNSW index built). Then, in this process:

  1. the build of all-MiniLM-L6-v2-int8 (memories.lifecycle.reembed.build), untimed here;
  2. a baseline: the writer and the reader alone for BASELINE_SECONDS;
  3. the switch (activate) with the writer and the reader running; then the rollback, the same.

The writer (a thread, its own connection) edits a random memory of a random organisation, one
transaction at a time, as the write path does: the new text is embedded by the active model
first (not timed), then the row is updated in the organisation's context; an edit's time is the
transaction's, waits for the switch's locks included. The reader (another thread) searches a
random organisation with one of a few questions as the pipeline does (memories.retrieval.
pipeline reads the active standing, embeds the query with the active model, and compares
with that model's vectors wherever they are while a switch moves them) and checks every hit
it can: the similarity of a memory the writer never touched must be that of the search's
model's vector of it (float32 as loaded, int8 as built), within 1e-4. A search whose hits
are not all of one model is counted as mixed.

Writes results-reembed-online-<rows>.json beside this file.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import fresh_django, machine, percentile  # noqa: E402
from benchmarks.lifecycle.reembed import DATA_DIR, load  # noqa: E402

BASELINE_SECONDS = 20
QUESTIONS = ["What does the user prefer for breakfast?", "When is the next deployment?",
             "Which city does the user live in?", "What did the team decide about the budget?",
             "Who reviews the pull requests?", "What is the user allergic to?"]
WORDS = ["tea", "coffee", "Lisbon", "Thursday", "budget", "review", "chess", "bees", "Greek", "sailing"]


class Load:
    """The writer and the reader, and what they saw."""

    def __init__(self, organisations: list[str], ids_by_org: dict[str, list[str]], reference: dict):
        self.organisations, self.ids_by_org, self.reference = organisations, ids_by_org, reference
        self.edited: set[str] = set()
        self.edits: list[tuple[float, float]] = []  # (when, seconds)
        self.searches: list[dict] = []
        self.stop = threading.Event()

    def writer(self) -> None:
        from django.db import connection, transaction

        from memories.vectors.embeddings import active_model, embedder_for, vector_literal
        from memories.writes.kernel import content_hash
        from tenants.context import tenant_context

        rng = random.Random(7)
        try:
            while not self.stop.is_set():
                org = rng.choice(self.organisations)
                memory_id = rng.choice(self.ids_by_org[org])
                text = f"The user now likes {rng.choice(WORDS)} and {rng.choice(WORDS)} ({rng.random():.6f})"
                model = active_model()
                vector = embedder_for(model).embed([text])[0]
                self.edited.add(memory_id)  # before the edit: the reader must not check it from now on
                started = time.perf_counter()
                with tenant_context(org), transaction.atomic(), connection.cursor() as cursor:
                    cursor.execute("""
                        UPDATE memories SET content = %s, content_hash = %s, embedding = %s::vector,
                               embedding_model = %s, embedded_at = now(), version = version + 1
                        WHERE org_id = %s AND id = %s
                    """, [text, content_hash(text), vector_literal(vector), model, org, memory_id])
                self.edits.append((time.monotonic(), time.perf_counter() - started))
        finally:
            connection.close()

    def reader(self) -> None:
        from django.db import connection, transaction

        from memories.retrieval import vector as vector_search
        from memories.retrieval.filters import SearchFilters
        from memories.vectors.embeddings import active_standing, embedder_for, query_model
        from tenants.context import tenant_context

        rng = random.Random(11)
        try:
            while not self.stop.is_set():
                org, question = rng.choice(self.organisations), rng.choice(QUESTIONS)
                model, moving = active_standing()
                query = np.asarray(embedder_for(query_model(model)).embed([question])[0], dtype=np.float64)
                started = time.perf_counter()
                with tenant_context(org), transaction.atomic():
                    hits, method = vector_search.search(org, list(query), SearchFilters(), 20,
                                                        vectors_of=model if moving else None)
                seconds = time.perf_counter() - started
                fits = {name: 0 for name in self.reference}
                checked = 0
                for hit in hits:
                    memory_id = str(hit.memory_id)
                    if memory_id in self.edited:
                        continue
                    checked += 1
                    for name, vectors in self.reference.items():
                        reference = vectors[memory_id]
                        similarity = float(query @ reference / np.linalg.norm(query) / np.linalg.norm(reference))
                        similarity = max(0.0, min(1.0, similarity))  # as the search reports it
                        if abs(similarity - hit.score) <= 1e-4:
                            fits[name] += 1
                self.searches.append({"when": time.monotonic(), "model": model, "switching": bool(moving),
                                      "method": method, "seconds": seconds, "checked": checked,
                                      "of_its_model": fits[model], "hits": len(hits)})
        finally:
            connection.close()

    def run(self, work) -> tuple[float, float, object]:
        threads = [threading.Thread(target=self.writer), threading.Thread(target=self.reader)]
        for thread in threads:
            thread.start()
        began = time.monotonic()
        try:
            result = work()
        finally:
            ended = time.monotonic()
            self.stop.set()
            for thread in threads:
                thread.join()
            self.stop.clear()
        return began, ended, result

    def summary(self, began: float, ended: float) -> dict:
        edits = [seconds for when, seconds in self.edits if began <= when <= ended]
        searches = [s for s in self.searches if began <= s["when"] <= ended]
        consistent = [s for s in searches if s["of_its_model"] == s["checked"]]
        return {
            "edits": len(edits),
            "edit_seconds": {"p50": round(percentile(edits, 50), 4), "p99": round(percentile(edits, 99), 4),
                             "max": round(max(edits), 4)} if edits else None,
            "edits_over_1s": sum(seconds > 1 for seconds in edits),
            "searches": len(searches),
            "searches_while_moving": sum(s["switching"] for s in searches),
            "searches_of_one_model": len(consistent),
            "searches_mixed": len(searches) - len(consistent),
            "hits_checked": sum(s["checked"] for s in searches),
            "search_seconds": {"p50": round(percentile([s["seconds"] for s in searches], 50), 4),
                               "p99": round(percentile([s["seconds"] for s in searches], 99), 4)} if searches else None,
            "models_answering": sorted({s["model"] for s in searches}),
        }


def vectors_of(sql: str, params=()) -> dict[str, np.ndarray]:
    from benchmarks.lifecycle.portability import superuser_connection

    with superuser_connection() as conn, conn.cursor() as cursor:
        cursor.execute(sql, params)
        return {str(memory_id): np.asarray(vector.to_numpy(), dtype=np.float64)
                for memory_id, vector in cursor.fetchall()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--organisations", type=int, default=10)
    arguments = parser.parse_args()
    rows = arguments.rows
    fresh_django(DATA_DIR)
    from benchmarks.lifecycle import portability
    from memories.lifecycle import reembed
    from memories.vectors.embeddings import INT8_MODEL_NAME, MODEL_NAME, embedder_for
    from memory_platform import local_services

    load(rows, arguments.organisations)
    started = time.perf_counter()
    built = reembed.build(model=INT8_MODEL_NAME)
    build_seconds = time.perf_counter() - started
    assert built.finished and built.done == rows, built

    connect = portability.superuser_connection
    float32 = vectors_of("SELECT id, embedding FROM memories")
    int8 = vectors_of("SELECT memory_id, embedding FROM memory_embeddings WHERE model = %s", [INT8_MODEL_NAME])
    with connect() as conn:
        ids_by_org: dict[str, list[str]] = {}
        for org_id, memory_id in conn.execute("SELECT org_id, id FROM memories ORDER BY org_id, id"):
            ids_by_org.setdefault(str(org_id), []).append(str(memory_id))
    for model in (MODEL_NAME, INT8_MODEL_NAME):
        embedder_for(model).embed(["warm"])
    work = Load(sorted(ids_by_org), ids_by_org, {MODEL_NAME: float32, INT8_MODEL_NAME: int8})

    baseline = work.summary(*work.run(lambda: time.sleep(BASELINE_SECONDS))[:2])
    began, ended, switched = work.run(lambda: reembed.activate(model=INT8_MODEL_NAME))
    switch = work.summary(began, ended) | {
        "seconds_in_all": round(ended - began, 1), "memories_moved": switched.switched,
        "batches": switched.batches, "longest_batch_seconds": round(switched.longest_batch, 3),
        "flip_seconds": round(switched.seconds, 3), "embedded_to_catch_up": switched.embedded,
        "left_pending": switched.pending}
    after_switch = work.summary(*work.run(lambda: time.sleep(BASELINE_SECONDS / 2))[:2])
    began, ended, rolled = work.run(reembed.rollback)
    rollback = work.summary(began, ended) | {
        "seconds_in_all": round(ended - began, 1), "memories_moved": rolled.switched, "batches": rolled.batches,
        "longest_batch_seconds": round(rolled.longest_batch, 3), "flip_seconds": round(rolled.seconds, 3),
        "embedded_to_catch_up": rolled.embedded, "left_pending": rolled.pending}
    # Exact: every memory the writer never touched holds its float32 vector again, bit for bit.
    now = vectors_of("SELECT id, embedding FROM memories")
    untouched = [memory_id for memory_id in float32 if memory_id not in work.edited]
    exact = sum(np.array_equal(now[memory_id], float32[memory_id]) for memory_id in untouched)

    results = {
        "machine": machine(),
        "recorded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "rows": rows,
        "organisations": arguments.organisations,
        "move_batch": reembed.MOVE_BATCH,
        "build_seconds": round(build_seconds, 1),
        "baseline_no_switch": baseline,
        "switch": switch,
        "after_switch": after_switch,
        "rollback": rollback,
        "rollback_exact": {"untouched_memories": len(untouched), "holding_their_very_float32_vector": int(exact)},
        "edited_memories": len(work.edited),
    }
    out = Path(__file__).with_name(f"results-reembed-online-{rows}.json")
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    local_services.stop_all()


if __name__ == "__main__":
    main()
