"""Batch writes are embedded by a real RQ worker on a real Redis; with Redis down a write is
still acknowledged, and embedded once Redis is back."""

import os
import subprocess
import sys

import django_rq
import pytest
import redis
from django.conf import settings
from django.db import connections

from memories import jobs
from memories.models import Memory
from memory_platform import local_services
from tenants.context import tenant_context
from tests.markers import committing


def embedding_states(org, ids):
    with tenant_context(org.id):
        return {str(pk): dims for pk, dims in Memory.objects.filter(pk__in=ids).values_list("pk", "embedding_dimensions")}


def worker_env() -> dict:
    """The environment a worker process needs to reach this test database and Redis."""
    owner, default = connections["owner"].settings_dict, connections["default"].settings_dict
    endpoint = local_services.PostgresEndpoint(default["HOST"], default["PORT"] or 5432)

    def url(s):
        auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
        return endpoint.url(user=auth, database=s["NAME"]) if s["HOST"].startswith("/") else (
            f"postgres://{auth}@{s['HOST']}:{s['PORT'] or 5432}/{s['NAME']}")

    return {**os.environ, "DJANGO_SETTINGS_MODULE": "memory_platform.settings.test",
            "DATABASE_URL": url(default), "DATABASE_OWNER_URL": url(owner), "REDIS_URL": settings.REDIS_URL}


@pytest.fixture
def empty_queue():
    queue = django_rq.get_queue(jobs.QUEUE)
    queue.empty()
    yield queue
    queue.empty()


@committing
def test_a_batch_is_embedded_by_a_worker_after_commit(tenant_a, api_a, empty_queue):
    response = api_a.post("/api/v1/memories", {"memories": [{"content": f"Worker fact {i}"} for i in range(5)]})
    ids = [r["id"] for r in response.json()["results"]]
    assert set(embedding_states(tenant_a.org, ids).values()) == {None}
    assert empty_queue.count == 1  # enqueued once the request's transaction committed

    worker = subprocess.run(
        [sys.executable, "manage.py", "rqworker", jobs.QUEUE, "--burst"],
        cwd=settings.BASE_DIR, env=worker_env(), capture_output=True, text=True, timeout=300,
    )
    assert worker.returncode == 0, worker.stderr[-2000:]
    assert set(embedding_states(tenant_a.org, ids).values()) == {384}
    detail = api_a.get(f"/api/v1/memories/{ids[0]}").json()
    assert detail["embedding_status"] == "ready" and detail["embedding_model"] == "all-MiniLM-L6-v2"


@committing
def test_running_the_job_twice_leaves_the_same_state(tenant_a, api_a, empty_queue):
    response = api_a.post("/api/v1/memories", {"memories": [{"content": "Idempotent job fact"}]})
    memory_id = response.json()["results"][0]["id"]
    assert jobs.embed_memories(org_id=str(tenant_a.org.id), memory_ids=[memory_id]) == 1
    with tenant_context(tenant_a.org.id):
        first = Memory.objects.get(pk=memory_id)
    assert jobs.embed_memories(org_id=str(tenant_a.org.id), memory_ids=[memory_id]) == 0
    with tenant_context(tenant_a.org.id):
        again = Memory.objects.get(pk=memory_id)
    assert again.embedded_at == first.embedded_at and list(again.embedding) == list(first.embedding)


@pytest.fixture
def redis_outage(empty_queue):
    """Make Redis unreachable for real: stop the embedded server (it comes back on the same
    socket), or, with an external REDIS_URL, point the queues at a port nothing listens on.
    Yields the function that ends the outage."""
    from django_rq import settings as rq_settings

    saved = {name: dict(config) for name, config in rq_settings.QUEUES.items()}
    if settings.EMBEDDED_REDIS:
        local_services.stop_redis()
    else:
        for config in rq_settings.QUEUES.values():
            config["URL"] = "redis://127.0.0.1:9/0?socket_connect_timeout=1"

    def end_outage():
        if settings.EMBEDDED_REDIS:
            local_services.ensure_redis()
        for name, config in saved.items():
            rq_settings.QUEUES[name].update(config)

    yield end_outage
    end_outage()


@committing
def test_with_redis_down_writes_succeed_and_are_embedded_when_it_returns(tenant_a, api_a, redis_outage):
    with pytest.raises(redis.ConnectionError):
        django_rq.get_queue(jobs.QUEUE).connection.ping()
    single = api_a.post("/api/v1/memories", {"content": "Written while Redis was down"})
    batch = api_a.post("/api/v1/memories", {"memories": [{"content": "Batch while Redis was down"}]})
    assert single.status_code == 201 and batch.status_code == 201
    assert single.json()["embedding_status"] == "ready"  # single writes embed inline, no Redis needed
    pending = batch.json()["results"][0]["id"]
    assert embedding_states(tenant_a.org, [pending]) == {pending: None}

    redis_outage()  # Redis is back; the periodic sweep (or `manage.py embed_pending`) completes the write
    assert django_rq.get_queue(jobs.QUEUE).connection.ping()
    assert jobs.embed_pending() >= 1
    assert embedding_states(tenant_a.org, [pending]) == {pending: 384}


@pytest.mark.django_db
def test_idempotency_records_are_forgotten_after_a_day(tenant_a):
    from datetime import timedelta

    from django.utils import timezone

    from memories.models import IdempotencyRecord

    with tenant_context(tenant_a.org.id):
        IdempotencyRecord.objects.filter(pk=tenant_a.idempotency_record.pk).update(
            created_at=timezone.now() - timedelta(hours=25))
        fresh = IdempotencyRecord.objects.create(org=tenant_a.org, agent=tenant_a.agent, key="fresh",
                                                 request_fingerprint="0" * 64)
    assert jobs.purge_idempotency_records() == 1
    with tenant_context(tenant_a.org.id):
        assert list(IdempotencyRecord.objects.values_list("pk", flat=True)) == [fresh.pk]


def test_the_cron_configuration_registers_the_periodic_jobs():
    from rq import cron

    cron._job_data_registry.clear()
    import importlib

    import memories.cron

    importlib.reload(memories.cron)
    registered = {f"{job['func'].__module__.rsplit('.', 1)[-1]}.{job['func'].__name__}": job["interval"] or job["cron"]
                  for job in cron._job_data_registry}
    cron._job_data_registry.clear()
    assert registered == {"jobs.embed_pending": 60, "jobs.purge_idempotency_records": 3600,
                          "events.flush_retrievals": 30, "index.sync_tenant_indexes": 3600, "lexicon.fold": 30,
                          "tallies.fold": 30, "tallies.repair_relationships": 3600, "decay.count_bands": 600,
                          "expiry.expire": 60,
                          "decay.decay": "0 3 * * *", "consolidation.consolidate_pending": 600}


class BrokenModel:
    """Fault injection: the embedding model itself fails (out of memory, corrupt weights...).
    Only the model is replaced; the database, Redis and the worker stay real."""

    model_name, dimensions = "all-MiniLM-L6-v2", 384

    def embed(self, texts):
        from memories.vectors.embeddings import EmbeddingError

        raise EmbeddingError("model unavailable")


@committing
def test_when_the_model_fails_a_write_is_stored_pending_and_completed_later(tenant_a, api_a, empty_queue):
    from memories.vectors.embeddings import use_embedder

    with use_embedder(BrokenModel()):
        response = api_a.post("/api/v1/memories", {"content": "Written while the model was down"})
    assert response.status_code == 201 and response.json()["embedding_status"] == "pending"
    memory_id = response.json()["memory"]["id"]
    assert empty_queue.count == 1  # the retry is queued at once
    assert jobs.embed_pending() == 1  # and the sweep would complete it too
    assert embedding_states(tenant_a.org, [memory_id]) == {memory_id: 384}


@pytest.mark.django_db
def test_a_worker_that_missed_the_schedulers_locks_asks_again_within_a_minute():
    """A worker restarted after a crash asks for RQ's scheduler locks once as it starts. If its
    predecessor's scheduler has not let them go yet, it asks again at its next maintenance:
    within MAINTENANCE_SECONDS, not RQ's ten minutes without scheduled jobs."""
    from datetime import timedelta

    from rq.scheduler import RQScheduler
    from rq.utils import now

    from memories.worker import MAINTENANCE_SECONDS, EmbeddingWorker

    queue = django_rq.get_queue(jobs.QUEUE)
    lock = RQScheduler([queue], connection=queue.connection).get_locking_key(queue.name)
    queue.connection.set(lock, "the crashed worker's scheduler", ex=60)
    try:
        starting = RQScheduler([queue], connection=queue.connection)
        assert starting.acquire_locks() == set()  # what the new worker's first attempt gets
    finally:
        queue.connection.delete(lock)
    worker = EmbeddingWorker([queue], connection=queue.connection)
    worker.last_cleaned_at = now() - timedelta(seconds=MAINTENANCE_SECONDS + 1)
    assert MAINTENANCE_SECONDS <= 60 and worker.should_run_maintenance_tasks
    worker.last_cleaned_at = now()
    assert not worker.should_run_maintenance_tasks
