"""The Mem0 door's requests one by one, in this process (Django's test client): where Mem0's
entity ids put a memory (namespaces and sessions), what infer means here, the key in Mem0's
`Token` header, and bad input answered 4xx in JSON naming the field, never a stack trace."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from rest_framework.test import APIClient

from memories.models import Memory
from tenants.context import tenant_context
from tenants.models import Session
from tests import factories

pytestmark = pytest.mark.django_db

BASE = "/api/mem0"


@pytest.fixture
def mem0(tenant_a):
    _, key = factories.api_key(agent=tenant_a.agent)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def ok(response) -> dict | list:
    assert response.status_code == 200, response.content
    return response.json()


def add(mem0, messages, **body) -> list[str]:
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    return [r["id"] for r in ok(mem0.post(f"{BASE}/v3/memories/add/", {"messages": messages, **body},
                                          format="json"))["results"]]


def memories(org, **filters) -> list[Memory]:
    with tenant_context(org.id):
        return list(Memory.objects.filter(org_id=org.id, **filters).select_related("session").order_by("created_at"))


# --------------------------------------------------------------------------- where a memory goes


def test_user_agent_and_run_ids_become_a_namespace_and_a_session(tenant_a, mem0):
    add(mem0, "Book the window seat.", user_id="alice", agent_id="planner", run_id="trip-1")
    add(mem0, "Prefer morning flights.", agent_id="planner")
    add(mem0, "Gate B12.", run_id="r-9")
    add(mem0, "Bring the passport.", user_id="alice", run_id="trip-1")
    add(mem0, "Bob's passport expires in June.", user_id="bob", run_id="trip-1")
    add(mem0, "Alice2 collects stamps.", user_id="alice2")  # users/alice2 is not under users/alice

    placed = {m.content: (m.namespace, m.session.external_id if m.session else None, m.session.namespace
                          if m.session else None) for m in memories(tenant_a.org, namespace__regex="^(users|agents|runs)/")}
    assert placed == {
        "Book the window seat.": ("users/alice/agents/planner", "trip-1", "users/alice/agents/planner"),
        "Prefer morning flights.": ("agents/planner", None, None),
        "Gate B12.": ("runs/r-9", "r-9", "runs/r-9"),
        "Bring the passport.": ("users/alice", "trip-1", "users/alice"),
        "Bob's passport expires in June.": ("users/bob", "trip-1", "users/bob"),  # Bob's trip-1 is his own
        "Alice2 collects stamps.": ("users/alice2", None, None),
    }
    with tenant_context(tenant_a.org.id):
        assert Session.objects.filter(org_id=tenant_a.org.id, external_id="trip-1").count() == 3

    def listed(filters) -> set[str]:
        return {m["memory"] for m in ok(mem0.post(f"{BASE}/v3/memories/", {"filters": filters},
                                                  format="json"))["results"]}

    assert listed({"user_id": "alice"}) == {"Book the window seat.", "Bring the passport."}
    assert listed({"user_id": "alice", "agent_id": "planner"}) == {"Book the window seat."}
    assert listed({"AND": [{"user_id": "alice"}, {"run_id": "trip-1"}]}) == {"Book the window seat.",
                                                                            "Bring the passport."}
    assert listed({"agent_id": "planner"}) == {"Prefer morning flights."}  # no user's memories without the user
    assert listed({"run_id": "trip-1"}) == set()  # a run named alone is runs/trip-1: no user's run
    assert listed({"run_id": "r-9"}) == {"Gate B12."}

    ok(mem0.delete(f"{BASE}/v1/memories/?user_id=alice&run_id=trip-1"))  # Alice's trip-1, not Bob's
    assert listed({"user_id": "alice"}) == set()
    assert listed({"user_id": "bob", "run_id": "trip-1"}) == {"Bob's passport expires in June."}


def test_infer_keeps_what_the_user_said_and_without_it_every_turn_verbatim(tenant_a, mem0):
    turns = [{"role": "system", "content": "You are a concierge."},
             {"role": "user", "content": "I'm Carol and I hate cilantro.", "name": "carol"},
             {"role": "assistant", "content": "Noted, no cilantro."}]
    inferred = add(mem0, turns, user_id="carol", metadata={"channel": "web"}, expiration_date="2999-01-31",
                   timestamp=1700000000, custom_instructions="Extract food preferences", includes="food")
    verbatim = add(mem0, turns, user_id="dave", infer=False)

    [said] = memories(tenant_a.org, pk__in=inferred)
    assert (said.content, said.category, said.memory_type, said.source) == (
        "I'm Carol and I hate cilantro.", "factual", "semantic", "user_provided")
    assert said.metadata == {"channel": "web"}
    assert said.expires_at == datetime(2999, 2, 1, tzinfo=UTC)  # visible through 31 January
    assert said.event_time == datetime.fromtimestamp(1700000000, UTC)
    assert [(m.content, m.memory_type, m.metadata) for m in memories(tenant_a.org, pk__in=verbatim)] == [
        ("I'm Carol and I hate cilantro.", "episodic", {"role": "user", "actor_id": "carol"}),
        ("Noted, no cilantro.", "episodic", {"role": "assistant"})]
    answer = ok(mem0.get(f"{BASE}/v1/memories/{inferred[0]}/"))
    assert answer["expiration_date"] == "2999-01-31" and answer["user_id"] == "carol"
    assert add(mem0, [turns[2]], user_id="carol") == []  # infer: an assistant's reply alone keeps nothing


def test_who_said_a_message_is_the_memory_s_speaker(tenant_a, mem0):
    """Issue 34: a message's name is who said it; the assistant without one is the agent the add
    names; a user's message without one has none (user_id is an id, not a name); a name that is
    no person's name stays in the metadata only."""
    turns = [{"role": "user", "content": "I'm Carol and I hate cilantro.", "name": "Carol"},
             {"role": "assistant", "content": "Noted, no cilantro."},
             {"role": "user", "content": "And no olives either."},
             {"role": "user", "content": "Also no capers.", "name": "1234"}]
    ids = add(mem0, turns, user_id="carol", agent_id="Concierge", infer=False)
    speakers = {}
    with tenant_context(tenant_a.org.id):
        for memory in memories(tenant_a.org, pk__in=ids):
            link = memory.entity_links.filter(role="speaker").select_related("entity").first()
            speakers[memory.content] = link.entity.name if link else None
    assert speakers == {"I'm Carol and I hate cilantro.": "Carol", "Noted, no cilantro.": "Concierge",
                        "And no olives either.": None, "Also no capers.": None}
    [inferred] = add(mem0, [turns[0]], user_id="dave")  # infer: the user's words, who said them too
    with tenant_context(tenant_a.org.id):
        assert list(Memory.objects.get(pk=inferred).entity_links.filter(role="speaker")
                    .values_list("entity__name", flat=True)) == ["Carol"]


def test_a_memory_the_door_did_not_write_answers_with_no_user_agent_or_run(tenant_a, mem0):
    answer = ok(mem0.get(f"{BASE}/v1/memories/{tenant_a.other_memory.pk}/"))
    assert (answer["user_id"], answer["agent_id"], answer["session_id"]) == (None, None, None)
    assert answer["memory"] == tenant_a.other_memory.content


# --------------------------------------------------------------------------- the key, and errors


@pytest.mark.parametrize(("header", "message"), [
    (None, "Authentication credentials were not provided."),
    ("Token mp_unknown", "unknown API key"),
    ("Basic abc", "Authorization header must be `Token <API key>` or `Bearer <API key>`"),
])
def test_a_request_without_a_valid_key_is_401_with_mem0_s_detail(tenant_a, header, message):
    client = APIClient()
    if header:
        client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get(f"{BASE}/v1/ping/")
    assert response.status_code == 401 and response["WWW-Authenticate"] == 'Token realm="api"'
    assert response.json()["detail"] == message


def test_the_key_may_come_as_bearer_too(tenant_a):
    _, key = factories.api_key(agent=tenant_a.agent)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    assert ok(client.get(f"{BASE}/v1/ping/")) == {"status": "ok", "org_id": str(tenant_a.org.id),
                                                 "project_id": str(tenant_a.agent.id), "user_email": None}


MESSAGE = [{"role": "user", "content": "Hello"}]
ADD, LIST, SEARCH = f"{BASE}/v3/memories/add/", f"{BASE}/v3/memories/", f"{BASE}/v3/memories/search/"


@pytest.mark.parametrize(("method", "path", "body", "field"), [
    ("post", ADD, {"messages": MESSAGE}, "user_id"),
    ("post", ADD, {"messages": MESSAGE, "user_id": ""}, "user_id"),
    ("post", ADD, {"messages": MESSAGE, "user_id": "a/b"}, "user_id"),
    ("post", ADD, {"messages": MESSAGE, "user_id": "*"}, "user_id"),
    ("post", ADD, {"messages": MESSAGE, "user_id": "x" * 101}, "user_id"),
    ("post", ADD, {"messages": MESSAGE, "user_id": "AKIA" + "Q7HLM2RT9VB4NC8K"}, "user_id"),
    ("post", ADD, {"messages": MESSAGE, "user_id": "a", "app_id": "shop"}, "app_id"),
    ("post", ADD, {"messages": MESSAGE, "user_id": "a", "immutable": True}, "immutable"),
    ("post", ADD, {"messages": MESSAGE, "user_id": "a", "filters": {"user_id": "b"}}, "user_id"),
    ("post", ADD, {"messages": "Hello", "user_id": "a"}, "messages"),
    ("post", ADD, {"messages": [], "user_id": "a"}, "messages"),
    ("post", ADD, {"messages": [{"role": "user"}], "user_id": "a"}, "messages[0].content"),
    ("post", ADD, {"messages": [{"role": "user", "content": {"type": "image_url"}}], "user_id": "a"},
     "messages[0].content"),
    ("post", ADD, {"messages": [{"role": "user", "content": "x" * 8193}], "user_id": "a"}, "messages[0].content"),
    ("post", ADD, {"messages": [{"role": "user", "content": "a\x00b"}], "user_id": "a"}, "messages[0].content"),
    ("post", ADD, {"messages": [{"role": "tool", "content": "x"}], "user_id": "a"}, "messages[0].role"),
    ("post", ADD, {"messages": MESSAGE * 101, "user_id": "a"}, "messages"),
    ("post", ADD, {"messages": MESSAGE, "user_id": "a", "metadata": ["x"]}, "metadata"),
    ("post", ADD, {"messages": MESSAGE, "user_id": "a", "infer": "maybe"}, "infer"),
    ("post", ADD, {"messages": MESSAGE, "user_id": "a", "expiration_date": "soon"}, "expiration_date"),
    ("post", ADD, {"messages": MESSAGE, "user_id": "a", "expiration_date": "9999-12-31"}, "expiration_date"),
    ("post", ADD, {"messages": MESSAGE, "user_id": "a", "timestamp": -1}, "timestamp"),
    ("post", ADD, {"messages": MESSAGE, "user_id": "a", "colour": "red"}, "colour"),
    ("post", LIST, {}, "filters"),
    ("post", LIST, {"filters": {}}, "filters"),
    ("post", LIST, {"filters": "alice"}, "filters"),
    ("post", LIST, {"filters": {"OR": [{"user_id": "a"}]}}, "filters.OR"),
    ("post", LIST, {"filters": {"AND": {"user_id": "a"}}}, "filters.AND"),
    ("post", LIST, {"filters": {"AND": [{"user_id": "a"}, {"app_id": "shop"}]}}, "filters.AND[1].app_id"),
    ("post", LIST, {"filters": {"user_id": {"ne": "a"}}}, "filters.user_id"),
    ("post", LIST, {"filters": {"user_id": "a", "categories": {"in": ["x"]}}}, "filters.categories"),
    ("post", LIST, {"filters": {"AND": [{"user_id": "a"}, {"user_id": "b"}]}}, "filters.AND[1].user_id"),
    ("post", LIST, {"filters": {"user_id": "a", "created_at": {"gte": "last week"}}}, "filters.created_at"),
    ("post", LIST, {"filters": {"user_id": "a", "created_at": {"between": "2024-01-01"}}}, "filters.created_at"),
    ("post", LIST, {"filters": {"user_id": "a", "created_at": {"lte": "9999-12-31"}}}, "filters.created_at"),
    ("post", LIST, {"filters": {"user_id": "a", "created_at": {"gt": 20240101}}}, "filters.created_at"),
    ("post", LIST, {"filters": {"user_id": "a"}, "end_date": "9999-12-31"}, "end_date"),
    ("post", LIST, {"filters": {"user_id": None}}, "filters.user_id"),
    ("post", LIST, {"filters": {"AND": [{"user_id": "a"}, {"AND": [{"run_id": "r"}]}]}}, "filters.AND[1].AND"),
    ("post", LIST, {"filters": {"user_id": "a"}, "page_size": 201}, "page_size"),
    ("post", LIST, {"filters": {"user_id": "a"}, "page": 0}, "page"),
    ("post", LIST, {"filters": {"user_id": "a"}, "user_id": "a"}, "user_id"),
    ("post", LIST, {"filters": {"user_id": "a"}, "categories": ["food"]}, "categories"),
    ("post", LIST, {"filters": {"user_id": "a"}, "fields": ["password"]}, "fields[0]"),
    ("post", LIST, {"filters": {"user_id": "a", "created_at": {"gte": "2024-01-01"}}, "start_date": "2024-01-01"},
     "start_date"),
    ("post", f"{LIST}?page=x", {"filters": {"user_id": "a"}}, "page"),
    ("post", SEARCH, {"query": "x"}, "filters"),
    ("post", SEARCH, {"query": "", "filters": {"user_id": "a"}}, "query"),
    ("post", SEARCH, {"query": "x", "filters": {"user_id": "a"}, "top_k": 0}, "top_k"),
    ("post", SEARCH, {"query": "x", "filters": {"user_id": "a"}, "top_k": 101}, "top_k"),
    ("post", SEARCH, {"query": "x", "filters": {"user_id": "a"}, "threshold": 2}, "threshold"),
    ("post", SEARCH, {"query": "x", "filters": {"user_id": "a"}, "threshold": "NaN"}, "threshold"),
    ("post", SEARCH, {"query": "x", "filters": {"user_id": "a"}, "metadata": {"k": "v"}}, "metadata"),
    ("post", SEARCH, {"query": "x", "filters": {"user_id": "a"}, "reference_date": "2024-01-01"}, "reference_date"),
    ("get", f"{BASE}/v1/memories/not-an-id/", None, "memory_id"),
    ("get", f"{BASE}/v1/memories/not-an-id/history/", None, "memory_id"),
    ("put", f"{BASE}/v1/memories/3f1c9a52-7a0b-4a4e-9d1e-1d2b3c4d5e6f/", {}, "text"),
    ("put", f"{BASE}/v1/memories/3f1c9a52-7a0b-4a4e-9d1e-1d2b3c4d5e6f/", {"text": ""}, "text"),
    ("put", f"{BASE}/v1/memories/3f1c9a52-7a0b-4a4e-9d1e-1d2b3c4d5e6f/", {"timestamp": "noon"}, "timestamp"),
    ("put", f"{BASE}/v1/memories/3f1c9a52-7a0b-4a4e-9d1e-1d2b3c4d5e6f/", {"expiration_date": "9999-12-31"},
     "expiration_date"),
    ("delete", f"{BASE}/v1/memories/3f1c9a52-7a0b-4a4e-9d1e-1d2b3c4d5e6f/?delete_linked=true", None,
     "delete_linked"),
    ("delete", f"{BASE}/v1/memories/", None, "user_id"),
    ("delete", f"{BASE}/v1/memories/?app_id=shop", None, "app_id"),
    ("delete", f"{BASE}/v1/memories/?filters=%7B%27user_id%27%3A+%27a%27%7D", None, "filters"),
    ("delete", f"{BASE}/v1/memories/?user_id=*", None, "user_id"),
    ("delete", f"{BASE}/v2/entities/app/shop/", None, "entity_type"),
    ("delete", f"{BASE}/v2/entities/team/shop/", None, "entity_type"),
    ("delete", f"{BASE}/v2/entities/user/*/", None, "entity_id"),
    ("put", f"{BASE}/v1/batch/", {"memories": []}, "memories"),
    ("put", f"{BASE}/v1/batch/", {"memories": [{"memory_id": "x", "text": "y"}]}, "memories[0].memory_id"),
    ("put", f"{BASE}/v1/batch/", {"memories": [{"memory_id": "3f1c9a52-7a0b-4a4e-9d1e-1d2b3c4d5e6f"}]},
     "memories[0].text"),
    ("delete", f"{BASE}/v1/batch/", {"memories": [{"id": "3f1c9a52-7a0b-4a4e-9d1e-1d2b3c4d5e6f"}]},
     "memories[0].memory_id"),
    ("delete", f"{BASE}/v1/batch/", {"memories": [{"memory_id": "3f1c9a52-7a0b-4a4e-9d1e-1d2b3c4d5e6f"}] * 101},
     "memories"),
    ("post", f"{BASE}/v1/feedback/", {"memory_id": "3f1c9a52-7a0b-4a4e-9d1e-1d2b3c4d5e6f"}, "feedback"),
    ("post", f"{BASE}/v1/feedback/", {"memory_id": "3f1c9a52-7a0b-4a4e-9d1e-1d2b3c4d5e6f", "feedback": "MEH"},
     "feedback"),
])
def test_bad_input_is_a_400_in_json_naming_the_field(mem0, method, path, body, field):
    response = getattr(mem0, method)(path, body, format="json") if body is not None else getattr(mem0, method)(path)
    assert response.status_code == 400, response.content
    answer = response.json()
    assert field in answer["error"]["fields"], answer
    assert answer["detail"] == answer["error"]["message"] and answer["detail"].startswith(field)
    assert "Traceback" not in response.content.decode()


def test_a_body_that_is_not_a_json_object_is_a_400(mem0):
    for body, content_type in (("not json", "application/json"), ("[1, 2]", "application/json")):
        response = mem0.generic("POST", ADD, body, content_type=content_type)
        assert response.status_code == 400 and response.json()["detail"], response.content


def test_a_memory_that_is_not_there_or_deleted_is_a_404(tenant_a, mem0):
    [memory_id] = add(mem0, "Remember the milk.", user_id="erin")
    ok(mem0.delete(f"{BASE}/v1/memories/{memory_id}/"))
    for method, path in (("get", f"/v1/memories/{memory_id}/"), ("delete", f"/v1/memories/{memory_id}/"),
                         ("get", "/v1/memories/3f1c9a52-7a0b-4a4e-9d1e-1d2b3c4d5e6f/")):
        response = getattr(mem0, method)(f"{BASE}{path}")
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found", response.content
    response = mem0.put(f"{BASE}/v1/memories/{memory_id}/", {"text": "Back"}, format="json")
    assert response.status_code == 404
    assert ok(mem0.get(f"{BASE}/v1/memories/{memory_id}/history/"))[-1]["event"] == "DELETE"


def test_what_is_not_served_answers_in_json(mem0):
    response = mem0.post(f"{BASE}/v1/exports/", {"schema": {}, "filters": {"user_id": "a"}}, format="json")
    assert response.status_code == 501 and "language model" in response.json()["detail"]
    response = mem0.get(f"{BASE}/v2/profiles/settings/")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    response = mem0.patch(f"{BASE}/v1/memories/3f1c9a52-7a0b-4a4e-9d1e-1d2b3c4d5e6f/", {}, format="json")
    assert response.status_code == 405 and response.json()["detail"]
