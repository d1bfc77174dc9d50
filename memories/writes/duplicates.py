"""Near-duplicates: live memories of the same agent and namespace whose embeddings are at or
above NEAR_DUPLICATE_SIMILARITY to a written one. Found when a memory is written with its
embedding, or by the job that embeds it later (memories.jobs), and recorded as
DuplicateCandidate rows for an operator to resolve (memories.writes.conflicts)."""

from __future__ import annotations

import uuid

from django.db import connection

from memories.models import DuplicateCandidate, Memory, live_sql
from memory_platform.config import config

NEAR_DUPLICATES_SQL = f"""
    SELECT written.id, candidate.id, 1 - (candidate.embedding <=> written.embedding) AS similarity
    FROM memories written
    CROSS JOIN LATERAL (
        SELECT other.id, other.embedding FROM memories other
        WHERE other.org_id = %(org_id)s AND other.agent_id = written.agent_id AND other.scope = written.scope
          AND {live_sql("other")} AND other.id <> written.id
        ORDER BY other.embedding <=> written.embedding
        LIMIT %(limit)s
    ) candidate
    WHERE written.org_id = %(org_id)s AND written.id = ANY(%(ids)s::uuid[]) AND written.embedding IS NOT NULL
      AND 1 - (candidate.embedding <=> written.embedding) >= %(threshold)s
    ORDER BY written.id, similarity DESC
"""


def near_duplicates(org_id, memory_ids: list, *, limit: int = 5) -> dict[uuid.UUID, list[tuple[Memory, float]]]:
    """For each written memory, the live memories of the same agent and namespace at or above
    the near-duplicate similarity, closest first: one statement for the whole batch."""
    threshold = config().near_duplicate_similarity
    with connection.cursor() as cursor:
        cursor.execute(NEAR_DUPLICATES_SQL, {"limit": limit, "org_id": org_id, "ids": [str(i) for i in memory_ids],
                                             "threshold": threshold})
        rows = cursor.fetchall()
    candidates = Memory.objects.only("id", "content").in_bulk({candidate for _, candidate, _ in rows})
    found: dict[uuid.UUID, list[tuple[Memory, float]]] = {}
    for written, candidate, similarity in rows:
        found.setdefault(written, []).append((candidates[candidate], round(similarity, 6)))
    return found


def record_duplicates(org_id, found: dict[uuid.UUID, list[tuple[Memory, float]]]) -> None:
    """Keep the pairs near_duplicates found for review (a pair already recorded is kept once)."""
    rows = [DuplicateCandidate(org_id=org_id, memory_id=written, candidate=other, similarity=similarity)
            for written, pairs in found.items() for other, similarity in pairs]
    if rows:
        DuplicateCandidate.objects.bulk_create(rows, ignore_conflicts=True)
