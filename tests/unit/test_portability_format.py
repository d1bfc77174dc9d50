"""The export file's format read without a server: what a line must hold, what each problem
is called, how vectors and origins travel, the scope's SQL, and the import's INSERT builder."""

import json
import uuid

import numpy as np
import pytest

from memories.lifecycle import importing, portability
from memories.lifecycle.portability import BadRecord, ExportScope, Fields, decode, read

MEMORY = {"type": "memory", "id": "3f1c9a52-6f0e-4a51-9d7b-2c1f0e8a4b6d",
          "agent": "0b6d1c9e-1d2f-4c3a-8e4b-5a6f7d8e9f00", "content": "Alice likes tea", "category": "factual"}


def problem(raw: bytes | str) -> str:
    with pytest.raises(BadRecord) as found:
        read(decode(raw.encode() if isinstance(raw, str) else raw))
    return str(found.value)


def test_a_minimal_memory_takes_the_defaults_a_write_would():
    kind, memory = read(decode(json.dumps(MEMORY).encode()))
    assert kind == "memory"
    assert memory["status"] == "active" and memory["scope"] == "" and memory["key"] is None
    assert str(memory["confidence"]) == "0.800" and memory["tags"] == [] and memory["embedding"] is None
    assert memory["origin"] == uuid.UUID(MEMORY["id"])  # a row never imported is its own origin


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "not JSON (Expecting property name enclosed in double quotes, column 2)"),
    ("[1, 2]", "not a JSON object"),
    ('{"type": "memo"}', "type must be one of header, agent, session"),
    (json.dumps({**MEMORY, "content": "a\u0000b"}), "content holds a NUL character or an unpaired surrogate"),
    (json.dumps({**MEMORY, "metadata": {"x": "\ud800"}}), "metadata.x holds a NUL character"),
    (json.dumps({**MEMORY, "content": "   "}), "content must be a non-empty string"),
    (json.dumps({**MEMORY, "content": "x" * 8193}), "content must be at most 8192 characters"),
    (json.dumps({**MEMORY, "agent": None}), "agent is missing"),
    (json.dumps({**MEMORY, "session": 7}), "session must be an id"),
    (json.dumps({**MEMORY, "status": "gone"}), "status must be one of active, superseded, merged"),
    (json.dumps({**MEMORY, "confidence": 1.5}), "confidence must be between 0 and 1"),
    (json.dumps({**MEMORY, "confidence": True}), "confidence must be a number"),
    (json.dumps({**MEMORY, "created_at": "2026-05-01T12:00:00"}), "created_at must be a time with its offset"),
    (json.dumps({**MEMORY, "tags": [{"tag": ""}]}), "tags[0].tag must be a non-empty string"),
    (json.dumps({**MEMORY, "versions": [{"version_num": 0}]}), "versions[0].version_num must be a whole number"),
    (json.dumps({**MEMORY, "superseded_by": MEMORY["agent"]}), "an active memory cannot be superseded"),
    (json.dumps({**MEMORY, "is_protected": True}), "a protected memory does not decay"),
    (json.dumps({**MEMORY, "embedding": {"model": "m", "dimensions": 384, "vector": "AAAA"}}),
     "embedding.vector holds 3 bytes, not the 1536 of 384 float32 values"),
    (json.dumps({"type": "relationship", "source": MEMORY["id"], "target": MEMORY["id"], "relation_type": "supports"}),
     "a relationship joins two memories, not one to itself"),
    (json.dumps({"type": "artifact", "id": MEMORY["id"], "sha256": "B" * 64}), "sha256 must be 64 lowercase"),
    (b'{"type": "agent", "id": "\xff"}', "not UTF-8 (byte 26)"),
    ("[" * 100_000 + "]" * 100_000, "JSON nested too deep"),
    # Deep enough for the redactor's recursion to fail on import, shallow enough for json.loads.
    (json.dumps({**MEMORY, "metadata": json.loads('{"x":' * 600 + "1" + "}" * 600)}),
     "metadata: JSON nested deeper than 64 levels"),
])
def test_each_problem_is_named_with_its_field(line, message):
    assert message in problem(line)


def test_an_escaped_pair_of_surrogates_is_one_character_and_kept():
    _, memory = read(decode(json.dumps({**MEMORY, "content": "tea \U0001F375"}).encode()))  # ascii escapes
    assert memory["content"] == "tea \U0001F375"


def test_a_vector_travels_exactly():
    vector = np.random.default_rng(1).normal(size=384).astype(np.float32)
    text = portability.embedding_text(vector)
    assert len(text) == 2048  # 384 float32 values in base64
    assert np.array_equal(portability.embedding_values(text, 384), vector)


def test_the_origin_kept_by_an_import_is_read_back_and_left_out_of_what_is_exported():
    here = uuid.uuid4()
    kept = portability.with_origin({"channel": "chat"}, MEMORY["id"])
    assert portability.origin_of(here, kept) == MEMORY["id"]
    assert portability.without_origin(kept) == {"channel": "chat"}
    assert portability.origin_of(here, {portability.ORIGIN_KEY: "not an id"}) == str(here)


def test_a_namespace_scope_is_the_namespace_and_what_lies_under_it():
    sql, params = ExportScope(namespace="users/alice", agent_id=uuid.UUID(MEMORY["agent"])).memories_sql("m")
    # One range an index reads, [users/alice, users/alice0), then the exact test inside it.
    assert sql == ("TRUE AND (m.scope ~>=~ %s AND m.scope ~<~ %s AND (m.scope = %s OR m.scope ~>=~ %s)) "
                   "AND m.agent_id = %s")
    assert params == ["users/alice", "users/alice0", "users/alice", "users/alice/", uuid.UUID(MEMORY["agent"])]
    assert ExportScope().memories_sql("m") == ("TRUE", []) and ExportScope().everything
    assert ExportScope(namespace="users/alice").describe() == "namespace users/alice"


def test_fields_read_times_with_their_offset():
    fields = Fields({"at": "2026-05-01T12:00:00+02:00"})
    assert fields.moment("at").utcoffset().total_seconds() == 7200 and fields.moment("missing") is None


def test_rows_are_inserted_in_one_statement_with_their_casts():
    sql, params = importing.insert_sql("memory_tags", ("id", "tag", "metadata"), [(1, "a", "{}"), (2, "b", "{}")],
                                       casts={"metadata": "jsonb"}, ignore_conflicts=True)
    assert sql == ("INSERT INTO memory_tags (id, tag, metadata) VALUES (%s, %s, %s::jsonb), (%s, %s, %s::jsonb) "
                   "ON CONFLICT DO NOTHING")
    assert params == [1, "a", "{}", 2, "b", "{}"]


def test_an_identity_cannot_be_forged_by_a_separator_in_a_namespace():
    assert importing.identity("users/a", "b|c") != importing.identity("users/a|b", "c")
