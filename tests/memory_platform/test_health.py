import os
import subprocess
import sys
import time

import pytest
from django.conf import settings
from django.db import connections

from tests.markers import committing
from tests.ports import free_port


def worker_env() -> dict:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "memory_platform.settings.test",
        "DATABASE_URL": settings.DATABASE_URL,
        "DATABASE_OWNER_URL": settings.DATABASE_OWNER_URL,
        "REDIS_URL": settings.REDIS_URL,
    }


def wait_for(client, predicate, seconds=30):
    deadline = time.monotonic() + seconds
    while True:
        response = client.get("/health")
        if predicate(response.json()) or time.monotonic() > deadline:
            return response
        time.sleep(0.2)


@committing
def test_health_reports_database_pgvector_redis_and_worker(client):
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "rqworker", "default", "--name", f"health-test-{os.getpid()}"],
        cwd=settings.BASE_DIR, env=worker_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        response = wait_for(client, lambda body: body["worker"]["ok"])
        body = response.json()
        assert response.status_code == 200, body
        assert body["status"] == "ok"
        assert body["database"]["ok"] and body["database"]["role"] == settings.DATABASES["default"]["USER"]
        assert tuple(int(p) for p in body["database"]["pgvector"].split(".")) >= (0, 8, 0)
        assert body["redis"]["ok"] and body["redis"]["server_version"]
        assert f"health-test-{os.getpid()}" in [w["name"] for w in body["worker"]["workers"]]
    finally:
        worker.terminate()
        worker.wait(timeout=20)
    # A worker that shut down unregisters itself: the product is then degraded, and says so,
    # and still answers 200 (it serves without a worker: a load balancer keeps it).
    response = wait_for(client, lambda body: f"health-test-{os.getpid()}" not in
                        [w["name"] for w in body["worker"].get("workers", [])])
    body = response.json()
    if not body["worker"]["ok"]:  # another worker may share this Redis; only then is it still ok
        assert response.status_code == 200
        assert body["status"] == "degraded" and "no RQ worker" in body["worker"]["error"]


@pytest.mark.django_db
def test_health_answers_json_and_only_to_get(client):
    response = client.post("/health")
    assert response.status_code == 405


@pytest.mark.django_db
def test_health_says_full_text_search_can_use_its_index(client):
    assert client.get("/health").json()["database"]["fulltext_index_usable"] is True


@pytest.mark.django_db
def test_health_names_each_function_an_index_needs_leakproof_that_is_not(client, monkeypatch):
    """The provisioning marks them all; one a database lacks is named, so that an operator knows
    what to run (numeric_add stands for it: never leakproof, and unmarking one needs a superuser)."""
    from memory_platform import health

    assert client.get("/health").json()["database"]["not_leakproof"] == []
    needed = (*health.LEAKPROOF_FUNCTIONS, "pg_catalog.numeric_add(numeric, numeric)")
    monkeypatch.setattr(health, "LEAKPROOF_FUNCTIONS", needed)
    assert client.get("/health").json()["database"]["not_leakproof"] == ["pg_catalog.numeric_add(numeric, numeric)"]


@pytest.mark.django_db
def test_without_redis_the_app_is_degraded_but_serving(client, monkeypatch):
    """A load balancer keeps a node that can serve: 200, and the body says what is missing."""
    import django_rq.settings

    unreachable = {**django_rq.settings.QUEUES["default"], "URL": f"redis://127.0.0.1:{free_port()}/0"}
    monkeypatch.setitem(django_rq.settings.QUEUES, "default", unreachable)
    response = client.get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "degraded" and not body["redis"]["ok"] and body["worker"]["error"] == "redis is down"
    assert body["database"]["ok"]


@committing
def test_without_the_database_the_app_is_down_and_says_so_in_json(client):
    """With PostgreSQL out of reach /health still answers, 503 and JSON (no transaction is
    opened for it first, which would fail before the view runs)."""
    default = connections["default"]
    default.close()
    reachable = default.settings_dict["HOST"], default.settings_dict["PORT"]
    default.settings_dict["HOST"], default.settings_dict["PORT"] = "127.0.0.1", free_port()
    try:
        response = client.get("/health")
    finally:
        default.close()
        default.settings_dict["HOST"], default.settings_dict["PORT"] = reachable
    assert response.status_code == 503 and response["Content-Type"] == "application/json"
    assert int(response["Retry-After"]) > 0  # as every door answers meanwhile
    body = response.json()
    assert body["status"] == "down" and not body["database"]["ok"] and body["redis"]["ok"]


@pytest.mark.django_db
def test_health_lists_no_nodes_on_a_single_postgresql(client):
    """The cluster's nodes are listed on Citus alone (tests/citus/test_operations.py)."""
    from memory_platform import database

    if database.citus_present():
        pytest.skip("a Citus cluster: its nodes are listed")
    assert "nodes" not in client.get("/health").json()["database"]
