"""Erasure leaves nothing behind: a marker written through every write channel into one end
user's namespace is in no table and no Redis key once that namespace is erased, while the
next user's data, the same in every way, is all still there and still found."""

import uuid

import pytest

from memories.errors import Conflict
from memories.lifecycle import erasure, reembed
from memories.models import Erasure, Memory, Provenance, RetrievalEvent
from memories.vectors.embeddings import INT8_MODEL_NAME
from tenants.context import tenant_context
from tests.markers import committing
from tests.memories.api.test_redaction_channels import redis_values_holding, rows_holding

pytestmark = pytest.mark.django_db


def ok(response, *statuses):
    assert response.status_code in (statuses or (200, 201)), response.content
    return response.json()


def write_everywhere(api, user: str, marker: str) -> list[str]:
    """The marker through every channel an agent writes by, under users/<user>; the ids of the
    memories written."""
    namespace = ["users", user]
    first = ok(api.post("/api/v1/memories", {
        "content": f"{user} keeps the code word {marker} in a drawer", "namespace": namespace,
        "metadata": {"note": marker}, "provenance": {"source_event": marker}, "tags": [marker],
        "entities": [{"name": marker.capitalize(), "type": "person", "aliases": [f"{marker}y"]}]},
        HTTP_IDEMPOTENCY_KEY=f"first-{user}"))["memory"]
    [batch] = ok(api.post("/api/v1/memories", {"memories": [
        {"content": f"Later {user} said {marker} twice", "namespace": namespace, "metadata": {"k": marker}}]}))[
        "results"]
    ok(api.patch(f"/api/v1/memories/{first['id']}", {"content": f"{user} keeps {marker} in the desk",
                                                       "metadata": {"why": marker}}, HTTP_IF_MATCH='"1"'))
    ok(api.post(f"/api/v1/memories/{batch['id']}/relationships", {
        "target_id": first["id"], "relation_type": "supports", "predicate": marker, "metadata": {"m": marker}}))
    ok(api.post(f"/api/v1/memories/{batch['id']}/tags", {"tags": [f"{marker}-tag"]}))
    newer = ok(api.post(f"/api/v1/memories/{batch['id']}/supersede", {"content": f"{user} now says {marker} once",
                                                                      "reason": f"corrected {marker}"}))["memory"]
    assert api.put("/api/v1/store/items", {"namespace": namespace, "key": "code",
                                           "value": {"code": f"code {marker}"}}).status_code == 204
    stored = ok(api.get("/api/v1/memories", {"namespace": "/".join(namespace)}))["results"]
    for path, body in (("/api/v1/search", {"query": f"code word {marker}", "filters": {"namespace": "/".join(namespace)}}),
                       ("/api/v1/retrieve", {"query": f"where is {marker}", "scope": "/".join(namespace)}),
                       ("/api/v1/store/items/search", {"namespace_prefix": namespace, "query": marker})):
        ok(api.post(path, body))
    return [first["id"], batch["id"], newer["id"], next(m["id"] for m in stored if m["key"] == "code")]


@committing
def test_erasing_a_namespace_leaves_no_trace_of_it_anywhere_and_keeps_the_next_users(tenant_a, api_a):
    alice, bob = f"qzv{uuid.uuid4().hex[:10]}", f"qzv{uuid.uuid4().hex[:10]}"  # words no stemmer changes
    alice_ids = write_everywhere(api_a, "alice", alice)
    bob_ids = write_everywhere(api_a, "bob", bob)
    reembed.build(model=INT8_MODEL_NAME)  # vectors of a second model, kept beside the active one's
    assert all("memory_embeddings" in rows_holding(memory_id) for memory_id in alice_ids)
    written = rows_holding(alice)
    assert {"memories", "memory_versions", "memory_relationships", "memory_tags", "idempotency_records",
            "retrieval_events", "entities", "entity_aliases"} <= set(written), written
    assert "memory_entities" in rows_holding(alice.capitalize())  # the mention, as written
    assert set(written) & {"memory_lexeme_deltas", "memory_lexeme_stats"}, written  # folded or not yet
    assert {key.split(":")[1] for i in alice_ids for key in redis_values_holding(i)} >= {"hot_memories", "retrievals"}

    erased = ok(api_a.post("/api/v1/erase", {"namespace": ["users", "alice"]}))

    assert erased["scope"] == {"namespace": "users/alice", "agent": str(tenant_a.agent.id)}
    assert erased["erased"]["memories"] >= len(alice_ids) and erased["dry_run"] is False
    assert rows_holding(alice) == {} and rows_holding(alice.capitalize()) == {}
    for memory_id in alice_ids:
        assert rows_holding(memory_id) == {}, memory_id
    assert redis_values_holding(alice) == []
    # Only the queue's job records may still name an id (the embedding job's arguments; it
    # finds nothing to do, and its record expires): no hot set, counter or cache does.
    assert {i: [key for key in redis_values_holding(i) if not key.startswith("rq:")] for i in alice_ids} == (
        dict.fromkeys(alice_ids, []))
    # Bob's places in the hot set and the retrieval counters stay (they are memories still there).
    assert {key.split(":")[1] for i in bob_ids for key in redis_values_holding(i)} >= {"hot_memories", "retrievals"}
    # The record says who, what and how much; never what.
    with tenant_context(tenant_a.org.id):
        record = Erasure.objects.get(pk=erased["erasure_id"])
    assert (record.via, record.requested_by_agent_id, record.counts) == ("api", tenant_a.agent.id, erased["erased"])
    # Bob's memories, written the same way beside Alice's, are all there and found.
    assert {"memories", "memory_versions", "retrieval_events", "entities"} <= set(rows_holding(bob))
    found = ok(api_a.post("/api/v1/search", {"query": f"code word {bob}", "filters": {"namespace": "users/bob"}}))
    assert {result["memory"]["id"] for result in found["results"]} & set(bob_ids)
    assert ok(api_a.get(f"/api/v1/memories/{bob_ids[0]}"))["content"].endswith("in the desk")
    # So are the rows of the organisation outside users/ (the populated tenant's).
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.filter(pk=tenant_a.memory.pk).exists()
    # Erased again: there is nothing left, and it says so.
    again = api_a.post("/api/v1/erase", {"namespace": ["users", "alice"]})
    assert again.status_code == 404 and "nothing to erase in namespace users/alice" in again.json()["error"]["message"]


def test_a_dry_run_counts_and_erases_nothing(api_a):
    ids = [ok(api_a.post("/api/v1/memories", {"content": f"Carol's note {n}", "namespace": ["users", "carol"]}))[
        "memory"]["id"] for n in range(3)]
    counted = ok(api_a.post("/api/v1/erase", {"namespace": ["users", "carol"], "dry_run": True}))
    assert counted["dry_run"] is True and counted["erasure_id"] is None and counted["erased"]["memories"] == 3
    assert all(api_a.get(f"/api/v1/memories/{memory_id}").status_code == 200 for memory_id in ids)
    assert ok(api_a.post("/api/v1/erase", {"namespace": ["users", "carol"]}))["erased"]["memories"] == 3
    assert all(api_a.get(f"/api/v1/memories/{memory_id}").status_code == 404 for memory_id in ids)


def test_an_erasure_confirmed_for_what_a_dry_run_counted_erases_exactly_that(tenant_a, api_a):
    """expected_digest (MCP's erase_namespace confirms by it): a namespace that changed since it was
    counted is not erased at all."""
    def write(content):
        return ok(api_a.post("/api/v1/memories", {"content": content, "namespace": ["users", "hal"]}))["memory"]["id"]

    scope = erasure.ErasureScope(namespace="users/hal", agent_id=tenant_a.agent.id)
    ids = [write("Hal sails"), write("Hal reads Greek")]
    with tenant_context(tenant_a.org.id):
        counted = erasure.erase(tenant_a.org.id, scope, via="api", dry_run=True)
    assert counted.counts["memories"] == 2 and counted.digest == erasure.memories_digest(reversed(ids))
    ids.append(write("Hal moved to Crete"))
    with tenant_context(tenant_a.org.id), pytest.raises(Conflict) as changed:
        erasure.erase(tenant_a.org.id, scope, via="api", expected_digest=counted.digest)
    assert changed.value.code == "scope_changed" and "holds 3 now" in changed.value.message
    assert all(api_a.get(f"/api/v1/memories/{memory_id}").status_code == 200 for memory_id in ids)
    with tenant_context(tenant_a.org.id):
        recounted = erasure.erase(tenant_a.org.id, scope, via="api", dry_run=True)
        done = erasure.erase(tenant_a.org.id, scope, via="api", expected_digest=recounted.digest)
    assert done.counts["memories"] == 3 and done.digest == recounted.digest != counted.digest
    assert all(api_a.get(f"/api/v1/memories/{memory_id}").status_code == 404 for memory_id in ids)


def test_a_namespace_prefix_erases_what_is_under_it_and_nothing_beside_it(api_a):
    def write(*namespace):
        return ok(api_a.post("/api/v1/memories", {"content": f"a note in {'/'.join(namespace)}",
                                                  "namespace": list(namespace)}))["memory"]["id"]

    under = [write("users", "dave"), write("users", "dave", "trips"), write("users", "dave", "trips", "2024")]
    beside = [write("users", "daveed"), write("users", "dave-2"), write("users")]
    assert ok(api_a.post("/api/v1/erase", {"namespace": ["users", "dave"]}))["erased"]["memories"] == 3
    assert [api_a.get(f"/api/v1/memories/{i}").status_code for i in under] == [404] * 3
    assert [api_a.get(f"/api/v1/memories/{i}").status_code for i in beside] == [200] * 3


def test_an_agent_erases_only_its_own_memories(tenant_a, api_a, api_client_for):
    from tests import factories

    other_agent = factories.agent(org=tenant_a.org, name="another agent")
    api_other = api_client_for(other_agent)
    mine = ok(api_a.post("/api/v1/memories", {"content": "Erin likes figs", "namespace": ["users", "erin"]}))
    theirs = ok(api_other.post("/api/v1/memories", {"content": "Erin likes plums", "namespace": ["users", "erin"]}))
    assert ok(api_a.post("/api/v1/erase", {"namespace": ["users", "erin"]}))["erased"]["memories"] == 1
    assert api_a.get(f"/api/v1/memories/{mine['memory']['id']}").status_code == 404
    assert api_a.get(f"/api/v1/memories/{theirs['memory']['id']}").status_code == 200


def test_an_organisation_can_never_erase_anothers_memories(api_a, api_b, tenant_b):
    """B's namespace of the same name is out of A's erasure, and B's session is unknown to A."""
    kept = ok(api_b.post("/api/v1/memories", {"content": "Frank's address", "namespace": ["users", "frank"]}))
    ok(api_a.post("/api/v1/memories", {"content": "Frank's order", "namespace": ["users", "frank"]}))
    assert ok(api_a.post("/api/v1/erase", {"namespace": ["users", "frank"]}))["erased"]["memories"] == 1
    assert api_b.get(f"/api/v1/memories/{kept['memory']['id']}").status_code == 200
    response = api_a.post("/api/v1/erase", {"session": str(tenant_b.session.id)})
    assert response.status_code == 404
    with tenant_context(tenant_b.org.id):
        assert Memory.objects.filter(session_id=tenant_b.session.id).exists()


def test_erasing_a_session_takes_its_memories_and_the_session(tenant_a, api_a):
    session = tenant_a.session
    in_session = ok(api_a.post("/api/v1/memories", {"content": "Said in the session", "session_id": str(session.id),
                                                    "namespace": ["memories", "user-1"]}))["memory"]["id"]
    outside = ok(api_a.post("/api/v1/memories", {"content": "Said elsewhere", "namespace": ["memories", "user-1"]}))
    erased = ok(api_a.post("/api/v1/erase", {"session": str(session.id)}))
    assert erased["erased"]["sessions"] == 1 and erased["erased"]["memories"] >= 2  # the fixture's own one too
    assert api_a.get(f"/api/v1/memories/{in_session}").status_code == 404
    assert api_a.get(f"/api/v1/memories/{outside['memory']['id']}").status_code == 200


def test_a_read_only_or_limited_key_cannot_erase_beyond_what_it_may_write(tenant_a, api_client_for):
    from rest_framework.test import APIClient

    from tests import factories

    writer = APIClient()
    _, key = factories.api_key(agent=tenant_a.agent, namespaces=["users/gina"])
    writer.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    ok(writer.post("/api/v1/memories", {"content": "Gina's note", "namespace": ["users", "gina"]}))
    refused = writer.post("/api/v1/erase", {"namespace": ["users"]})
    assert refused.status_code == 403 and "may only write under users/gina" in refused.json()["error"]["message"]
    reader = APIClient()
    _, key = factories.api_key(agent=tenant_a.agent, read_only=True)
    reader.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    for body in ({"namespace": ["users", "gina"]}, {"session": str(tenant_a.session.id)}):
        response = reader.post("/api/v1/erase", body)
        assert response.status_code == 403 and response.json()["error"]["message"] == "this API key is read-only"
    assert ok(writer.post("/api/v1/erase", {"namespace": ["users", "gina"]}))["erased"]["memories"] == 1


@pytest.mark.parametrize(("body", "field"), [
    ({}, "namespace"), ({"namespace": ["users", "x"], "session": str(uuid.uuid4())}, "namespace"),
    ({"namespace": []}, "namespace"), ({"namespace": "users//x"}, "namespace"), ({"session": "nope"}, "session"),
    ({"namespace": ["users", "x"], "everything": True}, "everything"),
])
def test_bad_erasure_requests_are_refused_and_erase_nothing(tenant_a, api_a, body, field):
    with tenant_context(tenant_a.org.id):
        before = Memory.objects.count()
    response = api_a.post("/api/v1/erase", body)
    assert response.status_code == 400 and field in response.json()["error"]["fields"], response.json()
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.count() == before


def test_erasing_an_empty_or_unknown_scope_says_so(api_a):
    for body, words in (({"namespace": ["users", "nobody"]}, "namespace users/nobody"),
                        ({"session": "00000000-0000-4000-8000-000000000000"}, "session 00000000-")):
        response = api_a.post("/api/v1/erase", body)
        assert response.status_code == 404 and words in response.json()["error"]["message"], response.json()


@pytest.mark.parametrize("keyed", [True, False], ids=["each-by-key", "by-scans"])
@pytest.mark.parametrize("kind", ["namespace", "agent", "session", "everything"])
def test_a_dry_run_counts_by_the_erasures_conditions_exactly_what_it_then_deletes(
        tenant_a, api_a, api_client_for, kind, keyed, monkeypatch):
    """A dry run deletes nothing (erasure._count counts at once what _erase deletes batch by
    batch): its counts of every kind of row, and its digest, are those of the erasure confirmed
    after it, on memories with versions, relationships across the scope's edge, tags, entities
    of their own and shared, retrieval events, provenance, idempotency records and a session on
    both sides. Two memories to a batch, so that what is shared between batches (an entity, a
    relationship, a search that returned both) goes once, with the last memory that held it.
    A narrowed scope of few memories is counted by a lookup of each, one of many by scans
    (erasure.KEYED_MEMORIES): both ways."""
    from tenants.models import Session
    from tests import factories

    monkeypatch.setattr(erasure, "BATCH", 2)
    monkeypatch.setattr(erasure, "KEYED_MEMORIES", erasure.KEYED_MEMORIES if keyed else 0)

    other = factories.agent(org=tenant_a.org, name="the other agent")
    with tenant_context(tenant_a.org.id):  # one under the namespace erased, one across it
        Session.objects.create(org=tenant_a.org, agent=tenant_a.agent, namespace="users/alice")
        Session.objects.create(org=tenant_a.org, agent=other, namespace="users/bob")
        session = Session.objects.create(org=tenant_a.org, agent=tenant_a.agent, namespace="users")
    api_other = api_client_for(other)
    alice = write_everywhere(api_a, "alice", f"qzv{uuid.uuid4().hex[:10]}")
    bob = write_everywhere(api_other, "bob", f"qzv{uuid.uuid4().hex[:10]}")
    shared = {"name": "Quentin Sharedperson", "type": "person"}
    met = [ok(api.post("/api/v1/memories", {"content": f"Quentin met someone in {'/'.join(namespace)}",
                                            "namespace": namespace, "entities": [shared],
                                            "session_id": str(session.id)}))["memory"]["id"]
           for api, namespace in ((api_a, ["users", "alice"]), (api_other, ["users", "bob"]), (api_a, ["users", "bob"]))]
    for api, source, target in ((api_a, alice[0], bob[0]), (api_other, bob[1], alice[1]), (api_a, met[0], bob[2])):
        ok(api.post(f"/api/v1/memories/{source}/relationships", {"target_id": target, "relation_type": "supports"}))
    ok(api_a.post("/api/v1/search", {"query": "Quentin met someone"}))  # returns memories on both sides
    with tenant_context(tenant_a.org.id):
        for memory_id in (*alice, *bob, *met):
            Provenance.objects.create(org=tenant_a.org, memory_id=memory_id, source_event="imported")
        for event in RetrievalEvent.objects.all():
            Provenance.objects.create(org=tenant_a.org, retrieval_event=event, source_event="asked")
    scope = {"namespace": erasure.ErasureScope(namespace="users/alice"),
             "agent": erasure.ErasureScope(agent_id=other.id),
             "session": erasure.ErasureScope(session_id=session.id),
             "everything": erasure.ErasureScope(everything=True)}[kind]

    with tenant_context(tenant_a.org.id):
        held, recorded = Memory.objects.count(), Erasure.objects.count()
        counted = erasure.erase(tenant_a.org.id, scope, via="api", dry_run=True)
        assert (Memory.objects.count(), Erasure.objects.count()) == (held, recorded)
        done = erasure.erase(tenant_a.org.id, scope, via="api", expected_digest=counted.digest)

    assert done.counts == counted.counts and done.digest == counted.digest
    assert done.counts["memories"] < held if kind != "everything" else done.counts["memories"] == held
    written = {name for name, count in counted.counts.items() if count}
    assert {"memories", "versions", "relationships", "entity_links", "provenance", "retrieval_events",
            "sessions"} <= written, counted.counts
    if kind in ("namespace", "agent", "everything"):
        assert {"tags", "entities", "entity_aliases", "idempotency_records"} <= written, counted.counts


@committing  # the statistics the planner costs the index by count committed rows
def test_the_searches_that_returned_a_memory_are_found_on_their_index_under_row_level_security(tenant_a):
    """An erasure's events (&&) and explain's searches (@>) read the GIN index on
    returned_memory_ids as the application's role, row-level security on: the array matches are
    LEAKPROOF (memory_platform.local_services; docs/adr/0052), or the planner keeps the index
    out of a tenant's statements and reads every event of the organisation."""
    from django.db import connection, connections

    from memories.retrieval.explain import RETRIEVALS_SHOWN
    from tests.plans import explained, plan_nodes

    memory_id = tenant_a.memory.pk
    explain_searches = (RetrievalEvent.objects.filter(org_id=tenant_a.org.id, returned_memory_ids__contains=[memory_id])
                        .order_by("-created_at")[:RETRIEVALS_SHOWN])
    with tenant_context(tenant_a.org.id):
        RetrievalEvent.objects.bulk_create(  # enough searches of others that reading them all costs more
            RetrievalEvent(org=tenant_a.org, kind="search", query=f"search {n}", returned_memory_ids=[uuid.uuid4()],
                           returned_scores=[0.5]) for n in range(2_000))
    with connections["owner"].cursor() as cursor:
        cursor.execute("ANALYZE retrieval_events")
    with tenant_context(tenant_a.org.id), connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
        assert cursor.fetchone() == (False, False)
        # Only the plan's choice is forced (a few rows read sequentially cost less); not whether it may.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")
        plans = {}
        cursor.execute("EXPLAIN (FORMAT JSON) " + erasure.RETURNING_ANY_SQL, [[memory_id], tenant_a.org.id])
        plans["erasure"] = cursor.fetchone()[0]
        sql, params = explain_searches.query.sql_with_params()
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        plans["explain"] = cursor.fetchone()[0]
    read = {name: "retrieval_events_returned" in {node.get("Index Name") for node in plan_nodes(explained(plan))}
            for name, plan in plans.items()}
    assert read == {"erasure": True, "explain": True}
