"""Episodes in order (memories.writes.timeline): each episodic memory an agent writes is linked
to the episode it wrote just before, in the same session, or in the same namespace when it
has no session: a `temporal` edge, predicate "next"."""

import threading

import pytest
from django.db import connection

from memories.models import MemoryRelationship
from tenants.context import tenant_context
from tenants.models import Session
from tests.markers import committing

pytestmark = pytest.mark.django_db


def write(api, content, **fields) -> str:
    response = api.post("/api/v1/memories", {"content": content, "memory_type": "episodic", **fields})
    assert response.status_code == 201, response.content
    return response.json()["memory"]["id"]


def timeline(api, memory_id) -> dict:
    """The memory's temporal neighbours as the API lists them: {"prev": id, "next": id}."""
    response = api.get(f"/api/v1/memories/{memory_id}/relationships")
    assert response.status_code == 200
    links = {}
    for edge in response.json()["results"]:
        if edge["relation_type"] == "temporal":
            assert edge["predicate"] == "next"
            if edge["source_id"] == memory_id:
                links["next"] = edge["target_id"]
            else:
                links["prev"] = edge["source_id"]
    return links


@pytest.fixture
def sessions(tenant_a):
    with tenant_context(tenant_a.org.id):
        return [Session.objects.create(org=tenant_a.org, agent=tenant_a.agent) for _ in range(2)]


def test_consecutive_episodes_of_a_session_are_linked_and_sessions_are_not(api_a, sessions):
    first, second = (str(session.id) for session in sessions)
    a1 = write(api_a, "Caroline: I went to the support group", session_id=first)
    b1 = write(api_a, "Melanie: the kids painted the fence", session_id=second)
    a2 = write(api_a, "Caroline: it was so powerful", session_id=first)
    a3 = write(api_a, "Melanie: I am proud of you", session_id=first)
    assert timeline(api_a, a1) == {"next": a2}
    assert timeline(api_a, a2) == {"prev": a1, "next": a3}
    assert timeline(api_a, a3) == {"prev": a2}
    assert timeline(api_a, b1) == {}  # the first of its session


def test_without_a_session_a_namespace_is_the_timeline(api_a, sessions):
    alice1 = write(api_a, "Alice booked a flight to Oslo", namespace=["users", "alice"])
    bob1 = write(api_a, "Bob booked a flight to Rome", namespace=["users", "bob"])
    in_session = write(api_a, "Alice asked about baggage", namespace=["users", "alice"],
                       session_id=str(sessions[0].id))
    alice2 = write(api_a, "Alice landed in Oslo", namespace=["users", "alice"])
    assert timeline(api_a, alice1) == {"next": alice2}
    assert timeline(api_a, alice2) == {"prev": alice1}
    assert timeline(api_a, bob1) == {} and timeline(api_a, in_session) == {}


def test_only_episodes_are_linked_and_a_batch_keeps_its_order(api_a):
    fact = api_a.post("/api/v1/memories", {"content": "Alice is vegetarian", "memory_type": "semantic",
                                           "namespace": ["users", "alice"]}).json()["memory"]["id"]
    before = write(api_a, "Alice ordered the mushroom risotto", namespace=["users", "alice"])
    response = api_a.post("/api/v1/memories", {"memories": [
        {"content": f"Alice: turn {n}", "memory_type": "episodic", "namespace": ["users", "alice"]} for n in range(4)]
        + [{"content": "Alice likes jazz", "memory_type": "semantic", "namespace": ["users", "alice"]}]})
    assert response.status_code == 201, response.content
    turns = [result["id"] for result in response.json()["results"]][:4]
    assert timeline(api_a, fact) == {}
    assert timeline(api_a, before) == {"next": turns[0]}
    for earlier, later in zip(turns, turns[1:]):
        assert timeline(api_a, earlier)["next"] == later
    assert timeline(api_a, turns[-1]) == {"prev": turns[-2]}


def test_a_repeated_episode_is_not_linked_twice(api_a):
    """An exact duplicate returns the memory already written: no new edge, no loop."""
    first = write(api_a, "Alice waved", namespace=["users", "alice"])
    second = write(api_a, "Alice smiled", namespace=["users", "alice"])
    again = api_a.post("/api/v1/memories", {"content": "Alice waved", "memory_type": "episodic",
                                            "namespace": ["users", "alice"]})
    assert again.status_code == 200 and again.json()["memory"]["id"] == first
    assert timeline(api_a, first) == {"next": second} and timeline(api_a, second) == {"prev": first}


@committing
def test_concurrent_writers_of_one_timeline_make_one_chain(tenant_a):
    """Episodes written at once by several clients still form one chain: every episode but
    the first has exactly one predecessor and every one but the last one successor."""
    from rest_framework.test import APIClient

    from tests import factories

    _, key = factories.api_key(agent=tenant_a.agent)
    errors = []

    def writer(n):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        try:
            for i in range(5):
                write(client, f"writer {n} says {i}", namespace=["users", "crowd"])
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with tenant_context(tenant_a.org.id):
        edges = list(MemoryRelationship.objects.filter(relation_type="temporal").values_list("source_id", "target_id"))
    sources, targets = [s for s, _ in edges], [t for _, t in edges]
    assert len(edges) == 19 and len(set(sources)) == 19 and len(set(targets)) == 19


@committing
def test_an_episode_is_written_while_the_one_before_is_being_embedded(tenant_a, api_a):
    """The embedding job holds the rows it embeds for as long as the model runs (seconds for
    a batch on a CPU). A write meanwhile links its episode to the one before, one of those
    rows: it must not wait for the job to finish."""
    from memories import jobs

    response = api_a.post("/api/v1/memories", {"memories": [
        {"content": "Mel: I signed up for a pottery class", "memory_type": "episodic", "namespace": ["users", "mel"]}]})
    assert response.status_code == 201, response.content
    before = response.json()["results"][0]["id"]
    claimed, release, done = threading.Event(), threading.Event(), []

    def job_holding_the_row():
        try:
            with tenant_context(tenant_a.org.id):  # a transaction, as the job's is
                done.append([str(m.pk) for m in jobs.claim_pending(str(tenant_a.org.id), [before])])
                claimed.set()
                release.wait(60)
        finally:
            connection.close()

    def next_write():
        try:
            done.append(write(api_a, "Mel: the first bowl cracked in the kiln", namespace=["users", "mel"]))
        finally:
            connection.close()

    holder = threading.Thread(target=job_holding_the_row)
    holder.start()
    try:
        assert claimed.wait(30) and done == [[before]]
        writer = threading.Thread(target=next_write)
        writer.start()
        writer.join(30)  # blocked behind the job's lock, it would wait until release
        assert not writer.is_alive(), "the write waited for the embedding job's lock"
    finally:
        release.set()
        holder.join()
    assert timeline(api_a, done[1]) == {"prev": before}
