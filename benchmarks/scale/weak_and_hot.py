"""The weak list and the hot set at two sizes of one organisation. The weak list scanned and
sorted (memories.lifecycle.decay.weak_memories, what every call did before), and served from
the weakest memories kept with the strength bands (decay.weak_page, issue 32), with what keeping
them costs the 10-minute job. The hot set scored more than five minutes ago: rebuilt before the
answer (before), answered as it is while the worker rebuilds it (after, memories.retrieval.hot).

    .venv/bin/python benchmarks/scale/weak_and_hot.py --sizes 10000,100000

In process, on the embedded PostgreSQL of MEMORY_PLATFORM_DATA_DIR (its organisations are
emptied first: give it a folder of its own). At each size one organisation is loaded by SQL
(benchmarks/lists/run.py's loader: one agent, memories over a year in 1,001 namespaces, decay
rate 0.1), each last reinforced 0-75 days ago and of importance 0-1 at random, so that some are
strong, many fading and a few faded, as benchmarks/scale/load.py makes them. p50 of --repeat
runs, milliseconds; results to results-weak-and-hot.json.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_platform.settings.base")

from benchmarks.scale import in_process  # noqa: E402
from benchmarks.scale.in_process import report, timed  # noqa: E402


def shape(org_id: str, agent_id: str) -> None:
    """Decay clocks restarted 0-75 days ago, importance at random."""
    from benchmarks.search.run import owner_connection

    with owner_connection(superuser=True) as conn:
        conn.execute("""
            UPDATE memories SET reinforced_at = now() - random() * interval '75 days',
                                importance = round(random()::numeric, 3)
            WHERE org_id = %s""", [org_id])
        conn.execute("VACUUM ANALYZE memories")


def measure(org_id: str, agent_id: str, repeat: int) -> dict:
    from memories.lifecycle import decay
    from tenants.context import tenant_context

    results = {}
    with tenant_context(org_id):
        reads = {
            "weak list, scanned (before)": lambda: decay.weak_memories(org_id=org_id, limit=50),
            "weak list, page at offset 500, scanned (before)":
                lambda: decay.weak_memories(org_id=org_id, limit=50, offset=500),
            "count the bands and keep the weakest (the job)": lambda: decay.count_organisation_bands(org_id=org_id),
            "weak list, as counted (after)": lambda: decay.weak_page(org_id=org_id, limit=50),
            "weak list, page at offset 500, as counted (after)": lambda: decay.weak_page(org_id=org_id, limit=50,
                                                                                         offset=500),
            "weak list under users/u0 (a tenth), scanned": lambda: decay.weak_page(org_id=org_id, limit=50,
                                                                                   namespace="users/u0"),
        }
        for name, call in reads.items():
            results[name] = timed(call, repeat)
            report(name, results[name])
        results.update(hot_reads(org_id, agent_id, repeat))
        page = decay.weak_page(org_id=org_id, limit=50)
        scanned, count = decay.weak_memories(org_id=org_id, limit=50)
        assert page.as_of is not None and [f.memory.pk for f in page.fading] == [f.memory.pk for f in scanned]
        results["weak memories"] = count
    return {"ms": results}


def hot_reads(org_id: str, agent_id: str, repeat: int) -> dict:
    """The hot set's read by the one agent (every memory is its), once its set is due."""
    import django_rq

    from memories.caching import cache
    from memories.retrieval import hot

    built = cache.HOT_BUILT_KEY.format(org_id=org_id, agent_id=agent_id)
    gone = [cache.HOT_KEY.format(org_id=org_id, agent_id=agent_id), built]

    def rebuilt():
        cache.client().delete(*gone)
        return hot.hot_memories(org_id=org_id, agent_id=agent_id, limit=20)

    def due():
        cache.client().set(built, 0)
        cache.client().delete(cache.HOT_REBUILDING_KEY.format(org_id=org_id, agent_id=agent_id))
        return hot.hot_memories(org_id=org_id, agent_id=agent_id, limit=20)

    results = {}
    for name, call in (("hot set due, rebuilt before the answer (before)", rebuilt),
                       ("hot set due, answered as it is (after)", due)):
        results[name] = timed(call, repeat)
        report(name, results[name])
    django_rq.get_queue(hot.REBUILD_QUEUE).empty()
    return results


def main() -> None:
    in_process.run(__doc__.splitlines()[0], measure, Path(__file__).with_name("results-weak-and-hot.json"), shape)


if __name__ == "__main__":
    main()
