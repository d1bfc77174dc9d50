"""The MCP server driven by the official `mcp` client over Streamable HTTP, against the product's
real ASGI app (uvicorn, a free port): the tools listed for a language model, each called, the
errors a model can make (unknown tool, missing or bad arguments, oversized values: clear tool
errors, nothing written), and the same tenancy as the REST API (a wrong key, a read-only key,
another organisation's key, a key limited to one user's namespace)."""

from __future__ import annotations

import json

import anyio
import httpx2
import pytest

from memories.models import CONTENT_MAX_CHARS, Memory
from memories.retrieval import context
from memory_platform import rate_limits as limits
from tenants import services
from tenants.context import tenant_context
from tests import factories
from tests.integrations.mcp.client import data_of, mcp_client, text_of
from tests.markers import committing

pytestmark = pytest.mark.slow

TOOLS = {"search_memory", "remember_fact", "correct_fact", "confirm_fact", "forget", "get_entity_info",
         "memory_stats", "explain_fact", "weak_facts", "assemble_context", "open_session", "list_sessions",
         "close_session", "list_session_memories", "erase_namespace", "replay_retrieval", "store_put", "store_get",
         "store_delete", "store_list_keys", "store_list_namespaces"}


def calls(url: str, key: str, *steps):
    """Run each (tool, arguments) in one connection; the results, in order."""

    async def main():
        async with mcp_client(url, key) as client:
            return [await client.call_tool(name, arguments) for name, arguments in steps]

    return anyio.run(main)


def call(url: str, key: str, name: str, arguments: dict):
    return calls(url, key, (name, arguments))[0]


def memories_of(org) -> int:
    with tenant_context(org.id):
        return Memory.objects.filter(org_id=org.id).count()


@pytest.fixture
def key_a(tenant_a):
    return factories.api_key(agent=tenant_a.agent)[1]


@committing
def test_the_tools_are_listed_with_descriptions_and_input_schemas(tenant_a, key_a, served):
    async def main():
        async with mcp_client(served.url, key_a) as client:
            return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in anyio.run(main)}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert len(tool.description) > 40, tool.name
        assert tool.input_schema["type"] == "object"
        assert "ctx" not in tool.input_schema["properties"]
    assert tools["search_memory"].input_schema["required"] == ["query"]
    assert tools["remember_fact"].input_schema["required"] == ["content"]
    assert set(tools["correct_fact"].input_schema["required"]) == {"memory_id", "content"}
    assert set(tools["erase_namespace"].input_schema["required"]) == {"namespace"}
    assert "confirmation" in tools["erase_namespace"].input_schema["properties"]
    assert tools["search_memory"].annotations.read_only_hint and tools["forget"].annotations.destructive_hint
    assert tools["erase_namespace"].annotations.destructive_hint
    assert {name for name, tool in tools.items() if tool.annotations.read_only_hint} == {
        "search_memory", "get_entity_info", "memory_stats", "explain_fact", "weak_facts", "assemble_context",
        "list_sessions", "list_session_memories", "replay_retrieval", "store_get", "store_list_keys",
        "store_list_namespaces"}
    assert tools["remember_fact"].input_schema["properties"]["category"]["anyOf"][0]["enum"] == \
        list(Memory.Category.values)
    assembly = tools["assemble_context"].input_schema["properties"]
    assert assembly["order"]["enum"] == list(context.ORDERS) and assembly["encoding"]["enum"] == list(context.ENCODINGS)


@committing
def test_every_tool_called_in_an_agent_s_session(tenant_a, key_a, served):
    remembered, found = (data_of(r) for r in calls(
        served.url, key_a,
        ("remember_fact", {"content": "Alice is allergic to peanuts", "namespace": ["users", "alice"],
                           "category": "factual", "tags": ["health"], "importance": 0.9}),
        ("search_memory", {"query": "What is Alice allergic to?", "namespace": "users/alice"}),
    ))
    assert remembered["created"] and remembered["memory"]["namespace"] == ["users", "alice"]
    assert found["results"][0]["id"] == remembered["memory"]["id"] and found["retrieval_event_id"]
    first = remembered["memory"]["id"]

    corrected = data_of(call(served.url, key_a, "correct_fact", {
        "memory_id": first, "content": "Alice is allergic to peanuts and shellfish", "reason": "she said so"}))
    assert corrected["superseded"]["status"] == "superseded"
    replacement = corrected["memory"]["id"]
    assert corrected["memory"]["namespace"] == ["users", "alice"] and replacement != first

    confirmed, explained, weak, stats, entity, by_id = (data_of(r) for r in calls(
        served.url, key_a,
        ("confirm_fact", {"memory_id": replacement}),
        ("explain_fact", {"memory_id": first}),
        ("weak_facts", {"below": 1.0, "limit": 5}),
        ("memory_stats", {"namespace": "users/alice"}),
        ("get_entity_info", {"name": "lisb"}),
        ("get_entity_info", {"entity_id": str(tenant_a.entity.pk)}),
    ))
    assert confirmed["memory"]["is_protected"] and confirmed["memory"]["confidence"] == 1.0
    assert [v["operation"] for v in explained["versions"]][-1] == "supersede"
    assert explained["memory"]["superseded_by"] == replacement
    assert weak["count"] >= 1 and {"strength", "archived_after"} <= set(weak["results"][0])
    assert stats["memories"]["total"] == 2 and stats["memories"]["by_status"] == {"active": 1, "superseded": 1}
    assert entity["name"] == "Lisbon" and entity["facts"] and by_id["id"] == entity["id"]

    put, got, keys, namespaces, deleted, gone = calls(
        served.url, key_a,
        ("store_put", {"namespace": ["users", "alice"], "key": "diet", "value": {"text": "vegetarian"}}),
        ("store_get", {"namespace": ["users", "alice"], "key": "diet"}),
        ("store_list_keys", {"namespace": ["users", "alice"]}),
        ("store_list_namespaces", {"prefix": ["users"]}),
        ("store_delete", {"namespace": ["users", "alice"], "key": "diet"}),
        ("store_get", {"namespace": ["users", "alice"], "key": "diet"}),
    )
    assert data_of(put)["created"] and data_of(got)["value"] == {"text": "vegetarian"}
    assert data_of(keys) == {"namespace": ["users", "alice"], "keys": ["diet"]}
    assert ["users", "alice"] in data_of(namespaces)["namespaces"]
    assert data_of(deleted)["deleted"]
    assert gone.is_error and "not_found: " in text_of(gone)

    forgotten, after = calls(served.url, key_a, ("forget", {"memory_id": replacement}),
                             ("search_memory", {"query": "What is Alice allergic to?", "namespace": "users/alice"}))
    assert data_of(forgotten)["forgotten"] == replacement
    assert replacement not in {result["id"] for result in data_of(after)["results"]}


# --------------------------------------------------------------------------- what a model gets wrong


@committing
def test_bad_calls_are_clear_tool_errors_and_write_nothing(tenant_a, key_a, served):
    before = memories_of(tenant_a.org)
    unknown, missing, oversized, wrong_type, unstorable, bad_namespace, not_a_uuid, no_such, after = calls(
        served.url, key_a,
        ("remember_everything", {"content": "x"}),
        ("remember_fact", {}),
        ("remember_fact", {"content": "x" * (CONTENT_MAX_CHARS + 1)}),
        ("remember_fact", {"content": "x", "importance": "very"}),
        ("remember_fact", {"content": "nul \u0000 inside"}),
        ("store_put", {"namespace": ["users/alice"], "key": "diet", "value": {"text": "vegetarian"}}),
        ("explain_fact", {"memory_id": "not-a-uuid"}),
        ("confirm_fact", {"memory_id": "00000000-0000-4000-8000-000000000000"}),
        ("search_memory", {"query": "tea"}),  # the connection still serves after all of them
    )
    assert unknown.is_error and "remember_everything" in text_of(unknown)
    assert missing.is_error and "content" in text_of(missing)
    assert oversized.is_error and "content" in text_of(oversized) and str(CONTENT_MAX_CHARS) in text_of(oversized)
    assert wrong_type.is_error and "importance" in text_of(wrong_type)
    assert unstorable.is_error and "content" in text_of(unstorable) and "NUL" in text_of(unstorable)
    assert bad_namespace.is_error and "namespace" in text_of(bad_namespace)
    assert not_a_uuid.is_error and "memory_id" in text_of(not_a_uuid)
    assert no_such.is_error and "not_found: " in text_of(no_such)
    assert not after.is_error
    assert memories_of(tenant_a.org) == before
    for result in (unknown, missing, oversized, wrong_type, unstorable, bad_namespace, not_a_uuid, no_such):
        assert "Traceback" not in text_of(result) and "memory_app" not in text_of(result)


@committing
def test_a_body_above_the_request_limit_is_refused_before_mcp(tenant_a, key_a, served, settings):
    response = httpx2.post(served.url, headers={"Authorization": f"Bearer {key_a}", "Content-Type": "application/json",
                                                "Accept": "application/json, text/event-stream"},
                           content=b"x" * (3 * 1024 * 1024), timeout=60)
    assert response.status_code == 413


# --------------------------------------------------------------------------- keys and tenancy


def post_raw(served, key: str | None):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    return httpx2.post(served.url, headers=headers, content=json.dumps(body), timeout=30)


@committing
def test_a_missing_unknown_or_revoked_key_is_a_401_before_mcp(tenant_a, served):
    api_key, key = factories.api_key(agent=tenant_a.agent)
    for sent, code in ((None, "not_authenticated"), ("mp_not-a-key", "authentication_failed"),
                       ("not bearer", "authentication_failed")):
        response = post_raw(served, sent) if sent != "not bearer" else httpx2.post(
            served.url, headers={"Authorization": "Basic abc"}, content=b"{}", timeout=30)
        assert response.status_code == 401 and response.json()["error"]["code"] == code, response.text
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    answered = post_raw(served, key)
    assert answered.status_code == 200 and answered.headers["X-Content-Type-Options"] == "nosniff"
    assert answered.headers["Cache-Control"] == "no-store"
    with tenant_context(tenant_a.org.id):
        services.api_key_revoke(api_key=api_key)
    response = post_raw(served, key)
    assert response.status_code == 401 and "revoked" in response.json()["error"]["message"]

    async def with_the_client():
        with anyio.fail_after(30):  # refused, never hanging
            async with mcp_client(served.url, key) as client:
                await client.list_tools()

    with pytest.raises(BaseException) as refused:
        anyio.run(with_the_client)
    assert not isinstance(refused.value, TimeoutError)


@committing
def test_a_read_only_key_reads_and_searches_but_never_writes(tenant_a, served):
    _, key = factories.api_key(agent=tenant_a.agent, read_only=True)
    memory = tenant_a.memory
    before = memories_of(tenant_a.org)
    results = calls(
        served.url, key,
        ("remember_fact", {"content": "a read-only key wrote this"}),
        ("correct_fact", {"memory_id": str(memory.pk), "content": "changed"}),
        ("confirm_fact", {"memory_id": str(memory.pk)}),
        ("forget", {"memory_id": str(memory.pk)}),
        ("store_put", {"namespace": ["users", "alice"], "key": "diet", "value": {"text": "vegan"}}),
        ("store_delete", {"namespace": ["memories", "user-1"], "key": "diet"}),
        ("open_session", {"namespace": ["users", "alice"]}),
        ("close_session", {"session_id": str(tenant_a.session.pk)}),
        ("erase_namespace", {"namespace": ["memories", "user-1"]}),
    )
    for result in results:
        assert result.is_error and text_of(result).endswith("out_of_reach: this API key is read-only"), text_of(result)
    searched, explained = calls(served.url, key, ("search_memory", {"query": "tea"}),
                                ("explain_fact", {"memory_id": str(memory.pk)}))
    assert data_of(searched)["results"] and data_of(explained)["memory"]["id"] == str(memory.pk)
    assert memories_of(tenant_a.org) == before
    with tenant_context(tenant_a.org.id):
        memory.refresh_from_db()
    assert memory.version == 1 and memory.deleted_at is None and not memory.is_protected


@committing
def test_another_organisation_s_key_never_reaches_a_s_memories(tenant_a, tenant_b, served):
    _, key_b = factories.api_key(agent=tenant_b.agent)
    a_memory, a_entity = tenant_a.memory, tenant_a.entity
    with tenant_context(tenant_a.org.id):
        factories.memory(org=tenant_a.org, agent=tenant_a.agent, namespace="users/alice/profile", key="diet",
                         content="Alpha's secret diet is keto")
    a_ids = {str(m) for m in (tenant_a.memory.pk, tenant_a.other_memory.pk)}
    searched, stats, namespaces, keys, got, explained, corrected, confirmed, forgotten, entity, named = calls(
        served.url, key_b,
        ("search_memory", {"query": "Alpha Corp prefers tea over coffee", "limit": 100}),
        ("memory_stats", {}),
        ("store_list_namespaces", {}),
        ("store_list_keys", {"namespace": ["users", "alice", "profile"]}),
        ("store_get", {"namespace": ["users", "alice", "profile"], "key": "diet"}),
        ("explain_fact", {"memory_id": str(a_memory.pk)}),
        ("correct_fact", {"memory_id": str(a_memory.pk), "content": "Beta overwrote this"}),
        ("confirm_fact", {"memory_id": str(a_memory.pk)}),
        ("forget", {"memory_id": str(a_memory.pk)}),
        ("get_entity_info", {"entity_id": str(a_entity.pk)}),
        ("get_entity_info", {"name": "Lisbon"}),
    )
    found = {result["id"] for result in data_of(searched)["results"]}
    assert found and not found & a_ids and all("Alpha" not in r["content"] for r in data_of(searched)["results"])
    assert data_of(stats)["memories"]["total"] == memories_of(tenant_b.org)
    assert ["users", "alice", "profile"] not in data_of(namespaces)["namespaces"]
    assert data_of(keys)["keys"] == []
    for refused in (got, explained, corrected, confirmed, forgotten, entity):
        assert refused.is_error and "not_found: " in text_of(refused), text_of(refused)
    assert data_of(named)["id"] != str(a_entity.pk)  # B's own Lisbon
    with tenant_context(tenant_a.org.id):
        a_memory.refresh_from_db()
    assert a_memory.version == 1 and a_memory.deleted_at is None and a_memory.status == "active"


@committing
def test_a_key_limited_to_bob_sees_nothing_of_alice(tenant_a, served):
    _, key_bob = factories.api_key(agent=tenant_a.agent, namespaces=["users/bob"])
    _, key_all = factories.api_key(agent=tenant_a.agent)
    alice = data_of(call(served.url, key_all, "remember_fact",
                         {"content": "Alice keeps her passport in the blue drawer", "namespace": ["users", "alice"]}))
    calls(served.url, key_all, ("store_put", {"namespace": ["users", "alice"], "key": "diet", "value": {"text": "vegan"}}),
          ("store_put", {"namespace": ["users", "bob"], "key": "diet", "value": {"text": "omnivore"}}))
    alice_id = alice["memory"]["id"]
    before = memories_of(tenant_a.org)
    (searched, wrote_alice, wrote_bob, explained, forgotten, got, keys, namespaces, weak,
     put_alice) = calls(
        served.url, key_bob,
        ("search_memory", {"query": "Where is the passport?", "limit": 100}),
        ("remember_fact", {"content": "Bob wrote into Alice's memory", "namespace": ["users", "alice"]}),
        ("remember_fact", {"content": "Bob likes chess", "namespace": ["users", "bob"]}),
        ("explain_fact", {"memory_id": alice_id}),
        ("forget", {"memory_id": alice_id}),
        ("store_get", {"namespace": ["users", "alice"], "key": "diet"}),
        ("store_list_keys", {"namespace": ["users", "alice"]}),
        ("store_list_namespaces", {}),
        ("weak_facts", {"below": 1.0, "limit": 200}),
        ("store_put", {"namespace": ["users", "alice"], "key": "diet", "value": {"text": "carnivore"}}),
    )
    assert all(r["namespace"][:2] == ["users", "bob"] for r in data_of(searched)["results"])
    assert wrote_alice.is_error and "out_of_reach: " in text_of(wrote_alice)
    assert put_alice.is_error and "out_of_reach: " in text_of(put_alice)
    assert data_of(wrote_bob)["memory"]["namespace"] == ["users", "bob"]
    for refused in (explained, forgotten, got):
        assert refused.is_error and "not_found: " in text_of(refused), text_of(refused)
    assert data_of(keys)["keys"] == []
    assert data_of(namespaces)["namespaces"] == [["users", "bob"]]
    assert all(r["namespace"][:2] == ["users", "bob"] for r in data_of(weak)["results"])
    assert memories_of(tenant_a.org) == before + 1  # Bob's own fact only


@committing
def test_the_key_s_rate_limits_count_mcp_calls_as_the_api_s(tenant_a, key_a, served, rate_limits):
    rate_limits(API_KEY="3/min", SEARCH="1/min", UNAUTHENTICATED="2/min")
    assert [post_raw(served, key_a).status_code for _ in range(4)] == [200, 200, 200, 429]
    over = post_raw(served, key_a)
    assert over.json()["error"]["code"] == "rate_limited" and int(over.headers["Retry-After"]) >= 1
    assert [post_raw(served, "mp_not-a-key").status_code for _ in range(3)] == [401, 401, 429]

    rate_limits(API_KEY="100000/min", SEARCH="1/min")
    limits.forget_all()
    first, second, other = calls(served.url, key_a, ("search_memory", {"query": "tea"}),
                                 ("search_memory", {"query": "coffee"}), ("memory_stats", {}))
    assert not first.is_error and not other.is_error
    assert second.is_error and "rate_limited: too many search calls" in text_of(second)


@committing
def test_a_tool_call_runs_in_one_transaction_as_the_key_s_organisation(tenant_a, tenant_b):
    from django.db import connection
    from mcp.server.mcpserver.exceptions import ToolError

    from integrations.mcp.boundary import Caller, call_in_tenant
    from memories.access import EVERYWHERE
    from memories.errors import InvalidInput
    from memories.writes import create
    from tenants import context

    caller = Caller(org_id=tenant_a.org.id, agent_id=tenant_a.agent.id, api_key_id=tenant_a.api_key.id,
                    reach=EVERYWHERE)
    # No org filter here: row-level security alone shows A's rows, though B has as many.
    org, atomic, visible = call_in_tenant(caller, {}, lambda c: (context.current_org_id(), connection.in_atomic_block,
                                                                 Memory.objects.count()))
    assert org == tenant_a.org.id and atomic and visible == memories_of(tenant_a.org) > 0

    def write_then_refuse(c):
        create.memory_create(org_id=c.org_id, agent_id=c.agent_id, content="written, then rolled back",
                             category="factual")
        raise InvalidInput("refused after a write", field="content")

    with pytest.raises(ToolError, match="invalid: content: refused after a write"):
        call_in_tenant(caller, {}, write_then_refuse)
    with tenant_context(tenant_a.org.id):
        assert not Memory.objects.filter(content="written, then rolled back").exists()

    def write_into_b(c):  # an application bug naming another organisation: RLS refuses the row
        create.memory_create(org_id=tenant_b.org.id, agent_id=tenant_b.agent.id, content="crossed over",
                             category="factual")

    with pytest.raises(ToolError, match="internal error"):
        call_in_tenant(caller, {}, write_into_b)
    with tenant_context(tenant_b.org.id):
        assert not Memory.objects.filter(content="crossed over").exists()


@committing
def test_concurrent_calls_of_two_organisations_never_cross(tenant_a, tenant_b, served):
    keys = {tenant_a.org.name: factories.api_key(agent=tenant_a.agent)[1],
            tenant_b.org.name: factories.api_key(agent=tenant_b.agent)[1]}
    seen: dict[str, list[str]] = {name: [] for name in keys}

    async def one_client(name: str, key: str):
        async with mcp_client(served.url, key) as client:
            for _ in range(6):
                result = data_of(await client.call_tool("search_memory", {"query": "prefers tea over coffee"}))
                seen[name] += [memory["content"] for memory in result["results"]]

    async def main():
        async with anyio.create_task_group() as group:
            for name, key in keys.items():
                for _ in range(3):  # three clients per organisation, all at once
                    group.start_soon(one_client, name, key)

    anyio.run(main)
    for name, contents in seen.items():
        assert contents and all(content.startswith(name) for content in contents), (name, set(contents))


@committing
def test_a_host_the_site_does_not_serve_is_refused(tenant_a, key_a, served):
    response = httpx2.post(served.url, headers={"Host": "evil.example", "Authorization": f"Bearer {key_a}"},
                           content=b"{}", timeout=30)
    assert response.status_code == 400 and response.json()["error"]["code"] == "bad_request"


@committing
def test_remember_fact_takes_who_said_it_and_a_bad_name_writes_nothing(tenant_a, key_a, served):
    """Issue 34: remember_fact's speaker is linked as the memory's speaker (what a search naming
    the person reads); store_put takes a name the value holds under "speaker"."""
    remembered, put, bad = calls(
        served.url, key_a,
        ("remember_fact", {"content": "I am allergic to peanuts", "namespace": ["users", "alice"],
                           "speaker": "Alice"}),
        ("store_put", {"namespace": ["users", "alice"], "key": "diet",
                       "value": {"text": "vegetarian since 2019", "speaker": "Alice"}}),
        ("remember_fact", {"content": "I like chess", "namespace": ["users", "alice"], "speaker": "  "}),
    )
    assert data_of(remembered)["memory"]["speaker"] == "Alice"
    assert bad.is_error and "speaker" in text_of(bad)
    with tenant_context(tenant_a.org.id):
        assert not Memory.objects.filter(content="I like chess").exists()
        item = Memory.objects.get(namespace="users/alice", key="diet")
        assert list(item.entity_links.filter(role="speaker").values_list("entity__name", flat=True)) == ["Alice"]


@committing
def test_a_search_s_event_is_redacted_by_the_policy_the_organisation_has_at_that_call(tenant_a, key_a, served):
    from memories.models import RetrievalEvent
    from tenants.models import Organization

    asked = "what did jane.doe@example.com order?"

    def recorded_query():
        found = data_of(call(served.url, key_a, "search_memory", {"query": asked}))
        with tenant_context(tenant_a.org.id):
            return RetrievalEvent.objects.get(pk=found["retrieval_event_id"]).query

    assert recorded_query() == asked
    with tenant_context(tenant_a.org.id):
        Organization.objects.filter(pk=tenant_a.org.pk).update(redact_personal_data=True)
    assert recorded_query() == "what did [REDACTED:email] order?"
