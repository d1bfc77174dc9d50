"""Re-embedding benchmark: how fast `manage.py reembed --model` embeds every memory with another
model, as a ratio of the raw embedder on the same texts in the same process, and how long the
switch (`--activate`) and the rollback take.

    .venv/bin/python benchmarks/lifecycle/reembed.py [--rows 10000] [--organisations 10]

On embedded servers in .data/bench-reembed (emptied first), as `scripts/run` configures them:
`rows` memories of generated sentences in the shape of agent memories (benchmarks/ingest,
no two equal), spread over `organisations` organisations, are embedded with the active model
(all-MiniLM-L6-v2, float32) and loaded with COPY; the HNSW index is built after. Then, in this
process:

  1. the raw embedder: the int8 model (all-MiniLM-L6-v2-int8) on the same texts, in calls of
     reembed.BATCH as the build makes them;
  2. the build (memories.lifecycle.reembed.build): every memory of every organisation into
     memory_embeddings, with its reads, locks, writes and progress, and its last pass over
     every memory to find what changed meanwhile (nothing here);
  3. the raw embedder again (the machine is shared: the ratio takes the mean of both). The
     build's own calls to the model are timed too: their share of its wall time is the same
     ratio measured at the same moments, which another process's load cannot tilt;
  4. the switch (activate): the catch-up's pass (nothing to embed), then the one transaction
     that swaps every memory's vector;
  5. the rollback, the same the other way.

Writes results-reembed-<rows>.json beside this file.
"""

from __future__ import annotations

import argparse
import json
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
from benchmarks.ingest.run import sentences  # noqa: E402
from benchmarks.lifecycle.portability import superuser_connection  # noqa: E402

DATA_DIR = ROOT / ".data" / "bench-reembed"
ENV = django_env(DATA_DIR)


def load(rows: int, organisations: int) -> list[str]:
    """The organisations and their memories, embedded by the active model; returns the texts."""
    from memories.vectors.embeddings import MODEL_NAME, embedder_for
    from memories.vectors.index import create_sql
    from memories.writes.kernel import content_hash

    texts = sentences(rows, seed=23)
    float32 = embedder_for(MODEL_NAME)
    vectors = []
    for start in tqdm(range(0, rows, 256), desc=f"embedding {rows:,} memories with {MODEL_NAME}"):
        vectors += float32.embed(texts[start:start + 256])
    now = datetime.now(timezone.utc)
    orgs = [(uuid.uuid4(), uuid.uuid4()) for _ in range(organisations)]  # (organisation, its agent)
    with superuser_connection() as conn:
        conn.execute("DROP INDEX IF EXISTS memories_embedding_ann")
        for n, (org, agent) in enumerate(orgs):
            conn.execute("INSERT INTO organizations (id, name, slug, is_active, redact_personal_data, created_at, "
                         "updated_at) VALUES (%s, %s, %s, true, false, now(), now())", [org, f"Org {n}", f"org-{n}"])
            conn.execute("INSERT INTO agents (id, org_id, name, description, is_active, created_at, updated_at) "
                         "VALUES (%s, %s, 'assistant', '', true, now(), now())", [agent, org])
        columns = ("id, org_id, agent_id, content, content_hash, embedding, embedding_model, embedding_dimensions, "
                   "embedded_at, category, memory_type, source, status, confidence, usefulness_score, importance, "
                   "sensitivity, validation_status, scope, provenance, metadata, decay_rate, is_protected, version, "
                   "created_at, updated_at")
        with conn.cursor() as cursor, cursor.copy(f"COPY memories ({columns}) FROM STDIN") as copy:
            for n in range(rows):
                org, agent = orgs[n % organisations]
                created = now - timedelta(seconds=rows - n)
                copy.write_row((uuid.uuid4(), org, agent, texts[n], content_hash(texts[n]),
                                np.asarray(vectors[n], dtype=np.float32), MODEL_NAME, 384, created, "factual",
                                "semantic", "extracted", "active", 0.8, 0.5, 0.0, "internal", "unverified",
                                f"users/user-{n % 100}", "{}", "{}", 0.1, False, 1, created, created))
        conn.execute("SET maintenance_work_mem = '512MB'")
        conn.execute(create_sql("hnsw"))
        conn.execute("VACUUM ANALYZE")
    return texts


def raw_embedder(texts: list[str]) -> float:
    """Rows per second of the int8 model alone on these texts, in the build's calls."""
    from memories.lifecycle import reembed
    from memories.vectors.embeddings import INT8_MODEL_NAME, embedder_for

    embedder = embedder_for(INT8_MODEL_NAME)
    started = time.perf_counter()
    for start in tqdm(range(0, len(texts), reembed.BATCH), desc="raw embedder (int8)"):
        embedder.embed(texts[start:start + reembed.BATCH])
    return len(texts) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--organisations", type=int, default=10)
    arguments = parser.parse_args()
    rows = arguments.rows
    fresh_django(DATA_DIR)
    from memories.lifecycle import reembed
    from memories.vectors.embeddings import INT8_MODEL_NAME, embedder_for
    from memory_platform import local_services

    texts = load(rows, arguments.organisations)
    embedder_for(INT8_MODEL_NAME).embed(texts[:64])  # loaded and warm before anything is timed

    raw_before = raw_embedder(texts)
    embedder = embedder_for(INT8_MODEL_NAME)
    in_model = []
    embed = embedder.embed

    def timed(batch):
        began = time.perf_counter()
        try:
            return embed(batch)
        finally:
            in_model.append(time.perf_counter() - began)

    embedder.embed = timed  # the build's calls, timed
    bar = tqdm(total=rows, desc="reembed --model (build)")
    started = time.perf_counter()
    built = reembed.build(model=INT8_MODEL_NAME, progress=lambda done, total: bar.update(done - bar.n))
    build_seconds = time.perf_counter() - started
    bar.close()
    embedder.embed = embed
    raw_after = raw_embedder(texts)
    assert built.finished and built.done == built.total == rows, built

    started = time.perf_counter()
    switched = reembed.activate(model=INT8_MODEL_NAME)
    activate_seconds = time.perf_counter() - started
    started = time.perf_counter()
    rolled_back = reembed.rollback()
    rollback_seconds = time.perf_counter() - started
    assert switched.switched == rolled_back.switched == rows and switched.pending == rolled_back.pending == 0

    raw = (raw_before + raw_after) / 2
    results = {
        "machine": machine(),
        "recorded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "rows": rows,
        "organisations": arguments.organisations,
        "model": INT8_MODEL_NAME,
        "raw_embedder_rows_per_second": {"before": round(raw_before, 1), "after": round(raw_after, 1)},
        "build": {"seconds": round(build_seconds, 1), "rows_per_second": round(rows / build_seconds, 1),
                  "ratio_to_raw_embedder": round(rows / build_seconds / raw, 3),
                  "seconds_in_the_model": round(sum(in_model), 1),
                  "model_share_of_its_time": round(sum(in_model) / build_seconds, 3)},
        "switch": {"seconds_in_all": round(activate_seconds, 1),
                   "seconds_in_the_transaction": round(switched.seconds, 1),
                   "memories": switched.switched, "kept_for_rollback": switched.kept},
        "rollback": {"seconds_in_all": round(rollback_seconds, 1),
                     "seconds_in_the_transaction": round(rolled_back.seconds, 1), "memories": rolled_back.switched},
    }
    out = Path(__file__).with_name(f"results-reembed-{rows}.json")
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    local_services.stop_all()


if __name__ == "__main__":
    main()
