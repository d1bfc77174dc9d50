"""Export and import benchmark: memories per second and peak memory of `manage.py
export_memories` and `manage.py import_memories`, at 100,000 memories and at a tenth of them.

    .venv/bin/python benchmarks/lifecycle/portability.py [--rows 100000]

On embedded servers in .data/bench-lifecycle (emptied first): an organisation of `rows`
memories is loaded with COPY, as the search benchmark loads its rows (two agents, one with a
tenth of them; 1,000 end users' namespaces; a version each, and a second for one in ten; tags
on half; a `temporal` edge for one in five; an entity link for one in five; usage for one in
ten). Vectors have real embedding structure, as in the search benchmark: all-MiniLM-L6-v2
embeddings of 3,000 generated sentences, augmented to the row count by perturbations and
mixtures (benchmarks/search/run.py, `augmented`). Random unit vectors would not do: an HNSW
insert, most of an import's time, took 3.4 times as long with them here.

Then each command runs in a process of its own, which reports its peak resident memory
(VmHWM) as it exits:

  1. export the whole organisation, and the smaller agent's tenth;
  2. import each file into an empty organisation (all or nothing, in one transaction);
  3. import the whole file again (it adds nothing: every memory is found by its origin);
  4. check the word statistics of the organisation imported into (lexical_stats --verify)
     and that it holds as many rows of each kind as the source.

Writes results-<rows>.json beside this file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
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

DATA_DIR = ROOT / ".data" / "bench-lifecycle"
USERS = 1_000
BASE_SENTENCES = 3_000  # embedded by the model; the rest of the vectors are made from theirs
TABLES = ("agents", "sessions", "memories", "memory_versions", "memory_tags", "memory_relationships", "memory_usage",
          "entities", "memory_entities")
ENV = django_env(DATA_DIR)


def superuser_connection():
    """COPY cannot run under row-level security (which even the owner is subject to: FORCE)."""
    import psycopg
    from pgvector.psycopg import register_vector

    from memory_platform import local_services

    endpoint = local_services.ensure_postgres()
    conn = psycopg.connect(endpoint.url(user="postgres", database=local_services.DATABASE_NAME), autocommit=True)
    register_vector(conn)
    return conn


def load(rows: int) -> dict:
    """The source organisation, loaded with COPY; returns its slug and agents."""
    from benchmarks.search.run import augmented
    from memories.vectors.embeddings import get_embedder
    from memories.vectors.index import create_sql
    from memories.writes.kernel import content_hash

    org_id, big, small = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    base = sentences(BASE_SENTENCES, seed=19)
    vectors, source = augmented(np.asarray(get_embedder().embed(base), dtype=np.float32), rows)
    texts = [base[source[n]] + ("" if n < len(base) else f" (variant {n})") for n in range(rows)]
    now = datetime.now(timezone.utc)
    sessions = [uuid.uuid4() for _ in range(USERS)]
    entities = [uuid.uuid4() for _ in range(2 * USERS)]  # two people in each user's namespace
    with superuser_connection() as conn:
        conn.execute("DROP INDEX IF EXISTS memories_embedding_ann")
        conn.execute("DROP INDEX IF EXISTS memories_tenant_fts")
        conn.execute("INSERT INTO organizations (id, name, slug, is_active, redact_personal_data, created_at, updated_at)"
                     " VALUES (%s, 'Source', 'source', true, false, now(), now())", [org_id])
        for agent, name in ((big, "assistant"), (small, "helper")):
            conn.execute("INSERT INTO agents (id, org_id, name, description, is_active, created_at, updated_at) "
                         "VALUES (%s, %s, %s, '', true, now(), now())", [agent, org_id, name])
        with conn.cursor() as cursor:
            with cursor.copy("COPY sessions (id, org_id, agent_id, scope, external_id, metadata, started_at) "
                             "FROM STDIN") as copy:
                for user, session in enumerate(sessions):
                    copy.write_row((session, org_id, big, f"users/user-{user}", f"chat-{user}", "{}", now))
            with cursor.copy("COPY entities (id, org_id, scope, kind, name, key, summary, attributes, mention_count, "
                             "first_seen_at, last_seen_at) FROM STDIN") as copy:
                for n, entity in enumerate(entities):
                    copy.write_row((entity, org_id, f"users/user-{n % USERS}", "person", f"Person {n}",
                                    f"person {n}", "", "{}", 5, now, now))
            ids = [uuid.uuid4() for _ in range(rows)]
            columns = ("id, org_id, agent_id, session_id, content, content_hash, embedding, embedding_model, "
                       "embedding_dimensions, embedded_at, category, memory_type, source, status, confidence, "
                       "usefulness_score, importance, sensitivity, validation_status, scope, provenance, metadata, "
                       "decay_rate, is_protected, version, created_at, updated_at")
            with cursor.copy(f"COPY memories ({columns}) FROM STDIN") as copy:
                for n in tqdm(range(rows), desc=f"loading {rows:,} memories", mininterval=2):
                    user = n % USERS
                    created = now - timedelta(seconds=rows - n)
                    copy.write_row((ids[n], org_id, small if n % 10 == 0 else big, sessions[user] if n % 3 else None,
                                    texts[n], content_hash(texts[n]), vectors[n],
                                    "all-MiniLM-L6-v2", 384, created, "factual", "semantic", "extracted", "active",
                                    0.8, 0.5, 0.0, "internal", "unverified", f"users/user-{user}",
                                    json.dumps({"channel": "chat"}), json.dumps({"turn": n}), 0.1, False,
                                    2 if n % 10 == 0 else 1, created, created))
            with cursor.copy("COPY memory_versions (id, org_id, memory_id, version_num, operation, content, category, "
                             "confidence, status, metadata, snapshot, changed_by_type, changed_by_agent_id, "
                             "change_reason, created_at) FROM STDIN") as copy:
                for n in tqdm(range(rows), desc="versions", mininterval=2):
                    agent = small if n % 10 == 0 else big
                    snapshot = json.dumps({"scope": f"users/user-{n % USERS}", "tags": []})
                    for version in range(1, 3 if n % 10 == 0 else 2):
                        copy.write_row((uuid.uuid4(), org_id, ids[n], version, "create" if version == 1 else "update",
                                        texts[n], "factual", 0.8, "active", json.dumps({"turn": n}), snapshot,
                                        "agent", agent, "", now))
            with cursor.copy("COPY memory_tags (id, org_id, memory_id, tag, created_at) FROM STDIN") as copy:
                for n in range(0, rows, 2):
                    copy.write_row((uuid.uuid4(), org_id, ids[n], f"topic-{n % 20}", now))
            with cursor.copy("COPY memory_relationships (id, org_id, source_id, target_id, relation_type, predicate, "
                             "weight, confidence, evidence, metadata, created_at) FROM STDIN") as copy:
                for n in range(USERS, rows, 5):  # the memory before, in the same namespace
                    copy.write_row((uuid.uuid4(), org_id, ids[n - USERS], ids[n], "temporal", "next", 1.0, 1,
                                    "[]", "{}", now))
            with cursor.copy("COPY memory_entities (id, org_id, memory_id, entity_id, mention, source, role, "
                             "created_at) FROM STDIN") as copy:
                for n in range(0, rows, 5):  # one of the two people of the memory's namespace
                    entity = entities[n % USERS + USERS * ((n // USERS) % 2)]
                    copy.write_row((uuid.uuid4(), org_id, ids[n], entity, "Person", "extractor", "mentioned", now))
            with cursor.copy("COPY memory_usage (id, org_id, memory_id, retrieval_count, last_retrieved_at) "
                             "FROM STDIN") as copy:
                for n in range(0, rows, 10):
                    copy.write_row((uuid.uuid4(), org_id, ids[n], 3, now))
        started = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute(create_sql("hnsw"))
        conn.execute("CREATE INDEX memories_tenant_fts ON memories USING gin (tenant_lexemes) "
                     "WITH (fastupdate = off) WHERE deleted_at IS NULL")  # as migration 0013 has it
        conn.execute("VACUUM ANALYZE")
        print(f"indexes built in {time.perf_counter() - started:.0f} s")
    return {"slug": "source", "agents": {"assistant": rows - rows // 10, "helper": rows // 10}}


def organization(slug: str) -> None:
    from tenants import services
    from tenants.context import service_account

    with service_account():
        services.organization_create(name=slug.title(), slug=slug)


# Runs manage.py, and as it exits writes its peak resident memory (VmHWM, counted from its
# exec: the kernel's ru_maxrss would also count the pages of this process, which forks it).
PEAK = """
import atexit, re, runpy, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read())[1]))
sys.argv[0] = "manage.py"
runpy.run_path("manage.py", run_name="__main__")
"""


def run(*command: str, log: Path) -> dict:
    """A manage.py command in a process of its own: its wall time and peak resident memory."""
    peak = DATA_DIR / "peak_kb"
    started = time.perf_counter()
    with log.open("a") as output:
        output.write(f"\n$ manage.py {' '.join(command)}\n")
        output.flush()
        finished = subprocess.run([sys.executable, "-c", PEAK, str(peak), *command], cwd=ROOT,
                                  env={**os.environ, **ENV}, stdout=output, stderr=output)
    seconds = time.perf_counter() - started
    if finished.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(command)} failed: see {log}")
    return {"seconds": round(seconds, 1), "peak_rss_mb": round(int(peak.read_text()) / 1024, 1)}


def counts(slug: str) -> dict:
    from django.db import connection

    from tenants.context import service_account, tenant_context
    from tenants.models import Organization

    with service_account():
        org = Organization.objects.get(slug=slug)
    with tenant_context(org.id), connection.cursor() as cursor:
        found = {}
        for table in TABLES:
            cursor.execute(f"SELECT count(*) FROM {table} WHERE org_id = %s", [org.id])
            found[table] = cursor.fetchone()[0]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    rows = parser.parse_args().rows
    fresh_django(DATA_DIR)
    from memory_platform import local_services

    source = load(rows)
    for slug in ("target", "tenth"):
        organization(slug)
    log = DATA_DIR / "commands.log"
    whole, tenth = DATA_DIR / "source.jsonl", DATA_DIR / "helper.jsonl"
    steps = {}
    steps["export_whole"] = run("export_memories", "source", "--output", str(whole), log=log)
    steps["export_tenth"] = run("export_memories", "source", "--agent", "helper", "--output", str(tenth), log=log)
    steps["import_whole"] = run("import_memories", "target", str(whole), log=log)
    steps["import_tenth"] = run("import_memories", "tenth", str(tenth), log=log)
    steps["import_whole_again"] = run("import_memories", "target", str(whole), log=log)
    run("lexical_stats", "--verify", "--org", "target", log=log)  # exits 1 if they differ

    memories = {"export_whole": rows, "export_tenth": source["agents"]["helper"], "import_whole": rows,
                "import_tenth": source["agents"]["helper"], "import_whole_again": rows}
    for name, step in steps.items():
        step["memories"] = memories[name]
        step["memories_per_second"] = round(memories[name] / step["seconds"], 1)
    steps["export_whole"]["file_mb"] = round(whole.stat().st_size / 1024 / 1024, 1)
    steps["export_tenth"]["file_mb"] = round(tenth.stat().st_size / 1024 / 1024, 1)
    source_counts, target_counts = counts("source"), counts("target")
    results = {
        "machine": machine(),
        "recorded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "rows": rows,
        "source": source_counts,
        "steps": steps,
        "imported_equals_source": source_counts == target_counts,
        "word_statistics_verified": True,
    }
    out = Path(__file__).with_name(f"results-{rows}.json")
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    local_services.stop_all()


if __name__ == "__main__":
    main()
