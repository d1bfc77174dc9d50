"""Neighbours: the memories written just before and just after a search's best results, in
the same namespace, as a signal.

An agent that stores a conversation turn by turn asks about it later in other words than the
turn that answers: "What did Caroline adopt?" matches the turn where she says she adopted
someone, and the answer ("a puppy, Oscar") is the next turn. Seeded by the other signals'
fusion (its best NEIGHBOUR_SEEDS memories), this signal brings each seed's previous and next
memory in its namespace, in the order they were written, ranked just below their seed;
fusion weighs it as RRF_WEIGHTS["neighbours"]. A neighbour passes the search's own filters
(namespace, reach, status...) like any result. On the LoCoMo conversations it moved recall@10
from 0.543 to 0.599 (benchmarks/recall/README.md).
"""

from __future__ import annotations

from memories.models import live_sql
from memories.retrieval.filters import SearchFilters
from memories.retrieval.ranking import Hit
from memory_platform.database import prepared_cursor

# For each seed, one step back and one forward along memories_namespace_order (org, scope,
# created_at, id; live rows), each an index scan that stops at its first row. The organisation
# is a literal in every part: on a Citus cluster that is what keeps it on one shard.
NEIGHBOURS_SQL = """
    SELECT seed.id, near.id, near.side
    FROM unnest(%s::uuid[]) WITH ORDINALITY AS wanted(id, position)
    JOIN memories seed ON seed.org_id = %s AND seed.id = wanted.id
    CROSS JOIN LATERAL (
        (SELECT m.id, 'previous' AS side FROM memories m
         WHERE m.org_id = %s AND m.scope = seed.scope AND {live}
           AND (m.created_at, m.id) < (seed.created_at, seed.id)
         ORDER BY m.created_at DESC, m.id DESC LIMIT 1)
        UNION ALL
        (SELECT m.id, 'next' FROM memories m
         WHERE m.org_id = %s AND m.scope = seed.scope AND {live}
           AND (m.created_at, m.id) > (seed.created_at, seed.id)
         ORDER BY m.created_at, m.id LIMIT 1)
    ) near
    JOIN memories m ON m.org_id = %s AND m.id = near.id
    WHERE {where}
    ORDER BY wanted.position, near.side DESC
"""


def search(org_id, seeds: list, filters: SearchFilters) -> list[Hit]:
    """Each seed's previous and next memory in its namespace that the filters let through,
    ranked one below its seed (the previous first); a memory next to several seeds takes the
    best of their ranks. Seeds are not each other's neighbours: two adjacent results would
    each lift the other, and undo the order the other signals gave them."""
    if not seeds:
        return []
    where, params = filters.where(org_id)
    with prepared_cursor() as cursor:  # planned once a connection: its plan is the same for any seeds
        cursor.execute(NEIGHBOURS_SQL.format(live=live_sql("m"), where=where),
                       [[str(seed) for seed in seeds], org_id, org_id, org_id, org_id, *params])
        return below_seeds(seeds, cursor.fetchall())


def below_seeds(seeds: list, rows) -> list[Hit]:
    """(seed, memory, side) rows in the seeds' order as hits, each ranked just below the seed
    that brought it (a neighbour found by this signal alone never ties with a seed that one
    other signal found), once, by its best seed; the seeds themselves left out."""
    hits, seen = [], set(seeds)
    for seed, memory_id, side in rows:
        if memory_id not in seen:
            seen.add(memory_id)
            hits.append(Hit(memory_id, 0.0, seeds.index(seed) + 2, details={"from": str(seed), "side": side}))
    return hits
