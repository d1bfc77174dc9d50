"""Reading EXPLAIN (FORMAT JSON) the same way on one PostgreSQL and on a Citus cluster.

On a cluster the coordinator's plan is a Custom Scan (Citus Adaptive) holding, for each task it
sends, the plan the worker ran on its shard, whose relations and indexes are named after the
shard (memories_102438, memories_embedding_ann_102438). plan_nodes reads those plans as part of
the plan, with the shard id dropped from the names, so a test asserts the same nodes and the
same index on both engines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

SHARD_SUFFIX = re.compile(r"_\d+$")
NAMED = ("Relation Name", "Index Name")


def explained(result) -> dict:
    """The top plan node of what EXPLAIN (FORMAT JSON) returned (text or already parsed)."""
    plan = json.loads(result) if isinstance(result, str) else result
    return plan[0]["Plan"]


def tasks(node: dict) -> list[dict]:
    """The tasks a Citus Custom Scan node sent to the workers (none for any other node)."""
    return node.get("Distributed Query", {}).get("Job", {}).get("Tasks", [])


def task_count(plan: dict) -> int | None:
    """How many tasks the coordinator split the statement into; None on one PostgreSQL."""
    job = plan.get("Distributed Query", {}).get("Job")
    return job["Task Count"] if job else None


def plan_nodes(node: dict, *, on_shard: bool = False) -> Iterator[dict]:
    """Every node of a plan, top down, and below a Citus Custom Scan the worker's plan of each
    task it shows (all of them for a statement routed to one shard)."""
    if on_shard:
        node = {**node, **{key: SHARD_SUFFIX.sub("", node[key]) for key in NAMED if key in node}}
    yield node
    for task in tasks(node):
        for statement in task["Remote Plan"]:
            for remote in statement:
                yield from plan_nodes(remote["Plan"], on_shard=True)
    for child in node.get("Plans", []):
        yield from plan_nodes(child, on_shard=on_shard)
