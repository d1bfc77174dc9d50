"""Every free-text input a client sends is cleaned here, by the field that reads it: the REST
API's and the LangGraph store's serializer fields (memories.api.fields), which MCP's tools use
too, and the console's form fields (console.forms). tests/unit/test_cleaning_fields.py fails
when a serializer or a form reads text with any other field.

Cleaning a value:

- it must be storable: PostgreSQL refuses NUL in text and jsonb, and psycopg cannot encode an
  unpaired surrogate (JSON's "\\ud800" decodes to one); JSON nested without bound exhausts the
  parser's and the redactor's recursion. Either used to reach the database and answer 500;
- it must fit: text within its field's length (once redacted too), JSON within its bytes;
- and a secret in it (memories.intake.redaction's rules) meets the fate its field states (`Secrets`).

What is wrong raises `Unclean`, an InvalidInput naming where it was (`metadata.foo`), before
anything is written. An organisation's own policy (personal data too) is applied on top by the
services that store what they are given, which know the organisation.
"""

from __future__ import annotations

import enum
import json
import re

from memories.errors import InvalidInput
from memories.intake.redaction import IdentifierHoldsSecret, Redactor

# Deep enough for any real metadata or provenance (a batch item's metadata starts at level
# 4), shallow enough that nothing downstream comes near Python's recursion limit.
MAX_JSON_DEPTH = 64

UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
NUL_MESSAGE = "must not contain NUL characters (\\u0000)"
SURROGATE_MESSAGE = "must not contain unpaired surrogates (\\ud800-\\udfff)"
TOO_DEEP_MESSAGE = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"

# The rules every door applies; an organisation's policy adds personal data in its services.
SECRET_RULES = Redactor()


class Secrets(enum.Enum):
    """What becomes of a secret in a field. Every field that reads text states one."""

    # Replaced by [REDACTED:<kind>] here: free text such as a reason, a name, a session's metadata.
    REDACT = "redact"
    # Refused, naming the field: an identifier (namespace, key, tag), since two redacted ones
    # would become one.
    REFUSE = "refuse"
    # Kept for the write that stores it, which redacts it by the organisation's policy and
    # records what it replaced (a memory's provenance; a retrieval event's `redacted`).
    RECORDED = "recorded"
    # Compared with what is stored and never stored itself: a list's filter, a cursor.
    LOOKUP = "lookup"


class Unclean(InvalidInput):
    """A value that cannot be taken as it is. `where` maps each place inside it (relative to the
    field: "" for the value itself, "foo.bar", "[2]") to what is wrong there."""

    def __init__(self, field: str, where: dict[str, list[str]]):
        place, messages = next(iter(where.items()))
        super().__init__(messages[0], field=join(field, place))
        self.where = where


def join(field: str, place: str) -> str:
    if not place:
        return field
    return f"{field}{place}" if place.startswith("[") or not field else f"{field}.{place}"


# --------------------------------------------------------------------------- storable


def text_problem(text: str) -> str | None:
    """Why PostgreSQL would refuse this text, or None."""
    found = UNSTORABLE.search(text)
    if found is None:
        return None
    return NUL_MESSAGE if found.group() == "\x00" else SURROGATE_MESSAGE


def problems(value, path: str = "") -> dict[str, list[str]]:
    """{field path: [message]} for every unstorable string or key in a parsed JSON value, and
    for a value nested deeper than MAX_JSON_DEPTH (reported at its top-level field)."""
    found: dict[str, list[str]] = {}
    _walk(value, path, 0, path, found)
    return found


def _walk(value, path: str, depth: int, top: str, found: dict) -> None:
    if isinstance(value, str):
        problem = text_problem(value)
        if problem:
            found[path or "non_field_errors"] = [problem]
        return
    if not isinstance(value, (dict, list)):
        return
    if depth >= MAX_JSON_DEPTH:
        found[top or "non_field_errors"] = [TOO_DEEP_MESSAGE]
        return  # and look no deeper: the walk's own recursion stays bounded
    if isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, f"{path}[{index}]", depth + 1, top or f"[{index}]", found)
        return
    for key, item in value.items():
        problem = text_problem(key)
        shown = json.dumps(key)[1:-1] if problem else key  # escaped: the error must not carry the NUL itself
        where = f"{path}.{shown}" if path else shown
        if problem:
            found[where] = [f"key {problem}"]
            continue
        _walk(item, where, depth + 1, top or where, found)


# --------------------------------------------------------------------------- cleaning


def clean_text(value: str, *, field: str, secrets: Secrets, max_length: int | None = None) -> str:
    """The text as it may be kept: storable, its secrets redacted or refused as `secrets` says,
    and (redacted) within max_length."""
    if problem := text_problem(value):
        raise Unclean(field, {"": [problem]})
    if secrets is Secrets.REFUSE:
        try:
            SECRET_RULES.check_identifier(value, field=field)
        except IdentifierHoldsSecret as refused:
            raise Unclean(field, {"": [str(refused)]}) from None
    elif secrets is Secrets.REDACT:
        value = SECRET_RULES.plain(value)
        # A short secret's placeholder can be longer than the secret.
        if max_length is not None and len(value) > max_length:
            raise Unclean(field, {"": [f"longer than {max_length} characters once its secrets are redacted"]})
    return value


def clean_json(value, *, field: str, secrets: Secrets, max_bytes: int | None = None):
    """A JSON value as it may be kept: storable, nested at most MAX_JSON_DEPTH deep, at most
    max_bytes as JSON text, its secrets (in keys and values) redacted if `secrets` says so.
    JSON is never an identifier: Secrets.REFUSE is for text."""
    if secrets is Secrets.REFUSE:
        raise ValueError("an identifier is text: clean it with clean_text")
    if found := problems(value):
        raise Unclean(field, {("" if place == "non_field_errors" else place): messages
                              for place, messages in found.items()})
    if max_bytes is not None and len(json.dumps(value, ensure_ascii=False).encode()) > max_bytes:
        raise Unclean(field, {"": [f"larger than {max_bytes} bytes as JSON"]})
    if secrets is Secrets.REDACT:
        value, _ = SECRET_RULES.json(value)
    return value
