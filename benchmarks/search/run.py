"""Search benchmark: recall and latency of vector search for tenants of every size, HNSW and
IVFFlat, at 100k and 1M memories; and POST /api/v1/search end to end.

    .venv/bin/python benchmarks/search/run.py --rows 100000
    .venv/bin/python benchmarks/search/run.py --rows 1000000

Vectors have real embedding structure: all-MiniLM-L6-v2 embeddings of English sentences
(the docstrings of the packages installed in .venv, a corpus every machine here has),
augmented to scale by small Gaussian perturbations and mixtures of two sentences, each
renormalised. Queries are held-out sentences, never in the table.

Everything runs on an embedded PostgreSQL in .data/bench-search (given more memory than
the default: see configure()). Results go to results-<rows>.json beside this file.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import numpy as np
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine, percentile, wait_until_healthy, wait_until_idle  # noqa: E402

DATA_DIR = ROOT / ".data" / "bench-search"
CORPUS = DATA_DIR / "corpus.npz"
BASE_SENTENCES = 40_000
QUERY_SENTENCES = 300
K = 10
PORT = 8766

# Tenant sizes as shares of all rows; the rest is spread over small tenants.
TENANTS = {"half": 0.5, "tenth": 0.1, "one_percent": 0.01, "tenth_percent": 0.001}
SMALL_TENANTS = 40

os.environ.setdefault("MEMORY_PLATFORM_DATA_DIR", str(DATA_DIR))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_platform.settings.base")
os.environ.setdefault("LOG_LEVEL", "WARNING")


# --------------------------------------------------------------------------- corpus


def docstring_sentences() -> list[str]:
    site = next((ROOT / ".venv" / "lib").glob("python3*/site-packages"))
    sentences = set()
    for path in tqdm(sorted(site.rglob("*.py")), desc="reading docstrings"):
        try:
            tree = ast.parse(path.read_text(errors="ignore"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node) or ""
                for paragraph in doc.split("\n\n"):
                    for sentence in re.split(r"(?<=[.!?])\s+", " ".join(paragraph.split())):
                        if (40 <= len(sentence) <= 300 and re.match(r"^[A-Z][a-z]", sentence)
                                and sentence.count(" ") >= 6 and not re.search(r"[>{}\[\]=]|::|\(\)", sentence)):
                            sentences.add(sentence)
    return sorted(sentences)


def corpus() -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    if CORPUS.exists():
        data = np.load(CORPUS, allow_pickle=False)
        return list(data["texts"]), data["vectors"], list(data["query_texts"]), data["query_vectors"]
    from memories.vectors.embeddings import SentenceTransformerEmbedder

    sentences = docstring_sentences()
    random.Random(7).shuffle(sentences)
    texts, query_texts = sentences[:BASE_SENTENCES], sentences[BASE_SENTENCES:BASE_SENTENCES + QUERY_SENTENCES]
    embedder = SentenceTransformerEmbedder()
    vectors = []
    for start in tqdm(range(0, len(texts), 500), desc="embedding the corpus"):
        vectors.extend(embedder.embed(texts[start:start + 500]))
    query_vectors = embedder.embed(query_texts)
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    np.savez(CORPUS, texts=np.array(texts), vectors=np.asarray(vectors, dtype=np.float32),
             query_texts=np.array(query_texts), query_vectors=np.asarray(query_vectors, dtype=np.float32))
    return corpus()


def augmented(vectors: np.ndarray, rows: int, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    """rows vectors: the base ones, then perturbations (cosine ~0.85-0.95 to their source) and
    mixtures of two base vectors. Returns (vectors, index of the source sentence)."""
    rng = np.random.default_rng(seed)
    base = len(vectors)
    source = np.concatenate([np.arange(min(base, rows)), rng.integers(0, base, max(rows - base, 0))])
    out = vectors[source].copy()
    extra = slice(base, rows)
    if rows > base:
        count = rows - base
        mix = rng.random(count) < 0.5
        partners = vectors[rng.integers(0, base, count)]
        weights = rng.uniform(0.6, 0.9, (count, 1))
        mixed = weights * out[extra] + (1 - weights) * partners
        noisy = out[extra] + rng.normal(0, 1, out[extra].shape) * rng.uniform(0.015, 0.035, (count, 1))
        out[extra] = np.where(mix[:, None], mixed, noisy)
        out[extra] /= np.linalg.norm(out[extra], axis=1, keepdims=True)
    return out.astype(np.float32), source


# --------------------------------------------------------------------------- the database


def owner_connection(*, superuser: bool = False):
    """The schema owner's connection; the superuser's for bulk loading, since COPY cannot
    run under row-level security (which the owner is subject to: FORCE)."""
    import psycopg
    from pgvector.psycopg import register_vector

    from memory_platform import local_services

    endpoint = local_services.ensure_postgres()
    user = "postgres" if superuser else local_services.OWNER_ROLE
    conn = psycopg.connect(endpoint.url(user=user, database=local_services.DATABASE_NAME), autocommit=True)
    register_vector(conn)
    return conn


def configure() -> None:
    """Memory for a table of a million 384-dimension vectors: buffers that hold table and index,
    room to build the index in memory. Restarts the embedded server once."""
    import psycopg

    from memory_platform import local_services

    endpoint = local_services.ensure_postgres()
    wanted = {"shared_buffers": "6GB", "maintenance_work_mem": "6GB", "effective_cache_size": "16GB",
              "work_mem": "64MB", "max_parallel_maintenance_workers": "1", "max_wal_size": "8GB",
              "checkpoint_timeout": "30min"}
    with psycopg.connect(endpoint.url(user="postgres", database="postgres"), autocommit=True) as conn:
        current = dict(conn.execute("SELECT name, setting || coalesce(unit, '') FROM pg_settings").fetchall())
        for name, value in wanted.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        restart = current.get("shared_buffers") != "786432" + "8kB"
    if restart:
        local_services.stop_postgres()
        local_services.ensure_postgres()



# The columns the loaders COPY into memories (here and benchmarks/cluster).
MEMORY_COLUMNS = ("id, org_id, agent_id, content, content_hash, embedding, embedding_model, embedding_dimensions, "
                  "embedded_at, category, memory_type, source, status, confidence, usefulness_score, importance, "
                  "sensitivity, validation_status, scope, provenance, metadata, decay_rate, "
                  "is_protected, version, created_at, updated_at")


def insert_tenants(conn, tenants: dict) -> None:
    """Each benchmark tenant's organisation and agent: tenants[name] = (org_id, agent_id, rows)."""
    for name, (org_id, agent_id, _) in tenants.items():
        conn.execute("INSERT INTO organizations (id, name, slug, is_active, redact_personal_data, created_at, "
                     "updated_at) VALUES (%s, %s, %s, true, false, now(), now())",
                     [org_id, f"bench {name}", f"bench-{name}"])
        conn.execute("INSERT INTO agents (id, org_id, name, description, is_active, created_at, updated_at) "
                     "VALUES (%s, %s, 'bench-agent', '', true, now(), now())", [agent_id, org_id])


def load(rows: int, texts: list[str], vectors: np.ndarray) -> dict:
    """Organisations, agents and `rows` memories spread over tenants of the planned sizes,
    loaded with COPY. Returns {tenant name: (org_id, agent_id, row count)}."""
    vectors, source = augmented(vectors, rows)
    plan = {name: int(rows * share) for name, share in TENANTS.items()}
    rest = rows - sum(plan.values())
    for i in range(SMALL_TENANTS):
        plan[f"small_{i}"] = rest // SMALL_TENANTS + (1 if i < rest % SMALL_TENANTS else 0)
    tenants = {name: (uuid.uuid4(), uuid.uuid4(), count) for name, count in plan.items()}
    order = np.random.default_rng(3).permutation(rows)  # tenants' rows interleaved, as in life
    owners = np.concatenate([np.full(count, index) for index, (_, _, count) in enumerate(tenants.values())])[order]
    names = list(tenants)
    now = time.time()
    with owner_connection(superuser=True) as conn:
        conn.execute("TRUNCATE organizations CASCADE")
        conn.execute("DROP INDEX IF EXISTS memories_embedding_ann")
        conn.execute("DROP INDEX IF EXISTS memories_tenant_fts")
        insert_tenants(conn, tenants)
        with conn.cursor() as cursor, cursor.copy(f"COPY memories ({MEMORY_COLUMNS}) FROM STDIN") as copy:
            for row in tqdm(range(rows), desc=f"loading {rows:,} memories", mininterval=2):
                org_id, agent_id, _ = tenants[names[owners[row]]]
                content = texts[source[row]] + ("" if row < len(texts) else f" (variant {row})")
                created = time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(now - random.random() * 86400 * 365))
                copy.write_row((uuid.uuid4(), org_id, agent_id, content,
                                hashlib.sha256(f"{row}:{content}".encode()).hexdigest(), vectors[row],
                                "all-MiniLM-L6-v2", 384, created, "factual", "semantic", "imported", "active",
                                0.8, 0.5, 0.0, "internal", "unverified", "", "{}", "{}", 0.1, False, 1, created,
                                created))
        started = time.perf_counter()
        conn.execute("CREATE INDEX memories_tenant_fts ON memories USING gin (tenant_lexemes) "
                     "WITH (fastupdate = off) WHERE deleted_at IS NULL")  # as migration 0013 has it
        print(f"full-text index rebuilt in {time.perf_counter() - started:.0f} s")
        conn.execute("VACUUM ANALYZE memories")
    return {name: (str(org), str(agent), count) for name, (org, agent, count) in tenants.items()}


def build_index(kind: str, rows: int) -> dict:
    from django.conf import settings
    from django.test import override_settings

    from memories.vectors import index as vector_index

    lists = max(rows // 1000, 10) if rows <= 1_000_000 else int(rows ** 0.5)
    # Changed through override_settings, whose signal memory_platform.config follows.
    with override_settings(MEMORY_PLATFORM={**settings.MEMORY_PLATFORM, "IVFFLAT_LISTS": lists}), \
            owner_connection() as conn:
        for own in vector_index.OWN_KINDS:  # the shared index is measured alone
            for org_id in vector_index.tenant_indexes(own, using="owner"):
                conn.execute(f"DROP INDEX IF EXISTS {vector_index.tenant_index_name(org_id, own)}")
        conn.execute("DROP INDEX IF EXISTS memories_embedding_ann")
        started = time.perf_counter()
        conn.execute(vector_index.create_sql(kind))
        seconds = time.perf_counter() - started
        conn.execute("ANALYZE memories")
        size = conn.execute("SELECT pg_relation_size('memories_embedding_ann')").fetchone()[0]
    return {"build_seconds": round(seconds, 1), "index_mb": round(size / 2**20, 1),
            **({"lists": lists} if kind == "ivfflat" else {})}


def build_tenant_indexes(tenants: dict) -> dict:
    """The large tenants' own HNSW indexes, as the worker's hourly job builds them."""
    from memories.vectors import index as vector_index

    names = {org_id: name for name, (org_id, _, _) in tenants.items()}
    built = {}

    def key(plan, org_id):
        name = names.get(str(org_id), str(org_id))
        return name if plan.kind is vector_index.MEMORIES else f"{name} ({plan.kind.name})"

    def started(plan, org_id):
        built[key(plan, org_id)] = {"rows": plan.sizes[org_id], "started": time.perf_counter()}

    def finished(plan, org_id):
        entry = built[key(plan, org_id)]
        entry["build_seconds"] = round(time.perf_counter() - entry.pop("started"), 1)
        with owner_connection() as conn:
            size = conn.execute("SELECT pg_relation_size(%s::regclass)",
                                [vector_index.tenant_index_name(org_id, plan.kind)])
            entry["index_mb"] = round(size.fetchone()[0] / 2**20, 1)

    vector_index.sync_tenant_indexes(on_create=started, on_created=finished)
    with owner_connection() as conn:
        conn.execute("ANALYZE memories")
    return built


# --------------------------------------------------------------------------- measurements


def exact_neighbours(org_id: str, queries: np.ndarray) -> list[list[str]]:
    from django.db import connection

    from memories.retrieval.filters import SearchFilters
    from memories.vectors.embeddings import vector_literal
    from tenants.context import tenant_context

    where, params = SearchFilters().where(org_id)
    results = []
    for embedding in tqdm(queries, desc="exact top-10", leave=False):
        literal = vector_literal(embedding)
        with tenant_context(org_id), connection.cursor() as cursor:
            cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
            cursor.execute(f"SELECT m.id FROM memories m WHERE {where} ORDER BY (m.embedding <=> %s::vector) + 0 "
                           f"LIMIT %s", [*params, literal, K])
            results.append([str(row[0]) for row in cursor.fetchall()])
    return results


def approximate(org_id: str, queries: np.ndarray) -> tuple[list[list[str]], list[float], str]:
    from django.db import connection

    from memories.retrieval import vector
    from memories.retrieval.filters import SearchFilters
    from memory_platform.database import set_local
    from tenants.context import tenant_context

    vector.reset_caches()
    found, timings, method = [], [], None
    for embedding in tqdm(queries, desc="search", leave=False):
        with tenant_context(org_id), connection.cursor() as cursor:
            query = vector.statement(cursor, org_id, embedding.tolist(), SearchFilters(), K)
            set_local(cursor, query.knobs)
            started = time.perf_counter()
            cursor.execute(query.sql, query.params)
            rows = cursor.fetchall()
            timings.append((time.perf_counter() - started) * 1000)
        method = query.method
        found.append([str(row[0]) for row in rows])
    return found, timings, method


def measure(tenants: dict, queries: np.ndarray, exact: dict) -> dict:
    results = {}
    for name in (*TENANTS, "small_0"):
        org_id, _, count = tenants[name]
        if name not in exact:
            exact[name] = exact_neighbours(org_id, queries)
        found, timings, method = approximate(org_id, queries)
        recall = np.mean([len(set(a) & set(e)) / max(len(e), 1) for a, e in zip(found, exact[name])])
        complete = np.mean([len(a) == min(K, count) for a in found])
        results[name] = {"rows": count, "method": method, "recall_at_10": round(float(recall), 4),
                         "k_rows_returned": round(float(complete), 4),
                         "sql_p50_ms": round(percentile(timings, 50), 2), "sql_p95_ms": round(percentile(timings, 95), 2)}
        print(name, results[name])
    return results


def forget_query_embeddings() -> None:
    """Earlier runs cached these queries' embeddings in Redis: drop them, so every query is
    embedded as the API measurement says (the server's own process cache starts empty)."""
    from memories.caching import cache

    client = cache.client()
    for key in client.scan_iter(match=cache.QUERY_KEY.format(model="*", digest="*"), count=1000):
        client.delete(key)


def api_latency(tenants: dict, query_texts: list[str]) -> dict:
    """POST /api/v1/search through gunicorn, for each tenant size, every query's embedding
    computed: the queries are the held-out sentences as they are (a suffix making them unique
    per tenant would be the rarest word of every query, and change what full text does), so
    each tenant gets a server of its own and the query embeddings cached in Redis are dropped.
    Measured once the jobs the server's start enqueued have run (wait_until_idle)."""
    env = {**os.environ, "DJANGO_DEBUG": "false"}
    out = {}
    for name in tenants:
        if name not in TENANTS:
            continue
        key = subprocess.run([sys.executable, "manage.py", "issue_api_key", f"bench-{name}", "bench-agent"],
                             cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout.split()[-1]
        forget_query_embeddings()
        started = time.time()
        server = subprocess.Popen([sys.executable, "manage.py", "run", "--bind", f"127.0.0.1:{PORT}",
                                   "--keep-services"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_until_healthy(PORT, 180)
            wait_until_idle(started, 600)
            timings = []
            for text in tqdm(query_texts, desc=f"API search ({name})", leave=False):
                request = urllib.request.Request(
                    f"http://127.0.0.1:{PORT}/api/v1/search", method="POST",
                    data=json.dumps({"query": text, "limit": K}).encode(),
                    headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
                started = time.perf_counter()
                with urllib.request.urlopen(request, timeout=60) as response:
                    assert response.status == 200
                    body = json.loads(response.read())
                timings.append((time.perf_counter() - started) * 1000)
                assert len(body["results"]) == K
        finally:
            os.killpg(server.pid, signal.SIGINT)
            server.wait(timeout=60)
        out[name] = {"p50_ms": round(percentile(timings, 50), 1), "p95_ms": round(percentile(timings, 95), 1)}
        print("API", name, out[name])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100, help="held-out queries for recall and SQL latency")
    parser.add_argument("--api-queries", type=int, default=QUERY_SENTENCES,
                        help="queries per tenant for the API latency (more than --queries: steadier percentiles)")
    parser.add_argument("--kinds", default="hnsw,ivfflat")
    parser.add_argument("--skip-load", action="store_true", help="reuse the rows loaded by the last run")
    parser.add_argument("--api-only", action="store_true",
                        help="measure only POST /api/v1/search on the rows and HNSW index the last run left, "
                             "and update results-<rows>.json")
    args = parser.parse_args()

    import django

    configure()
    django.setup()
    from memory_platform import local_services

    local_services.start_for_settings()  # the embedded Redis (configure() started PostgreSQL)
    from django.core.management import call_command

    texts, vectors, query_texts, query_vectors = corpus()

    call_command("migrate", verbosity=0)
    tenants_file = DATA_DIR / f"tenants-{args.rows}.json"
    if args.api_only and not tenants_file.exists():
        raise SystemExit(f"--api-only measures the rows a full run loaded: run without it first ({tenants_file} is missing)")
    if (args.skip_load or args.api_only) and tenants_file.exists():
        tenants = json.loads(tenants_file.read_text())
    else:
        started = time.perf_counter()
        tenants = load(args.rows, texts, vectors)
        tenants_file.write_text(json.dumps(tenants))
        print(f"loaded in {time.perf_counter() - started:.0f} s")
    out = Path(__file__).with_name(f"results-{args.rows}.json")
    if args.api_only:
        from memories.vectors import index as vector_index

        if vector_index.current_kind() != "hnsw":
            print("building the HNSW index the API measurement needs", build_index("hnsw", args.rows))
        print("tenants' own indexes", build_tenant_indexes(tenants) or "in place")
        # Earlier runs' retrievals updated rows, which clears their pages' all-visible bits and
        # makes exact searches fetch heap rows: start from the state a full run measures in.
        with owner_connection(superuser=True) as conn:
            conn.execute("VACUUM memories")
        results = json.loads(out.read_text())
        results["api_search_hnsw"] = api_latency(tenants, query_texts[: args.api_queries])
        results["api_recorded_at"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        results["api_machine"] = machine()
        out.write_text(json.dumps(results, indent=2) + "\n")
        return
    queries = query_vectors[: args.queries]
    exact: dict = {}
    results = {"rows": args.rows, "queries": len(queries), "recorded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "machine": machine(), "indexes": {}}
    kinds = args.kinds.split(",")
    from django.conf import settings
    from django.test import override_settings

    def measure_variants(title: str, variants: dict) -> dict:
        """The measurement again with each label's search settings, the defaults restored after
        (through override_settings, whose signal memory_platform.config follows)."""
        measured = {}
        for label, change in variants.items():
            search_knobs = {**settings.MEMORY_PLATFORM["SEARCH"], **change}
            with override_settings(MEMORY_PLATFORM={**settings.MEMORY_PLATFORM, "SEARCH": search_knobs}):
                print(title, label)
                measured[label] = measure(tenants, queries, exact)
        return measured

    for kind in kinds:
        built = build_index(kind, args.rows)
        print(kind, built)
        # The query knob's effect, for the guidance in docs/adr/0035.
        if kind == "hnsw":
            variants = {f"ef_search={v}": {"HNSW_EF_SEARCH": v} for v in (100, 200)}
        else:
            root = max(1, round((built["lists"]) ** 0.5))
            variants = {f"probes={v}": {"IVFFLAT_PROBES": v} for v in (2 * root, 4 * root)}
        results["indexes"][kind] = {**built, "tenants": measure(tenants, queries, exact),
                                    "variants": measure_variants(kind, variants)}
    if "hnsw" in kinds:
        if kinds[-1] != "hnsw":
            build_index("hnsw", args.rows)
        # The default configuration: the shared HNSW index, and the large tenants' own.
        own = {"build": build_tenant_indexes(tenants)}
        print("tenants' own indexes", own["build"])
        own["tenants"] = measure(tenants, queries, exact)
        own["variants"] = measure_variants("tenants' own indexes", {
            f"ef_search={v}": {"TENANT_INDEX_EF_SEARCH": v} for v in (50, 100)})
        results["indexes"]["hnsw"]["tenant_indexes"] = own
        results["api_search_hnsw"] = api_latency(tenants, query_texts[: args.api_queries])
        results["api_machine"] = results["machine"]
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
