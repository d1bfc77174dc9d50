"""EXPLAIN (ANALYZE) of the vector search query, through the runtime role with row-level
security on, shows the approximate index in use: HNSW (the default) and IVFFlat."""

import json
import numpy as np
import pytest
from django.db import connection, connections, transaction

from memories import vector_index
from memories.models import EMBEDDING_DIMENSIONS, Memory
from tenants.context import tenant_context
from tests import factories
from tests.markers import committing

ROWS_PER_TENANT = 3000


def bulk_memories(org, agent, count, seed):
    vectors = np.random.default_rng(seed).normal(size=(count, EMBEDDING_DIMENSIONS))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = []
    for i, vector in enumerate(vectors):
        content = f"memory {seed}-{i}"
        rows.append(Memory(
            org=org, agent=agent, content=content, content_hash=f"{seed:032x}{i:032x}"[-64:],
            category="factual", embedding=vector, embedding_model="all-MiniLM-L6-v2",
            embedding_dimensions=EMBEDDING_DIMENSIONS,
        ))
    with tenant_context(org.id):
        Memory.objects.bulk_create(rows, batch_size=1000)


def plan_nodes(node):
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


def explain_search(org_id, query_vector, knob_sql):
    with tenant_context(org_id), connection.cursor() as cursor:
        cursor.execute(knob_sql)
        cursor.execute(
            """
            EXPLAIN (ANALYZE, FORMAT JSON)
            SELECT id, 1 - (embedding <=> %s::vector) AS similarity
            FROM memories
            WHERE org_id = %s AND status = 'active' AND deleted_at IS NULL
            ORDER BY embedding <=> %s::vector
            LIMIT 10
            """,
            [str(query_vector), org_id, str(query_vector)],
        )
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return list(plan_nodes(plan[0]["Plan"])), plan[0]["Plan"]["Actual Rows"]


def analyze():
    with connections["owner"].cursor() as cursor:
        cursor.execute("ANALYZE memories")


@pytest.fixture
def populated(org_a, org_b):
    agent_a = factories.services.agent_create(org=org_a, name="big")
    agent_b = factories.services.agent_create(org=org_b, name="big")
    with connections["owner"].cursor() as cursor:
        cursor.execute(vector_index.DROP_SQL)  # loading is faster without it; the test builds one
    bulk_memories(org_a, agent_a, ROWS_PER_TENANT, seed=1)
    bulk_memories(org_b, agent_b, ROWS_PER_TENANT, seed=2)
    yield org_a
    with transaction.atomic(using="owner"):
        vector_index.rebuild("hnsw")


@committing
@pytest.mark.parametrize(
    ("kind", "knob_sql"),
    [("hnsw", "SET LOCAL hnsw.ef_search = 40"), ("ivfflat", "SET LOCAL ivfflat.probes = 10")],
)
def test_vector_search_uses_the_index(populated, kind, knob_sql, settings):
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "IVFFLAT_LISTS": 50}
    with transaction.atomic(using="owner"):
        vector_index.rebuild(kind)  # after the rows exist: IVFFlat trains its lists on them
    assert vector_index.current_kind() == kind
    analyze()

    nodes, returned = explain_search(populated.id, factories.unit_vector(7), knob_sql)
    scans = [n for n in nodes if n.get("Index Name") == vector_index.INDEX_NAME]
    assert scans and scans[0]["Node Type"] == "Index Scan", [n["Node Type"] for n in nodes]
    assert returned == 10
