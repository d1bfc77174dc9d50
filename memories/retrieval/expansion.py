"""Expansion: the memories up to two relationships away from a search's best results, as a
signal.

Seeded by the other signals' fusion (its best `limit` memories), it ranks the memories one
relationship away by the rank of the seed they were reached from, then those a second
relationship away (spec §4's multi-hop: one fact leads to the next) by the rank of the seed
their first step came from; fusion then weighs it as RRF_WEIGHTS["graph"]. Relationships of
type contradicts and supersedes are not followed.
"""

from __future__ import annotations

from django.db import connection

from memories.retrieval.filters import SearchFilters
from memories.retrieval.ranking import Hit

MAX_HOPS = 2


def related(org_id, memory_ids: list, filters: SearchFilters, types: tuple[str, ...] = ()) -> dict:
    """One hop along relationships (of these types, if any are given) from the given memories
    (best first), to those the filters let through: {related id: (from id, relation type)},
    each reached from the best of the given memories it is related to. The given memories
    themselves are never returned."""
    if not memory_ids:
        return {}
    where, params = filters.where(org_id)
    if types:
        where, params = f"{where} AND r.relation_type = ANY(%s)", [*params, list(types)]
    ids = [str(i) for i in memory_ids]
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT DISTINCT ON (m.id) m.id, r.from_id, r.relation_type
            FROM (
                SELECT target_id AS related, source_id AS from_id, relation_type FROM memory_relationships
                WHERE org_id = %s AND source_id = ANY(%s::uuid[])
                UNION ALL
                SELECT source_id, target_id, relation_type FROM memory_relationships
                WHERE org_id = %s AND target_id = ANY(%s::uuid[])
            ) r JOIN memories m ON m.org_id = %s AND m.id = r.related
            WHERE {where} AND r.relation_type NOT IN ('contradicts', 'supersedes')
            ORDER BY m.id, array_position(%s::uuid[], r.from_id), r.relation_type
            """,
            [org_id, ids, org_id, ids, org_id, *params, ids],
        )
        return {row[0]: (row[1], row[2]) for row in cursor.fetchall() if row[0] not in set(memory_ids)}


def search(org_id, seeds: list, filters: SearchFilters, types: tuple[str, ...] = (), hops: int = 1) -> list[Hit]:
    """The memories up to `hops` relationships (of these types, if any) from the seeds (best
    first): nearer ones first, then by the rank of the seed their path started from, then by
    id. Each says the memory it was reached from, by which relationship, in how many hops, and
    from which seed. A memory is reached by its shortest path, and seeds are never reached."""
    if not 1 <= hops <= MAX_HOPS:
        raise ValueError(f"hops must be from 1 to {MAX_HOPS}")
    seed_of = {seed: seed for seed in seeds}  # each memory reached -> the seed its path began at
    reached, frontier = [], list(seeds)
    for hop in range(1, hops + 1):
        found = related(org_id, frontier, filters, types)
        step = sorted(((memory_id, via) for memory_id, via in found.items() if memory_id not in seed_of),
                      key=lambda item: (seeds.index(seed_of[item[1][0]]), str(item[0])))
        for memory_id, (from_id, relation_type) in step:
            seed_of[memory_id] = seed_of[from_id]
            reached.append((memory_id, from_id, relation_type, hop))
        frontier = [memory_id for memory_id, *_ in step]
        if not frontier:
            break
    return [Hit(memory_id, 0.0, rank, details={"from": str(from_id), "relation_type": relation_type, "hops": hop,
                                               "seed": str(seed_of[memory_id])})
            for rank, (memory_id, from_id, relation_type, hop) in enumerate(reached, start=1)]
