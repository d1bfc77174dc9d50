"""Two clients at once, each on its own database connection, with real commits."""

import threading

from django.db import connection

from memories.models import Memory, MemoryVersion
from tenants.context import tenant_context
from tests.markers import committing


def at_once(*calls):
    barrier = threading.Barrier(len(calls))
    results = [None] * len(calls)

    def run(index, call):
        try:
            barrier.wait()
            results[index] = call()
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@committing
def test_two_updates_with_the_same_if_match_exactly_one_wins(tenant_a, api_client_for):
    clients = [api_client_for(tenant_a.agent) for _ in range(2)]
    url = f"/api/v1/memories/{tenant_a.memory.id}"
    responses = at_once(*(
        (lambda client=client, n=n: client.patch(url, {"content": f"Concurrent edit {n}"}, HTTP_IF_MATCH='"1"'))
        for n, client in enumerate(clients)
    ))
    assert sorted(r.status_code for r in responses) == [200, 412]
    winner = next(r for r in responses if r.status_code == 200).json()
    with tenant_context(tenant_a.org.id):
        memory = Memory.objects.get(pk=tenant_a.memory.id)
        versions = list(MemoryVersion.objects.filter(memory_id=memory.pk).values_list("version_num", flat=True))
    assert memory.version == 2 and memory.content == winner["content"]
    assert sorted(versions) == [1, 2]


@committing
def test_concurrent_retries_with_one_idempotency_key_create_one_memory(tenant_a, api_client_for):
    from rest_framework.test import APIClient

    key = api_client_for(tenant_a.agent).key  # one key, three connections: a client retrying at once
    clients = [APIClient() for _ in range(3)]
    for client in clients:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    body = {"content": "Sent three times at once"}
    responses = at_once(*(
        (lambda client=client: client.post("/api/v1/memories", body, HTTP_IDEMPOTENCY_KEY="burst"))
        for client in clients
    ))
    assert {r.status_code for r in responses} == {201}
    assert len({r.json()["memory"]["id"] for r in responses}) == 1
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.filter(content=body["content"]).count() == 1


@committing
def test_concurrent_equal_writes_without_a_key_still_make_one_memory(tenant_a, api_client_for):
    clients = [api_client_for(tenant_a.agent) for _ in range(3)]
    responses = at_once(*(
        (lambda client=client: client.post("/api/v1/memories", {"content": "Raced fact"})) for client in clients
    ))
    assert sorted(r.status_code for r in responses) == [200, 200, 201]
    assert len({r.json()["memory"]["id"] for r in responses}) == 1
