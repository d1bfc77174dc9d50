"""Request bodies and client values as the API reads them (no database): strict JSON within a
size and depth limit, and only text PostgreSQL can store. tests/memories/api/test_bad_input.py
checks the same through HTTP, including that nothing is written."""

import io
import json

import pytest
from rest_framework import exceptions

from memories.api import storable
from memories.api.parsers import LimitedJSONParser, PayloadTooLarge
from memories.intake import cleaning


def parse(body: bytes | str):
    body = body.encode() if isinstance(body, str) else body
    return LimitedJSONParser().parse(io.BytesIO(body), parser_context={})


def test_ordinary_json_is_read_as_sent():
    assert parse('{"content": "caf\\u00e9 \u2615", "n": 1.5, "tags": []}') == {"content": "café ☕", "n": 1.5,
                                                                              "tags": []}


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_numbers_json_cannot_hold_are_parse_errors(literal):
    with pytest.raises(exceptions.ParseError):
        parse(f'{{"confidence": {literal}}}')


@pytest.mark.parametrize("body", [b"{", b"\xff\xfe", b'{"a": 1,}', b""])
def test_malformed_bodies_are_parse_errors(body):
    with pytest.raises(exceptions.ParseError):
        parse(body)


def test_a_body_past_the_limit_is_refused_however_it_arrives(settings):
    settings.MEMORY_PLATFORM = {**settings.MEMORY_PLATFORM, "MAX_REQUEST_BYTES": 64}
    assert parse(json.dumps({"content": "x" * 40}))
    with pytest.raises(PayloadTooLarge):
        parse(json.dumps({"content": "x" * 80}))


@pytest.mark.parametrize(("value", "field"), [
    ({"content": "a\x00b"}, "content"),
    ({"metadata": {"note": "\ud800"}}, "metadata.note"),
    ({"memories": [{"content": "fine"}, {"content": "nul\x00"}]}, "memories[1].content"),
])
def test_text_postgres_cannot_store_is_named_where_it_is(value, field):
    found = cleaning.problems(value)
    assert list(found) == [field]
    with pytest.raises(exceptions.ValidationError):
        storable.check(value)


def test_nesting_is_bounded_and_reported_at_its_top_level_field():
    deep = inner = {}
    for _ in range(cleaning.MAX_JSON_DEPTH + 1):
        inner["x"] = {}
        inner = inner["x"]
    assert cleaning.problems({"metadata": deep}) == {"metadata": [cleaning.TOO_DEEP_MESSAGE]}
    shallow = inner = {}
    for _ in range(cleaning.MAX_JSON_DEPTH - 2):
        inner["x"] = {}
        inner = inner["x"]
    assert cleaning.problems({"metadata": shallow}) == {}


def test_json_nested_a_thousand_deep_is_a_parse_error_not_a_crash():
    with pytest.raises(exceptions.ParseError, match="nested deeper"):
        parse('{"metadata": ' + "[" * 1000 + "]" * 1000 + "}")
