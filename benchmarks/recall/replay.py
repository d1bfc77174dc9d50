"""The recall benchmark's questions asked in process, on the turns its last run stored: for
trying a ranking change in a minute, on both split halves at once.

    .venv/bin/python benchmarks/recall/run.py            # stores the turns in .data/recall
    .venv/bin/python benchmarks/recall/replay.py [--experiment session --set sessions=3 --set weight=0.3]

Each question of categories 1-4 goes to memories.retrieval.pipeline.memory_search as the
demo organisation, with the conversation's namespace as its only filter and limit 20, as
run.py's POST /api/v1/search does, without HTTP and without recording retrieval events: the
usage the final rank weighs is forgotten first and stays empty, as at the start of a run.
The current code gives the figures of a run through the API (2026-11-26: 0.634 / 0.754 /
0.830 in process, 0.634 / 0.754 / 0.829 through the API on the same turns). Prints R@5/10/20
and R@10 by category for all questions and each half (tuned: conv-26, -41, -43; held: conv-47,
-49), as benchmarks/recall/README.md records them. `--experiment` runs with one of
benchmarks/recall/experiments.py's signals added (measured, not kept); nothing is written but
the optional --details file (outside the repository: it holds the data).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ["MEMORY_PLATFORM_DATA_DIR"] = str(ROOT / ".data" / "recall")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_platform.settings.base")
os.environ.setdefault("LOG_LEVEL", "WARNING")

import django  # noqa: E402

from benchmarks.recall.run import CATEGORIES, DATA, KS, forget_usage  # noqa: E402

HALVES = {"tuned": (0, 1, 2), "held": (3, 4)}  # positions in the data, as run.py --conversations
ORDER = ("single-hop", "temporal", "multi-hop", "open-domain")


def stored_turns():
    """The organisation holding the stored turns, and each memory's dia_id."""
    from django.db import connection

    from tenants.context import service_account

    with service_account(), connection.cursor() as cursor:
        cursor.execute("SELECT id, org_id, metadata->>'dia_id' FROM memories WHERE metadata ? 'dia_id'")
        rows = cursor.fetchall()
    if not rows:
        sys.exit("replay: no stored turns in .data/recall; run benchmarks/recall/run.py first")
    return rows[0][1], {memory_id: dia_id for memory_id, _, dia_id in rows}


def replay(org_id, dia_ids: dict) -> tuple[dict, list, list]:
    """recall[half or (half, category)][k] -> each question's recall, the details, the latencies."""
    from memories.retrieval import pipeline
    from memories.retrieval.filters import SearchFilters
    from tenants.context import tenant_context

    recall, details, latencies = defaultdict(lambda: defaultdict(list)), [], []
    for position, sample in enumerate(json.loads(DATA.read_text())):
        half = next(name for name, positions in HALVES.items() if position in positions)
        for qa in sample["qa"]:
            if qa["category"] not in CATEGORIES or not qa.get("evidence"):
                continue
            category, began = CATEGORIES[qa["category"]], time.perf_counter()
            with tenant_context(org_id):
                outcome = pipeline.memory_search(org_id=org_id, query=qa["question"], limit=max(KS),
                                                 filters=SearchFilters(namespace=f"locomo/{sample['sample_id']}"))
            latencies.append((time.perf_counter() - began) * 1000)
            found = [dia_ids.get(result.memory.pk) for result in outcome.results]
            details.append({"conversation": sample["sample_id"], "category": category, "question": qa["question"],
                            "evidence": qa["evidence"], "found": found, "understood": outcome.understood,
                            "ms": round(latencies[-1], 1)})
            evidence = set(qa["evidence"])
            for k in KS:
                share = len(evidence & set(found[:k])) / len(evidence)
                for group in ("all", half, ("all", category), (half, category)):
                    recall[group][k].append(share)
    return recall, details, latencies


def table(recall: dict) -> str:
    def mean(values):
        return f"{statistics.mean(values):.3f}" if values else "-"

    return "\n".join(
        f"| {half} | " + " | ".join(mean(recall[half][k]) for k in KS) + " | "
        + " / ".join(mean(recall[half, category][10]) for category in ORDER) + " |"
        for half in ("all", *HALVES))


def main() -> None:
    django.setup()
    from benchmarks.recall import experiments

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", choices=sorted(experiments.EXPERIMENTS),
                        help="add this experimental signal (benchmarks/recall/experiments.py)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="one of the experiment's settings (experiments.SETTINGS), e.g. weight=0.5")
    parser.add_argument("--details", help="also write each question and what came back to this file")
    arguments = parser.parse_args()
    from memory_platform import local_services

    local_services.ensure_started()
    org_id, dia_ids = stored_turns()
    forget_usage()
    described = "the code as it is"
    if arguments.experiment:
        described = experiments.install(arguments.experiment, dict(item.split("=", 1) for item in arguments.set))
    recall, details, latencies = replay(org_id, dia_ids)
    print(f"{described}: search p50 / p95 {statistics.median(latencies):.1f} / "
          f"{sorted(latencies)[int(0.95 * len(latencies))]:.1f} ms in process, load average "
          f"{os.getloadavg()[0]:.2f}")
    print("| half | R@5 | R@10 | R@20 | R@10 single-hop / temporal / multi-hop / open-domain |")
    print(table(recall))
    if arguments.details:
        Path(arguments.details).write_text(json.dumps(details, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
