"""What the store can keep: the one check every piece of client input passes through.

PostgreSQL refuses NUL in text and jsonb, and psycopg cannot encode an unpaired surrogate
(JSON's "\\ud800" decodes to one); either used to reach the database and answer 500. JSON
nested without bound exhausts the parser's and the redactor's recursion. The parser runs
`check` on every request body, and the API views run it on query parameters and URL parts,
so a bad value is a 400 naming where it was (`metadata.foo`, `memories[2].content`) before
anything is written.
"""

from __future__ import annotations

import json
import re

from rest_framework import exceptions

# Deep enough for any real metadata or provenance (a batch item's metadata starts at level
# 4), shallow enough that nothing downstream comes near Python's recursion limit.
MAX_JSON_DEPTH = 64

UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
NUL_MESSAGE = "must not contain NUL characters (\\u0000)"
SURROGATE_MESSAGE = "must not contain unpaired surrogates (\\ud800-\\udfff)"
TOO_DEEP_MESSAGE = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"


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


def check(value, path: str = "") -> None:
    """Raise a ValidationError (400, the fields named) if `value` holds anything unstorable."""
    found = problems(value, path)
    if found:
        raise exceptions.ValidationError(found)


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
