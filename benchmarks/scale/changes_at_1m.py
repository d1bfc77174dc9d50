"""The reads docs/adr/0056 changed, before and after, on the organisation benchmarks/scale/run.py
loaded (its data folder, migrated to the code as it is), in process, as the application's role
under row-level security: the retrieval events by a text of their query, a page 90% deep of the
console's sort by confidence, the whole organisation's export count and the org-wide stats.

    .venv/bin/python benchmarks/scale/run.py                      # loads to 1M and times every read
    .venv/bin/python manage.py migrate --data-dir .data/bench-scale
    .venv/bin/python benchmarks/scale/changes_at_1m.py [--data-dir .data/bench-scale] [--repeat 15]

"Before" runs each read's previous statement (ILIKE; count(*) of every memory; the relationships
joined to both their memories), or, for the deep page, the same statement with numeric's
comparisons unmarked LEAKPROOF for the run (the superuser marks them again after). p50 in ms,
printed, and written to results-changes-at-1m.json with the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_platform.settings.base")

from benchmarks.scale.in_process import timed  # noqa: E402

SLUG = "scale-bench"
NUMERIC = ("eq", "ne", "lt", "le", "gt", "ge")


def leakproof(on: bool) -> None:
    from benchmarks.search.run import owner_connection

    with owner_connection(superuser=True) as conn:
        for name in NUMERIC:
            conn.execute(f"ALTER FUNCTION pg_catalog.numeric_{name}(numeric, numeric) {'' if on else 'NOT '}LEAKPROOF")


def reads(org_id):
    from django.db.models import Count

    from console.views.memories import BY_KEY
    from memories import keyset
    from memories.access import Caller
    from memories.lifecycle import stats
    from memories.lifecycle.portability import ExportScope
    from memories.models import Memory, MemoryRelationship, RetrievalEvent
    from memories.use_cases import organisation, retrieval

    caller = Caller(org_id=org_id)
    for text in ("zzz", "what"):
        yield (f"events ?q={text}", "before", lambda q=text: [e.pk for e in keyset.page(
            RetrievalEvent.objects.filter(org_id=org_id, query__icontains=q), order=keyset.NEWEST_FIRST, limit=50).items])
        yield (f"events ?q={text}", "after", lambda q=text: [e.pk for e in keyset.page(
            retrieval.retrieval_event_list(caller, query_contains=q), order=keyset.NEWEST_FIRST, limit=50).items])
    order = BY_KEY["confidence"]
    live = Memory.objects.without_usage().filter(org_id=org_id, deleted_at__isnull=True)
    deep = live.order_by(*order.order_by())[int(live.count() * 0.9)]
    page = keyset.after(live, order=order, key=keyset.key_of(deep, order)).order_by(*order.order_by())
    yield "console memories ?sort=confidence, a page 90% deep", "leakproof", lambda: [m.pk for m in page[:25]]
    yield "export count, whole organisation", "before", Memory.objects.without_usage().filter(org_id=org_id).count
    yield "export count, whole organisation", "after", lambda: organisation.export_count(caller, ExportScope())
    joined = MemoryRelationship.objects.filter(org_id=org_id, source__deleted_at__isnull=True,
                                               target__deleted_at__isnull=True)
    yield ("stats: relationships by type", "before",
           lambda: list(joined.values("relation_type").annotate(n=Count("pk")).order_by("relation_type")))
    yield "stats [org], all of it", "after", lambda: stats.memory_stats(org_id=org_id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(ROOT / ".data" / "bench-scale"))
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    os.environ["MEMORY_PLATFORM_DATA_DIR"] = args.data_dir
    import django

    django.setup()
    from benchmarks.common import machine
    from memory_platform import local_services
    from tenants.context import service_account, tenant_context
    from tenants.models import Organization

    local_services.ensure_started()
    with service_account():
        org = Organization.objects.get(slug=SLUG)
    results: dict = {}
    with tenant_context(org.id):
        for name, when, call in reads(org.id):
            if when == "leakproof":
                for marked in (False, True):
                    leakproof(marked)
                    label = "after" if marked else "before (numeric not leakproof)"
                    results.setdefault(name, {})[label] = timed(call, args.repeat)
                    print(f"{name:55} {label:32} {results[name][label]:9.1f} ms", flush=True)
                continue
            results.setdefault(name, {})[when] = timed(call, args.repeat)
            print(f"{name:55} {when:32} {results[name][when]:9.1f} ms", flush=True)
    Path(__file__).with_name("results-changes-at-1m.json").write_text(json.dumps(
        {"recorded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(),
         "repeat": args.repeat, "load_average": round(os.getloadavg()[0], 2), "p50_ms": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
