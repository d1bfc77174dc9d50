"""What the store can keep, checked on a whole request: the parser runs `check` on every
request body, and the API views run it on query parameters and URL parts, so a bad value is a
400 naming where it was (`metadata.foo`, `memories[2].content`) before any field reads it. The
rules are memories.intake.cleaning's, which every field applies again to what it reads."""

from __future__ import annotations

from rest_framework import exceptions

from memories.intake.cleaning import problems


def check(value, path: str = "") -> None:
    """Raise a ValidationError (400, the fields named) if `value` holds anything unstorable."""
    found = problems(value, path)
    if found:
        raise exceptions.ValidationError(found)
