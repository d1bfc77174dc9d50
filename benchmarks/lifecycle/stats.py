"""Stats benchmark: what GET /api/v1/stats and the console's dashboard cost for one
organisation of `rows` memories (docs/adr/0045).

    .venv/bin/python benchmarks/lifecycle/stats.py [--rows 100000] [--label before]

On embedded servers in .data/bench-stats (emptied first): the organisation decay.py loads
(COPY: a year of memories in 1,000 users' namespaces, one in ten retrieved), then p50 and p95
of 20 runs each of the org-wide stats (after the tallies' fold and a count of the strength
bands, as the cron leaves them, when the code has them), the stats of one user's namespace, the dashboard's
counts (as its view computes them, without the chart), the strength bands and the weak
list's first page. Writes results-stats-<rows>[-label].json beside this file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import django_env, fresh_django, machine  # noqa: E402
from benchmarks.lifecycle.decay import load, percentiles, timed  # noqa: E402

DATA_DIR = ROOT / ".data" / "bench-stats"
ENV = django_env(DATA_DIR)
REPEATS = 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    fresh_django(DATA_DIR)
    from memories.lifecycle import decay, stats
    from memory_platform import local_services
    from tenants.context import tenant_context

    org_id = load(args.rows)
    from memories.access import Caller
    from memories.use_cases import lifecycle

    if hasattr(lifecycle, "dashboard"):
        def dashboard():
            return lifecycle.dashboard(Caller(org_id=org_id))
        dashboard_reads = "memories.use_cases.lifecycle.dashboard"
    else:  # before docs/adr/0045
        from console import dashboard as console_dashboard

        def dashboard():
            return console_dashboard.stats(org_id)
        dashboard_reads = "console.dashboard.stats"

    measured = {
        "stats_org_wide": lambda: stats.memory_stats(org_id=org_id),
        "stats_one_namespace": lambda: stats.memory_stats(org_id=org_id, namespace="users/user-7"),
        "dashboard": dashboard,
        "strength_bands": lambda: decay.strength_bands(org_id=org_id),
        "weak_list_first_page": lambda: decay.weak_memories(org_id=org_id, limit=50),
    }
    results = {"machine": machine(), "recorded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "rows": args.rows, "label": args.label, "dashboard_reads": dashboard_reads}
    if hasattr(decay, "count_bands"):  # docs/adr/0045: what the cron does before the reads
        from memories.lifecycle import tallies

        seconds, folded = timed(tallies.fold)  # the COPY's rows, one delta each
        results["fold_after_load"] = {"seconds": round(seconds, 2), "folded": folded["folded"]}
        seconds, _ = timed(decay.count_bands)
        results["count_bands_seconds"] = round(seconds, 2)
        print(results, flush=True)
    with tenant_context(org_id):
        for name, func in measured.items():
            func()  # warm
            results[name] = percentiles([timed(func)[0] for _ in range(REPEATS)])
            print(name, results[name], flush=True)
        if hasattr(stats, "_tallied"):  # what the org-wide stats' time is made of
            from datetime import timedelta

            from django.utils import timezone

            from memories.lifecycle import tallies
            from memories.models import Entity, MemoryRelationship

            parts = {
                "tallies_and_bands": lambda: stats._tallied(org_id),
                "growth_day_tallies": lambda: tallies.created_per_day(
                    org_id, (timezone.now() - timedelta(days=stats.GROWTH_DAYS)).date()),
                "relationship_tallies": lambda: tallies.relationships(org_id),
                "relationships_counted_by_rows": lambda: stats._counted(MemoryRelationship.objects.filter(
                    org_id=org_id, source__deleted_at__isnull=True, target__deleted_at__isnull=True),
                    "relation_type"),
                "entities": lambda: stats._counted(Entity.objects.filter(org_id=org_id), "kind"),
                "last_runs": lambda: [stats.last_run(org_id, job, with_counts=True) for job in ("decay", "expiry",
                                                                                                 "consolidation")],
            }
            results["stats_org_wide_parts"] = {name: percentiles([timed(func)[0] for _ in range(REPEATS)])
                                               for name, func in parts.items()}
            print(results["stats_org_wide_parts"], flush=True)
        results["stats_org_wide_answer"] = json.loads(json.dumps(stats.memory_stats(org_id=org_id)["memories"],
                                                                  default=str))
    suffix = f"-{args.label}" if args.label else ""
    out = Path(__file__).with_name(f"results-stats-{args.rows}{suffix}.json")
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    local_services.stop_all()


if __name__ == "__main__":
    main()
