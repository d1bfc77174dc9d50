"""Export and import (JSONL): the file format, shared by memories.lifecycle.export (which
writes it) and memories.lifecycle.importing (which reads it). Pure: no database.

A file is one JSON object a line, each with a `type`, in this order (RECORD_ORDER):

  header               the format and its version, the organisation and scope exported,
                       when, and the embedding model whose vectors the file carries
  agent                every agent a record below names (matched by name on import)
  session              the sessions of the memories exported
  entity               the entities they mention, with their aliases
  artifact             the artifacts they link to, with their provenance records
  memory               one a memory, with everything that is only its own inline: its
                       versions (the history), tags, entity links, artifact links, provenance
                       records, usage and embedding
  relationship         the edges whose two ends are both exported
  duplicate_candidate  the near-duplicate pairs whose two memories are both exported
  end                  how many records of each type came before, and what was left out: a
                       file without it was cut short, and import refuses it

References between records are the exporting organisation's ids; an import gives every row
a new id and maps them. Records that come before the ones naming them (agents, sessions,
entities and artifacts before memories; memories before the relationships between them,
and a memory after those it was superseded by or merged into) let an import resolve every
reference in one pass, in order.

Each memory, session and artifact also carries its `origin`: the id of the row it was first
exported from, which stays the same through any chain of exports and imports. An import
keeps it with the row it writes (ORIGIN_KEY in the memory's provenance, in the session's and
the artifact's metadata), so importing a file again finds what it wrote before and adds
nothing, in this deployment or another.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation

import numpy as np
from django.db.models import Q
from django.utils.dateparse import parse_datetime

from memories.access import namespace_prefix_filter, namespace_sql
from memories.intake.cleaning import MAX_JSON_DEPTH, TOO_DEEP_MESSAGE, problems
from memories.models import (
    CONTENT_MAX_CHARS,
    EntityKind,
    MemoryCategory,
    MemorySource,
    MemoryStatus,
    MemoryType,
    MemoryValidationStatus,
    RelationshipRelationType,
    VersionChangedByType,
    VersionOperation,
)

FORMAT = "memory-platform-export"
VERSION = 1
RECORD_ORDER = ("header", "agent", "session", "entity", "artifact", "memory", "relationship",
                "duplicate_candidate", "end")
# Where a row written by an import keeps the id of the row it first came from.
ORIGIN_KEY = "imported_from"
# Vectors travel as base64 of their float32 values, little-endian: exact, and a third of the
# size of the same numbers in decimal.
EMBEDDING_ENCODING = "float32-le-base64"
MAX_LINE_BYTES = 64 * 1024 * 1024  # a memory with a long history is one long line
# Each choice's values, read once: a TextChoices' `values` builds its list on every read.
CHOICES = {choices: tuple(choices.values) for choices in (
    EntityKind, MemoryCategory, MemorySource, MemoryStatus, MemoryType, MemoryValidationStatus,
    RelationshipRelationType, VersionChangedByType, VersionOperation)}


# --------------------------------------------------------------------------- the scope


@dataclass(frozen=True)
class ExportScope:
    """What to export: the whole organisation, one agent's memories, the memories under a
    namespace prefix, or an agent's under one."""

    namespace: str | None = None  # "users/alice": it and every namespace under it, never users/alice2
    agent_id: uuid.UUID | None = None
    agent_name: str | None = None  # for the header and messages

    @property
    def everything(self) -> bool:
        return self.namespace is None and self.agent_id is None

    def memories(self, path: str = "") -> Q:
        """The memories of the scope, as a filter (path: the memory's, from the model filtered)."""
        condition = Q()
        if self.namespace is not None:
            condition &= namespace_prefix_filter(self.namespace, path)
        if self.agent_id is not None:
            condition &= Q(**{f"{path}agent_id": self.agent_id})
        return condition

    def memories_sql(self, alias: str = "m") -> tuple[str, list]:
        """The same condition as SQL, on the memories row named `alias`, and its parameters."""
        conditions, params = ["TRUE"], []
        if self.namespace is not None:
            sql, values = namespace_sql(self.namespace, f"{alias}.scope")
            conditions.append(sql)
            params += values
        if self.agent_id is not None:
            conditions.append(f"{alias}.agent_id = %s")
            params.append(self.agent_id)
        return " AND ".join(conditions), params

    def kept_under(self) -> Q | None:
        """Entities and artifacts kept under the exported namespace belong to it on their own,
        linked or not, as in an erasure (ErasureScope.under); None for an agent's scope."""
        if self.namespace is not None and self.agent_id is None:
            return namespace_prefix_filter(self.namespace)
        return None

    def as_json(self) -> dict:
        return {"agent": self.agent_name, "namespace": self.namespace}

    def describe(self) -> str:
        if self.everything:
            return "the whole organisation"
        parts = [f"namespace {self.namespace}" if self.namespace is not None else "",
                 f"agent {self.agent_name}" if self.agent_id is not None else ""]
        return " of ".join(part for part in parts if part)


# --------------------------------------------------------------------------- values on a line


def _json_value(value):
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def line(record: dict) -> str:
    """A record as one line of the file."""
    return json.dumps(record, default=_json_value, ensure_ascii=False, separators=(",", ":")) + "\n"


def embedding_text(vector) -> str:
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def embedding_values(text: str, dimensions: int) -> np.ndarray:
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        raise BadRecord(f"embedding.vector is not {EMBEDDING_ENCODING}") from None
    if len(raw) != 4 * dimensions:
        raise BadRecord(f"embedding.vector holds {len(raw)} bytes, not the {4 * dimensions} of {dimensions} "
                        "float32 values")
    values = np.frombuffer(raw, dtype="<f4")
    if not np.isfinite(values).all():
        raise BadRecord("embedding.vector holds a value that is not a finite number")
    return values


def origin_of(own_id, holder: dict) -> str:
    """The id of the row this one first came from: the one an import kept in `holder` (its
    provenance or metadata), or its own."""
    kept = holder.get(ORIGIN_KEY) if isinstance(holder, dict) else None
    return kept if isinstance(kept, str) and UUID_TEXT.fullmatch(kept) else str(own_id)


def without_origin(holder: dict) -> dict:
    """The JSON as it was before an import kept its origin in it."""
    return {key: value for key, value in holder.items() if key != ORIGIN_KEY}


def with_origin(holder: dict, origin) -> dict:
    return {**holder, ORIGIN_KEY: str(origin)}


UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


# --------------------------------------------------------------------------- reading a line


class BadRecord(ValueError):
    """A line the import cannot take, and why (the reader adds its line number)."""


REQUIRED = object()
# The escapes that decode to what PostgreSQL cannot store: NUL and unpaired surrogates.
SUSPECT_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


def decode(raw: bytes) -> dict:
    """One line of the file as a JSON object, or BadRecord saying why not."""
    if len(raw) > MAX_LINE_BYTES:
        raise BadRecord(f"longer than {MAX_LINE_BYTES // (1024 * 1024)} MB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRecord(f"not UTF-8 (byte {exc.start + 1})") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadRecord(f"not JSON ({exc.msg}, column {exc.colno})") from None
    except RecursionError:
        raise BadRecord("JSON nested too deep") from None
    if not isinstance(record, dict):
        raise BadRecord("not a JSON object")
    # Walked only when an escape could have decoded to NUL or a surrogate, or there are brackets
    # enough to nest too deep: most lines are neither.
    could_nest_too_deep = text.count("{") + text.count("[") > MAX_JSON_DEPTH
    if (SUSPECT_ESCAPE.search(text) or could_nest_too_deep) and (found := problems(record)):
        where, [problem] = next(iter(found.items()))
        if problem == TOO_DEEP_MESSAGE:
            raise BadRecord(f"{where}: {problem}")
        raise BadRecord(f"{where} holds a NUL character or an unpaired surrogate, which cannot be stored")
    return record


class Fields:
    """A record's fields, each checked as it is read: a problem raises BadRecord naming the
    field (`versions[2].content`)."""

    def __init__(self, record, where: str = ""):
        if not isinstance(record, dict):
            raise BadRecord(f"{where.rstrip('.') or 'the record'} must be a JSON object")
        self.record, self.where = record, where

    def _value(self, name: str, default):
        value = self.record.get(name)
        if value is None:
            if default is REQUIRED:
                raise BadRecord(f"{self.where}{name} is missing")
            return default
        return value

    def _bad(self, name: str, should: str) -> BadRecord:
        return BadRecord(f"{self.where}{name} must be {should}")

    def text(self, name: str, *, default=REQUIRED, max_length: int | None = None, blank: bool = True) -> str:
        value = self._value(name, default)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self._bad(name, "a string")
        if max_length is not None and len(value) > max_length:
            raise self._bad(name, f"at most {max_length} characters")
        if not blank and not value.strip():
            raise self._bad(name, "a non-empty string")
        return value

    def choice(self, name: str, choices, *, default=REQUIRED) -> str:
        value = self._value(name, default)
        if value not in choices:
            raise self._bad(name, "one of " + ", ".join(choices))
        return value

    def number(self, name: str, *, default=REQUIRED, minimum: float | None = None,
               maximum: float | None = None) -> float:
        value = self._value(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._bad(name, "a number")
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise self._bad(name, f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}")
        return value

    def unit(self, name: str, *, default=REQUIRED) -> Decimal:
        """A score in [0, 1], as the database keeps it (three decimals)."""
        try:
            return Decimal(str(self.number(name, default=default, minimum=0, maximum=1))).quantize(Decimal("0.001"))
        except InvalidOperation:
            raise self._bad(name, "a number between 0 and 1") from None

    def count(self, name: str, *, default=REQUIRED, minimum: int = 0) -> int:
        value = self._value(name, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum or value >= 2**31:
            raise self._bad(name, f"a whole number of at least {minimum}")
        return value

    def flag(self, name: str, *, default=REQUIRED) -> bool:
        value = self._value(name, default)
        if not isinstance(value, bool):
            raise self._bad(name, "true or false")
        return value

    def moment(self, name: str, *, default=None) -> datetime | None:
        """A time with its offset (ISO 8601)."""
        value = self._value(name, default)
        if value is None or isinstance(value, datetime):
            return value
        try:
            parsed = parse_datetime(value) if isinstance(value, str) else None
        except ValueError:
            parsed = None
        if parsed is None or parsed.tzinfo is None:
            raise self._bad(name, "a time with its offset, such as 2026-05-01T12:00:00+00:00")
        return parsed

    def ident(self, name: str, *, default=REQUIRED) -> uuid.UUID | None:
        value = self._value(name, default)
        if value is None:
            return None
        try:
            if isinstance(value, str):
                return uuid.UUID(value)
        except ValueError:
            pass
        raise self._bad(name, "an id such as 3f1c9a52-6f0e-4a51-9d7b-2c1f0e8a4b6d")

    def json(self, name: str, kind: type = dict):
        """A JSON object (or list) kept as it is."""
        value = self._value(name, kind())
        if not isinstance(value, kind):
            raise self._bad(name, "a JSON object" if kind is dict else "a JSON list")
        return value

    def each(self, name: str) -> list[Fields]:
        """A list of objects, each read on its own."""
        return [Fields(item, f"{self.where}{name}[{index}].") for index, item in enumerate(self.json(name, list))]


def read_header(fields: Fields) -> dict:
    if fields.record.get("format") != FORMAT:
        raise BadRecord(f"the file does not start with a {FORMAT} header")
    version = fields.count("version")
    if version != VERSION:
        raise BadRecord(f"format version {version} is not one this deployment reads (it reads {VERSION})")
    embedding = fields.record.get("embedding")
    if embedding is not None:
        described = Fields(embedding, "embedding.")
        embedding = {"model": described.text("model"), "dimensions": described.count("dimensions", minimum=1),
                     "encoding": described.choice("encoding", (EMBEDDING_ENCODING,))}
    organisation = Fields(fields.json("organisation"), "organisation.")
    return {"organisation": organisation.text("slug", default=""), "scope": fields.json("scope"),
            "exported_at": fields.moment("exported_at"), "embedding": embedding}


def read_agent(fields: Fields) -> dict:
    return {"id": fields.ident("id"), "name": fields.text("name", max_length=128, blank=False).strip(),
            "description": fields.text("description", default=""), "is_active": fields.flag("is_active", default=True)}


def read_session(fields: Fields) -> dict:
    started_at, ended_at = fields.moment("started_at"), fields.moment("ended_at")
    if started_at and ended_at and ended_at < started_at:
        raise BadRecord("ended_at must not come before started_at")
    return {"id": fields.ident("id"), "origin": fields.ident("origin", default=fields.record.get("id")),
            "agent": fields.ident("agent", default=None), "scope": fields.text("scope", default="", max_length=256),
            "external_id": fields.text("external_id", default="", max_length=256),
            "metadata": fields.json("metadata"), "started_at": started_at, "ended_at": ended_at}


def read_entity(fields: Fields) -> dict:
    return {
        "id": fields.ident("id"), "scope": fields.text("scope", default="", max_length=256),
        "kind": fields.choice("kind", CHOICES[EntityKind]),
        "name": fields.text("name", max_length=256, blank=False), "summary": fields.text("summary", default=""),
        "attributes": fields.json("attributes"), "mention_count": fields.count("mention_count", default=0),
        "first_seen_at": fields.moment("first_seen_at"), "last_seen_at": fields.moment("last_seen_at"),
        "aliases": [{"alias": alias.text("alias", max_length=256, blank=False), "created_at": alias.moment("created_at")}
                    for alias in fields.each("aliases")],
    }


def _provenance_records(fields: Fields) -> list[dict]:
    return [{"source_identity": record.text("source_identity", default="", max_length=256),
             "source_event": record.text("source_event", default="", max_length=256),
             "details": record.json("details"), "created_at": record.moment("created_at")}
            for record in fields.each("provenance_records")]


def read_artifact(fields: Fields) -> dict:
    sha256 = fields.text("sha256")
    if not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise BadRecord("sha256 must be 64 lowercase hexadecimal digits")
    return {"id": fields.ident("id"), "origin": fields.ident("origin", default=fields.record.get("id")),
            "scope": fields.text("scope", default="", max_length=256), "sha256": sha256,
            "storage_uri": fields.text("storage_uri", blank=False),
            "artifact_type": fields.text("artifact_type", max_length=64, blank=False),
            "metadata": fields.json("metadata"), "created_at": fields.moment("created_at"),
            "provenance_records": _provenance_records(fields)}


def _version(fields: Fields) -> dict:
    return {
        "version_num": fields.count("version_num", minimum=1),
        "operation": fields.choice("operation", CHOICES[VersionOperation]),
        "content": fields.text("content", max_length=CONTENT_MAX_CHARS),
        "category": fields.text("category", max_length=16), "confidence": fields.unit("confidence"),
        "status": fields.text("status", max_length=16), "metadata": fields.json("metadata"),
        "snapshot": fields.json("snapshot"),
        "changed_by_type": fields.choice("changed_by_type", CHOICES[VersionChangedByType]),
        "changed_by_agent": fields.ident("changed_by_agent", default=None),
        "changed_by_user": fields.text("changed_by_user", default=None, max_length=150),
        "change_reason": fields.text("change_reason", default=""), "created_at": fields.moment("created_at"),
    }


def _embedding(fields: Fields) -> dict | None:
    if fields.record.get("embedding") is None:
        return None
    described = Fields(fields.record["embedding"], "embedding.")
    dimensions = described.count("dimensions", minimum=1)
    return {"model": described.text("model", max_length=128, blank=False), "dimensions": dimensions,
            "embedded_at": described.moment("embedded_at"),
            "vector": embedding_values(described.text("vector"), dimensions)}


def read_memory(fields: Fields) -> dict:
    memory = {
        "id": fields.ident("id"), "origin": fields.ident("origin", default=fields.record.get("id")),
        "agent": fields.ident("agent"), "session": fields.ident("session", default=None),
        "content": fields.text("content", max_length=CONTENT_MAX_CHARS, blank=False),
        "category": fields.choice("category", CHOICES[MemoryCategory]),
        "memory_type": fields.choice("memory_type", CHOICES[MemoryType], default=MemoryType.SEMANTIC),
        "source": fields.choice("source", CHOICES[MemorySource], default=MemorySource.EXTRACTED),
        "status": fields.choice("status", CHOICES[MemoryStatus], default=MemoryStatus.ACTIVE),
        "confidence": fields.unit("confidence", default=0.8),
        "usefulness_score": fields.unit("usefulness_score", default=0.5),
        "importance": fields.unit("importance", default=0.0),
        "sensitivity": fields.text("sensitivity", default="internal", max_length=64, blank=False),
        "validation_status": fields.choice("validation_status", CHOICES[MemoryValidationStatus],
                                           default=MemoryValidationStatus.UNVERIFIED),
        "scope": fields.text("scope", default="", max_length=256),
        "key": fields.text("key", default=None, max_length=256, blank=False),
        "provenance": fields.json("provenance"), "metadata": fields.json("metadata"),
        "retrieval_count": fields.count("retrieval_count", default=0),
        "last_retrieved_at": fields.moment("last_retrieved_at"), "last_injected_at": fields.moment("last_injected_at"),
        "decay_rate": fields.number("decay_rate", default=0.1, minimum=0),
        "is_protected": fields.flag("is_protected", default=False),
        "valid_from": fields.moment("valid_from"), "valid_until": fields.moment("valid_until"),
        "event_time": fields.moment("event_time"),
        "superseded_by": fields.ident("superseded_by", default=None),
        "merged_into": fields.ident("merged_into", default=None),
        "expires_at": fields.moment("expires_at"), "deleted_at": fields.moment("deleted_at"),
        "version": fields.count("version", default=1, minimum=1),
        "created_at": fields.moment("created_at"), "updated_at": fields.moment("updated_at"),
        # False: kept out of search by meaning, never embedded (a LangGraph item put with index=False).
        "indexed": fields.flag("indexed", default=True),
        "embedding": _embedding(fields),
        "tags": [{"tag": tag.text("tag", max_length=64, blank=False), "created_at": tag.moment("created_at")}
                 for tag in fields.each("tags")],
        "versions": [_version(version) for version in fields.each("versions")],
        "entities": [{"entity": link.ident("entity"), "mention": link.text("mention", max_length=256),
                      "source": link.choice("source", ("agent", "extractor"), default="extractor"),
                      "role": link.choice("role", ("speaker", "mentioned"), default="mentioned"),
                      "created_at": link.moment("created_at")} for link in fields.each("entities")],
        "artifacts": [{"artifact": link.ident("artifact"), "created_at": link.moment("created_at")}
                      for link in fields.each("artifacts")],
        "provenance_records": _provenance_records(fields),
    }
    if memory["status"] == MemoryStatus.ACTIVE and memory["superseded_by"]:
        raise BadRecord("an active memory cannot be superseded (superseded_by is set)")
    if memory["is_protected"] and memory["decay_rate"] != 0:
        raise BadRecord("a protected memory does not decay: decay_rate must be 0")
    if memory["valid_from"] and memory["valid_until"] and memory["valid_until"] < memory["valid_from"]:
        raise BadRecord("valid_until must not come before valid_from")
    if memory["id"] in (memory["superseded_by"], memory["merged_into"]):
        raise BadRecord("a memory cannot be superseded by, or merged into, itself")
    return memory


def read_relationship(fields: Fields) -> dict:
    relationship = {
        "source": fields.ident("source"), "target": fields.ident("target"),
        "relation_type": fields.choice("relation_type", CHOICES[RelationshipRelationType]),
        "predicate": fields.text("predicate", default="", max_length=128),
        "weight": fields.number("weight", default=1.0), "confidence": fields.unit("confidence", default=0.8),
        "evidence": fields.json("evidence", list), "metadata": fields.json("metadata"),
        "valid_from": fields.moment("valid_from"), "valid_until": fields.moment("valid_until"),
        "created_at": fields.moment("created_at"),
    }
    if relationship["source"] == relationship["target"]:
        raise BadRecord("a relationship joins two memories, not one to itself")
    return relationship


def read_duplicate_candidate(fields: Fields) -> dict:
    candidate = {"memory": fields.ident("memory"), "candidate": fields.ident("candidate"),
                 "similarity": fields.number("similarity", minimum=-1, maximum=1),
                 "detected_at": fields.moment("detected_at"), "resolved_at": fields.moment("resolved_at"),
                 "resolution": fields.text("resolution", default="", max_length=32)}
    if candidate["memory"] == candidate["candidate"]:
        raise BadRecord("a duplicate candidate pairs two memories, not one with itself")
    return candidate


def read_end(fields: Fields) -> dict:
    records = fields.json("records")
    if not all(kind in RECORD_ORDER and isinstance(n, int) for kind, n in records.items()):
        raise BadRecord("records must count records by type")
    return {"records": records, "left_out": fields.json("left_out")}


READERS = {"header": read_header, "agent": read_agent, "session": read_session, "entity": read_entity,
           "artifact": read_artifact, "memory": read_memory, "relationship": read_relationship,
           "duplicate_candidate": read_duplicate_candidate, "end": read_end}


def read(record: dict) -> tuple[str, dict]:
    """A decoded line as (type, its fields checked)."""
    kind = record.get("type")
    if kind not in READERS:
        raise BadRecord(f"type must be one of {', '.join(RECORD_ORDER)}")
    return kind, READERS[kind](Fields(record))
