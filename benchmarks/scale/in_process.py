"""What the in-process scale benchmarks share (reads_by_index.py, weak_and_hot.py...): at each
size one organisation loaded by SQL on the embedded PostgreSQL of MEMORY_PLATFORM_DATA_DIR
(benchmarks/lists/run.py's loader, which empties that database's organisations first), each
read timed by its median, and the results recorded with the machine and its load average."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path


def timed(call: Callable[[], object], repeat: int) -> float:
    """The median of `repeat` calls after one to warm up, in milliseconds."""
    call()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def run(description: str, measure: Callable[[str, str, int], dict], out: Path,
        shape: Callable[[str, str], None] | None = None) -> None:
    """The command line (--sizes, --repeat, --note) and the loop over sizes: load, shape(org_id,
    agent_id), then measure(org_id, agent_id, repeat) -> what the size's record holds (e.g.
    {"ms": {read: ms}}), written to `out` with the load average around it."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--note", default="")
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command

    from benchmarks.common import machine
    from benchmarks.lists.run import load
    from memory_platform import local_services

    local_services.start_for_settings()
    call_command("migrate", verbosity=0)
    recorded = {"recorded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "note": args.note,
                "machine": machine(), "repeat": args.repeat, "sizes": {}}
    for size in [int(s) for s in args.sizes.split(",")]:
        print(f"{size} memories", flush=True)
        org_id, agent_id = load(size)
        if shape:
            shape(org_id, agent_id)
        load_before = os.getloadavg()[0]
        recorded["sizes"][size] = {**measure(org_id, agent_id, args.repeat),
                                   "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
        print(f"  load average {recorded['sizes'][size]['load_average']}", flush=True)
    out.write_text(json.dumps(recorded, indent=1) + "\n")


def drop_indexes(names, tables: tuple[str, ...]) -> dict:
    """Drop these indexes (as the schema's owner) for a "before" measurement; returns their
    definitions for restore_indexes."""
    from benchmarks.search.run import owner_connection

    with owner_connection(superuser=True) as conn:
        saved = dict(conn.execute("SELECT indexname, indexdef FROM pg_indexes WHERE indexname = ANY(%s)",
                                  [list(names)]).fetchall())
        for name in saved:
            conn.execute(f'DROP INDEX "{name}"')
        for table in tables:
            conn.execute(f"ANALYZE {table}")
    return saved


def restore_indexes(saved: dict, tables: tuple[str, ...]) -> None:
    """Build again what drop_indexes dropped."""
    from benchmarks.search.run import owner_connection

    with owner_connection(superuser=True) as conn:
        for definition in saved.values():
            conn.execute(definition)
        for table in tables:
            conn.execute(f"ANALYZE {table}")


def report(name: str, value: float) -> None:
    print(f"  {name:60} {value:9.2f} ms", flush=True)
