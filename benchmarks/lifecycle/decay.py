"""Decay benchmark: how long the nightly decay of one organisation takes, and the reads of
strength beside it (the weak list, the strength bands), at 100,000 memories.

    .venv/bin/python benchmarks/lifecycle/decay.py [--rows 100000]

On embedded servers in .data/bench-decay (emptied first), configured as `scripts/run` does:
an organisation of `rows` memories loaded with COPY, written over the last year (uniformly),
of 1,000 end users' namespaces, with a version and a tag each. Decay rates and importance as
writes leave them: the default rate 0.1, importance uniform in [0, 1]; one in ten is an
episode (rate 0), one in twenty confirmed (rate 0, protected); one in ten was retrieved (1 to
20 times, in the last 60 days). That is the first nightly run after a year without one: most
of the old memories have faded, so it archives tens of thousands (the worst case; a night
after a night archives the day's few).

Measured, in this process, as the worker runs them:
  1. `decay_organisation` (the nightly job for one organisation): weigh every decaying live
     memory, archive those below the threshold with a version each, record the run;
  2. the same again (nothing left to archive: the job's cost on an ordinary night);
  3. `weak_memories` (GET /memories/weak's first page) and `strength_bands` (GET /stats), p50
     and p95 of 20 runs each, right after the archiving night and again after a VACUUM (what
     autovacuum does after such a night).

The vector indexes are not built: an archive's new row version is not live, so neither the
shared HNSW index nor the covering index of live vectors takes an entry for it. The vectors
themselves are random (their values do not matter here; their 1.5 kB a row do).
Writes results-decay-<rows>.json beside this file.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import django_env, fresh_django, machine  # noqa: E402
from benchmarks.lifecycle.portability import superuser_connection  # noqa: E402

DATA_DIR = ROOT / ".data" / "bench-decay"
USERS = 1_000
ENV = django_env(DATA_DIR)
REPEATS = 20


def load(rows: int) -> uuid.UUID:
    from memories.vectors.embeddings import vector_literal
    from memories.writes.kernel import content_hash

    rng = random.Random(19)
    vectors = np.random.default_rng(19).standard_normal((1000, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    literals = [vector_literal(v) for v in vectors]  # 1,000 distinct vectors, reused
    org_id, agent = uuid.uuid4(), uuid.uuid4()
    now = datetime.now(timezone.utc)
    with superuser_connection() as conn:
        conn.execute("INSERT INTO organizations (id, name, slug, is_active, redact_personal_data, created_at, updated_at)"
                     " VALUES (%s, 'Decaying', 'decaying', true, false, now(), now())", [org_id])
        conn.execute("INSERT INTO agents (id, org_id, name, description, is_active, created_at, updated_at) "
                     "VALUES (%s, %s, 'assistant', '', true, now(), now())", [agent, org_id])
        ids = [uuid.uuid4() for _ in range(rows)]
        with conn.cursor() as cursor:
            columns = ("id, org_id, agent_id, content, content_hash, embedding, embedding_model, embedding_dimensions, "
                       "embedded_at, category, memory_type, source, status, confidence, usefulness_score, importance, "
                       "sensitivity, validation_status, scope, provenance, metadata, decay_rate, is_protected, version, "
                       "created_at, updated_at")
            with cursor.copy(f"COPY memories ({columns}) FROM STDIN") as copy:
                for n in tqdm(range(rows), desc=f"loading {rows:,} memories", mininterval=2):
                    created = now - timedelta(days=rng.uniform(0, 365))
                    episode, confirmed = n % 10 == 0, n % 20 == 1
                    content = f"Fact {n} about user {n % USERS}: they mentioned topic {rng.randrange(5000)}"
                    copy.write_row((ids[n], org_id, agent, content, content_hash(content), literals[n % 1000],
                                    "all-MiniLM-L6-v2", 384, created, "episodic" if episode else "factual",
                                    "episodic" if episode else "semantic", "extracted", "active", 0.8, 0.5,
                                    round(rng.random(), 3), "internal", "verified" if confirmed else "unverified",
                                    f"users/user-{n % USERS}", "{}", "{}", 0 if episode or confirmed else 0.1,
                                    confirmed, 1, created, created))
            with cursor.copy("COPY memory_versions (id, org_id, memory_id, version_num, operation, content, category, "
                             "confidence, status, metadata, snapshot, changed_by_type, changed_by_agent_id, "
                             "change_reason, created_at) FROM STDIN") as copy:
                for n in range(rows):
                    copy.write_row((uuid.uuid4(), org_id, ids[n], 1, "create", f"Fact {n}", "factual", 0.8, "active",
                                    "{}", json.dumps({"scope": f"users/user-{n % USERS}", "tags": []}), "agent",
                                    agent, "", now))
            with cursor.copy("COPY memory_tags (id, org_id, memory_id, tag, created_at) FROM STDIN") as copy:
                for n in range(rows):
                    copy.write_row((uuid.uuid4(), org_id, ids[n], f"topic-{n % 20}", now))
            with cursor.copy("COPY memory_usage (id, org_id, memory_id, retrieval_count, last_retrieved_at) "
                             "FROM STDIN") as copy:
                for n in range(3, rows, 10):
                    copy.write_row((uuid.uuid4(), org_id, ids[n], rng.randint(1, 20),
                                    now - timedelta(days=rng.uniform(0, 60))))
        conn.execute("VACUUM ANALYZE")
    return org_id


def percentiles(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 1),
            "p95_ms": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] * 1000, 1)}


def timed(func) -> tuple[float, object]:
    started = time.perf_counter()
    result = func()
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    rows = parser.parse_args().rows
    fresh_django(DATA_DIR)
    from memories.lifecycle import decay
    from memory_platform import local_services
    from tenants.context import tenant_context

    org_id = load(rows)

    first_seconds, first = timed(lambda: decay.decay_organisation(org_id=org_id))
    print(f"first run: {first_seconds:.1f} s, {first}")
    second_seconds, second = timed(lambda: decay.decay_organisation(org_id=org_id))
    print(f"second run: {second_seconds:.1f} s, {second}")

    def reads() -> dict:
        weak, bands = [], []
        with tenant_context(org_id):
            for _ in range(REPEATS):
                weak.append(timed(lambda: decay.weak_memories(org_id=org_id, limit=50))[0])
                bands.append(timed(lambda: decay.strength_bands(org_id=org_id))[0])
        return {"weak_list_first_page": percentiles(weak), "strength_bands": percentiles(bands)}

    # Right after the night that archived tens of thousands (their pages are not all-visible:
    # the index-only scan visits the table for them), then once autovacuum has been by.
    after_archiving = reads()
    with superuser_connection() as conn:
        conn.autocommit = True
        conn.execute("VACUUM memories")
    after_vacuum = reads()
    with tenant_context(org_id):
        strength = decay.strength_bands(org_id=org_id)
    results = {
        "machine": machine(),
        "recorded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "rows": rows,
        "first_run": {"seconds": round(first_seconds, 1), **first,
                      "archived_per_second": round(first["archived"] / first_seconds)},
        "second_run": {"seconds": round(second_seconds, 2), **second},
        "reads_after_archiving": after_archiving,
        "reads_after_vacuum": after_vacuum,
        "strength_after": strength,
    }
    out = Path(__file__).with_name(f"results-decay-{rows}.json")
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    local_services.stop_all()


if __name__ == "__main__":
    main()
