"""Sessions through the API (issue 19, item 6): open (or find again by external_id), list, get,
a session's memories, close; a closed session takes no new memory; closing consolidates it
into merge proposals and a summary waiting for review, per namespace, never across two.
Each tried with another organisation's key and with keys of narrower reach."""

import subprocess
import sys
import uuid
from datetime import timedelta

import django_rq
import pytest
from django.conf import settings
from django.utils import timezone

from memories.lifecycle import consolidation
from memories.models import DuplicateCandidate, LifecycleRun, Memory, MemoryRelationship
from memories.writes.kernel import Actor
from memories.writes.review import memory_approve
from tenants.context import tenant_context
from tenants.models import Session
from tests import factories
from tests.markers import committing
from tests.memories.test_jobs import worker_env

pytestmark = pytest.mark.django_db


def ok(response, *statuses):
    assert response.status_code in (statuses or (200, 201)), response.content
    return response.json()


def refused(response, status: int, field: str | None = None, code: str | None = None) -> dict:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    if field:
        assert field in error["fields"], error
    if code:
        assert error["code"] == code, error
    return error


def open_session(api, **body) -> dict:
    return ok(api.post("/api/v1/sessions", body), 201)


def write(api, content: str, session: dict, **fields) -> dict:
    return ok(api.post("/api/v1/memories", {"content": content, "session_id": session["id"], **fields}), 201)["memory"]


def limited_client(api_client_for, agent, **reach):
    _, key = factories.api_key(agent=agent, **reach)
    client = api_client_for(agent)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def memory_count(org) -> int:
    with tenant_context(org.id):
        return Memory.objects.count()


def consolidate(org, session: dict):
    return consolidation.consolidate_session(org_id=org.id, session_id=session["id"])


# --------------------------------------------------------------------------- open, find, list


def test_an_open_session_is_found_again_by_its_external_id_until_it_closes(api_a):
    first = open_session(api_a, external_id="thread-81", namespace=["users", "alice"], metadata={"channel": "chat"})
    assert first["status"] == "open" and first["namespace"] == ["users", "alice"]
    assert first["metadata"] == {"channel": "chat"} and first["memory_count"] == 0 and first["ended_at"] is None

    again = api_a.post("/api/v1/sessions", {"external_id": "thread-81"})
    assert again.status_code == 200 and again.json()["id"] == first["id"]

    closed = ok(api_a.post(f"/api/v1/sessions/{first['id']}/close", {}))
    assert closed["status"] == "closed" and closed["ended_at"] is not None
    assert refused(api_a.post(f"/api/v1/sessions/{first['id']}/close", {}), 409, code="session_closed")
    after = open_session(api_a, external_id="thread-81")
    assert after["id"] != first["id"]


def test_an_open_session_is_found_again_only_in_the_namespace_asked(tenant_a, api_a, api_client_for):
    alice = open_session(api_a, external_id="thread-1", namespace=["users", "alice"])
    bob_key = limited_client(api_client_for, tenant_a.agent, namespaces=["users/bob"])

    bob = open_session(bob_key, external_id="thread-1", namespace=["users", "bob"])  # not Alice's, nor told of it
    assert bob["id"] != alice["id"] and bob["namespace"] == ["users", "bob"]
    write(bob_key, "Bob keeps bees", bob, namespace=["users", "bob"])
    again = api_a.post("/api/v1/sessions", {"external_id": "thread-1", "namespace": ["users", "alice"]})
    assert again.status_code == 200 and again.json()["id"] == alice["id"]
    assert ok(api_a.post("/api/v1/sessions", {"external_id": "thread-1", "namespace": ["users", "bob"]}),
              200)["id"] == bob["id"]


def test_sessions_are_listed_newest_first_with_filters(tenant_a, api_a, api_client_for):
    other_agent = factories.agent(org=tenant_a.org, name="second agent")
    api_other = api_client_for(other_agent)
    alice = open_session(api_a, namespace=["users", "alice"], external_id="a-1")
    bob = open_session(api_a, namespace=["users", "bob"])
    theirs = open_session(api_other, namespace=["users", "alice"])
    ok(api_a.post(f"/api/v1/sessions/{bob['id']}/close", {"consolidate": False}))

    def listed(**query):
        return [row["id"] for row in ok(api_a.get("/api/v1/sessions", query))["results"]]

    fixture = str(tenant_a.session.id)  # the organisation's first session, opened before these
    assert listed() == [theirs["id"], bob["id"], alice["id"], fixture]
    assert listed(status="closed") == [bob["id"]]
    assert listed(status="open") == [theirs["id"], alice["id"], fixture]
    assert listed(agent=str(tenant_a.agent.id)) == [bob["id"], alice["id"], fixture]
    assert listed(namespace="users/alice") == [theirs["id"], alice["id"]]
    assert listed(external_id="a-1") == [alice["id"]]
    assert listed(limit=1) == [theirs["id"]]


@pytest.mark.parametrize("body, field", [
    ({"namespace": ["users", ""]}, "namespace"), ({"namespace": "users//alice"}, "namespace"),
    ({"namespace": ["users/alice"]}, "namespace"), ({"namespace": {"users": "alice"}}, "namespace"),
    ({"external_id": ""}, "external_id"), ({"external_id": "x" * 257}, "external_id"),
    ({"metadata": ["not", "an", "object"]}, "metadata"), ({"status": "open"}, "status"),
    ({"ended_at": "2026-01-01T00:00:00Z"}, "ended_at"),
])
def test_opening_refuses_bad_input_by_name_and_opens_nothing(tenant_a, api_a, body, field):
    refused(api_a.post("/api/v1/sessions", body, format="json"), 400, field)
    with tenant_context(tenant_a.org.id):
        assert not Session.objects.filter(agent=tenant_a.agent).exclude(pk=tenant_a.session.pk).exists()


@pytest.mark.parametrize("query, field", [({"status": "done"}, "status"), ({"agent": "nobody"}, "agent"),
                                          ({"limit": 0}, "limit"), ({"colour": "red"}, "colour")])
def test_the_list_refuses_bad_filters_by_name(api_a, query, field):
    refused(api_a.get("/api/v1/sessions", query), 400, field)


def test_closing_refuses_a_bad_body_and_leaves_the_session_open(api_a):
    session = open_session(api_a)
    refused(api_a.post(f"/api/v1/sessions/{session['id']}/close", {"consolidate": "maybe"}), 400, "consolidate")
    assert ok(api_a.get(f"/api/v1/sessions/{session['id']}"))["status"] == "open"
    refused(api_a.post(f"/api/v1/sessions/{uuid.uuid4()}/close", {}), 404)


# --------------------------------------------------------------------------- what a session holds


def test_a_sessions_memories_come_in_the_order_written_and_a_closed_session_takes_none(tenant_a, api_a):
    session = open_session(api_a, namespace=["users", "alice"])
    elsewhere = write(api_a, "Unrelated: the office moved to Porto", {"id": None})
    written = [write(api_a, f"Alice said thing number {n} about her garden", session,
                     namespace=["users", "alice"])["id"] for n in range(3)]

    page = ok(api_a.get(f"/api/v1/sessions/{session['id']}/memories"))
    assert [row["id"] for row in page["results"]] == written and elsewhere["id"] not in written
    assert ok(api_a.get(f"/api/v1/sessions/{session['id']}"))["memory_count"] == 3
    assert [row["id"] for row in ok(api_a.get("/api/v1/memories", {"session": session["id"]}))["results"]] == (
        written[::-1])

    ok(api_a.post(f"/api/v1/sessions/{session['id']}/close", {"consolidate": False}))
    before = memory_count(tenant_a.org)
    refused(api_a.post("/api/v1/memories", {"content": "Too late", "session_id": session["id"]}), 409,
            "session_id", "session_closed")
    refused(api_a.post("/api/v1/memories", {"memories": [{"content": "Fine"}, {"content": "Too late",
                                                                                "session_id": session["id"]}]}),
            409, "memories[1].session_id", "session_closed")
    refused(api_a.post("/api/v1/memories", {"content": "Nowhere", "session_id": str(uuid.uuid4())}), 404, "session_id")
    assert memory_count(tenant_a.org) == before


# --------------------------------------------------------------------------- tenants and reach


def test_another_organisation_finds_no_session_of_this_one(tenant_a, api_a, api_b):
    session = open_session(api_a, external_id="shared-id", namespace=["users", "alice"])
    write(api_a, "Alice keeps bees", session, namespace=["users", "alice"])

    assert session["id"] not in [row["id"] for row in ok(api_b.get("/api/v1/sessions"))["results"]]
    assert ok(api_b.get("/api/v1/sessions", {"external_id": "shared-id"}))["results"] == []
    for door in ("", "/memories"):
        refused(api_b.get(f"/api/v1/sessions/{session['id']}{door}"), 404)
    refused(api_b.post(f"/api/v1/sessions/{session['id']}/close", {}), 404)
    refused(api_b.post("/api/v1/memories", {"content": "Planted", "session_id": session["id"]}), 404, "session_id")
    theirs = open_session(api_b, external_id="shared-id")  # the same external id is theirs to use
    assert theirs["id"] != session["id"]

    assert ok(api_a.get(f"/api/v1/sessions/{session['id']}"))["status"] == "open"
    assert ok(api_a.get(f"/api/v1/sessions/{session['id']}"))["memory_count"] == 1


def test_a_key_limited_to_namespaces_opens_and_sees_sessions_only_there(tenant_a, api_a, api_client_for):
    alice = open_session(api_a, namespace=["users", "alice"])
    write(api_a, "Alice keeps bees", alice, namespace=["users", "alice"])
    bob_key = limited_client(api_client_for, tenant_a.agent, namespaces=["users/bob"])

    refused(bob_key.post("/api/v1/sessions", {"namespace": ["users", "alice"]}), 403, code="out_of_reach")
    refused(bob_key.post("/api/v1/sessions", {}), 403, code="out_of_reach")
    bob = open_session(bob_key, namespace=["users", "bob", "chat"])
    assert [row["id"] for row in ok(bob_key.get("/api/v1/sessions"))["results"]] == [bob["id"]]
    for door in ("", "/memories"):
        refused(bob_key.get(f"/api/v1/sessions/{alice['id']}{door}"), 404)
    refused(bob_key.post(f"/api/v1/sessions/{alice['id']}/close", {}), 404)
    assert ok(api_a.get(f"/api/v1/sessions/{alice['id']}"))["status"] == "open"

    reader = limited_client(api_client_for, tenant_a.agent, read_only=True)
    refused(reader.post("/api/v1/sessions", {}), 403, code="out_of_reach")
    refused(reader.post(f"/api/v1/sessions/{alice['id']}/close", {}), 403, code="out_of_reach")
    assert ok(reader.get(f"/api/v1/sessions/{alice['id']}/memories"))["results"][0]["content"] == "Alice keeps bees"


# --------------------------------------------------------------------------- consolidation

ALICE_TURNS = [
    "Alice's daughter Mia turns seven in March",
    "Alice grows tomatoes and basil on her balcony",
    "Alice is training for the Lisbon half marathon in October",
    "Alice prefers trains to planes for trips inside Europe",
    "Alice works as a nurse on night shifts at the children's hospital",
]
ALICE_PARAPHRASE = "Mia, Alice's daughter, will be seven years old in March"


def test_closing_proposes_merges_and_a_summary_per_namespace_never_across_two(tenant_a, api_a, settings):
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "NEAR_DUPLICATE_SIMILARITY": 0.99}  # the write path finds none
    session = open_session(api_a, external_id="thread-9")
    alice = [write(api_a, text, session, namespace=["users", "alice"]) for text in ALICE_TURNS]
    paraphrase = write(api_a, ALICE_PARAPHRASE, session, namespace=["users", "alice"])
    # Bob's memories in the same session: the same words about Mia, in another end user's namespace.
    bob = [write(api_a, ALICE_TURNS[0], session, namespace=["users", "bob"]),
           write(api_a, "Bob collects vinyl records", session, namespace=["users", "bob"])]
    # A batch leaves its embeddings to a worker (none runs here): the consolidation embeds them.
    batch = ok(api_a.post("/api/v1/memories", {"memories": [
        {"content": "Alice's favourite tea is a smoky lapsang souchong", "session_id": session["id"],
         "namespace": ["users", "alice"]}]}), 201)["results"]
    assert batch[0]["embedding_status"] == "pending"
    with tenant_context(tenant_a.org.id):
        assert not DuplicateCandidate.objects.filter(memory__session_id=session["id"]).exists()

    ok(api_a.post(f"/api/v1/sessions/{session['id']}/close", {}))
    counts = consolidate(tenant_a.org, session)
    assert counts == {"session": session["id"], "memories": 9, "embedded": 1, "duplicate_pairs": 1, "summaries": 1}

    with tenant_context(tenant_a.org.id):
        [pair] = DuplicateCandidate.objects.filter(memory__session_id=session["id"])
        assert {pair.memory_id, pair.candidate_id} == {uuid.UUID(alice[0]["id"]), uuid.UUID(paraphrase["id"])}
        assert pair.similarity >= 0.85
        assert Memory.objects.get(pk=batch[0]["id"]).embedding is not None
        [summary] = Memory.objects.filter(status=Memory.Status.PENDING_REVIEW)
        assert summary.namespace == "users/alice" and summary.source == Memory.Source.INFERRED
        assert str(summary.session_id) == session["id"] and summary.content.startswith("Session thread-9")
        assert "vinyl" not in summary.content
        assert set(summary.tags.values_list("tag", flat=True)) == {"session-summary"}
        sources = set(MemoryRelationship.objects.filter(source=summary, relation_type="derived_from")
                      .values_list("target__namespace", "target__content"))
        assert {namespace for namespace, _ in sources} == {"users/alice"} and len(sources) >= 3
        # The two sayings about Mia are near-duplicates: one of them makes the summary, not both.
        assert not {ALICE_TURNS[0], ALICE_PARAPHRASE} <= {content for _, content in sources}
        assert {content for _, content in sources} <= {line[2:] for line in summary.content.splitlines()[1:]}
        run = LifecycleRun.objects.get(job=LifecycleRun.Job.CONSOLIDATION)
        assert run.counts == counts

    shown = ok(api_a.get(f"/api/v1/sessions/{session['id']}"))
    assert shown["consolidation"] == counts and shown["consolidated_at"] is not None
    assert str(summary.pk) in [row["id"] for row in ok(api_a.get(f"/api/v1/sessions/{session['id']}/memories"))[
        "results"]]
    assert bob[0]["id"] not in {str(pair.memory_id), str(pair.candidate_id)}

    assert consolidate(tenant_a.org, session) is None  # once only
    with tenant_context(tenant_a.org.id):
        assert DuplicateCandidate.objects.filter(memory__session_id=session["id"]).count() == 1
        assert Memory.objects.filter(status="pending_review").count() == 1


def test_the_summary_goes_live_when_a_reviewer_approves_it(tenant_a, api_a):
    session = open_session(api_a, namespace=["users", "alice"])
    for text in ALICE_TURNS:
        write(api_a, text, session, namespace=["users", "alice"])
    ok(api_a.post(f"/api/v1/sessions/{session['id']}/close", {}))
    consolidate(tenant_a.org, session)
    query = {"query": "What does Alice do for work and what is she training for?", "limit": 10}
    with tenant_context(tenant_a.org.id):
        summary = Memory.objects.get(status=Memory.Status.PENDING_REVIEW)

    def found() -> list[str]:
        return [row["memory"]["id"] for row in ok(api_a.post("/api/v1/search", query))["results"]]

    assert str(summary.pk) not in found()  # waiting for review: no agent is shown it
    with tenant_context(tenant_a.org.id):
        memory_approve(org_id=tenant_a.org.id, memory_id=summary.pk, actor=Actor(changed_by_type="user"))
    assert str(summary.pk) in found()


def test_a_session_with_nothing_to_propose_is_consolidated_with_nothing(tenant_a, api_a):
    session = open_session(api_a, namespace=["users", "alice"])
    write(api_a, "Alice keeps bees", session, namespace=["users", "alice"])
    ok(api_a.post(f"/api/v1/sessions/{session['id']}/close", {}))
    assert consolidate(tenant_a.org, session) == {"session": session["id"], "memories": 1, "embedded": 0,
                                                  "duplicate_pairs": 0, "summaries": 0}
    empty = open_session(api_a)
    ok(api_a.post(f"/api/v1/sessions/{empty['id']}/close", {}))
    assert consolidate(tenant_a.org, empty)["memories"] == 0
    with tenant_context(tenant_a.org.id):
        assert not Memory.objects.filter(status=Memory.Status.PENDING_REVIEW).exists()


def test_an_open_session_is_not_consolidated_and_one_closed_without_is_left_alone(tenant_a, api_a):
    session = open_session(api_a)
    for text in ALICE_TURNS:
        write(api_a, text, session)
    assert consolidate(tenant_a.org, session) is None
    ok(api_a.post(f"/api/v1/sessions/{session['id']}/close", {"consolidate": False}))
    assert consolidate(tenant_a.org, session) is None
    assert consolidation.consolidate_pending() == 0
    with tenant_context(tenant_a.org.id):
        assert not Memory.objects.filter(status=Memory.Status.PENDING_REVIEW).exists()


def test_the_sweep_consolidates_recently_closed_sessions_whose_job_was_lost(tenant_a, tenant_b, api_a, api_b):
    def closed(api, tenant, ago: timedelta) -> dict:
        user = ["users", uuid.uuid4().hex[:8]]  # the same words in each session: one user each, not deduplicated
        session = open_session(api, namespace=user)
        for text in ALICE_TURNS[:3]:
            write(api, text, session, namespace=user)
        ok(api.post(f"/api/v1/sessions/{session['id']}/close", {}))  # its job is never enqueued here
        with tenant_context(tenant.org.id):
            Session.objects.filter(pk=session["id"]).update(started_at=timezone.now() - ago - timedelta(hours=1),
                                                            ended_at=timezone.now() - ago)
        return session

    lost_a, lost_b = closed(api_a, tenant_a, timedelta(minutes=30)), closed(api_b, tenant_b, timedelta(hours=20))
    long_ago, just_now = closed(api_a, tenant_a, timedelta(days=5)), closed(api_a, tenant_a, timedelta(seconds=10))

    assert consolidation.consolidate_pending() == 2
    assert ok(api_a.get(f"/api/v1/sessions/{lost_a['id']}"))["consolidation"]["summaries"] == 1
    assert ok(api_b.get(f"/api/v1/sessions/{lost_b['id']}"))["consolidation"]["summaries"] == 1
    for untouched in (long_ago, just_now):
        assert ok(api_a.get(f"/api/v1/sessions/{untouched['id']}"))["consolidated_at"] is None
    with tenant_context(tenant_b.org.id):
        [summary] = Memory.objects.filter(status=Memory.Status.PENDING_REVIEW)
        assert summary.org_id == tenant_b.org.id and str(summary.session_id) == lost_b["id"]
    assert consolidation.consolidate_pending() == 0


@committing
def test_closing_queues_the_consolidation_for_a_worker(tenant_a, api_a):
    queue = django_rq.get_queue(consolidation.QUEUE)
    queue.empty()
    try:
        session = open_session(api_a, namespace=["users", "alice"])
        for text in ALICE_TURNS:
            write(api_a, text, session, namespace=["users", "alice"])
        ok(api_a.post(f"/api/v1/sessions/{session['id']}/close", {}))
        assert queue.count == 1
        worker = subprocess.run([sys.executable, "manage.py", "rqworker", consolidation.QUEUE, "--burst"],
                                cwd=settings.BASE_DIR, env=worker_env(), capture_output=True, text=True, timeout=300)
        assert worker.returncode == 0, worker.stderr[-2000:]
        shown = ok(api_a.get(f"/api/v1/sessions/{session['id']}"))
        assert shown["consolidation"]["summaries"] == 1 and shown["memory_count"] == 5  # live ones: not the summary
    finally:
        queue.empty()


# --------------------------------------------------------------------------- the namespace boundary


def test_a_session_of_one_user_takes_no_memory_of_another(tenant_a, api_a):
    bobs = open_session(api_a, namespace=["users", "bob"])
    before = memory_count(tenant_a.org)
    for body, field in (({"content": "Alice keeps bees", "namespace": ["users", "alice"]}, "session_id"),
                        ({"content": "No one's", "namespace": None}, "session_id"),
                        ({"content": "Bob2's", "namespace": ["users", "bob2"]}, "session_id")):
        body = {key: value for key, value in body.items() if value is not None}
        error = refused(api_a.post("/api/v1/memories", {**body, "session_id": bobs["id"]}), 400, field)
        assert "is kept under users/bob" in error["message"]
    refused(api_a.post("/api/v1/memories", {"memories": [
        {"content": "Bob's own", "namespace": ["users", "bob"], "session_id": bobs["id"]},
        {"content": "Alice's", "namespace": ["users", "alice"], "session_id": bobs["id"]}]}),
        400, "memories[1].session_id")
    assert memory_count(tenant_a.org) == before
    assert write(api_a, "Bob's gym is on Elm Street", bobs, namespace=["users", "bob", "health"])


def test_a_shared_session_keeps_a_timeline_per_user(tenant_a, api_a):
    """A session without a namespace (an agent in a group conversation) takes every user's
    episodes; each user's are chained on their own, never to another's."""
    group = open_session(api_a, external_id="group-chat")
    turns = [(user, write(api_a, f"{user.title()}: turn {n}", group, namespace=["users", user],
                          memory_type="episodic", category="episodic"))
             for n, user in enumerate(["alice", "bob", "alice", "bob"])]
    with tenant_context(tenant_a.org.id):
        edges = {(str(edge.source_id), str(edge.target_id))
                 for edge in MemoryRelationship.objects.filter(relation_type="temporal",
                                                               target__session_id=group["id"])}
    alice = [memory["id"] for user, memory in turns if user == "alice"]
    bob = [memory["id"] for user, memory in turns if user == "bob"]
    assert edges == {(alice[0], alice[1]), (bob[0], bob[1])}
