"""Expansion: the memories one relationship away from a search's best results, as a signal.

Seeded by the other signals' fusion (its best `limit` memories), it ranks each neighbour by
the rank of the memory it was reached from; fusion then weighs it as RRF_WEIGHTS["graph"].
Relationships of type contradicts and supersedes are not followed.
"""

from __future__ import annotations

from django.db import connection

from memories.retrieval.filters import SearchFilters
from memories.retrieval.ranking import Hit


def neighbours(org_id, memory_ids: list, filters: SearchFilters, types: tuple[str, ...] = ()) -> dict:
    """One hop along relationships (of these types, if any are given) from the given memories,
    to those the filters let through: {neighbour id: (from id, relation type)}. The given
    memories are not their own neighbours."""
    if not memory_ids:
        return {}
    where, params = filters.where(org_id)
    if types:
        where, params = f"{where} AND r.relation_type = ANY(%s)", [*params, list(types)]
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT DISTINCT ON (m.id) m.id, r.from_id, r.relation_type
            FROM (
                SELECT target_id AS neighbour, source_id AS from_id, relation_type FROM memory_relationships
                WHERE org_id = %s AND source_id = ANY(%s::uuid[])
                UNION ALL
                SELECT source_id, target_id, relation_type FROM memory_relationships
                WHERE org_id = %s AND target_id = ANY(%s::uuid[])
            ) r JOIN memories m ON m.org_id = %s AND m.id = r.neighbour
            WHERE {where} AND r.relation_type NOT IN ('contradicts', 'supersedes')
            ORDER BY m.id
            """,
            [org_id, [str(i) for i in memory_ids], org_id, [str(i) for i in memory_ids], org_id, *params],
        )
        return {row[0]: (row[1], row[2]) for row in cursor.fetchall() if row[0] not in set(memory_ids)}


def search(org_id, seeds: list, filters: SearchFilters, types: tuple[str, ...] = ()) -> list[Hit]:
    """The seeds' neighbours (seeds best first; along relationships of these types, if any),
    ranked by the rank of the seed each was reached from, then by id; each says which seed and
    which relationship."""
    found = neighbours(org_id, seeds, filters, types)
    ordered = sorted(found, key=lambda neighbour: (seeds.index(found[neighbour][0]), str(neighbour)))
    return [Hit(memory_id, 0.0, rank, details={"from": str(found[memory_id][0]), "relation_type": found[memory_id][1]})
            for rank, memory_id in enumerate(ordered, start=1)]
