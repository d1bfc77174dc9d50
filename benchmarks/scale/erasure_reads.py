"""The reads docs/adr/0052 moved onto indexes, before and after, at two sizes of one organisation:
a namespace's dry-run erasure (what POST /api/v1/erase {dry_run: true} and MCP's erase_namespace
without a confirmation run), the console's count of a namespace before erasing it, and explain
of one memory (REST's explain, MCP's explain_fact).

    .venv/bin/python benchmarks/scale/erasure_reads.py --sizes 10000,100000

In process, as the organisation (row-level security on, the application's role), on the
embedded PostgreSQL of MEMORY_PLATFORM_DATA_DIR (its organisations are emptied first), as
reads_by_index.py measures. At each size one organisation is loaded by SQL (benchmarks/lists/
run.py's loader: one agent, memories over a year in 1,001 namespaces, as many retrieval events),
then given a namespace of a fixed size, users/fixed (1,000 memories spread over the year, and
20 retrieval events asked in it), and retrieval events that return what a search returns: five
memories each, the first from the most retrieved 1% of the memories, the others from any.
"Before" is the previous code (memories/lifecycle/erasure.py at git revision --before, loaded
beside the current one: a dry run that erases and rolls back) without migration 0043's indexes
(dropped, then built again, by the superuser); "after" is this code with them. p50 of --repeat
runs, milliseconds, with the plans of the two lookups on retrieval_events; results to
results-erasure-reads.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_platform.settings.base")

from benchmarks.scale import in_process  # noqa: E402

from benchmarks.scale.in_process import timed  # noqa: E402

NEW_INDEXES = ("memories_namespace_all", "retrieval_events_returned", "retrieval_events_namespace")
NAMESPACE, NAMESPACE_SIZE, ASKED_IN_IT = "users/fixed", 1_000, 20


def shape(org_id: str, size: int) -> None:
    """The namespace of a fixed size, and what the retrieval events returned."""
    from benchmarks.search.run import owner_connection

    with owner_connection(superuser=True) as conn:
        conn.execute("UPDATE memories SET scope = %s WHERE org_id = %s AND split_part(content, ' ', 3)::int %% %s = 0",
                     [NAMESPACE, org_id, size // NAMESPACE_SIZE])
        conn.execute("SET session_replication_role = replica")  # past the append-only trigger, as a loader
        conn.execute("""
            WITH m AS (SELECT array_agg(id ORDER BY created_at, id) AS ids, count(*) AS n FROM memories WHERE org_id = %s),
                 e AS (SELECT id, split_part(query, ' ', 2)::bigint AS k FROM retrieval_events WHERE org_id = %s)
            UPDATE retrieval_events r
            SET returned_memory_ids = ARRAY[m.ids[(1 + (k * 7919) %% greatest(m.n / 100, 1))::int],
                                            m.ids[(1 + (k * 104729 + 1) %% m.n)::int], m.ids[(1 + (k * 15485863 + 2) %% m.n)::int],
                                            m.ids[(1 + (k * 32452843 + 3) %% m.n)::int], m.ids[(1 + (k * 49979687 + 4) %% m.n)::int]],
                returned_scores = '{0.9,0.8,0.7,0.6,0.5}',
                scope = CASE WHEN k <= %s THEN %s ELSE '' END
            FROM m, e
            WHERE r.org_id = %s AND r.id = e.id""", [org_id, org_id, ASKED_IN_IT, NAMESPACE, org_id])
        conn.execute("SET session_replication_role = DEFAULT")
        conn.execute("VACUUM ANALYZE memories")
        conn.execute("VACUUM ANALYZE retrieval_events")


def previous_erasure(revision: str):
    """memories.lifecycle.erasure as it was at `revision`, as a module of its own."""
    source = subprocess.run(["git", "show", f"{revision}:memories/lifecycle/erasure.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "erasure_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("erasure_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["erasure_before"] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


def probes(org_id: str) -> dict:
    """A memory of the namespace returned by a few searches, and one of the most returned."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("""
            SELECT id, (SELECT count(*) FROM retrieval_events r WHERE r.org_id = m.org_id AND r.returned_memory_ids @> ARRAY[m.id])
            FROM memories m WHERE m.org_id = %s AND m.scope = %s ORDER BY m.created_at LIMIT 1""", [org_id, NAMESPACE])
        rare = cursor.fetchone()
        cursor.execute("""
            SELECT id FROM memories m WHERE m.org_id = %s ORDER BY created_at, id LIMIT 1""", [org_id])
        popular = cursor.fetchone()[0]
    return {"rare": rare[0], "rare_returned_by": rare[1], "popular": popular}


def plans(org_id: str, memory_id) -> dict:
    """The plans, as the application's role under row-level security, of an erasure's lookup of
    the events that returned its memories and of explain's searches."""
    from django.db import connection

    from memories.lifecycle import erasure
    from memories.models import RetrievalEvent
    from memories.retrieval.explain import RETRIEVALS_SHOWN

    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user")
        role = cursor.fetchone()[0]
        cursor.execute("SELECT m.id FROM memories m WHERE m.org_id = %s AND m.scope = %s", [org_id, NAMESPACE])
        ids = [row[0] for row in cursor.fetchall()]
        cursor.execute("EXPLAIN (ANALYZE, COSTS OFF) " + erasure.RETURNING_ANY_SQL, [ids, org_id])
        returning = [row[0] for row in cursor.fetchall()]
    explain = (RetrievalEvent.objects.filter(org_id=org_id, returned_memory_ids__contains=[memory_id])
               .order_by("-created_at")[:RETRIEVALS_SHOWN]).explain(analyze=True, costs=False)
    return {"role": role, "erasure events": returning, "explain searches": explain.splitlines()}


def measure(org_id: str, repeat: int, after: bool, module, memories: dict) -> dict:
    from memories.lifecycle.erasure import ErasureScope, memory_count
    from memories.models import Memory
    from memories.retrieval.explain import memory_explain
    from tenants.context import tenant_context

    results = {}
    with tenant_context(org_id):
        scope = module.ErasureScope(namespace=NAMESPACE)
        counted = module.erase(org_id, scope, via="api", dry_run=True)
        results["counts"] = counted.counts
        reads = {
            f"erase dry run [namespace {NAMESPACE}]": lambda: module.erase(org_id, scope, via="api", dry_run=True),
            "console erasure count [namespace]": lambda: memory_count(org_id, ErasureScope(namespace=NAMESPACE)),
        }
        for which in ("rare", "popular"):
            memory = Memory.objects.get(pk=memories[which])
            reads[f"explain one memory ({which})"] = lambda m=memory: memory_explain(org_id=org_id, memory=m)
        for name, call in reads.items():
            results[name] = timed(call, repeat)
            print(f"  {'after ' if after else 'before'} {name:45} {results[name]:9.2f} ms", flush=True)
        if after:
            results["plans"] = plans(org_id, memories["rare"])
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--before", default="3032028", help="the git revision of the previous erasure (main before it changed)")
    parser.add_argument("--note", default="")
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command

    from benchmarks.common import machine
    from benchmarks.lists.run import load
    from memories.lifecycle import erasure
    from memory_platform import local_services
    from tenants.context import tenant_context

    local_services.start_for_settings()
    call_command("migrate", verbosity=0)
    before_module = previous_erasure(args.before)
    recorded = {"recorded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "note": args.note,
                "machine": machine(), "repeat": args.repeat, "before": args.before, "sizes": {}}
    for size in [int(s) for s in args.sizes.split(",")]:
        print(f"{size} memories", flush=True)
        org_id, _ = load(size)
        shape(org_id, size)
        with tenant_context(org_id):
            memories = probes(org_id)
        load_before = os.getloadavg()[0]
        saved = in_process.drop_indexes(NEW_INDEXES, ("memories", "retrieval_events"))
        before = measure(org_id, args.repeat, False, before_module, memories)
        in_process.restore_indexes(saved, ("memories", "retrieval_events"))
        after = measure(org_id, args.repeat, True, erasure, memories)
        counts = after.pop("counts")
        assert before.pop("counts") == counts, "the dry runs before and after count differently"
        plan = after.pop("plans")
        recorded["sizes"][size] = {"before_ms": before, "after_ms": after, "counts": counts, "plans": plan, "probes": {k: str(v) for k, v in memories.items()},
                                   "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
        print(f"  load average {recorded['sizes'][size]['load_average']}", flush=True)
    out = Path(__file__).with_name("results-erasure-reads.json")
    out.write_text(json.dumps(recorded, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
