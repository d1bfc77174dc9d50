"""Search, retrieve and store search through the API: filters, fusion, fallbacks, events."""

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import Memory, RetrievalEvent
from memories.retrieval import fulltext, ranking, size
from memories.retrieval.filters import SearchFilters
from memories.vectors import embeddings
from memories.vectors.embeddings import use_embedder
from memory_platform import database
from tenants.context import tenant_context
from tests import factories
from tests.knobs import with_search_knobs
from tests.markers import committing
from tests.memories.test_jobs import BrokenModel

pytestmark = pytest.mark.django_db

FACTS = {
    "tea": "The user drinks green tea every morning",
    "peanuts": "The user is allergic to peanuts and shellfish",
    "deploys": "Production deploys happen on Thursdays after the stand-up",
    "lisbon": "The user moved to Lisbon last spring",
    "budget": "The quarterly budget review is due in March",
}


@pytest.fixture
def facts(api_a):
    ids = {}
    for name, content in FACTS.items():
        response = api_a.post("/api/v1/memories", {"content": content, "tags": [name],
                                                   "category": "preference" if name == "tea" else "factual"})
        ids[name] = response.json()["memory"]["id"]
    return ids


def found(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [result["memory"]["id"] for result in response.json()["results"]]


def test_search_ranks_the_matching_memory_first_and_explains_each_signal(api_a, facts):
    response = api_a.post("/api/v1/search", {"query": "What does the user drink in the morning?", "limit": 3})
    body = response.json()
    assert found(response)[0] == facts["tea"]
    top = body["results"][0]
    assert top["signals"]["vector"]["rank"] == 1 and 0 < top["signals"]["vector"]["similarity"] <= 1
    assert top["signals"]["fulltext"]["rank"] >= 1
    assert set(top["signals"]["blend"]) == {"relevance", "importance", "confidence", "recency", "usage", "strength"}
    assert top["signals"]["blend"]["strength"] == pytest.approx(1.0, abs=1e-3)  # written just now
    assert [r["score"] for r in body["results"]] == sorted((r["score"] for r in body["results"]), reverse=True)
    assert body["degraded"] is None and body["vector_method"] == "exact"


def test_a_query_embedded_in_int8_finds_the_same_memory(api_a, facts, int8_queries):
    response = api_a.post("/api/v1/search", {"query": "What does the user drink in the morning?", "limit": 3,
                                             "mode": "vector"})
    assert found(response)[0] == facts["tea"] and response.json()["degraded"] is None
    assert embeddings.get_query_embedder().graph == embeddings.quantized_graph()  # the model that served it


def test_the_same_search_returns_the_same_order(api_a, facts):
    answers = [api_a.post("/api/v1/search", {"query": "user", "limit": 5}) for _ in range(3)]
    orders = {tuple(found(answer)) for answer in answers}
    if len(orders) != 1:
        # It failed now and then: the two last memories tie but for when they were written, and
        # were ranked by their rounded scores (tests/unit/test_search_pipeline.py now holds that
        # case). Should it fail again, what each search saw (pytest prints a failing test's output
        # in full, where it cuts a long assertion message short).
        print([[(r["memory"]["content"][:24], r["score"], r["signals"].get("vector")) for r in answer.json()["results"]]
               + [answer.json()["understood"]] for answer in answers])
        print(embeddings.active_model(), embeddings.query_model(embeddings.active_model()))
        print(list(Memory.objects.values_list("content", "embedding_model", "embedding")))
    assert len(orders) == 1


def test_each_mode(api_a, facts):
    vector = api_a.post("/api/v1/search", {"query": "beverage preferences", "mode": "vector", "limit": 1})
    assert found(vector) == [facts["tea"]]
    fulltext = api_a.post("/api/v1/search", {"query": "Thursdays", "mode": "fulltext"})
    assert found(fulltext) == [facts["deploys"]] and "vector" not in fulltext.json()["results"][0]["signals"]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"category": ["preference"]}, {"tea"}),
        ({"tags": ["lisbon"]}, {"lisbon"}),
        ({"min_confidence": 0.9}, set()),
        ({"sensitivity": ["secret"]}, set()),
        ({"require_verified": True}, set()),
        ({"memory_type": ["episodic"]}, set()),
        ({"status": ["archived"]}, set()),
        ({"time_range": "last_week"}, {*FACTS, "fixture"}),
        ({"created_before": "2000-01-01T00:00:00Z"}, set()),
    ],
)
def test_filters(tenant_a, api_a, facts, filters, expected):
    ids = set(found(api_a.post("/api/v1/search", {"query": "user review deploys tea", "limit": 20,
                                                  "mode": "fulltext", "filters": filters})))
    ids |= set(found(api_a.post("/api/v1/search", {"query": "anything at all", "limit": 20, "mode": "vector",
                                                   "filters": filters})))
    wanted = {facts[name] for name in expected if name in facts}
    if "fixture" in expected:
        wanted |= {str(tenant_a.memory.id), str(tenant_a.other_memory.id)}
    assert ids == wanted


def test_agent_session_and_namespace_filters(tenant_a, api_a, api_client_for):
    other = api_client_for(factories.agent(org=tenant_a.org, name="other-agent"))
    session = api_a.post("/api/v1/sessions", {"namespace": ["pets"]}).json()["id"]  # the pets' conversation
    mine = api_a.post("/api/v1/memories", {"content": "Cats sleep most of the day", "namespace": ["pets", "u1"],
                                           "session_id": session}).json()["memory"]["id"]
    theirs = other.post("/api/v1/memories", {"content": "Cats hunt at night", "namespace": ["pets", "u2"]}
                        ).json()["memory"]["id"]

    def ids(filters):
        return set(found(api_a.post("/api/v1/search", {"query": "cats", "mode": "vector", "filters": filters})))

    assert {mine, theirs} <= ids({})
    assert mine in ids({"agent": [str(tenant_a.agent.id)]}) and theirs not in ids({"agent": [str(tenant_a.agent.id)]})
    assert ids({"session": session}) == {mine}
    assert ids({"namespace": "pets/u2"}) == {theirs}
    assert ids({"namespace": "pets"}) == {mine, theirs}


def test_expired_deleted_superseded_and_pending_memories_are_left_out(tenant_a, api_a, facts):
    with tenant_context(tenant_a.org.id):
        Memory.objects.filter(pk=facts["tea"]).update(expires_at=timezone.now() - timedelta(minutes=1))
        Memory.objects.filter(pk=facts["peanuts"]).update(status="pending_review")
    api_a.delete(f"/api/v1/memories/{facts['lisbon']}")
    api_a.post(f"/api/v1/memories/{facts['deploys']}/supersede", {"content": "Deploys moved to Tuesdays"})
    visible = set(found(api_a.post("/api/v1/search", {"query": "user tea peanuts Lisbon deploys Thursdays",
                                                      "limit": 20})))
    assert not visible & {facts["tea"], facts["peanuts"], facts["lisbon"], facts["deploys"]}
    asked = set(found(api_a.post("/api/v1/search", {"query": "tea", "limit": 20, "filters": {
        "include_expired": True, "include_deleted": True, "status": ["active", "superseded", "pending_review"]}})))
    assert {facts["tea"]} <= asked


def test_a_search_never_returns_another_organisations_memories_even_nearer_ones(tenant_b, api_a, api_b, facts):
    query = "The user drinks green tea every morning"
    api_b.post("/api/v1/memories", {"content": query})  # B holds the exact match
    for mode in ("hybrid", "vector", "fulltext"):
        results = api_a.post("/api/v1/search", {"query": query, "mode": mode, "limit": 50}).json()["results"]
        assert {r["memory"]["org_id"] for r in results} <= {str(api_a.post("/api/v1/memories", {"content": "x"})
                                                                .json()["memory"]["org_id"])}
        assert results[0]["memory"]["id"] == facts["tea"]


def test_vector_search_falls_back_to_full_text_when_too_few_rows_have_vectors(tenant_a, api_a):
    api_a.post("/api/v1/memories", {"memories": [{"content": "Quokkas live on Rottnest Island"}]})  # pending
    response = api_a.post("/api/v1/search", {"query": "quokkas", "mode": "vector", "limit": 5})
    body = response.json()
    assert "Quokkas live on Rottnest Island" in [r["memory"]["content"] for r in body["results"]]
    assert body["filled_from_fulltext"] >= 1


def test_without_an_embedding_the_search_answers_from_full_text_and_says_so(api_a, facts):
    with use_embedder(BrokenModel()):
        response = api_a.post("/api/v1/search", {"query": "allergic shellfish never seen before"})
    body = response.json()
    assert response.status_code == 200 and body["degraded"] == "no_embedding"
    assert found(response)[0] == facts["peanuts"]


def test_expand_adds_related_memories(tenant_a, api_a, facts):
    api_a.post(f"/api/v1/memories/{facts['tea']}/relationships",
               {"target_id": facts["budget"], "relation_type": "co_occurs"})
    plain = found(api_a.post("/api/v1/search", {"query": "green tea", "mode": "fulltext"}))
    expanded = api_a.post("/api/v1/search", {"query": "green tea", "mode": "fulltext", "expand": True})
    assert facts["budget"] not in plain and facts["budget"] in found(expanded)
    graph = next(r for r in expanded.json()["results"] if r["memory"]["id"] == facts["budget"])["signals"]["graph"]
    assert graph == {"rank": 1, "from": facts["tea"], "relation_type": "co_occurs", "hops": 1, "seed": facts["tea"]}


def test_expand_two_hops_reaches_the_fact_a_related_fact_leads_to(tenant_a, api_a, facts):
    """tea -> budget -> deploys: one hop brings the budget review, two bring the deploys too,
    ranked after it, each saying the path it came by."""
    for source, target in [("tea", "budget"), ("budget", "deploys")]:
        response = api_a.post(f"/api/v1/memories/{facts[source]}/relationships",
                              {"target_id": facts[target], "relation_type": "co_occurs"})
        assert response.status_code == 201, response.content
    one = api_a.post("/api/v1/search", {"query": "green tea", "mode": "fulltext", "expand": 1})
    assert facts["budget"] in found(one) and facts["deploys"] not in found(one)
    two = api_a.post("/api/v1/search", {"query": "green tea", "mode": "fulltext", "expand": 2, "limit": 5})
    graph = {r["memory"]["id"]: r["signals"]["graph"] for r in two.json()["results"] if "graph" in r["signals"]}
    assert graph[facts["budget"]] == {"rank": 1, "from": facts["tea"], "relation_type": "co_occurs", "hops": 1,
                                      "seed": facts["tea"]}
    assert graph[facts["deploys"]] | {"rank": None} == {"rank": None, "from": facts["budget"],
                                                         "relation_type": "co_occurs", "hops": 2, "seed": facts["tea"]}
    assert graph[facts["deploys"]]["rank"] > max(hit["rank"] for hit in graph.values() if hit["hops"] == 1)
    # The hops are recorded with the search, and its replay walks them again.
    event = two.json()["retrieval_event_id"]
    replay = api_a.post(f"/api/v1/retrieval-events/{event}/replay")
    assert replay.status_code == 201, replay.content
    assert replay.json()["unchanged"] is True


def test_the_blend_reads_each_memory_as_it_is_however_it_was_found(tenant_a, api_a, facts,
                                                                   django_capture_on_commit_callbacks):
    """The ranking's columns come with the rows of the vector and the full-text statements, and
    are read for an expansion's neighbours: each result's blend shows that memory's own
    importance, confidence and usage."""
    from memories.retrieval.events import flush_retrievals

    with tenant_context(tenant_a.org.id):
        for i, memory_id in enumerate(facts.values()):
            Memory.objects.filter(pk=memory_id).update(importance=0.05 + 0.2 * i, confidence=0.95 - 0.2 * i)
    with django_capture_on_commit_callbacks(execute=True):
        api_a.post("/api/v1/search", {"query": "green tea", "limit": 2})
    flush_retrievals()
    api_a.post(f"/api/v1/memories/{facts['tea']}/relationships",
               {"target_id": facts["budget"], "relation_type": "co_occurs"})
    assert api_a.get(f"/api/v1/memories/{facts['tea']}").json()["retrieval_count"] >= 1
    sources = set()
    for body in [{"query": "beverage preferences", "mode": "vector"},
                 {"query": "green tea", "mode": "fulltext", "expand": True},
                 {"query": "where does the user live?", "limit": 5}]:
        response = api_a.post("/api/v1/search", body)
        assert response.status_code == 200, response.content
        for result in response.json()["results"]:
            memory = api_a.get(f"/api/v1/memories/{result['memory']['id']}").json()  # read on its own
            signals = result["signals"]
            sources |= set(signals) & {"vector", "fulltext", "graph"}
            assert (signals["blend"]["importance"], signals["blend"]["confidence"]) == (
                memory["importance"], memory["confidence"]), body
            assert signals["blend"]["usage"] == round(ranking.usage(memory["retrieval_count"]), 6), body
            assert result["memory"]["retrieval_count"] == memory["retrieval_count"], body
    assert sources == {"vector", "fulltext", "graph"}


@pytest.mark.parametrize(
    ("body", "field"),
    [({}, "query"), ({"query": ""}, "query"), ({"query": "x" * 4001}, "query"), ({"query": "x", "limit": 0}, "limit"),
     ({"query": "x", "limit": 101}, "limit"), ({"query": "x", "mode": "magic"}, "mode"),
     ({"query": "x", "filters": {"category": ["nope"]}}, "filters.category[0]"),
     ({"query": "x", "filters": {"time_range": "last_year"}}, "filters.time_range"),
     ({"query": "x", "filters": {"min_confidence": 2}}, "filters.min_confidence"),
     ({"query": "x", "filters": {"colour": "red"}}, "filters.colour"),
     ({"query": "x", "threshold": 1.5}, "threshold"), ({"query": "x", "expand": 3}, "expand"),
     ({"query": "x", "expand": -1}, "expand"), ({"query": "x", "expand": "2"}, "expand"),
     ({"query": "x", "expand": 1.5}, "expand")],
)
def test_search_rejects_bad_input(api_a, body, field):
    response = api_a.post("/api/v1/search", body)
    assert response.status_code == 400 and field in response.json()["error"]["fields"], response.json()


# --------------------------------------------------------------------------- events and reinforcement


def test_every_search_writes_one_retrieval_event(tenant_a, api_a, facts):
    response = api_a.post("/api/v1/search", {"query": "tea", "limit": 2}).json()
    with tenant_context(tenant_a.org.id):
        event = RetrievalEvent.objects.get(pk=response["retrieval_event_id"])
    assert event.kind == "search" and event.query == "tea" and event.agent_id == tenant_a.agent.id
    assert [str(i) for i in event.returned_memory_ids] == [r["memory"]["id"] for r in response["results"]]
    assert event.returned_scores == [r["score"] for r in response["results"]]
    detail = api_a.get(f"/api/v1/retrieval-events/{event.id}").json()
    assert [r["id"] for r in detail["results"]] == [r["memory"]["id"] for r in response["results"]]
    assert detail["results"][0]["signals"]["vector"]["rank"] >= 1
    listed = api_a.get("/api/v1/retrieval-events", {"kind": "search"}).json()["results"]
    assert str(event.id) in [e["id"] for e in listed]


def test_a_search_records_the_artifacts_its_results_refer_to_and_shows_their_tags(tenant_a, tenant_b, api_a):
    """Each result's tags and artifacts come with its record (one statement): the response
    lists the tags in order, and the event every artifact once, in order, none of B's."""
    from memories.models import Artifact, MemoryArtifact, MemoryTag

    with tenant_context(tenant_a.org.id):
        second = Artifact.objects.create(org=tenant_a.org, namespace="memories/user-1", sha256="b" * 64,
                                         storage_uri="s3://bucket/other", artifact_type="document")
        for memory in (tenant_a.memory, tenant_a.other_memory):
            MemoryArtifact.objects.create(org=tenant_a.org, memory=memory, artifact=second, namespace="memories/user-1")
        MemoryTag.objects.create(org=tenant_a.org, memory=tenant_a.memory, tag="breakfast")
    response = api_a.post("/api/v1/search", {"query": "where does the user live and what do they drink", "limit": 10})
    results = {r["memory"]["id"]: r["memory"] for r in response.json()["results"]}
    assert {str(tenant_a.memory.id), str(tenant_a.other_memory.id)} <= set(results)
    assert results[str(tenant_a.memory.id)]["tags"] == ["breakfast", "drinks"]
    assert results[str(tenant_a.other_memory.id)]["tags"] == []
    with tenant_context(tenant_a.org.id):
        event = RetrievalEvent.objects.get(pk=response.json()["retrieval_event_id"])
    assert event.returned_artifact_ids == sorted([tenant_a.artifact.id, second.id], key=str)
    assert tenant_b.artifact.id not in event.returned_artifact_ids


def _counts(org_id, ids) -> dict:
    with tenant_context(org_id):
        return {str(memory.pk): memory.retrieval_count for memory in Memory.objects.filter(pk__in=ids)}


def test_search_counts_retrievals_in_batches(tenant_a, tenant_b, api_a, facts, django_capture_on_commit_callbacks):
    from memories.retrieval.events import flush_retrievals

    flush_retrievals()
    before = _counts(tenant_a.org.id, facts.values())
    for _ in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            api_a.post("/api/v1/search", {"query": "green tea", "limit": 1})
    # Counted in Redis after each response; nothing written to the row yet.
    assert _counts(tenant_a.org.id, facts.values()) == before
    assert flush_retrievals() == 1  # three retrievals of one memory: one row written once
    with tenant_context(tenant_a.org.id):
        tea = Memory.objects.get(pk=facts["tea"])
    assert tea.retrieval_count == before[str(tea.pk)] + 3 and tea.last_retrieved_at is not None
    assert flush_retrievals() == 0  # taken, not counted twice
    body = api_a.get(f"/api/v1/memories/{facts['tea']}").json()
    assert body["retrieval_count"] == tea.retrieval_count and body["last_retrieved_at"] is not None
    # A search's records carry the same usage (read once, with its ranking).
    [found] = api_a.post("/api/v1/search", {"query": "green tea", "limit": 1}).json()["results"]
    assert found["memory"]["id"] == str(tea.pk)
    assert (found["memory"]["retrieval_count"], found["memory"]["last_retrieved_at"]) == (
        body["retrieval_count"], body["last_retrieved_at"])


def test_a_retrieval_leaves_the_memory_row_as_it_was(tenant_a, api_a, facts, django_capture_on_commit_callbacks):
    """Counts go to memory_usage: the memory's row keeps its version (no new index entries,
    and index-only scans keep its page; memories migration 0009)."""
    from django.db import connection

    from memories.retrieval.events import flush_retrievals

    def row_version():
        with tenant_context(tenant_a.org.id), connection.cursor() as cursor:
            cursor.execute("SELECT xmin::text, updated_at FROM memories WHERE id = %s", [facts["tea"]])
            return cursor.fetchone()

    flush_retrievals()
    before = row_version()
    with django_capture_on_commit_callbacks(execute=True):
        api_a.post("/api/v1/search", {"query": "green tea", "limit": 1})
    assert flush_retrievals() == 1
    assert row_version() == before


def test_a_forged_retrieval_entry_cannot_touch_another_organisation(tenant_a, tenant_b):
    from memories.caching import cache
    from memories.retrieval.events import (
        RETRIEVAL_COUNTS_KEY,
        RETRIEVALS_PENDING_KEY,
        flush_retrievals,
    )

    flush_retrievals()
    org_a, victim = str(tenant_a.org.id), tenant_b.memory
    cache.client().hincrby(RETRIEVAL_COUNTS_KEY.format(org_id=org_a), str(victim.pk), 50)
    cache.client().sadd(RETRIEVALS_PENDING_KEY, org_a)
    assert flush_retrievals() == 0
    assert _counts(tenant_b.org.id, [victim.pk])[str(victim.pk)] == victim.retrieval_count


def test_retrievals_taken_from_redis_go_back_if_the_write_fails(tenant_a):
    from django.db import DatabaseError

    from memories.caching import cache
    from memories.retrieval.events import (
        RETRIEVAL_COUNTS_KEY,
        RETRIEVALS_PENDING_KEY,
        flush_retrievals,
    )

    flush_retrievals()
    org_a = str(tenant_a.org.id)
    key = RETRIEVAL_COUNTS_KEY.format(org_id=org_a)
    cache.client().hset(key, mapping={str(tenant_a.memory.pk): 2, "not-a-memory-id": 1})
    cache.client().sadd(RETRIEVALS_PENDING_KEY, org_a)
    with pytest.raises(DatabaseError):
        flush_retrievals()
    assert cache.client().hget(key, str(tenant_a.memory.pk)) == b"2"
    assert cache.client().sismember(RETRIEVALS_PENDING_KEY, org_a)
    cache.client().hdel(key, "not-a-memory-id")
    assert flush_retrievals() == 1
    assert _counts(tenant_a.org.id, [tenant_a.memory.pk])[str(tenant_a.memory.pk)] == tenant_a.memory.retrieval_count + 2


def test_retrievals_are_written_at_once_when_redis_is_down(tenant_a, api_a, facts, django_capture_on_commit_callbacks,
                                                           monkeypatch):
    from memories.caching import cache

    before = _counts(tenant_a.org.id, facts.values())
    unreachable = type(cache.client())(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    monkeypatch.setattr(cache, "client", lambda: unreachable)  # the same client, pointed at nothing
    with django_capture_on_commit_callbacks(execute=True):
        assert api_a.post("/api/v1/search", {"query": "green tea", "limit": 1}).status_code == 200
    assert _counts(tenant_a.org.id, [facts["tea"]])[facts["tea"]] == before[facts["tea"]] + 1


def test_replay_reports_what_changed(tenant_a, api_a, facts):
    first = api_a.post("/api/v1/search", {"query": "green tea every morning", "limit": 2}).json()
    assert first["results"][0]["memory"]["id"] == facts["tea"]
    unchanged = api_a.post(f"/api/v1/retrieval-events/{first['retrieval_event_id']}/replay").json()
    assert unchanged["unchanged"] is True and unchanged["event"]["kind"] == "replay"
    new = api_a.post(f"/api/v1/memories/{facts['tea']}/supersede",
                     {"content": "The user switched to green tea with honey every morning"}).json()["memory"]
    replay = api_a.post(f"/api/v1/retrieval-events/{first['retrieval_event_id']}/replay")
    assert replay.status_code == 201
    body = replay.json()
    assert body["unchanged"] is False and body["replay_of"] == first["retrieval_event_id"]
    assert {"id": facts["tea"], "rank": 1, "reason": "superseded"} in body["removed"]
    assert new["id"] in [added["id"] for added in body["added"]]
    assert body["event"]["replay_of"] == first["retrieval_event_id"]


# --------------------------------------------------------------------------- retrieve and the store


def test_retrieve_returns_only_candidate_fields_within_scope_and_sensitivity(tenant_a, api_a):
    for content, sensitivity, verified in (("The user is vegetarian", "internal", True),
                                           ("The user's salary is confidential", "confidential", False),
                                           ("The user avoids meat on Fridays", "internal", False)):
        memory = api_a.post("/api/v1/memories", {"content": content, "sensitivity": sensitivity,
                                                 "namespace": ["memories", "u7"]}).json()["memory"]
        if verified:
            with tenant_context(tenant_a.org.id):
                Memory.objects.filter(pk=memory["id"]).update(validation_status="verified")
    response = api_a.post("/api/v1/retrieve", {"query": "what does the user eat", "scope": "memories/u7"})
    assert response.status_code == 200
    candidates = response.json()["candidates"]
    assert {c["summary"] for c in candidates} == {"The user is vegetarian", "The user avoids meat on Fridays"}
    assert set(candidates[0]) == {"id", "summary", "scope", "sensitivity", "validation_status", "provenance",
                                  "artifact_refs"}
    verified = api_a.post("/api/v1/retrieve", {"query": "what does the user eat", "scope": "memories/u7",
                                               "require_verified": True}).json()["candidates"]
    assert [c["summary"] for c in verified] == ["The user is vegetarian"]
    confidential = api_a.post("/api/v1/retrieve", {"query": "salary", "scope": "memories/u7",
                                                   "allowed_sensitivity": ["confidential"], "limit": 1}
                              ).json()["candidates"]
    assert [c["summary"] for c in confidential] == ["The user's salary is confidential"]
    with tenant_context(tenant_a.org.id):
        assert RetrievalEvent.objects.filter(kind="retrieve").count() == 3


def test_retrieve_lists_artifact_refs(tenant_a, api_a):
    response = api_a.post("/api/v1/retrieve", {"query": "tea coffee prefers", "scope": "memories/user-1"})
    refs = next(c for c in response.json()["candidates"] if c["id"] == str(tenant_a.memory.id))["artifact_refs"]
    assert refs == [{"id": str(tenant_a.artifact.id), "scope": "memories/user-1", "sha256": "a" * 64,
                     "storage_uri": "s3://bucket/doc", "artifact_type": "document"}]
    with tenant_context(tenant_a.org.id):
        event = RetrievalEvent.objects.filter(kind="retrieve").latest("created_at")
    assert tenant_a.artifact.id in event.returned_artifact_ids


@pytest.mark.parametrize(
    ("body", "field"),
    [({"query": "x"}, "scope"), ({"query": "x", "scope": "s", "limit": 33}, "limit"),
     ({"query": "x", "scope": "s", "limit": 0}, "limit"), ({"query": "x", "scope": "s", "allowed_sensitivity": []},
                                                          "allowed_sensitivity"),
     ({"query": "", "scope": "s"}, "query"), ({"query": "x", "scope": "s", "prompt": "assemble"}, "prompt")],
)
def test_retrieve_rejects_bad_input(api_a, body, field):
    response = api_a.post("/api/v1/retrieve", body)
    assert response.status_code == 400 and field in response.json()["error"]["fields"]


def test_store_search_keeps_items_above_the_threshold_seed_003_asks_for(api_a):
    for key, content in (("diet", "User is vegetarian and prefers Italian cuisine"),
                         ("timezone", "User is located in EST timezone (New York)")):
        api_a.put("/api/v1/store/items", {"namespace": ["memories", "u9"], "key": key, "value": {"text": content},
                                          "index": ["text"]})
    response = api_a.post("/api/v1/store/items/search", {"namespace_prefix": ["memories", "u9"],
                                                         "query": "Italian vegetarian cuisine", "threshold": 0.7})
    results = response.json()["items"]
    assert [r["key"] for r in results] == ["diet"] and results[0]["score"] >= 0.7
    everything = api_a.post("/api/v1/store/items/search", {"namespace_prefix": ["memories", "u9"],
                                                           "query": "user"}).json()["items"]
    assert {r["key"] for r in everything} == {"diet", "timezone"}  # LangGraph's: the nearest, however near
    assert [r["score"] for r in everything] == sorted((r["score"] for r in everything), reverse=True)


def test_store_search_finds_by_meaning_only_unless_the_query_cannot_be_embedded(api_a):
    """The store's search is vector-only: an item kept out of search by meaning is not found
    by its words, where a vector search of memories fills up with full text (spec §1). When
    the query cannot be embedded, full text answers, with no score."""
    for key, content, index in (("diet", "User is vegetarian and prefers Italian cuisine", ["text"]),
                                ("coffee", "User drinks espresso after lunch", False)):
        api_a.put("/api/v1/store/items", {"namespace": ["memories", "u7"], "key": key, "value": {"text": content},
                                          "index": index})
    body = {"namespace_prefix": ["memories", "u7"], "query": "espresso after lunch"}
    assert [r["key"] for r in api_a.post("/api/v1/store/items/search", body).json()["items"]] == ["diet"]
    with use_embedder(BrokenModel()):  # a query not embedded before (it would come from the cache)
        items = api_a.post("/api/v1/store/items/search", {**body, "query": "espresso lunch"}).json()["items"]
    assert [(r["key"], r["score"]) for r in items] == [("coffee", None)]


def test_reciprocal_rank_fusion_is_weighted_and_deterministic():
    signals = {"vector": [ranking.Hit("a", 0.9, 1), ranking.Hit("b", 0.8, 2)],
               "fulltext": [ranking.Hit("b", 1.0, 1), ranking.Hit("c", 0.5, 2)]}
    fused = ranking.reciprocal_rank_fusion(signals, {"vector": 1.0, "fulltext": 2.0}, 60)
    assert fused == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 2 / 61, "c": 2 / 62})


def test_equal_scores_in_one_signal_share_a_rank():
    hits = ranking.ranked_hits([("a", 0.9), ("b", 0.5), ("c", 0.5), ("d", 0.1)])
    assert [(hit.memory_id, hit.rank) for hit in hits] == [("a", 1), ("b", 2), ("c", 2), ("d", 4)]


def test_a_full_text_tie_is_settled_by_meaning_not_by_age(api_a):
    """Both memories match the query's words equally; the one nearer in meaning ranks first
    whichever was written last (full text used to break its tie by age, which fusion then
    weighed as much as the vector signal's real preference)."""
    nearer = api_a.post("/api/v1/memories", {"content": "The user's dog is called Rex", "category": "factual"})
    api_a.post("/api/v1/memories", {"content": "The user walks the dog at seven", "category": "factual"})
    response = api_a.post("/api/v1/search", {"query": "what is the dog's name?", "limit": 2})
    results = response.json()["results"]
    assert results[0]["memory"]["id"] == nearer.json()["memory"]["id"]
    assert results[0]["signals"]["fulltext"]["rank"] == results[1]["signals"]["fulltext"]["rank"] == 1


def test_the_lexemes_of_a_word_are_asked_of_the_database_once_per_process(django_assert_num_queries):
    fulltext.reset_caches()
    with django_assert_num_queries(1):
        first = fulltext.word_lexemes(["running", "the", "reports"])
    assert first == {"running": ["run"], "the": [], "reports": ["report"]}
    with django_assert_num_queries(0):
        assert fulltext.word_lexemes(["reports", "running"]) == {"reports": ["report"], "running": ["run"]}
    with django_assert_num_queries(1):  # only the new word
        assert fulltext.word_lexemes(["the", "zeppelins"]) == {"the": [], "zeppelins": ["zeppelin"]}


@committing
def test_a_tenant_is_measured_on_its_own_memories(tenant_a, tenant_b, api_a):
    """Its live rows and their share of the table (which sizes the shared HNSW index's
    candidate list)."""
    from django.db import connections

    api_a.post("/api/v1/memories", {"memories": [{"content": f"Bulk fact {i}"} for i in range(40)]})
    with connections["owner"].cursor() as cursor:  # the table's row estimate, as autovacuum keeps it
        cursor.execute("ANALYZE memories")
    size.reset_caches()
    with tenant_context(tenant_a.org.id):
        a = size.tenant_size(tenant_a.org.id)
    with tenant_context(tenant_b.org.id):
        b = size.tenant_size(tenant_b.org.id)
    assert a.rows == b.rows + 40
    # The table the tenant's index covers: all of it on one node, its shard on a Citus cluster.
    with connections["owner"].cursor() as cursor:
        together = not database.on_citus() or shard_of(cursor, tenant_a.org.id) == shard_of(cursor, tenant_b.org.id)
    if together:
        assert a.share == pytest.approx(a.rows / (a.rows + b.rows))
        assert b.share == pytest.approx(b.rows / (a.rows + b.rows))
    else:
        assert a.share == b.share == 1.0


def shard_of(cursor, org_id):
    cursor.execute("SELECT get_shard_id_for_distribution_column('memories', %s)", [org_id])
    return cursor.fetchone()[0]


def test_an_unfiltered_search_takes_the_tenant_size_from_the_hourly_estimate(tenant_a, api_a, settings):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, EXACT_SCAN_ROWS=2, TEXT_SCAN_ROWS=2)
    api_a.post("/api/v1/memories", {"memories": [{"content": f"Bulk fact {i}"} for i in range(10)]})
    size.reset_caches()
    capped = lambda queries: [q for q in queries if "capped" in q["sql"]]  # noqa: E731
    with tenant_context(tenant_a.org.id), CaptureQueriesContext(connection) as queries:
        assert size.candidate_count(tenant_a.org.id, SearchFilters()) == 12  # live, active
        assert size.is_small(tenant_a.org.id, SearchFilters()) is False
        assert size.is_small(tenant_a.org.id, SearchFilters(tags=["absent"])) is True
    assert len(capped(queries.captured_queries)) == 1  # only the filtered search counted
    size.reset_caches()


def test_full_text_matches_row_by_row_only_the_few_rows_a_filter_leaves(tenant_a, api_a, facts):
    """An unfiltered search takes the tenant's own posting lists however small it is (faster
    than reading its rows at 1,000 of them); a filter that leaves few rows has them read one by
    one, rather than the tenant's matches filtered after."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def fulltext_sql(filters: dict) -> str:
        with CaptureQueriesContext(connection) as queries:
            response = api_a.post("/api/v1/search", {"query": "green tea", "mode": "fulltext", "filters": filters})
        assert response.status_code == 200 and response.json()["results"]
        return next(q["sql"] for q in queries.captured_queries if "FROM memories m " in q["sql"] and "@@" in q["sql"])

    assert "tenant_lexemes" in fulltext_sql({})
    assert "tenant_lexemes" not in fulltext_sql({"category": ["preference"]})


@pytest.mark.parametrize("query", ["green tea", "green or tea?"])
@pytest.mark.parametrize("small", [True, False], ids=["row by row", "through the index"])
def test_full_text_ranks_memories_holding_every_word_first(tenant_a, api_a, small, query):
    """Both paths: the few rows a filter leaves, matched one by one, and the tenant's posting
    lists. A word of the query is never read as an operator: "or" is just a (stop) word."""
    created = {}
    for content in ["Green apples are in the fridge", "The user drinks green tea every morning",
                    "Tea towels are in the drawer", "Tea, tea and more tea", "Invoices go out monthly"]:
        created[content] = api_a.post("/api/v1/memories", {"content": content, "category": "factual"}).json()["memory"]["id"]
    with tenant_context(tenant_a.org.id):
        hits = fulltext.search(tenant_a.org.id, fulltext.query_words(query), SearchFilters(), 10, small=small)
    ids = [str(hit.memory_id) for hit in hits]
    # "Tea, tea and more tea" matches a single word best; only the green tea memory holds both.
    assert ids[0] == created["The user drinks green tea every morning"]
    assert {created["Green apples are in the fridge"], created["Tea towels are in the drawer"],
            created["Tea, tea and more tea"]} <= set(ids[1:])
    assert created["Invoices go out monthly"] not in ids
    assert hits[0].rank == 1 and all(hit.rank > 1 for hit in hits[1:])


def test_work_that_fails_while_full_text_runs_leaves_the_connection_usable(tenant_a, api_a):
    """The statement is in flight (pipeline mode) when the work done meanwhile raises: the
    error surfaces and the same transaction goes on."""
    api_a.post("/api/v1/memories", {"content": "The zeppelin hangar opens at dawn", "category": "factual"})

    def failing():
        raise RuntimeError("the model fell over")

    with tenant_context(tenant_a.org.id):
        with pytest.raises(RuntimeError, match="fell over"):
            with fulltext.started(tenant_a.org.id, ["zeppelin"], SearchFilters(), 5):
                failing()
        with fulltext.started(tenant_a.org.id, ["zeppelin"], SearchFilters(), 5) as text:
            done = "embedded"
        hits = text.hits
    assert done == "embedded" and len(hits) == 1


def test_a_search_narrowed_to_namespaces_is_sized_from_their_tallies_not_by_counting_rows(tenant_a, api_a):
    """A namespace prefix, the key's reach, statuses and the store's items are sized by adding up
    the namespace tallies: the same number counting the rows gives, after writes, a deletion and
    an archive, however many rows the namespaces hold."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memories.access import Actor
    from memories.lifecycle import tallies
    from memories.writes.change import memory_archive

    written = {}
    for namespace, n in ((["users", "a"], 5), (["users", "a", "notes"], 2), (["users", "ab"], 3), (["teams", "x"], 4)):
        response = api_a.post("/api/v1/memories", {"memories": [{"content": f"Fact {i} of {'/'.join(namespace)}",
                                                                 "namespace": namespace} for i in range(n)]})
        assert response.status_code == 201, response.content
        written["/".join(namespace)] = [item["id"] for item in response.json()["results"]]
    for key in ("diet", "city"):
        assert api_a.put("/api/v1/store/items", {"namespace": ["users", "a"], "key": key, "value": {"v": key}}).status_code == 204
    assert api_a.delete(f"/api/v1/memories/{written['users/a'][0]}").status_code in (200, 204)
    with tenant_context(tenant_a.org.id):
        memory_archive(org_id=tenant_a.org.id, memory_id=written["users/a/notes"][0], actor=Actor(agent_id=tenant_a.agent.pk))

    cases = [SearchFilters(namespace="users/a"), SearchFilters(namespace="users"),
             SearchFilters(namespace="users/a", statuses=["archived"]), SearchFilters(namespace="users/a", statuses=[]),
             SearchFilters(within=("users/ab", "teams")), SearchFilters(namespace="users", store_items=True),
             SearchFilters(store_items=True), SearchFilters(namespace="nobody")]
    with tenant_context(tenant_a.org.id):
        with CaptureQueriesContext(connection) as queries:
            sized = [size.candidate_count(tenant_a.org.id, filters) for filters in cases]
        assert not [q for q in queries.captured_queries if "FROM memories" in q["sql"]]
        with connection.cursor() as cursor:
            counted = [size.capped_count(cursor, *filters.where(tenant_a.org.id), 10_000) for filters in cases]
    assert sized == counted == [4 + 1 + 2, 4 + 1 + 2 + 3, 1, 4 + 2 + 2, 3 + 4, 2, 2, 0]
    tallies.fold()  # the deltas added into the tallies: the same sizes
    with tenant_context(tenant_a.org.id):
        assert [size.candidate_count(tenant_a.org.id, filters) for filters in cases] == counted
