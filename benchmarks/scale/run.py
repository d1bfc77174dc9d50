"""Scale benchmark (issue 32): every read an agent or an operator makes, timed through the served
product for one organisation as it grows from 10,000 to 100,000 to 1,000,000 memories, with a
namespace of 10,000 inside it; the growth of each read, flagged above 2x.

    .venv/bin/python benchmarks/scale/run.py                           # 10k, 100k, 1M: the recorded run
    .venv/bin/python benchmarks/scale/run.py --sizes 10000,100000      # a smoke run
    .venv/bin/python benchmarks/scale/run.py --reuse --sizes 100000 --only "rest stats,console dashboard"

The organisation is loaded by COPY (benchmarks/scale/load.py says what: memories with the search
benchmark's vectors and everything around them, in proportion), grown in place from one size to
the next, then vacuumed and analysed, its word statistics folded and its own vector index built,
as the worker would. At each size the product's web process is started as `manage.py run`
starts it (gunicorn, the ASGI app, two workers; no RQ worker or cron, so nothing writes
meanwhile), and every read of READS is sent through HTTP: the REST API and the LangGraph store
API with an API key, MCP's tools with the official client, the console's pages with an
operator's signed-in session. Each read is warmed twice, then timed --repeat times, all the
reads in turn each round so the machine's drift falls on every read alike. Results go to
results-<label>.json beside this file, with the machine (benchmarks.common.machine).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine, percentile  # noqa: E402
from benchmarks.scale import load  # noqa: E402

DATA_DIR = ROOT / ".data" / "bench-scale"
MARKER = ".scale-benchmark"  # a data folder this benchmark made, and may empty
STATE = "scale-state.json"
PORT = 8767
SLUG = "scale-bench"
OPERATOR = "scale-operator"
SIZES = (10_000, 100_000, 1_000_000)
NAMESPACE_SIZE = 10_000
GROWTH_LIMIT = 2.0  # issue 32: no read grows by more than this from the first size to the last
SEARCH_P95_MS = 50.0  # docs/adr/0035's search budget, kept by issue 32
WEB_WORKERS = 2


# --------------------------------------------------------------------------- the product's servers


def product_env(data_dir: Path) -> dict:
    """What manage.py and the web process run with: the embedded servers of data_dir, the
    limits of one API key raised (one client sends every request, faster than an agent would)."""
    return {**{k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}},
            "MEMORY_PLATFORM_DATA_DIR": str(data_dir), "DJANGO_DEBUG": "false", "LOG_LEVEL": "WARNING",
            **{f"MEMORY_PLATFORM_RATE_LIMIT_{name}": "1000000/min" for name in ("API_KEY", "SEARCH", "BATCH")},
            "MEMORY_PLATFORM_RATE_LIMIT_API_KEY_BURST": "100000/s"}


def manage(data_dir: Path, *arguments: str) -> str:
    """A manage.py command (the product's own CLI), its output."""
    done = subprocess.run([sys.executable, "manage.py", *arguments], cwd=ROOT, env=product_env(data_dir),
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"manage.py {' '.join(arguments)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def superuser():
    """PostgreSQL's superuser, for what the benchmark writes and inspects (COPY is refused under
    row-level security; the superuser bypasses it)."""
    import psycopg
    from pgvector.psycopg import register_vector

    from memory_platform import local_services

    conn = psycopg.connect(local_services.ensure_postgres().url(user="postgres"), autocommit=True)
    register_vector(conn)
    return conn


def configure(largest: int) -> None:
    """Memory for the largest size: buffers that hold the table and its vector indexes, room to
    build an index in memory (benchmarks/search's settings at a million). Restarts PostgreSQL
    when shared_buffers changes."""
    from memory_platform import local_services

    gigabytes = 6 if largest >= 1_000_000 else 2
    wanted = {"shared_buffers": f"{gigabytes}GB", "maintenance_work_mem": f"{gigabytes}GB",
              "effective_cache_size": f"{gigabytes * 2 + 4}GB", "work_mem": "64MB",
              "max_parallel_maintenance_workers": "1", "max_wal_size": "8GB", "checkpoint_timeout": "30min"}
    with superuser() as conn:
        before = conn.execute("SHOW shared_buffers").fetchone()[0]
        for name, value in wanted.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")
    if before.upper() != wanted["shared_buffers"].upper():
        local_services.stop_postgres()
        local_services.ensure_postgres()


@dataclass
class Served:
    process: subprocess.Popen
    base: str


def serve(data_dir: Path, port: int) -> Served:
    """The web process as `manage.py run` starts it (its "web" program), alone."""
    env = {**product_env(data_dir), "DJANGO_SETTINGS_MODULE": "memory_platform.settings.production",
           "MEMORY_PLATFORM_BIND": f"127.0.0.1:{port}", "PYTHONUNBUFFERED": "1"}
    log = (data_dir / "web.log").open("a")
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "memory_platform.asgi", "--bind", f"127.0.0.1:{port}",
         "--worker-class", "memory_platform.serving.Worker", "--config", "python:memory_platform.gunicorn_conf",
         "--workers", str(WEB_WORKERS), "--graceful-timeout", "10"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    import httpx

    deadline = time.monotonic() + 180
    while True:
        try:
            # "degraded": no RQ worker runs here, on purpose; the database must be up.
            if httpx.get(f"{base}/health", timeout=5).json()["database"]["ok"]:
                return Served(process, base)
        except Exception:
            if process.poll() is not None or time.monotonic() > deadline:
                stop(Served(process, base))
                raise SystemExit(f"the web process did not start: see {data_dir / 'web.log'}")
        time.sleep(1)


def stop(served: Served) -> None:
    if served.process.poll() is None:
        os.killpg(served.process.pid, signal.SIGTERM)
        try:
            served.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(served.process.pid, signal.SIGKILL)
            served.process.wait()


def forget_redis(patterns: tuple[str, ...]) -> None:
    """Drop Redis keys (the query embeddings earlier sizes cached, the agents' hot sets): each
    size starts as a restarted server would, and a cold read is cold."""
    import redis

    from memory_platform import local_services

    client = redis.Redis.from_url(local_services.ensure_redis().url)
    for pattern in patterns:
        for key in client.scan_iter(match=pattern, count=1000):
            client.delete(key)


# --------------------------------------------------------------------------- the organisation


@dataclass
class State:
    """What the data folder holds, kept in it between runs (--reuse)."""

    org_id: str
    agents: dict
    key: str
    password: str
    namespace_size: int
    loaded: int = 0
    now: float = field(default_factory=time.time)
    loads: dict = field(default_factory=dict)

    def save(self, data_dir: Path) -> None:
        (data_dir / STATE).write_text(json.dumps(self.__dict__, indent=1))


def fresh(data_dir: Path, largest: int, namespace_size: int) -> State:
    """New embedded servers in data_dir (emptied first, if this benchmark made it), migrated,
    configured for the largest size, with the organisation, its agents, an API key and an
    operator: made as an operator would, by manage.py."""
    from memory_platform import local_services

    if data_dir.exists():
        if not (data_dir / MARKER).exists():
            raise SystemExit(f"{data_dir} exists and was not made by this benchmark: choose another --data-dir")
        local_services.stop_all()
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    (data_dir / MARKER).write_text("made by benchmarks/scale/run.py; emptied by its next run without --reuse\n")
    local_services.ensure_started()
    configure(largest)
    manage(data_dir, "migrate", "--verbosity", "0")
    manage(data_dir, "create_organization", "Scale benchmark", "--slug", SLUG)
    key = None
    for name in load.AGENTS:
        out = manage(data_dir, "create_agent", SLUG, name, *([] if name == load.AGENTS[0] else ["--no-key"]))
        key = key or out.split()[-1]
    out = manage(data_dir, "add_member", SLUG, OPERATOR, "--role", "admin")
    password = re.search(r"password \(shown once\): (\S+)", out).group(1)
    with superuser() as conn:
        org_id = conn.execute("SELECT id FROM organizations WHERE slug = %s", [SLUG]).fetchone()[0]
        agents = dict(conn.execute("SELECT name, id::text FROM agents WHERE org_id = %s", [org_id]).fetchall())
    state = State(org_id=str(org_id), agents=agents, key=key, password=password, namespace_size=namespace_size)
    state.save(data_dir)
    return state


def vector_indexes(conn) -> list[tuple[str, str]]:
    """The indexes of memories a COPY would update row by row, slowly: vectors and full text."""
    return conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories' "
                        "AND indexdef ~* 'USING (hnsw|ivfflat|gin)' ORDER BY indexname").fetchall()


def grow(data_dir: Path, state: State, size: int, texts: list[str], vectors: np.ndarray) -> dict:
    """Append chunks until the organisation holds `size` memories (the corpus' vectors, by COPY
    in one transaction), then rebuild what the COPY left out: the vector and full-text
    indexes, the entities' mention counts, the word statistics (the worker folds them every 30
    s), the tenant's own vector index (the worker's hourly job), and VACUUM ANALYZE."""
    from tqdm import tqdm

    organisation = load.Organisation(org_id=state.org_id, agents={n: state.agents[n] for n in load.AGENTS},
                                     namespace_size=state.namespace_size, now=state.now)
    rows: dict[str, int] = dict.fromkeys(load.TABLES, 0)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    with superuser() as conn:
        dropped = vector_indexes(conn)
        for name, _ in dropped:
            conn.execute(f"DROP INDEX {name}")
        chunks = range(state.loaded // load.CHUNK, size // load.CHUNK)
        with conn.transaction(), tqdm(total=size - state.loaded, desc=f"loading to {size:,} memories",
                                      unit="memory", unit_scale=True, mininterval=2) as bar:
            for number in chunks:
                chunk_vectors, source = load.chunk_vectors(number, texts, vectors)
                chunk = load.Chunk(number, organisation, texts, chunk_vectors, source)
                for table in load.TABLES:
                    if not chunk.rows[table]:
                        continue
                    bar.set_postfix_str(table)
                    columns = ", ".join(load.COLUMNS[table])
                    with conn.cursor() as cursor, cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                        for row in chunk.rows[table]:
                            copy.write_row(row)
                    rows[table] += len(chunk.rows[table])
                bar.update(load.CHUNK)
            conn.execute("""
                UPDATE entities e SET mention_count = c.n, first_seen_at = c.first, last_seen_at = c.last
                FROM (SELECT entity_id, count(*) AS n, min(created_at) AS first, max(created_at) AS last
                      FROM memory_entities WHERE org_id = %(org)s GROUP BY entity_id) c
                WHERE e.org_id = %(org)s AND e.id = c.entity_id
            """, {"org": state.org_id})
        timings["copy_seconds"] = time.perf_counter() - started
        began = time.perf_counter()
        for name, definition in tqdm(dropped, desc="vector and full-text indexes", unit="index"):
            conn.execute(definition)
        timings["index_seconds"] = time.perf_counter() - began
    began = time.perf_counter()
    manage(data_dir, "lexical_stats", "--fold")
    manage(data_dir, "rebuild_vector_index", "--tenants")
    timings["fold_and_tenant_index_seconds"] = time.perf_counter() - began
    began = time.perf_counter()
    with superuser() as conn:
        conn.execute("VACUUM ANALYZE")
    timings["vacuum_analyze_seconds"] = time.perf_counter() - began
    timings["total_seconds"] = time.perf_counter() - started
    state.loaded = size
    state.loads[str(size)] = {"rows_added": rows, **{k: round(v, 1) for k, v in timings.items()}}
    state.save(data_dir)
    print(f"loaded to {size:,} in {timings['total_seconds']:.0f} s: {state.loads[str(size)]}")
    return state.loads[str(size)]


def holdings(state: State) -> dict:
    """What the organisation holds now, row counts per table and the database's size."""
    with superuser() as conn:
        counts = {table: conn.execute(f"SELECT count(*) FROM {table} WHERE org_id = %s",
                                      [state.org_id]).fetchone()[0] for table in load.TABLES}
        counts["live memories"] = conn.execute(
            "SELECT count(*) FROM memories WHERE org_id = %s AND status = 'active' AND deleted_at IS NULL",
            [state.org_id]).fetchone()[0]
        counts["namespace memories"] = conn.execute(
            "SELECT count(*) FROM memories WHERE org_id = %s AND scope = %s", [state.org_id, load.NAMESPACE]).fetchone()[0]
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    return {"rows": counts, "database_mb": round(size / 2**20)}


# --------------------------------------------------------------------------- what a read asks about


@dataclass
class Target:
    """The clients and the objects the reads ask about, at one size."""

    base: str
    api: object  # httpx.Client with the API key
    console: object  # httpx.Client with the operator's session
    csrf: str
    queries: list[str]
    agents: dict
    memory: str = ""  # the probe memory: several versions, tags, entities, relationships, retrievals
    session: str = ""
    store_key: str = ""
    namespace_entity: tuple[str, str] = ("", "")  # (id, name) of the namespace's most mentioned entity
    org_entity: tuple[str, str] = ("", "")  # the organisation's
    event: str = ""  # the newest retrieval event, as loaded
    search_event: str = ""  # a search's, made at this size: what a replay runs again
    conflict: tuple[str, str] = ("", "")  # (kind, id) of an open conflict
    cursors: dict = field(default_factory=dict)  # (scope) -> (next page url, previous page url)
    mcp: object = None  # the MCP client, once connected

    def query(self, rep: int) -> str:
        return self.queries[rep % len(self.queries)]


NS = load.NAMESPACE
NS_LABELS = NS.split("/")


@dataclass
class Read:
    name: str
    door: str  # rest, mcp, console
    scope: str  # org: the whole organisation; namespace: within the namespace of 10,000; one: one object
    what: str  # the request, as the README describes it
    call: Callable  # (target, rep) -> how many items came back (None: not counted); async for MCP


def counted(data, items: str | None):
    """How many items an answer held: the list at the dotted path `items` ("" the answer itself)."""
    if items is None:
        return None
    for part in filter(None, items.split(".")):
        data = data[part]
    return len(data)


def resolve(value, target, rep):
    return value(target, rep) if callable(value) else value


def query_string(params) -> str:
    return "?" + "&".join(f"{k}={v}" for k, v in params.items()) if isinstance(params, dict) and params else ""


def rest(name: str, scope: str, method: str, path, *, params=None, body=None, items: str | None = "results",
         what: str = "", status: int = 200, door: str = "rest") -> Read:
    """A REST read (or the LangGraph store's, or Mem0's) with the API key. path, params, body:
    values or functions of (target, rep)."""

    def call(target: Target, rep: int):
        response = target.api.request(method, resolve(path, target, rep), params=resolve(params, target, rep),
                                      json=resolve(body, target, rep))
        if response.status_code != status:
            raise AssertionError(f"{response.status_code}: {response.text[:300]}")
        return counted(response.json(), items)

    return Read(name, door, scope, what or f"{method} {path}{query_string(params)}", call)


def page(name: str, scope: str, path, *, params=None, form=None, items: str = "rows", what: str = "") -> Read:
    """A console page, GET (or POST with a form), with the operator's session; the whole body read."""

    def call(target: Target, rep: int):
        url = f"/console/{SLUG}/{resolve(path, target, rep)}"
        if form is None:
            response = target.console.get(url, params=resolve(params, target, rep))
        else:
            data = {"csrfmiddlewaretoken": target.csrf, **resolve(form, target, rep)}
            response = target.console.post(url, data=data, headers={"Referer": target.base + url})
        if response.status_code != 200:
            raise AssertionError(f"{response.status_code}: {response.text[:300]}")
        # What it showed: the export's lines, else the page's table rows (the header's included)
        # and listed items (the review queue's).
        if items == "lines":
            return response.text.count("\n")
        return response.text.count("<tr") + response.text.count("<article")

    return Read(name, "console", scope, what or f"GET {path}{query_string(params)}", call)


def tool(name: str, scope: str, tool_name: str, arguments, *, items: str | None = None, what: str = "") -> Read:
    """An MCP tool call through the official client, one connection for every call."""

    async def call(target: Target, rep: int):
        result = await target.mcp.call_tool(tool_name, resolve(arguments, target, rep))
        text = "".join(block.text for block in result.content if block.type == "text")
        if result.is_error:
            raise AssertionError(text[:300])
        return counted(json.loads(text), items)

    return Read(name, "mcp", scope, what or f"{tool_name} {json.dumps(arguments) if arguments else '{}'}", call)


IN_NAMESPACE = f"namespace={NS}"


def within(scope: str, **extra) -> dict:
    """Query parameters (or tool arguments), with the namespace when the read is the namespace's."""
    return {**extra, **({"namespace": NS} if scope == "namespace" else {})}


def both(make: Callable[[str], Read]) -> list[Read]:
    return [make("org"), make("namespace")]


def month_ago_week() -> dict:
    now = datetime.now(timezone.utc)
    return {"created_after": (now - timedelta(days=37)).isoformat(), "created_before": (now - timedelta(days=30)).isoformat()}


def memory_lists() -> list[Read]:
    """GET /memories with each of its filters, org-wide and within the namespace, and its pages:
    (label, parameters or a function of the target, what they are)."""
    filters = [
        ("", {}, ""),
        ("?category", {"category": "preference"}, "category=preference"),
        ("?status=archived", {"status": "archived"}, "status=archived"),
        ("?memory_type", {"memory_type": "episodic"}, "memory_type=episodic"),
        ("?agent", lambda t: {"agent": t.agents["support"]}, "agent=<the support agent>"),
        ("?session", lambda t: {"session": t.session}, "session=<the probe's session, 25 memories>"),
        ("?tag", {"tag": "travel"}, "tag=travel"),
        ("?created_after&before", lambda t: month_ago_week(), "created_after=<37 days ago>&created_before=<30 days ago>"),
        ("?include_deleted", {"include_deleted": "true"}, "include_deleted=true"),
        ("?include_expired", {"include_expired": "true"}, "include_expired=true"),
    ]
    reads = []
    for name, given, shown in filters:
        for scope in ("org", "namespace"):
            def params(target, rep, given=given, scope=scope):
                return within(scope, **(given(target) if callable(given) else given))

            asked = "&".join(part for part in (shown, IN_NAMESPACE if scope == "namespace" else "") if part)
            reads.append(rest(f"rest memories {name}".strip(), scope, "GET", "/api/v1/memories", params=params,
                              what=f"GET /api/v1/memories{'?' + asked if asked else ''} (newest first, 50)"))
    for scope in ("org", "namespace"):
        reads.append(rest("rest memories next page", scope, "GET", lambda t, rep, s=scope: t.cursors[s][0],
                          what="GET the first page's `next` link (cursor)"))
        reads.append(rest("rest memories previous page", scope, "GET", lambda t, rep, s=scope: t.cursors[s][1],
                          what="GET the second page's `previous` link (cursor: the SQL reads in the reverse order)"))
    return reads


def the(scope: str, what: str) -> str:
    """A read's description, naming the namespace when it is the namespace's."""
    return f"{what} [{IN_NAMESPACE}]" if scope == "namespace" else what


def entity_of(scope: str):
    return lambda t, rep: t.namespace_entity if scope == "namespace" else t.org_entity


READS: list[Read] = [
    # ---- REST: the API an agent calls
    *both(lambda s: rest("rest stats", s, "GET", "/api/v1/stats", params=within(s), items=None)),
    *memory_lists(),
    *both(lambda s: rest("rest weak", s, "GET", "/api/v1/memories/weak", params=within(s),
                         what=the(s, "GET /api/v1/memories/weak (strength below 0.5, weakest first, 50, with "
                                     "their count)"))),
    *both(lambda s: rest("rest entities", s, "GET", "/api/v1/entities", params=within(s),
                         what=the(s, "GET /api/v1/entities (most mentioned first, 50, with their count)"))),
    *both(lambda s: rest("rest entities ?type", s, "GET", "/api/v1/entities", params=within(s, type="place"))),
    *both(lambda s: rest("rest entities ?q", s, "GET", "/api/v1/entities",
                         params=lambda t, rep, s=s: within(s, q=entity_of(s)(t, rep)[1][:3].lower()),
                         what=the(s, "GET /api/v1/entities?q=<the most mentioned entity's first three letters>"))),
    rest("rest entity", "namespace", "GET", lambda t, rep: f"/api/v1/entities/{t.namespace_entity[0]}", items="facts",
         what="GET /api/v1/entities/<the namespace's most mentioned entity> (its 20 latest facts, 50 of its "
              "timeline)"),
    rest("rest entity", "org", "GET", lambda t, rep: f"/api/v1/entities/{t.org_entity[0]}", items="facts",
         what="GET /api/v1/entities/<the organisation's most mentioned entity>"),
    *both(lambda s: rest("rest sessions", s, "GET", "/api/v1/sessions", params=within(s),
                         what=the(s, "GET /api/v1/sessions (newest first, 50, each with its live memories' count)"))),
    *both(lambda s: rest("rest sessions ?status=open", s, "GET", "/api/v1/sessions", params=within(s, status="open"))),
    rest("rest sessions ?agent", "org", "GET", "/api/v1/sessions",
         params=lambda t, rep: {"agent": t.agents["support"]}, what="GET /api/v1/sessions?agent=<the support agent>"),
    rest("rest session", "one", "GET", lambda t, rep: f"/api/v1/sessions/{t.session}", items=None,
         what="GET /api/v1/sessions/<the probe's session>"),
    rest("rest session memories", "one", "GET", lambda t, rep: f"/api/v1/sessions/{t.session}/memories",
         what="GET /api/v1/sessions/<the probe's session>/memories"),
    rest("rest retrieval events", "org", "GET", "/api/v1/retrieval-events",
         what="GET /api/v1/retrieval-events (newest first, 50)"),
    rest("rest retrieval events ?kind", "org", "GET", "/api/v1/retrieval-events", params={"kind": "context"}),
    rest("rest retrieval events ?agent", "org", "GET", "/api/v1/retrieval-events",
         params=lambda t, rep: {"agent": t.agents["support"]},
         what="GET /api/v1/retrieval-events?agent=<the support agent>"),
    rest("rest retrieval event", "one", "GET", lambda t, rep: f"/api/v1/retrieval-events/{t.event}", items=None,
         what="GET /api/v1/retrieval-events/<the newest>"),
    rest("rest retrieval event replay", "one", "POST", lambda t, rep: f"/api/v1/retrieval-events/{t.search_event}/replay",
         items="event.returned_memory_ids", status=201,
         what="POST /api/v1/retrieval-events/<a search of users/dana>/replay (the search run again, recorded)"),
    rest("rest memory", "one", "GET", lambda t, rep: f"/api/v1/memories/{t.memory}", items=None,
         what="GET /api/v1/memories/<probe>"),
    rest("rest history", "one", "GET", lambda t, rep: f"/api/v1/memories/{t.memory}/history",
         what="GET /api/v1/memories/<probe>/history (6 versions)"),
    rest("rest explain", "one", "GET", lambda t, rep: f"/api/v1/memories/{t.memory}/explain", items="versions",
         what="GET /api/v1/memories/<probe>/explain (with the searches that returned it)"),
    rest("rest tags", "one", "GET", lambda t, rep: f"/api/v1/memories/{t.memory}/tags", items="tags",
         what="GET /api/v1/memories/<probe>/tags"),
    rest("rest relationships", "one", "GET", lambda t, rep: f"/api/v1/memories/{t.memory}/relationships",
         items=None, what="GET /api/v1/memories/<probe>/relationships"),
    rest("rest hot (rebuilt)", "org", "GET", "/api/v1/hot",
         what="GET /api/v1/hot, the agents' hot sets dropped from Redis first: back from the scoring kept in "
              "PostgreSQL (ADR-0058)"),
    rest("rest hot (never scored)", "org", "GET", "/api/v1/hot",
         what="GET /api/v1/hot, the hot sets dropped from Redis and their kept scorings deleted: an agent's "
              "first read ever, which scores every live memory of the agent"),
    rest("rest hot", "org", "GET", "/api/v1/hot", what="GET /api/v1/hot (the assistant's 20, from its Redis set)"),
    *both(lambda s: rest("rest context", s, "POST", "/api/v1/context", items="memories",
                         body=lambda t, rep, s=s: {"query": t.query(rep), "max_tokens": 1000,
                                                   **({"filters": {"namespace": NS}} if s == "namespace" else {})},
                         what=the(s, "POST /api/v1/context {query, max_tokens: 1000}"))),
    *both(lambda s: rest("rest search", s, "POST", "/api/v1/search",
                         body=lambda t, rep, s=s: {"query": t.query(rep), "limit": 10,
                                                   **({"filters": {"namespace": NS}} if s == "namespace" else {})},
                         what=the(s, "POST /api/v1/search {query, limit: 10} (hybrid)"))),
    rest("rest retrieve", "namespace", "POST", "/api/v1/retrieve", items="candidates",
         body=lambda t, rep: {"query": t.query(rep), "scope": NS}, what=f"POST /api/v1/retrieve {{query, scope: {NS}}}"),
    rest("rest erase (dry run)", "namespace", "POST", "/api/v1/erase", items=None,
         body={"namespace": NS, "dry_run": True},
         what=f"POST /api/v1/erase {{namespace: {NS}, dry_run: true}} (counts the agent's memories there and what "
              "refers to them)"),
    rest("rest store item", "one", "GET", "/api/v1/store/items", items=None,
         params=lambda t, rep: {"namespace": ".".join(NS_LABELS), "key": t.store_key},
         what="GET /api/v1/store/items?namespace=users.dana&key=<an item's key>"),
    *both(lambda s: rest("rest store list", s, "POST", "/api/v1/store/items/search", items="items",
                         body={"namespace_prefix": NS_LABELS if s == "namespace" else ["users"], "limit": 10},
                         what=f"POST /api/v1/store/items/search {{namespace_prefix: "
                              f"{NS_LABELS if s == 'namespace' else ['users']}, limit: 10}} (no query: newest first)")),
    *both(lambda s: rest("rest store search", s, "POST", "/api/v1/store/items/search", items="items",
                         body=lambda t, rep, s=s: {"namespace_prefix": NS_LABELS if s == "namespace" else ["users"],
                                                   "query": t.query(rep), "limit": 10},
                         what=f"POST /api/v1/store/items/search {{namespace_prefix: "
                              f"{NS_LABELS if s == 'namespace' else ['users']}, query, limit: 10}}")),
    rest("rest store namespaces", "org", "POST", "/api/v1/store/namespaces", items="namespaces",
         body={"prefix": ["users"], "max_depth": 2, "limit": 100},
         what="POST /api/v1/store/namespaces {prefix: [users], max_depth: 2, limit: 100}"),
    # ---- MCP: the tools an agent's model calls
    *both(lambda s: tool("mcp memory_stats", s, "memory_stats", within(s))),
    *both(lambda s: tool("mcp weak_facts", s, "weak_facts", within(s), items="results")),
    *both(lambda s: tool("mcp get_entity_info", s, "get_entity_info", items="facts",
                         arguments=lambda t, rep, s=s: within(s, name=entity_of(s)(t, rep)[1]),
                         what=the(s, "get_entity_info {name: <the most mentioned entity's>}"))),
    tool("mcp explain_fact", "one", "explain_fact", lambda t, rep: {"memory_id": t.memory}, items="versions",
         what="explain_fact {memory_id: <probe>}"),
    *both(lambda s: tool("mcp search_memory", s, "search_memory", items="results",
                         arguments=lambda t, rep, s=s: within(s, query=t.query(rep)),
                         what=the(s, "search_memory {query}"))),
    tool("mcp store_get", "one", "store_get", lambda t, rep: {"namespace": NS_LABELS, "key": t.store_key},
         what="store_get {namespace: [users, dana], key: <an item's key>}"),
    tool("mcp store_list_keys", "namespace", "store_list_keys", {"namespace": NS_LABELS}, items="keys"),
    tool("mcp store_list_namespaces", "org", "store_list_namespaces", {"prefix": ["users"]}, items="namespaces"),
    *both(lambda s: tool("mcp assemble_context", s, "assemble_context", items="memories",
                         arguments=lambda t, rep, s=s: within(s, query=t.query(rep)),
                         what=the(s, "assemble_context {query} (max_tokens 1000)"))),
    *both(lambda s: tool("mcp list_sessions", s, "list_sessions", within(s), items="sessions")),
    tool("mcp list_session_memories", "one", "list_session_memories", lambda t, rep: {"session_id": t.session},
         items="memories", what="list_session_memories {session_id: <the probe's session>}"),
    tool("mcp erase_namespace (count)", "namespace", "erase_namespace", {"namespace": NS},
         what=f"erase_namespace {{namespace: {NS}}} without a confirmation (counts, erases nothing)"),
    tool("mcp replay_retrieval", "one", "replay_retrieval", lambda t, rep: {"retrieval_event_id": t.search_event},
         items="results", what="replay_retrieval {retrieval_event_id: <a search of users/dana>}"),
    # ---- Mem0's platform API (/api/mem0/), as the mem0ai client calls it, with the same key
    rest("mem0 get_all", "namespace", "POST", "/api/mem0/v3/memories/", door="mem0",
         body={"filters": {"user_id": NS_LABELS[1]}},
         what=f"POST /api/mem0/v3/memories/ {{filters: {{user_id: {NS_LABELS[1]}}}}} (newest first, a page of 100 "
              "with the count)"),
    rest("mem0 search", "namespace", "POST", "/api/mem0/v3/memories/search/", door="mem0",
         body=lambda t, rep: {"query": t.query(rep), "filters": {"user_id": NS_LABELS[1]}},
         what=f"POST /api/mem0/v3/memories/search/ {{query, filters: {{user_id: {NS_LABELS[1]}}}}}"),
    rest("mem0 get", "one", "GET", lambda t, rep: f"/api/mem0/v1/memories/{t.memory}/", door="mem0", items=None,
         what="GET /api/mem0/v1/memories/<probe>/"),
    rest("mem0 history", "one", "GET", lambda t, rep: f"/api/mem0/v1/memories/{t.memory}/history/", door="mem0",
         items="", what="GET /api/mem0/v1/memories/<probe>/history/"),
    rest("mem0 users", "org", "GET", "/api/mem0/v1/entities/", door="mem0",
         what="GET /api/mem0/v1/entities/ (every user, agent and run, with its memories' count)"),
    # ---- the console: an operator's pages, under /console/<org>/
    page("console dashboard", "org", "", what="GET / (the dashboard)"),
    page("console memories", "org", "memories/", what="GET memories/ (live, newest first, 25 a page, with the count)"),
    page("console memories ?sort=oldest", "org", "memories/", params={"sort": "oldest"}),
    page("console memories ?sort=confidence", "org", "memories/", params={"sort": "confidence"}),
    page("console memories ?sort=importance", "org", "memories/", params={"sort": "importance"}),
    page("console memories ?sort=updated", "org", "memories/", params={"sort": "updated"}),
    page("console memories ?sort=retrieved", "org", "memories/", params={"sort": "retrieved"}),
    page("console memories ?category", "org", "memories/", params={"category": "preference"}),
    page("console memories ?status=archived", "org", "memories/", params={"status": "archived"}),
    page("console memories ?memory_type", "org", "memories/", params={"memory_type": "episodic"}),
    page("console memories ?agent", "org", "memories/", params=lambda t, rep: {"agent": t.agents["support"]},
         what="GET memories/?agent=<the support agent>"),
    page("console memories ?tags", "org", "memories/", params={"tags": "travel"}),
    page("console memories ?validation_status", "org", "memories/", params={"validation_status": "verified"}),
    page("console memories ?period=last_week", "org", "memories/", params={"period": "last_week"}),
    page("console memories ?status=any&deleted", "org", "memories/", params={"status": "any", "deleted": "on"}),
    page("console memories ?q (search)", "org", "memories/", params={"q": "return the value of a configuration"},
         what="GET memories/?q=return the value of a configuration (a search: 100 ranked, paged)"),
    page("console memories ?page=2", "org", "memories/", params={"page": "2"}),
    page("console memories last page", "org", "memories/", params={"page": "1000000000"},
         what="GET memories/?page=1000000000 (past the end: the paginator answers the last page)"),
    page("console memory", "one", lambda t, rep: f"memories/{t.memory}/", what="GET memories/<probe>/"),
    page("console review", "org", "review/", what="GET review/ (oldest first, 50 a page, with the count)"),
    page("console conflicts", "org", "conflicts/", what="GET conflicts/ (up to 100 open, oldest first)"),
    page("console conflict", "one", lambda t, rep: f"conflicts/{t.conflict[0]}/{t.conflict[1]}/",
         what="GET conflicts/contradiction/<an open one>/"),
    page("console entities", "org", "entities/", what="GET entities/ (most mentioned first, 50 a page, with the count)"),
    page("console entities ?namespace", "namespace", "entities/", params={"namespace": NS}),
    page("console entities ?q", "org", "entities/", params=lambda t, rep: {"q": t.org_entity[1][:3].lower()},
         what="GET entities/?q=<the most mentioned entity's first three letters>"),
    page("console entity", "namespace", lambda t, rep: f"entities/{t.namespace_entity[0]}/",
         what="GET entities/<the namespace's most mentioned>/ (51 facts, 101 of its timeline)"),
    page("console entity", "org", lambda t, rep: f"entities/{t.org_entity[0]}/",
         what="GET entities/<the organisation's most mentioned>/"),
    page("console events", "org", "events/", what="GET events/ (newest first, 50 a page, with the count)"),
    page("console events ?kind", "org", "events/", params={"kind": "context"}),
    page("console events ?q", "org", "events/", params={"q": "value"}, what="GET events/?q=value (query contains)"),
    page("console event", "one", lambda t, rep: f"events/{t.event}/", what="GET events/<the newest>/"),
    page("console erasure", "org", "erase/", what="GET erase/ (the form, the last 20 erasures)"),
    page("console erasure count", "namespace", "erase/", form={"scope": "namespace", "namespace": NS},
         what=f"POST erase/ {{scope: namespace, namespace: {NS}}} (counts the scope, erases nothing)"),
    page("console erasure count ?agent", "org", "erase/",
         form=lambda t, rep: {"scope": "agent", "agent": t.agents["support"]},
         what="POST erase/ {scope: agent, agent: <the support agent>}"),
    page("console erasure count", "org", "erase/", form={"scope": "all"}, what="POST erase/ {scope: all}"),
    page("console embeddings", "org", "embeddings/", what="GET embeddings/ (the models and their progress)"),
    page("console export", "org", "export/", what="GET export/ (the forms, with the organisation's memory count)"),
    page("console export download", "namespace", "export/download", items="lines",
         params={"namespace": NS, "without_embeddings": "on"},
         what=f"GET export/download?namespace={NS}&without_embeddings=on (the namespace's JSONL, streamed, read "
              "whole)"),
    page("console agents", "org", "agents/", what="GET agents/"),
]


def label(read: Read) -> str:
    return f"{read.name} [{read.scope}]"


# --------------------------------------------------------------------------- measuring


def sign_in(base: str, password: str):
    """The operator's session, signed in through the console's form, and its CSRF token."""
    import httpx

    client = httpx.Client(base_url=base, timeout=600)
    form = client.get("/console/sign-in/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    done = client.post("/console/sign-in/", data={"csrfmiddlewaretoken": token, "username": OPERATOR,
                                                  "password": password}, headers={"Referer": f"{base}/console/sign-in/"})
    if done.status_code != 302:
        raise SystemExit(f"the operator could not sign in: {done.status_code}")
    return client, client.cookies["csrftoken"]


def aim(target: Target, state: State) -> None:
    """What the reads ask about at this size: the probe memory, its session, a store key, the most
    mentioned entities, a retrieval event, an open conflict, and the list's cursors."""
    with superuser() as conn:
        target.memory, target.session = (str(v) for v in conn.execute(
            "SELECT id, session_id FROM memories WHERE org_id = %s AND content_hash = %s",
            [state.org_id, f"{load.PROBE_INDEX:064x}"]).fetchone())
        target.store_key = conn.execute(
            "SELECT key FROM memories WHERE org_id = %s AND scope = %s AND key IS NOT NULL AND deleted_at IS NULL "
            "ORDER BY key LIMIT 1", [state.org_id, NS]).fetchone()[0]
        target.conflict = ("contradiction", str(conn.execute(
            "SELECT r.id FROM memory_relationships r JOIN memories s ON s.org_id = r.org_id AND s.id = r.source_id "
            "JOIN memories t ON t.org_id = r.org_id AND t.id = r.target_id WHERE r.org_id = %s "
            "AND r.relation_type = 'contradicts' AND NOT r.metadata ? 'resolution' AND s.status = 'active' "
            "AND t.status = 'active' AND s.deleted_at IS NULL AND t.deleted_at IS NULL ORDER BY r.created_at LIMIT 1",
            [state.org_id]).fetchone()[0]))
    api = target.api
    first = api.get("/api/v1/entities", params={"namespace": NS, "limit": 1}).json()["results"][0]
    target.namespace_entity = (first["id"], first["name"])
    first = api.get("/api/v1/entities", params={"limit": 1}).json()["results"][0]
    target.org_entity = (first["id"], first["name"])
    target.event = api.get("/api/v1/retrieval-events", params={"limit": 1}).json()["results"][0]["id"]
    target.search_event = api.post("/api/v1/search", json={"query": target.queries[-1], "limit": 10, "filters": {
        "namespace": NS}}).json()["retrieval_event_id"]
    for scope in ("org", "namespace"):
        one = api.get("/api/v1/memories", params=within(scope)).json()
        two = api.get(one["next"]).json()
        target.cursors[scope] = (one["next"], two["previous"])


def measure(served: Served, state: State, reads: list[Read], repeat: int, queries: list[str],
            warmup_queries: list[str]) -> dict:
    """Every read, warmed twice, then timed `repeat` rounds (each round every read once, in turn)."""
    import anyio
    import httpx
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from tqdm import tqdm

    console, csrf = sign_in(served.base, state.password)
    api = httpx.Client(base_url=served.base, headers={"Authorization": f"Bearer {state.key}"}, timeout=600)
    target = Target(base=served.base, api=api, console=console, csrf=csrf, queries=queries, agents=state.agents)
    aim(target, state)
    timings: dict[str, list[float]] = {label(read): [] for read in reads}
    items: dict[str, int | None] = {}
    errors: dict[str, str] = {}

    async def run(read: Read, rep: int) -> float | None:
        if label(read) in errors:
            return None
        if read.name in ("rest hot (rebuilt)", "rest hot (never scored)"):
            forget_redis(("*:hot_memories:*",))
        if read.name == "rest hot (never scored)":
            with superuser() as conn:
                conn.execute("DELETE FROM memory_hot_sets")
        started = time.perf_counter()
        try:
            found = read.call(target, rep)
            if read.door == "mcp":
                found = await found
        except Exception as exc:
            errors[label(read)] = f"{type(exc).__name__}: {exc}"[:500]
            print(f"  {label(read)} failed: {errors[label(read)]}")
            return None
        elapsed = (time.perf_counter() - started) * 1000
        items.setdefault(label(read), found)
        return elapsed

    async def main():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {state.key}"}, timeout=600) as http:
            async with Client(streamable_http_client(f"{served.base}/mcp", http_client=http)) as client:
                target.mcp = client
                target.queries = warmup_queries
                for rep in range(2):
                    for read in tqdm(reads, desc=f"warming up ({rep + 1}/2)", leave=False):
                        await run(read, rep)
                items.clear()
                target.queries = queries
                for rep in tqdm(range(repeat), desc="timing rounds"):
                    for read in reads:
                        elapsed = await run(read, rep)
                        if elapsed is not None:
                            timings[label(read)].append(elapsed)

    try:
        anyio.run(main)
    finally:
        api.close()
        console.close()
    out = {}
    for read in reads:
        name, values = label(read), timings[label(read)]
        out[name] = ({"error": errors[name]} if name in errors else
                     {"p50_ms": round(percentile(values, 50), 1), "p95_ms": round(percentile(values, 95), 1),
                      "n": len(values), "items": items.get(name)})
    return out


# --------------------------------------------------------------------------- the report


def growth(results: dict, sizes: list[int]) -> dict:
    """Per read, p50 and p95 at each size over the first size's: the issue's 2x test, on p50."""
    out = {}
    first = str(sizes[0])
    for name, by_size in results.items():
        base = by_size.get(first, {})
        if "p50_ms" not in base:
            continue
        out[name] = {str(size): {"p50": round(by_size[str(size)]["p50_ms"] / max(base["p50_ms"], 0.1), 2),
                                 "p95": round(by_size[str(size)]["p95_ms"] / max(base["p95_ms"], 0.1), 2)}
                     for size in sizes[1:] if "p50_ms" in by_size.get(str(size), {})}
    return out


def short(size: int) -> str:
    return f"{size // 1_000_000}M" if size >= 1_000_000 and size % 1_000_000 == 0 else f"{size // 1000}k"


def table(results: dict, ratios: dict, sizes: list[int], reads: list[Read]) -> str:
    """The table printed at the end: p50 / p95 per size, the p50's growth, flags."""
    heads = [f"{short(s)} p50/p95 ms" for s in sizes] + [f"x{short(sizes[0])}->{short(s)}" for s in sizes[1:]]
    lines = [f"{'read':58} " + " ".join(f"{h:>17}" for h in heads)]
    for read in reads:
        name = label(read)
        cells = []
        for size in sizes:
            figure = results.get(name, {}).get(str(size), {})
            cells.append("error" if "error" in figure else f"{figure['p50_ms']:.1f}/{figure['p95_ms']:.1f}"
                         if figure else "-")
        flags = []
        for size in sizes[1:]:
            ratio = ratios.get(name, {}).get(str(size), {}).get("p50")
            cells.append(f"{ratio:.2f}" if ratio is not None else "-")
            if ratio is not None and ratio > GROWTH_LIMIT and "> 2x" not in flags:
                flags.append("> 2x")
        if read.name == "rest search" and any(
                results.get(name, {}).get(str(size), {}).get("p95_ms", 0) > SEARCH_P95_MS for size in sizes):
            flags.append(f"p95 > {SEARCH_P95_MS:.0f} ms")
        lines.append(f"{name:58} " + " ".join(f"{c:>17}" for c in cells) + ("  " + ", ".join(flags) if flags else ""))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help=f"memories of the organisation at each measurement, ascending, multiples of {load.CHUNK:,}")
    parser.add_argument("--namespace-size", type=int, default=NAMESPACE_SIZE,
                        help="memories of users/dana (the first ones loaded; at most the first size)")
    parser.add_argument("--repeat", type=int, default=20, help="timed rounds at each size")
    parser.add_argument("--only", help="a subset of the reads: comma-separated names or name prefixes "
                                       "(e.g. 'rest stats,console memories'); --list shows them")
    parser.add_argument("--list", action="store_true", help="list the reads and exit")
    parser.add_argument("--reuse", action="store_true",
                        help="keep what the data folder holds: grow it from there (a smaller size is skipped)")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR,
                        help="the embedded servers' folder (emptied first unless --reuse; never one it did not make)")
    parser.add_argument("--port", type=int, default=PORT)
    parser.add_argument("--label", help="results go to results-<label>.json (default: the largest size)")
    parser.add_argument("--note", default="", help="kept in the results: how and where the run was made")
    args = parser.parse_args()

    if args.list:
        for read in READS:
            print(f"{label(read):58} {read.door:8} {read.what}")
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    if sizes != sorted(sizes) or any(s % load.CHUNK for s in sizes):
        raise SystemExit(f"--sizes: ascending multiples of {load.CHUNK:,}")
    namespace_size = min(args.namespace_size, sizes[0])
    if namespace_size % (load.BLOCK * load.USER_BLOCKS):
        raise SystemExit(f"--namespace-size: a multiple of {load.BLOCK * load.USER_BLOCKS}")
    reads = READS
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        reads = [r for r in READS if any(label(r) == w or r.name == w or r.name.startswith(w) for w in wanted)]
        if not reads:
            raise SystemExit("--only names no read: see --list")

    data_dir = args.data_dir.resolve()
    os.environ["MEMORY_PLATFORM_DATA_DIR"] = str(data_dir)  # local_services finds the servers there
    from memory_platform import local_services

    try:
        benchmark(args, data_dir, sizes, reads, namespace_size)
    finally:
        local_services.stop_all()  # --reuse starts them again


def benchmark(args, data_dir: Path, sizes: list[int], reads: list[Read], namespace_size: int) -> None:
    from benchmarks.search.run import CORPUS, corpus
    from memory_platform import local_services

    if not CORPUS.exists():  # made once by the search benchmark's code, with the product's model
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_platform.settings.base")
        import django

        django.setup()
    texts, vectors, query_texts, _ = corpus()
    queries, warmup_queries = query_texts[:200], query_texts[200:]

    results_path = Path(__file__).with_name(f"results-{args.label or sizes[-1]}.json")
    if args.reuse and (data_dir / STATE).exists():
        state = State(**json.loads((data_dir / STATE).read_text()))
        local_services.ensure_started()
        configure(sizes[-1])
    else:
        state = fresh(data_dir, sizes[-1], namespace_size)
    print(f"organisation {SLUG} ({state.org_id}) in {data_dir}, holding {state.loaded:,} memories")
    report: dict = {"recorded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "note": args.note,
                    "machine": machine(), "sizes": sizes, "namespace": NS,
                    "namespace_size": state.namespace_size, "repeat": args.repeat, "web_workers": WEB_WORKERS,
                    "loads": {}, "holdings": {}, "load_average": {}, "reads": {},
                    "what": {label(r): {"door": r.door, "scope": r.scope, "request": r.what} for r in reads}}
    print("machine", report["machine"])
    measured: list[int] = []
    for size in sizes:
        if size < state.loaded:
            print(f"skipping {size:,}: the organisation already holds {state.loaded:,} (run without --reuse)")
            continue
        if size > state.loaded:
            report["loads"][str(size)] = grow(data_dir, state, size, texts, vectors)
        report["holdings"][str(size)] = holdings(state)
        # What the worker's cron keeps done, which no worker runs here: the memories' tallies
        # folded (every 30 s) and the strength bands with the weakest memories counted (every 10
        # minutes). Without them the stats, the dashboard and the weak list read the deltas of
        # every memory loaded and count the bands there and then (a first recording, before this,
        # timed that).
        manage(data_dir, "memory_tallies", "--fold")
        manage(data_dir, "strength_bands")
        forget_redis(("query_embedding:*", "*:hot_memories:*"))
        served = serve(data_dir, args.port)
        began = os.getloadavg()
        try:
            figures = measure(served, state, reads, args.repeat, queries, warmup_queries)
        finally:
            stop(served)
        # The machine's load around the timing (1-minute averages): other work on it shows here.
        report["load_average"][str(size)] = [round(began[0], 2), round(os.getloadavg()[0], 2)]
        for name, figure in figures.items():
            report["reads"].setdefault(name, {})[str(size)] = figure
        measured.append(size)
        report["growth"] = growth(report["reads"], measured)
        results_path.write_text(json.dumps(report, indent=1) + "\n")
        print(table(report["reads"], report["growth"], measured, reads))
    if not measured:
        print("nothing measured")
        return
    flagged = [name for name, by_size in report["growth"].items() if any(r["p50"] > GROWTH_LIMIT for r in by_size.values())]
    errors = [name for name, by_size in report["reads"].items() if any("error" in f for f in by_size.values())]
    print(f"\n{len(flagged)} of {len(reads)} reads grew more than {GROWTH_LIMIT:g}x (p50) from "
          f"{short(measured[0])} to {short(measured[-1])}")
    if errors:
        print("errors:", *errors, sep="\n  ")
    # An answer that held nothing read nothing: the data (or the read) is wrong for it. A console
    # page without a table counts none at every size.
    empty = []
    for name, by_size in report["reads"].items():
        found = [f.get("items") for f in by_size.values()]
        if 0 in found and (report["what"][name]["door"] != "console" or any(found)):
            empty.append(name)
    if empty:
        print("answered with nothing (0 items) at some size:", *empty, sep="\n  ")
    print(f"results in {results_path}")

if __name__ == "__main__":
    main()
