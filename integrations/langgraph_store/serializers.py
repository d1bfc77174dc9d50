"""LangGraph's store requests and responses (langgraph_sdk/_async/store.py, StoreClient; the
reference server's schemas StorePutRequest, StoreSearchRequest, StoreDeleteRequest,
StoreListNamespacesRequest, Item, SearchItemsResponse, ListNamespaceResponse).

A namespace is a list of labels, in a body always (LangGraph's shape: the platform's other
doors also take "a/b", this one does not); in a query string (GET /store/items) they travel
joined with ".", so a label may not hold one. The platform keeps a namespace joined with "/" (as a
memory keeps it), so a label may not hold that either. Every field cleans what it reads
(memories.api.fields).
"""

from __future__ import annotations

import math

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memories.api.fields import (
    NAMESPACE_MAX_CHARS,
    NAMESPACE_SEPARATOR,
    CleanCharField,
    CleanField,
    CleanJSONField,
    NamespaceField,
    namespace_labels,
)
from memories.api.serializers import SpeakerField, StrictSerializer, as_speaker
from memories.intake.cleaning import Secrets, clean_text
from memories.store.search import DEPTH_MAX
from memories.writes.kernel import TTL_MAX_SECONDS
from memory_platform.config import config

QUERY_SEPARATOR = "."  # LangGraph's, between the labels of a namespace in a query string
RESERVED_ROOT = "langgraph"  # LangGraph's BaseStore refuses it as a namespace's first label
LIST_MAX = 1000


@extend_schema_field({"type": "array", "items": {"type": "string", "minLength": 1}, "example": ["users", "alice"]})
class LabelsField(NamespaceField):
    """A namespace as LangGraph sends it in a body: a list of labels, none holding "." or "/"
    (LangGraph's _validate_namespace_labels, and the platform's separator). Read as one string."""

    reserved = (QUERY_SEPARATOR, NAMESPACE_SEPARATOR)
    accepts_text = False
    default_error_messages = {"shape": "a namespace is a list of at least {minimum} labels"}


@extend_schema_field({"type": "array", "items": {"type": "string", "minLength": 1}, "example": ["users", "*"]})
class PatternField(LabelsField):
    """list_namespaces' prefix and suffix: labels, "*" matching any one. Read as a tuple."""

    def __init__(self, **kwargs):
        super().__init__(secrets=Secrets.LOOKUP, minimum=0, **kwargs)

    def to_internal_value(self, data):
        super().to_internal_value(data)
        return tuple(data)


@extend_schema_field({"type": "string", "example": "users.alice"})
class QueryLabelsField(LabelsField):
    """A namespace in GET /store/items' query string: its labels joined with ".". Read as one string."""

    default_error_messages = {"shape": "a namespace is its labels joined with '.'"}

    def labels(self, data) -> list:
        if not isinstance(data, str):
            self.fail("shape")
        return data.split(QUERY_SEPARATOR)


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
class IndexField(CleanField, serializers.Field):
    """null: the whole value is the item's text; false: not indexed; or the field paths to index
    (checked by memories.store.values.check_index), which name the value's fields and are kept
    nowhere."""

    secrets = Secrets.LOOKUP

    def __init__(self, **kwargs):
        super().__init__(allow_null=True, required=False, default=None, **kwargs)

    def validate_empty_values(self, data):
        if data is None:
            return True, None
        return super().validate_empty_values(data)

    def to_internal_value(self, data):
        if data is False:
            return data
        if isinstance(data, list) and all(isinstance(path, str) for path in data):
            return [self.cleaned(clean_text, path) for path in data]
        raise serializers.ValidationError("index is false, null, or a list of field paths")


class ValueField(CleanJSONField):
    """The item's value: a JSON object, at most STORE_VALUE_MAX_BYTES as JSON text. The write
    redacts it as a memory's metadata (it is kept as one) and records it in its provenance."""

    def __init__(self, **kwargs):
        super().__init__(secrets=Secrets.RECORDED, **kwargs)

    def bytes_limit(self) -> int:
        return config().store_value_max_bytes

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("value must be a JSON object")
        return super().to_internal_value(data)


class PutItemSerializer(StrictSerializer):
    namespace = LabelsField(secrets=Secrets.REFUSE)
    key = CleanCharField(secrets=Secrets.REFUSE, min_length=1, max_length=256, trim_whitespace=False)
    value = ValueField()
    index = IndexField()
    ttl = MinutesField()
    speaker = SpeakerField(required=False, allow_null=True,
                           help_text='Who said it (a person\'s name), linked as the item\'s speaker. Unsent, a '
                                     '"speaker" string at the top of the value is taken when it is a name (letters, '
                                     'one line, at most 128 characters): LangGraph\'s clients send no other field.')

    def validate(self, attrs):
        if attrs.get("speaker") is None:
            attrs["speaker"] = as_speaker(attrs["value"].get("speaker"))
        return attrs

    def validate_namespace(self, namespace):
        if namespace.split(NAMESPACE_SEPARATOR)[0] == RESERVED_ROOT:
            raise serializers.ValidationError(f'the root label of a namespace cannot be "{RESERVED_ROOT}"')
        return namespace


class DeleteItemSerializer(StrictSerializer):
    namespace = LabelsField(secrets=Secrets.LOOKUP)
    key = CleanCharField(secrets=Secrets.LOOKUP, min_length=1, max_length=256, trim_whitespace=False)


class GetItemQuerySerializer(StrictSerializer):
    """?namespace=users.alice&key=diet[&refresh_ttl=false]"""

    namespace = QueryLabelsField(secrets=Secrets.LOOKUP,
                                 help_text="The namespace's labels joined with '.', e.g. users.alice")
    key = CleanCharField(secrets=Secrets.LOOKUP, min_length=1, max_length=256, trim_whitespace=False)
    refresh_ttl = serializers.BooleanField(required=False, default=True,
                                           help_text="Default true: an item written with a ttl expires that long "
                                                     "from now again.")


class SearchItemsSerializer(StrictSerializer):
    namespace_prefix = LabelsField(secrets=Secrets.RECORDED, minimum=0, required=False, default="", allow_null=True)
    filter = CleanJSONField(secrets=Secrets.RECORDED, required=False, allow_null=True, default=None,
                            help_text='Over the value\'s fields: {"kind": "note", "score": {"$gte": 3}} '
                                      "($eq $ne $gt $gte $lt $lte).")
    limit = serializers.IntegerField(min_value=1, max_value=LIST_MAX, default=10)
    offset = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)
    query = CleanCharField(secrets=Secrets.RECORDED, max_length=4000, required=False, allow_null=True,
                           allow_blank=True, default=None,
                           help_text="Search by meaning: the items nearest it, best first, with their score.")
    refresh_ttl = serializers.BooleanField(required=False, allow_null=True, default=None)
    threshold = serializers.FloatField(min_value=0.0, max_value=1.0, required=False, allow_null=True, default=None,
                                       help_text="Not LangGraph's: with a query, only items at least this similar "
                                                 "(spec §3's 0.7).")

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
    max_depth = serializers.IntegerField(min_value=1, max_value=NAMESPACE_MAX_CHARS, required=False, allow_null=True,
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
        return namespace_labels(memory.namespace)


class SearchItemSerializer(ItemSerializer):
    score = serializers.FloatField(allow_null=True)

    def to_representation(self, instance):
        memory, score = instance
        return {**super().to_representation(memory), "score": score}


class SearchItemsResponseSerializer(serializers.Serializer):
    items = SearchItemSerializer(many=True)


class ListNamespacesResponseSerializer(serializers.Serializer):
    namespaces = serializers.ListField(child=serializers.ListField(child=serializers.CharField()))
