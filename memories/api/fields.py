"""The serializer fields that read what a client sends, each cleaning it (memories.intake.cleaning) and
each stating what becomes of a secret in it. The REST API's serializers, the LangGraph store's
and so MCP's tools read every text and JSON value with these (tests/unit/test_cleaning_fields.py).

A namespace is read here too, by one rule at every door: a list of labels (["users", "alice"])
or one string of them joined with "/" ("users/alice"), for writes and filters alike; it is kept
(and compared) as that string, a memory's namespace, and answered as the list.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from memories.intake.cleaning import Secrets, Unclean, clean_json, clean_text
from memories.models import NAMESPACE_MAX_CHARS

NAMESPACE_SEPARATOR = "/"


class CleanField:
    """A field that cleans what it reads; `secrets` says what becomes of a secret in it."""

    secrets: Secrets

    def cleaned(self, clean, value, **limits):
        """clean(value) (memories.intake.cleaning), its refusal as this field's validation error."""
        name = self.field_name or getattr(self.parent, "field_name", "") or "value"
        try:
            return clean(value, field=name, secrets=self.secrets, **limits)
        except Unclean as problem:
            inside = {place: messages for place, messages in problem.where.items() if place}
            raise serializers.ValidationError(inside or problem.where[""]) from None


class CleanCharField(CleanField, serializers.CharField):
    """Text, cleaned once it passed the CharField's own checks (length included)."""

    def __init__(self, *, secrets: Secrets, **kwargs):
        self.secrets = secrets
        super().__init__(**kwargs)

    def run_validation(self, data=empty):
        value = super().run_validation(data)
        return self.cleaned(clean_text, value, max_length=self.max_length) if isinstance(value, str) else value


class CleanJSONField(CleanField, serializers.DictField):
    """A JSON object, cleaned: never nested too deep, within max_bytes, its secrets as `secrets` says."""

    def __init__(self, *, secrets: Secrets, max_bytes: int | None = None, **kwargs):
        self.secrets, self.max_bytes = secrets, max_bytes
        super().__init__(**kwargs)

    def bytes_limit(self) -> int | None:
        return self.max_bytes

    def run_validation(self, data=empty):
        value = super().run_validation(data)
        return self.cleaned(clean_json, value, max_bytes=self.bytes_limit()) if isinstance(value, dict) else value


class TagField(CleanCharField):
    def __init__(self, *, secrets: Secrets, **kwargs):
        super().__init__(secrets=secrets, min_length=1, max_length=64, **kwargs)


# --------------------------------------------------------------------------- namespaces


def namespace_labels(namespace: str) -> list[str]:
    """The labels of a namespace kept as one string ("users/alice": ["users", "alice"])."""
    return namespace.split(NAMESPACE_SEPARATOR) if namespace else []


@extend_schema_field({
    "oneOf": [{"type": "array", "items": {"type": "string", "minLength": 1}},
              {"type": "string", "description": 'The labels joined with "/", e.g. "users/alice".'}],
    "example": ["users", "alice"]})
class NamespaceField(CleanField, serializers.Field):
    """Spec §3's namespace: a list of labels, e.g. ["users", "alice"], or the labels joined with
    "/", "users/alice". Read as one string ("users/alice"), answered as the list."""

    # Characters a label may not hold, besides the separator (LangGraph's door adds ".").
    reserved: tuple[str, ...] = (NAMESPACE_SEPARATOR,)
    accepts_text = True
    default_error_messages = {
        "shape": "a namespace is a list of at least {minimum} labels, or them joined with '/'",
        "label": "namespace labels must be non-empty strings",
        "reserved": "namespace label {label!r} may not contain {character!r}",
        "length": f"namespace is longer than {NAMESPACE_MAX_CHARS} characters once joined with '/'",
    }

    def __init__(self, *, secrets: Secrets, minimum: int = 1, **kwargs):
        if secrets is Secrets.REDACT:
            raise ValueError("a namespace identifies: refuse a secret in it, or leave it to the write or lookup")
        self.secrets, self.minimum = secrets, minimum
        super().__init__(**kwargs)

    def labels(self, data) -> list:
        """The labels as sent, not yet checked ("/users/alice/" names users/alice, as a prefix
        filter always took it)."""
        if self.accepts_text and isinstance(data, str):
            data = data.strip(NAMESPACE_SEPARATOR)
            return data.split(NAMESPACE_SEPARATOR) if data else []
        if not isinstance(data, list):
            self.fail("shape", minimum=self.minimum)
        return data

    def to_internal_value(self, data):
        labels = self.labels(data)
        if len(labels) < self.minimum:
            self.fail("shape", minimum=self.minimum)
        if not all(isinstance(label, str) and label.strip() for label in labels):
            self.fail("label")
        namespace = self.cleaned(clean_text, NAMESPACE_SEPARATOR.join(labels))  # before a message quotes a label
        for label in labels:
            for character in self.reserved:
                if character in label:
                    self.fail("reserved", label=label, character=character)
        if len(namespace) > NAMESPACE_MAX_CHARS:
            self.fail("length")
        return namespace

    def to_representation(self, value):
        return namespace_labels(value)
