"""Spec §1's hot cache: a Redis sorted set of each agent's top memories."""

import time

import django_rq
import pytest
from django.conf import settings
from django.db import connection

from memories.caching import cache
from memories.models import Memory, MemoryUsage
from memories.retrieval import hot as hot_sets
from tenants.context import tenant_context

pytestmark = pytest.mark.django_db


@pytest.fixture
def hot(tenant_a):
    key = cache.HOT_KEY.format(org_id=tenant_a.org.id, agent_id=tenant_a.agent.id)
    keys = [key, key + ":built", key + ":rebuilding"]
    cache.client().delete(*keys)
    django_rq.get_queue(hot_sets.REBUILD_QUEUE).empty()
    yield key
    cache.client().delete(*keys)
    django_rq.get_queue(hot_sets.REBUILD_QUEUE).empty()


def hot_ids(api, limit: int = 2) -> list[str]:
    response = api.get("/api/v1/hot", {"limit": limit})
    assert response.status_code == 200, response.content
    return [memory["id"] for memory in response.json()["results"]]


def rebuilds_asked() -> list:
    return [job for job in django_rq.get_queue(hot_sets.REBUILD_QUEUE).jobs
            if job.func_name == "memories.retrieval.hot.rebuild_hot_set"]


def test_a_set_scored_five_minutes_ago_answers_as_it_is_while_the_worker_scores_it_again(tenant_a, api_a, hot):
    first, second = str(tenant_a.memory.id), str(tenant_a.other_memory.id)
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(pk=tenant_a.memory.pk).update(confidence=1)
        Memory.objects.filter(pk=tenant_a.other_memory.pk).update(confidence=0.1)
    assert hot_ids(api_a) == [first, second] and rebuilds_asked() == []  # scored now, before the answer
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(pk=tenant_a.memory.pk).update(confidence=0.1)
        Memory.objects.filter(pk=tenant_a.other_memory.pk).update(confidence=1)
    assert hot_ids(api_a) == [first, second] and rebuilds_asked() == []  # fresh: the set answers
    cache.client().set(hot + ":built", time.time() - settings.MEMORY_PLATFORM["HOT_CACHE_TTL_SECONDS"] - 1)
    assert hot_ids(api_a) == [first, second]  # due: the set still answers at once...
    assert hot_ids(api_a) == [first, second]
    asked = rebuilds_asked()
    assert len(asked) == 1 and asked[0].kwargs == {"org_id": str(tenant_a.org.id),
                                                   "agent_id": str(tenant_a.agent.id)}  # ...asked once
    assert asked[0].perform() == 2  # the worker's run
    assert hot_ids(api_a) == [second, first] and rebuilds_asked() == asked


def test_a_set_that_writes_began_is_scored_before_it_answers(
        tenant_a, api_a, hot, django_capture_on_commit_callbacks):
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(pk=tenant_a.memory.pk).update(confidence=1)
        MemoryUsage.objects.create(org=tenant_a.org, memory=tenant_a.memory, retrieval_count=10)
    with django_capture_on_commit_callbacks(execute=True):
        written = api_a.post("/api/v1/memories", {"content": "A fact written to an empty set"}).json()["memory"]
    assert cache.client().zcard(hot) == 1  # what the write added, not the agent's best
    # The agent's best, which no write of this set added, comes first; the rest tie (written
    # within the hot score's shortest age), in either order.
    ids = hot_ids(api_a, limit=3)
    assert ids[0] == str(tenant_a.memory.id) and set(ids[1:]) == {written["id"], str(tenant_a.other_memory.id)}


def test_a_set_gone_from_redis_answers_from_its_last_scoring_kept_in_postgresql(
        tenant_a, api_a, hot, django_capture_on_commit_callbacks):
    """Redis emptied (or the agent idle a day): the set comes back from the scoring kept in
    PostgreSQL, with what writes added since, without scoring the agent's memories again
    before the answer (docs/adr/0058); scored again behind the answer once that scoring is due."""
    first, second = str(tenant_a.memory.id), str(tenant_a.other_memory.id)
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(pk=tenant_a.memory.pk).update(confidence=1)
        Memory.objects.filter(pk=tenant_a.other_memory.pk).update(confidence=0.1)
    assert hot_ids(api_a) == [first, second]  # never scored: scored before the answer, and kept
    with tenant_context(tenant_a.org.id):  # what a new scoring would turn around
        Memory.objects.filter(pk=tenant_a.memory.pk).update(confidence=0.1)
        Memory.objects.filter(pk=tenant_a.other_memory.pk).update(confidence=1)
    cache.client().delete(hot, hot + ":built")
    assert hot_ids(api_a) == [first, second] and rebuilds_asked() == []  # the kept scoring, still fresh
    assert cache.client().zcard(hot) == 2 and cache.client().exists(hot + ":built")  # back in Redis
    cache.client().delete(hot, hot + ":built")
    with django_capture_on_commit_callbacks(execute=True):
        written = api_a.post("/api/v1/memories", {"content": "A fact written while the set was gone"}
                             ).json()["memory"]["id"]
    assert set(hot_ids(api_a, limit=3)) == {first, second, written}  # the kept scoring and the write
    with tenant_context(tenant_a.org.id), connection.cursor() as cursor:
        cursor.execute("UPDATE memory_hot_sets SET scored_at = now() - interval '10 minutes'")
    cache.client().delete(hot, hot + ":built")
    assert hot_ids(api_a) == [first, second]  # due: the kept scoring answers at once...
    asked = rebuilds_asked()
    assert len(asked) == 1 and asked[0].perform() == 3  # ...and the worker scores the agent again
    rescored = hot_ids(api_a, limit=3)
    assert rescored[0] == second and rescored[-1] == first  # the confidences as they are now
    with django_capture_on_commit_callbacks(execute=True):
        assert api_a.delete(f"/api/v1/memories/{second}").status_code == 200
    cache.client().delete(hot, hot + ":built")
    assert second not in hot_ids(api_a, limit=3)  # kept before its deletion, never answered after


def test_writes_enter_the_set_which_is_trimmed_to_fifty_and_kept_a_day(
        tenant_a, api_a, hot, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        ids = [api_a.post("/api/v1/memories", {"content": f"Hot fact number {i}"}).json()["memory"]["id"]
               for i in range(55)]
    redis = cache.client()
    assert redis.zcard(hot) == settings.MEMORY_PLATFORM["HOT_CACHE_SIZE"] == 50
    assert 300 < redis.ttl(hot) <= cache.HOT_SET_KEPT_SECONDS
    members = {m.decode() for m in redis.zrange(hot, 0, -1)}
    assert members <= set(ids)


def test_delete_and_supersede_take_a_memory_out(tenant_a, api_a, hot, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        kept = api_a.post("/api/v1/memories", {"content": "Kept fact"}).json()["memory"]["id"]
        deleted = api_a.post("/api/v1/memories", {"content": "Deleted fact"}).json()["memory"]["id"]
        replaced = api_a.post("/api/v1/memories", {"content": "Replaced fact"}).json()["memory"]["id"]
    with django_capture_on_commit_callbacks(execute=True):
        api_a.delete(f"/api/v1/memories/{deleted}")
        new = api_a.post(f"/api/v1/memories/{replaced}/supersede", {"content": "Replacement fact"}
                         ).json()["memory"]["id"]
    members = {m.decode() for m in cache.client().zrange(hot, 0, -1)}
    assert kept in members and new in members and not {deleted, replaced} & members


def test_scores_follow_seed_001s_formula(tenant_a):
    from django.utils import timezone

    now = timezone.now()
    fresh = cache.hot_score(confidence=1.0, created_at=now, retrieval_count=10, now=now)
    assert fresh == pytest.approx(0.40 + 0.35 / (1 + 0.01 / 24) + 0.25)
    day_old = cache.hot_score(confidence=0.5, created_at=now - timezone.timedelta(hours=24), retrieval_count=0, now=now)
    assert day_old == pytest.approx(0.20 + 0.35 * 0.5)


def test_get_hot_returns_the_top_memories_and_rebuilds_an_expired_set(tenant_a, api_a, hot):
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(pk=tenant_a.memory.pk).update(confidence=1)
        MemoryUsage.objects.create(org=tenant_a.org, memory=tenant_a.memory, retrieval_count=10)
    body = api_a.get("/api/v1/hot", {"limit": 2}).json()
    assert [m["id"] for m in body["results"]] == [str(tenant_a.memory.id), str(tenant_a.other_memory.id)]
    assert cache.client().zcard(hot) == 2 and cache.client().ttl(hot) > 0  # rebuilt from PostgreSQL
    assert api_a.get("/api/v1/hot", {"limit": 0}).status_code == 400
    assert api_a.get("/api/v1/hot", {"limit": 51}).status_code == 400


def test_query_embeddings_are_cached_in_redis(api_a):
    text = "a query nobody has asked before 9f2c"
    key = cache.query_key(text)
    cache.client().delete(key)
    cache._embed_query_cached.cache_clear()
    first = cache.query_embedding(text)
    assert cache.client().ttl(key) > 0 and len(first) == 384
    cache._embed_query_cached.cache_clear()
    again = cache.query_embedding(text)  # from Redis this time
    assert again == pytest.approx(first, abs=1e-6)


def test_the_hot_score_is_the_same_in_python_and_in_sql(tenant_a, api_a):
    """One formula (cache.HOT_WEIGHTS and its constants), two spellings: hot_score as a write
    scores a memory, hot_score_sql as the set is rebuilt from PostgreSQL."""
    from datetime import timedelta

    from django.db import connection

    from memories.retrieval import hot

    ids = [api_a.post("/api/v1/memories", {"content": f"Scored fact {i}"}).json()["memory"]["id"] for i in range(4)]
    with tenant_context(tenant_a.org.id):
        with connection.cursor() as cursor:
            cursor.execute("SELECT now()")
            now = cursor.fetchone()[0]
        for memory_id, (confidence, age, retrievals) in zip(ids, [(0.9, timedelta(0), 0), (0.5, timedelta(hours=5), 3),
                                                                  (0.2, timedelta(days=2), 10),
                                                                  (0.7, timedelta(days=40), 25)]):
            Memory.objects.filter(pk=memory_id).update(confidence=confidence, created_at=now - age)
            MemoryUsage.objects.update_or_create(org=tenant_a.org, memory_id=memory_id,
                                                 defaults={"retrieval_count": retrievals})
        in_sql = dict(hot._scored(tenant_a.org.id, tenant_a.agent.id, None)[0])
        memories = Memory.objects.filter(org=tenant_a.org, agent=tenant_a.agent)
        in_python = {str(m.pk): cache.hot_score(confidence=m.confidence, created_at=m.created_at,
                                                retrieval_count=m.retrieval_count, now=now) for m in memories}
    assert set(ids) <= set(in_sql)
    # On a Citus cluster the worker's now() is its own transaction's, a few milliseconds after
    # the coordinator's: scores of memories hours old move by ~1e-9 in that time.
    assert in_sql == pytest.approx(in_python, abs=1e-7)


def test_an_agent_scored_with_nothing_live_is_scored_again_once_its_set_is_gone(tenant_a, api_a, hot):
    """A kept scoring of no memory (the agent had none live then) is no answer: the set is scored
    before the answer, so memories written since without reaching Redis (an import, Redis down)
    are found."""
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(agent=tenant_a.agent).update(status=Memory.Status.ARCHIVED)
    assert hot_ids(api_a) == []  # scored: nothing live, and that kept
    with tenant_context(tenant_a.org.id), connection.cursor() as cursor:
        cursor.execute("SELECT cardinality(ids) FROM memory_hot_sets WHERE agent_id = %s", [tenant_a.agent.id])
        assert cursor.fetchone() == (0,)
        Memory.objects.filter(pk=tenant_a.memory.pk).update(status=Memory.Status.ACTIVE)  # not through Redis
    cache.client().delete(hot, hot + ":built")
    assert hot_ids(api_a) == [str(tenant_a.memory.id)]


def test_an_agent_never_scored_is_answered_from_its_newest_memories_while_the_worker_scores_all(
        tenant_a, api_a, hot, monkeypatch):
    """An agent's first hot read (a bulk load, an import): its newest FIRST_WINDOW memories are
    scored before the answer, however many it holds, the set is filled as due and the worker asked
    once to score them all; only that full scoring is kept, and answered once done (docs/adr/0059)."""
    from datetime import timedelta

    monkeypatch.setattr(hot_sets, "FIRST_WINDOW", 2)
    oldest_best = str(tenant_a.memory.id)
    with tenant_context(tenant_a.org.id):
        now = Memory.objects.filter(pk=tenant_a.memory.pk).values_list("created_at", flat=True).get()
        Memory.objects.filter(pk=tenant_a.memory.pk).update(confidence=1, created_at=now - timedelta(days=3))
        MemoryUsage.objects.create(org=tenant_a.org, memory=tenant_a.memory, retrieval_count=10)
        newer = [str(m.pk) for m in Memory.objects.bulk_create(
            Memory(org=tenant_a.org, agent=tenant_a.agent, content=f"newer fact {n}", content_hash=f"{n:064x}",
                   memory_type="semantic", category="factual", confidence=0.1) for n in range(3))]
    first = hot_ids(api_a, limit=5)
    assert len(first) == 2 and set(first) <= set(newer) and oldest_best not in first  # the newest two, scored
    assert set(hot_ids(api_a, limit=5)) == set(first)  # the set as filled, due: not scored again before an answer
    asked = rebuilds_asked()
    assert len(asked) == 1  # asked once, by the first read
    with tenant_context(tenant_a.org.id), connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memory_hot_sets WHERE agent_id = %s", [tenant_a.agent.id])
        assert cursor.fetchone() == (0,)  # a window is not the agent's scoring: nothing kept
    assert asked[0].perform() == 5  # the worker scores all of them (other_memory too)
    assert hot_ids(api_a, limit=5)[0] == oldest_best
    with tenant_context(tenant_a.org.id), connection.cursor() as cursor:
        cursor.execute("SELECT cardinality(ids) FROM memory_hot_sets WHERE agent_id = %s", [tenant_a.agent.id])
        assert cursor.fetchone() == (5,)
