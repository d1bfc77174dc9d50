"""Where the time of POST /api/v1/search goes: each stage's p50/p95, in process.

    .venv/bin/python benchmarks/search/stages.py --rows 1000000

Runs on the rows and index `run.py` left in .data/bench-search. The request goes through
Django's test client (middleware, authentication, the view, serialization; no HTTP server),
and each stage is timed by wrapping the function that does it. "other" is the rest of the
request: authentication, parsing, serialization and the commit. Every query is new, so its
embedding is computed. Prints a table (with --profile N, also the N costliest functions, which
cProfile slows down); records nothing (run.py records the end-to-end figures).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import gc
import io
import json
import pstats
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import percentile  # noqa: E402
from benchmarks.search import run  # noqa: E402  (sets the data directory and settings)

STAGES = {
    "tenant size": ("memories.retrieval.size", "candidate_count"),
    # The full-text statement runs in the database while the query is embedded in Python: the
    # time of the block fulltext.started opens (BLOCKS), from its start to its rows.
    "text+embedding": ("memories.retrieval.fulltext", "started"),
    "vector": ("memories.retrieval.vector", "search"),
    "neighbours": ("memories.retrieval.neighbours", "search"),
    "session": ("memories.retrieval.sessions", "search"),
    "time signal": ("memories.retrieval.timeframe", "search"),
    "speaker": ("memories.retrieval.speakers", "named"),
    "ranking": ("memories.retrieval.ranking", "ranking_rows"),
    "load records": ("memories.retrieval.records", "load"),
    "event": ("memories.retrieval.events", "retrieval_event_record"),
    "authentication": ("tenants.authentication.ApiKeyAuthentication", "authenticate"),
    "serialization": ("memories.api.retrieval_views", "search_response"),
    "validation": ("memories.api.views.AgentAPIView", "validated"),
    "rendering": ("rest_framework.renderers.JSONRenderer", "render"),
    "commit": ("django.db.backends.base.base.BaseDatabaseWrapper", "commit"),
}
INSIDE = {  # parts of the stages above, or spread over several
    "  embedding": ("memories.caching.cache", "query_embedding"),  # in text+embedding
    "  tenant swaps": ("tenants.context", "_set"),  # in authentication (the search and its event set no tenant)
}
BLOCKS = {"text+embedding"}  # context managers: timed from entering the block to leaving it
# Also reported: "gc", the time the garbage collector ran during the request (in any stage).


def timed(spent: dict, stage: str, function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[stage] += (time.perf_counter() - started) * 1000

    return wrapper


def timed_block(spent: dict, stage: str, function):
    @functools.wraps(function)
    @contextlib.contextmanager
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            with function(*args, **kwargs) as value:
                yield value
        finally:
            spent[stage] += (time.perf_counter() - started) * 1000

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--tenants", default="half,tenth,one_percent,tenth_percent")
    parser.add_argument("--sql", action="store_true",
                        help="also list each statement a search sends, with its count and p50 per request")
    parser.add_argument("--profile", type=int, metavar="N", default=0,
                        help="also profile the requests (cProfile) and list the N functions that took longest "
                             "by their own time and by time including what they called")
    args = parser.parse_args()

    import importlib

    import django

    run.configure()
    django.setup()
    from memory_platform import local_services

    local_services.start_for_settings()  # the embedded Redis (configure() started PostgreSQL)
    from django.core.management import call_command
    from django.test import Client

    from memories.caching import cache

    tenants = json.loads((run.DATA_DIR / f"tenants-{args.rows}.json").read_text())
    _, _, query_texts, _ = run.corpus()
    spent: dict = defaultdict(float)
    for stage, (module_name, name) in {**STAGES, **INSIDE}.items():
        try:
            owner = importlib.import_module(module_name)
        except ModuleNotFoundError:  # a class: module.Class
            module_name, class_name = module_name.rsplit(".", 1)
            owner = getattr(importlib.import_module(module_name), class_name)
        setattr(owner, name, (timed_block if stage in BLOCKS else timed)(spent, stage, getattr(owner, name)))
    from memories.vectors.embeddings import get_embedder

    get_embedder(threads=1)  # as a web worker has it (memory_platform/gunicorn_conf.py)
    client = Client()
    statements: dict = defaultdict(list)  # statement's opening -> ms, for --sql

    def record_statement(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            opening = re.sub(r'"s\d+_x\d+"', '"s…"', " ".join(sql.split()))[:90]  # savepoints: one line
            statements[opening].append((time.perf_counter() - started) * 1000)

    from django.db import connection

    collecting: list = []

    def garbage_collection(phase, info):
        if phase == "start":
            collecting[:] = [time.perf_counter()]
        elif collecting:
            spent["gc"] += (time.perf_counter() - collecting.pop()) * 1000

    gc.callbacks.append(garbage_collection)
    for tenant in args.tenants.split(","):
        out = io.StringIO()
        call_command("issue_api_key", f"bench-{tenant}", "bench-agent", stdout=out)
        key = out.getvalue().split()[-1]
        per_stage: dict = defaultdict(list)
        # The same queries for every tenant, each embedded anew: no cached embedding survives.
        run.forget_query_embeddings()
        cache._embed_query_cached.cache_clear()
        statements.clear()
        profiler = cProfile.Profile() if args.profile else None
        for text in query_texts[: args.queries]:
            spent.clear()
            started = time.perf_counter()
            with (connection.execute_wrapper(record_statement) if args.sql else contextlib.nullcontext(),
                  profiler or contextlib.nullcontext()):
                response = client.post("/api/v1/search", {"query": text, "limit": run.K},
                                       content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
            total = (time.perf_counter() - started) * 1000
            assert response.status_code == 200, response.content
            for stage in [*STAGES, *INSIDE, "gc"]:
                per_stage[stage].append(spent[stage])
            per_stage["other"].append(total - sum(spent[stage] for stage in STAGES))
            per_stage["total"].append(total)
        print(f"\n{tenant} ({tenants[tenant][2]} rows), {args.queries} queries")
        for stage, values in per_stage.items():
            print(f"  {stage:<14} p50 {percentile(values, 50):6.1f} ms   p95 {percentile(values, 95):6.1f} ms")
        if args.sql:
            print(f"  statements per search: {sum(map(len, statements.values())) / args.queries:.1f}")
            for sql, values in sorted(statements.items(), key=lambda item: -sum(item[1])):
                print(f"  {len(values) / args.queries:4.1f}x p50 {percentile(values, 50):6.2f} ms  {sql}")
        if profiler:
            for order in ("tottime", "cumulative"):
                pstats.Stats(profiler).strip_dirs().sort_stats(order).print_stats(args.profile)


if __name__ == "__main__":
    main()
