"""LangGraph's store requests and responses (langgraph_sdk/_async/store.py, StoreClient; the
reference server's schemas StorePutRequest, StoreSearchRequest, StoreDeleteRequest,
StoreListNamespacesRequest, Item, SearchItemsResponse, ListNamespaceResponse).

A namespace is a list of labels; in a query string (GET /store/items) they travel joined
with ".", so a label may not hold one. The platform keeps a namespace joined with "/" (a
memory's scope), so a label may not hold that either.
"""

from __future__ import annotations

import json
import math

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memories.api.serializers import (
    NAMESPACE_SEPARATOR,
    StrictSerializer,
    scope_to_namespace,
)
from memories.retrieval.store import DEPTH_MAX
from memories.writes.kernel import TTL_MAX_SECONDS
from memory_platform.config import config

QUERY_SEPARATOR = "."  # LangGraph's, between the labels of a namespace in a query string
RESERVED_ROOT = "langgraph"  # LangGraph's BaseStore refuses it as a namespace's first label
SCOPE_MAX_CHARS = 256
LIST_MAX = 1000


def labels_to_scope(labels, *, minimum: int) -> str:
    """Labels as the platform's scope, each checked as LangGraph's _validate_namespace_labels
    does, and for the platform's separator."""
    if not isinstance(labels, list) or len(labels) < minimum:
        raise serializers.ValidationError(f"a namespace is a list of at least {minimum} labels")
    for label in labels:
        if not isinstance(label, str) or not label.strip():
            raise serializers.ValidationError("namespace labels must be non-empty strings")
        for separator in (QUERY_SEPARATOR, NAMESPACE_SEPARATOR):
            if separator in label:
                raise serializers.ValidationError(f"namespace label {label!r} may not contain {separator!r}")
    scope = NAMESPACE_SEPARATOR.join(labels)
    if len(scope) > SCOPE_MAX_CHARS:
        raise serializers.ValidationError(f"namespace is longer than {SCOPE_MAX_CHARS} characters once joined")
    return scope


@extend_schema_field({"type": "array", "items": {"type": "string", "minLength": 1}, "example": ["users", "alice"]})
class LabelsField(serializers.Field):
    """A namespace as LangGraph sends it in a body: a list of labels. Read as the scope."""

    def __init__(self, *, minimum: int = 1, **kwargs):
        self.minimum = minimum
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        return labels_to_scope(data, minimum=self.minimum)

    def to_representation(self, value):
        return scope_to_namespace(value)


@extend_schema_field({"type": "array", "items": {"type": "string", "minLength": 1}, "example": ["users", "*"]})
class PatternField(serializers.Field):
    """list_namespaces' prefix and suffix: labels, "*" matching any one. Read as a tuple."""

    def to_internal_value(self, data):
        labels_to_scope(data, minimum=0)
        return tuple(data)


def _ttl_seconds(minutes) -> int | None:
    """LangGraph's ttl, in minutes (a number, fractions allowed), as the platform's seconds."""
    if minutes is None:
        return None
    if isinstance(minutes, bool) or not isinstance(minutes, (int, float)) or not math.isfinite(minutes):
        raise serializers.ValidationError("ttl is a number of minutes, or null")
    seconds = round(minutes * 60) if 0 < minutes <= TTL_MAX_SECONDS / 60 else 0
    if not 1 <= seconds <= TTL_MAX_SECONDS:
        raise serializers.ValidationError(f"ttl must be from 1/60 (a second) to {TTL_MAX_SECONDS // 60} minutes")
    return seconds


@extend_schema_field({"type": "number", "nullable": True, "description": "Minutes (may be a fraction); null: no expiry."})
class MinutesField(serializers.Field):
    def __init__(self, **kwargs):
        super().__init__(allow_null=True, required=False, default=None, **kwargs)

    def validate_empty_values(self, data):
        if data is None:
            return True, None
        return super().validate_empty_values(data)

    def to_internal_value(self, data):
        return _ttl_seconds(data)


@extend_schema_field({"oneOf": [{"type": "boolean", "enum": [False]}, {"type": "array", "items": {"type": "string"}}],
                      "nullable": True})
class IndexField(serializers.Field):
    """null: the whole value is the item's text; false: not indexed; or the field paths to index
    (checked by memories.store_values.check_index)."""

    def __init__(self, **kwargs):
        super().__init__(allow_null=True, required=False, default=None, **kwargs)

    def validate_empty_values(self, data):
        if data is None:
            return True, None
        return super().validate_empty_values(data)

    def to_internal_value(self, data):
        if data is False or (isinstance(data, list) and all(isinstance(path, str) for path in data)):
            return data
        raise serializers.ValidationError("index is false, null, or a list of field paths")


class ValueField(serializers.DictField):
    """The item's value: a JSON object, at most STORE_VALUE_MAX_BYTES as JSON text."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("value must be a JSON object")
        limit = config().store_value_max_bytes
        if len(json.dumps(data, ensure_ascii=False).encode()) > limit:
            raise serializers.ValidationError(f"value is larger than {limit} bytes as JSON")
        return data


class PutItemSerializer(StrictSerializer):
    namespace = LabelsField()
    key = serializers.CharField(min_length=1, max_length=256, trim_whitespace=False)
    value = ValueField()
    index = IndexField()
    ttl = MinutesField()

    def validate_namespace(self, scope):
        if scope.split(NAMESPACE_SEPARATOR)[0] == RESERVED_ROOT:
            raise serializers.ValidationError(f'the root label of a namespace cannot be "{RESERVED_ROOT}"')
        return scope


class DeleteItemSerializer(StrictSerializer):
    namespace = LabelsField()
    key = serializers.CharField(min_length=1, max_length=256, trim_whitespace=False)


class GetItemQuerySerializer(StrictSerializer):
    """?namespace=users.alice&key=diet[&refresh_ttl=false]"""

    namespace = serializers.CharField(max_length=SCOPE_MAX_CHARS, allow_blank=True,
                                      help_text="The namespace's labels joined with '.', e.g. users.alice")
    key = serializers.CharField(min_length=1, max_length=256, trim_whitespace=False)
    refresh_ttl = serializers.BooleanField(required=False, default=True,
                                           help_text="Default true: an item written with a ttl expires that long "
                                                     "from now again.")

    def validate_namespace(self, value):
        return labels_to_scope(value.split(QUERY_SEPARATOR), minimum=1)


class SearchItemsSerializer(StrictSerializer):
    namespace_prefix = LabelsField(minimum=0, required=False, default="", allow_null=True)
    filter = serializers.DictField(required=False, allow_null=True, default=None,
                                   help_text='Over the value\'s fields: {"kind": "note", "score": {"$gte": 3}} '
                                             "($eq $ne $gt $gte $lt $lte).")
    limit = serializers.IntegerField(min_value=1, max_value=LIST_MAX, default=10)
    offset = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)
    query = serializers.CharField(max_length=4000, required=False, allow_null=True, allow_blank=True, default=None,
                                  help_text="Search by meaning: the items nearest it, best first, with their score.")
    refresh_ttl = serializers.BooleanField(required=False, allow_null=True, default=None)
    threshold = serializers.FloatField(min_value=0.0, max_value=1.0, required=False, allow_null=True, default=None,
                                       help_text="Not LangGraph's: with a query, only items at least this similar "
                                                 "(seed 003's 0.7).")

    def validate_namespace_prefix(self, value):
        return value or ""

    def validate(self, attrs):
        if attrs.get("query") and attrs["offset"] + attrs["limit"] > DEPTH_MAX:
            raise serializers.ValidationError({"offset": [f"a search with a query reaches at most {DEPTH_MAX} items "
                                                          "deep (offset + limit)"]})
        return attrs


class ListNamespacesSerializer(StrictSerializer):
    prefix = PatternField(required=False, allow_null=True, default=())
    suffix = PatternField(required=False, allow_null=True, default=())
    max_depth = serializers.IntegerField(min_value=1, max_value=SCOPE_MAX_CHARS, required=False, allow_null=True,
                                         default=None)
    limit = serializers.IntegerField(min_value=1, max_value=LIST_MAX, default=100)
    offset = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)

    def validate_prefix(self, value):
        return value or ()

    def validate_suffix(self, value):
        return value or ()


# --------------------------------------------------------------------------- output


class ItemSerializer(serializers.Serializer):
    """LangGraph's Item: a store item (a keyed memory) as its namespace, key and value."""

    namespace = serializers.SerializerMethodField()
    key = serializers.CharField()
    value = serializers.DictField(source="metadata")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_namespace(self, memory) -> list[str]:
        return scope_to_namespace(memory.scope)


class SearchItemSerializer(ItemSerializer):
    score = serializers.FloatField(allow_null=True)

    def to_representation(self, instance):
        memory, score = instance
        return {**super().to_representation(memory), "score": score}


class SearchItemsResponseSerializer(serializers.Serializer):
    items = SearchItemSerializer(many=True)


class ListNamespacesResponseSerializer(serializers.Serializer):
    namespaces = serializers.ListField(child=serializers.ListField(child=serializers.CharField()))
