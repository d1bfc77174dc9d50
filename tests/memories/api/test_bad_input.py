"""Bad input that used to reach the database (and answer 500) is a JSON 4xx naming the field,
and writes nothing: out-of-range numbers, NUL characters and unpaired surrogates anywhere,
JSON nested without bound, bodies above the limit, chunked bodies."""

import io
import json

import pytest

from memories.intake import cleaning
from memories.models import Memory, MemoryRelationship, MemoryTag, MemoryVersion, RetrievalEvent
from tenants.context import tenant_context

pytestmark = pytest.mark.django_db


def counts(org) -> dict:
    """Rows of every table a bad request could have written to."""
    with tenant_context(org.id):
        return {model.__name__: model.objects.count()
                for model in (Memory, MemoryVersion, MemoryRelationship, MemoryTag, RetrievalEvent)}


def send(client, method, path, body, **extra):
    raw = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return client.generic(method, path, raw, content_type="application/json", **extra)


def assert_refused(response, status, field=None, code=None):
    assert response.status_code == status, response.content[:300]
    problem = response.json()["error"]
    assert set(problem) >= {"code", "message", "fields"} and "Traceback" not in problem["message"]
    if field is not None:
        assert field in problem["fields"], problem
        assert problem["message"].startswith(field)
    if code is not None:
        assert problem["code"] == code
    return problem


# --------------------------------------------------------------------------- numbers


def number_cases(tenant):
    memory, other = tenant.memory.pk, tenant.other_memory.pk
    relate = f"/api/v1/memories/{memory}/relationships"
    cases = []
    for value in (1e308, 1.79e308, -1.79e308):
        cases += [
            ("POST", "/api/v1/memories", {"content": "a bounded score", "confidence": value}, "confidence"),
            ("POST", "/api/v1/memories", {"content": "a bounded score", "importance": value}, "importance"),
            ("POST", "/api/v1/memories", {"memories": [{"content": "in a batch", "confidence": value}]},
             "memories[0].confidence"),
            ("PATCH", f"/api/v1/memories/{memory}", {"confidence": value, "version": 1}, "confidence"),
            ("POST", f"/api/v1/memories/{memory}/supersede", {"content": "corrected", "confidence": value},
             "confidence"),
            ("POST", relate, {"target_id": str(other), "relation_type": "refines", "confidence": value}, "confidence"),
            ("POST", relate, {"target_id": str(other), "relation_type": "refines", "weight": value}, "weight"),
            ("POST", f"/api/v1/memories/{memory}/feedback", {"score": value}, "score"),
            ("PATCH", f"/api/v1/memories/{memory}", {"content": "v", "version": int(abs(value))}, "version"),
        ]
    return cases


def test_out_of_range_numbers_are_400s_naming_the_field_and_write_nothing(tenant_a, api_a):
    before = counts(tenant_a.org)
    for method, path, body, field in number_cases(tenant_a):
        assert_refused(send(api_a, method, path, body), 400, field, "invalid")
    assert counts(tenant_a.org) == before


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_numbers_json_cannot_hold_are_parse_errors(tenant_a, api_a, literal):
    before = counts(tenant_a.org)
    memory = tenant_a.memory.pk
    for path, raw in (("/api/v1/memories", '{"content": "x", "confidence": %s}'),
                      ("/api/v1/memories", '{"content": "x", "metadata": {"n": %s}}'),
                      (f"/api/v1/memories/{memory}/relationships",
                       '{"target_id": "%s", "relation_type": "refines", "weight": %%s}' % tenant_a.other_memory.pk),
                      ("/api/v1/search", '{"query": "tea", "filters": {"min_confidence": %s}}')):
        assert_refused(send(api_a, "POST", path, raw % literal), 400, code="parse_error")
    assert counts(tenant_a.org) == before


def test_a_relationship_weight_within_bounds_is_kept(tenant_a, api_a):
    response = api_a.post(f"/api/v1/memories/{tenant_a.memory.pk}/relationships",
                          {"target_id": str(tenant_a.other_memory.pk), "relation_type": "refines", "weight": 1000.0})
    assert response.status_code == 201 and response.json()["weight"] == 1000.0


# --------------------------------------------------------------------------- NUL and surrogates


NUL = "\u0000"


def text_cases(tenant, bad):
    memory = tenant.memory.pk
    return [
        ("POST", "/api/v1/memories", {"content": f"a{bad}b"}, "content"),
        ("POST", "/api/v1/memories", {"content": "ok", "metadata": {f"fo{bad}o": 1}}, f"metadata.fo{json.dumps(bad)[1:-1]}o"),
        ("POST", "/api/v1/memories", {"content": "ok", "metadata": {"foo": bad}}, "metadata.foo"),
        ("POST", "/api/v1/memories", {"content": "ok", "metadata": {"a": {"b": [1, {"c": bad}]}}}, "metadata.a.b[1].c"),
        ("POST", "/api/v1/memories", {"content": "ok", "provenance": {"source": bad}}, "provenance.source"),
        ("POST", "/api/v1/memories", {"content": "ok", "namespace": ["users", f"4{bad}2"]}, "namespace[1]"),
        ("POST", "/api/v1/memories", {"content": "ok", "scope": f"users/{bad}"}, "scope"),
        ("POST", "/api/v1/memories", {"content": "ok", "key": f"k{bad}"}, "key"),
        ("POST", "/api/v1/memories", {"content": "ok", "tags": ["fine", f"t{bad}"]}, "tags[1]"),
        ("POST", "/api/v1/memories", {"content": "ok", "sensitivity": bad}, "sensitivity"),
        ("POST", "/api/v1/memories", {"content": "ok", "session_id": f"{tenant.session.pk}{bad}"}, "session_id"),
        ("POST", "/api/v1/memories", {"memories": [{"content": "ok"}, {"content": "ok", "metadata": {"x": bad}}]},
         "memories[1].metadata.x"),
        ("PATCH", f"/api/v1/memories/{memory}", {"metadata": {"x": [bad]}, "version": 1}, "metadata.x[0]"),
        ("POST", f"/api/v1/memories/{memory}/supersede", {"content": "new", "reason": f"because{bad}"}, "reason"),
        ("POST", f"/api/v1/memories/{memory}/tags", {"tags": [bad]}, "tags[0]"),
        ("POST", f"/api/v1/memories/{memory}/relationships",
         {"target_id": str(tenant.other_memory.pk), "relation_type": "refines", "predicate": bad}, "predicate"),
        ("POST", f"/api/v1/memories/{memory}/relationships",
         {"target_id": str(tenant.other_memory.pk), "relation_type": "refines", "metadata": {"k": bad}}, "metadata.k"),
        ("POST", "/api/v1/search", {"query": f"tea{bad}"}, "query"),
        ("POST", "/api/v1/search", {"query": "tea", "filters": {"namespace": bad}}, "filters.namespace"),
        ("POST", "/api/v1/retrieve", {"query": "tea", "scope": f"users{bad}"}, "scope"),
    ]


def store_text_cases(bad):
    """LangGraph's store door answers a request that fails validation with 422, as its reference
    server does (integrations.langgraph_store)."""
    return [
        ("PUT", "/api/v1/store/items", {"namespace": ["users", "42"], "key": f"diet{bad}", "value": {}}, "key"),
        ("PUT", "/api/v1/store/items", {"namespace": ["users", bad], "key": "diet", "value": {}}, "namespace[1]"),
        ("PUT", "/api/v1/store/items", {"namespace": ["users"], "key": "diet", "value": {"v": [bad]}}, "value.v[0]"),
        ("POST", "/api/v1/store/items/search", {"namespace_prefix": ["users", bad], "query": "tea"},
         "namespace_prefix[1]"),
    ]


@pytest.mark.parametrize("bad", [NUL, "\ud800"], ids=["nul", "unpaired-surrogate"])
def test_text_postgres_cannot_store_is_a_400_naming_the_field_and_writes_nothing(tenant_a, api_a, bad):
    before = counts(tenant_a.org)
    for status, cases in ((400, text_cases(tenant_a, bad)), (422, store_text_cases(bad))):
        for method, path, body, field in cases:
            problem = assert_refused(send(api_a, method, path, body), status, field, "invalid")
            assert problem["fields"][field][0].endswith(cleaning.text_problem(bad)), (path, problem)
    assert counts(tenant_a.org) == before


def test_nul_in_query_parameters_and_url_parts_is_a_400_naming_them(tenant_a, api_a):
    before = counts(tenant_a.org)
    memory = tenant_a.memory.pk
    for path, params, field in (("/api/v1/memories", {"namespace": f"users{NUL}"}, "namespace"),
                                ("/api/v1/memories", {"tag": [f"t{NUL}", "ok"]}, "tag[0]"),
                                ("/api/v1/memories", {"session": f"{tenant_a.session.pk}{NUL}"}, "session"),
                                (f"/api/v1/memories/{memory}/tags/a%00b", {}, "tag")):
        assert_refused(api_a.get(path, params) if "/tags/" not in path else api_a.delete(path), 400, field)
    assert_refused(api_a.get("/api/v1/store/items", {"namespace": "users.42", "key": f"k{NUL}"}), 422, "key")
    assert counts(tenant_a.org) == before


def test_ordinary_unicode_and_escaped_text_are_kept_as_sent(tenant_a, api_a):
    sent = {"content": "Zoë prefers 茶 \U0001f375 and writes \\u0000 literally",
            "metadata": {"clé": ["ü", {"emoji": "\U0001f600"}]}, "provenance": {"source": "chat\n\ttab"}}
    response = api_a.post("/api/v1/memories", sent)
    assert response.status_code == 201, response.content
    memory = response.json()["memory"]
    assert {k: memory[k] for k in sent} == sent


# --------------------------------------------------------------------------- nesting


def nested(levels: int, leaf=1):
    value = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


def test_json_nested_a_thousand_deep_is_a_400_whether_in_metadata_or_the_body(tenant_a, api_a):
    before = counts(tenant_a.org)
    for raw in ('{"content": "x", "metadata": {"x": %s}}' % ("[" * 1000 + "]" * 1000),
                '{"content": "x", "provenance": %s}' % ('{"a":' * 5000 + "1" + "}" * 5000),
                "[" * 100_000 + "]" * 100_000):
        problem = assert_refused(send(api_a, "POST", "/api/v1/memories", raw), 400)
        assert cleaning.TOO_DEEP_MESSAGE in problem["message"]
    assert counts(tenant_a.org) == before


def test_json_just_past_the_depth_limit_is_refused_naming_the_field(tenant_a, api_a):
    before = counts(tenant_a.org)
    for field in ("metadata", "provenance"):
        body = {"content": "deep", field: nested(cleaning.MAX_JSON_DEPTH)}
        problem = assert_refused(api_a.post("/api/v1/memories", body), 400, field, "invalid")
        assert problem["fields"][field] == [cleaning.TOO_DEEP_MESSAGE]
    batch = {"memories": [{"content": "deep", "metadata": nested(cleaning.MAX_JSON_DEPTH)}]}
    assert_refused(api_a.post("/api/v1/memories", batch), 400, "memories", "invalid")
    assert counts(tenant_a.org) == before


def test_metadata_within_the_depth_limit_is_stored_and_read_back(tenant_a, api_a):
    deep = nested(cleaning.MAX_JSON_DEPTH - 2, leaf="password=hunter2hunter2")
    response = api_a.post("/api/v1/memories", {"content": "deep but allowed", "metadata": deep})
    assert response.status_code == 201, response.content
    read = api_a.get(f"/api/v1/memories/{response.json()['memory']['id']}").json()["metadata"]
    for _ in range(cleaning.MAX_JSON_DEPTH - 2):
        read = read["a"]
    assert read.startswith("password=[REDACTED")  # redaction walked all the way down


# --------------------------------------------------------------------------- body size


@pytest.mark.parametrize("megabytes", [2.2, 3, 5, 10])
def test_bodies_over_the_limit_are_413_at_any_size(tenant_a, api_a, megabytes):
    before = counts(tenant_a.org)
    body = json.dumps({"content": "x" * int(megabytes * 1_000_000)})
    problem = assert_refused(send(api_a, "POST", "/api/v1/memories", body), 413, code="payload_too_large")
    assert str(len(body)) in problem["message"]
    assert counts(tenant_a.org) == before


def test_the_products_limit_governs_not_djangos_upload_limit(tenant_a, api_a, settings):
    """A limit set above DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB) is honoured: the body is parsed."""
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "MAX_REQUEST_BYTES": 4_000_000}
    # Numbers, not one long string: redaction is slow on long runs of word characters.
    raw = json.dumps({"content": "big metadata", "metadata": {"readings": [7] * 1_000_000}})
    assert len(raw) > 2.5 * 1024 * 1024
    response = send(api_a, "POST", "/api/v1/memories", raw)
    assert response.status_code == 201, response.content[:300]
    assert len(response.json()["memory"]["metadata"]["readings"]) == 1_000_000


# --------------------------------------------------------------------------- chunked bodies


def chunked(client, path, raw: bytes, *, terminated=True):
    """What a WSGI server hands over for Transfer-Encoding: chunked: no Content-Length, and
    (gunicorn) the de-chunked body on wsgi.input, flagged by wsgi.input_terminated."""
    extra = {"CONTENT_LENGTH": "", "HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input": io.BytesIO(raw)}
    if terminated:
        extra["wsgi.input_terminated"] = True
    return client.generic("POST", path, b"", content_type="application/json", **extra)


def test_a_chunked_body_is_read(tenant_a, api_a):
    response = chunked(api_a, "/api/v1/memories", json.dumps({"content": "sent in chunks"}).encode())
    assert response.status_code == 201, response.content
    with tenant_context(tenant_a.org.id):
        assert Memory.objects.filter(content="sent in chunks").count() == 1


def test_a_chunked_body_over_the_limit_is_413_and_writes_nothing(tenant_a, api_a, settings):
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "MAX_REQUEST_BYTES": 1000}
    before = counts(tenant_a.org)
    response = chunked(api_a, "/api/v1/memories", json.dumps({"content": "z" * 5000}).encode())
    assert_refused(response, 413, code="payload_too_large")
    assert counts(tenant_a.org) == before


def test_a_chunked_body_a_server_cannot_deliver_is_411(tenant_a, api_a):
    before = counts(tenant_a.org)
    response = chunked(api_a, "/api/v1/memories", b'{"content": "lost"}', terminated=False)
    assert_refused(response, 411, code="length_required")
    assert counts(tenant_a.org) == before
