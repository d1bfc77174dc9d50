"""The hot set rebuilt from PostgreSQL by a threshold walk of three indexes (docs/adr/0051)
is what scoring every memory of the agent gives (memories.retrieval.hot.HOT_SCORE_SQL), after
writes, edits, retrievals, archiving and deletion, and holds only the agent's own memories."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.models import Memory
from memories.retrieval import events, hot
from memories.writes import create
from tenants.context import tenant_context

pytestmark = pytest.mark.django_db
SIZE = 5


def full(org_id, agent_id) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(hot.HOT_SCORE_SQL, [org_id, agent_id, SIZE])
        return [memory_id for memory_id, _ in cursor.fetchall()]


def walked(org_id, agent_id) -> list[str]:
    return [memory_id for memory_id, _ in hot.hot_scored(org_id=org_id, agent_id=agent_id, size=SIZE)]


def write(owner, n, prefix):
    with tenant_context(owner.org.id):
        return [result.memory for result in create.memory_create_batch(
            org_id=owner.org.id, agent_id=owner.agent.id,
            items=[{"content": f"{prefix} {i}", "category": "factual"} for i in range(n)])]


def test_the_walked_hot_set_is_the_fully_scored_one_after_every_kind_of_change(tenant_a, tenant_b):
    org, agent = tenant_a.org.id, tenant_a.agent.id
    rows = write(tenant_a, 60, "hot candidate")
    theirs = write(tenant_b, 10, "beta's")
    with tenant_context(org), connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        now = cursor.fetchone()[0]
        # Spread over ninety days, confidence 0.5-1.0, so each part of the score orders them
        # differently; the first few recent and confident, clearly the best.
        for i, row in enumerate(rows):
            Memory.objects.filter(pk=row.pk).update(created_at=now - timedelta(hours=1 + 36 * i),
                                                    confidence=0.5 + (i * 7 % 11) / 20)
        for row in rows[:3]:
            Memory.objects.filter(pk=row.pk).update(confidence=1)
        events.reinforce(org_id=org, counts={str(row.pk): 12 for row in rows[:3]},
                         last={str(row.pk): now.isoformat() for row in rows[:3]})

        with CaptureQueriesContext(connection) as queries:
            found = walked(org, agent)
        assert found == full(org, agent)
        assert len(queries) == 3  # the three walks, once: not every memory scored

        steps = [
            # old memories much retrieved: the retrievals' walk finds them
            lambda: events.reinforce(org_id=org, counts={str(rows[50].pk): 40, str(rows[55].pk): 9},
                                     last={str(rows[50].pk): now.isoformat(), str(rows[55].pk): now.isoformat()}),
            # an old memory made certain, a recent one doubted (edits)
            lambda: Memory.objects.filter(pk=rows[40].pk).update(confidence=1),
            lambda: Memory.objects.filter(pk=rows[0].pk).update(confidence=0.1),
            # the best archived, another deleted: no longer live
            lambda: Memory.objects.filter(pk=rows[1].pk).update(status="archived"),
            lambda: Memory.objects.filter(pk=rows[2].pk).update(deleted_at=now),
            # one expired
            lambda: Memory.objects.filter(pk=rows[50].pk).update(expires_at=now - timedelta(minutes=1)),
            # new writes
            lambda: write(tenant_a, 8, "fresh"),
            # every memory alike: ties everywhere, so the walk reads deep or scores them all
            lambda: Memory.objects.filter(org_id=org).update(confidence=0.8, created_at=now - timedelta(days=3)),
        ]
        for step in steps:
            step()
            assert walked(org, agent) == full(org, agent)
        assert not {str(row.pk) for row in theirs} & set(walked(org, agent))
    with tenant_context(tenant_b.org.id):
        assert set(walked(tenant_b.org.id, tenant_b.agent.id)) <= {str(row.pk) for row in theirs}
