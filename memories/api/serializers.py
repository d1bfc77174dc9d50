"""Input serializers validate what a client may send (nothing server-owned, no unknown field);
output serializers shape what it gets back. Field names follow the specification (docs/specification.md)."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memories.api.fields import (
    CleanCharField,
    CleanJSONField,
    NamespaceField,
    TagField,
    namespace_labels,
)
from memories.intake.cleaning import Secrets
from memories.lifecycle import strength
from memories.models import (
    CONTENT_MAX_CHARS,
    Entity,
    Memory,
    MemoryRelationship,
    MemoryTag,
    MemoryVersion,
    RetrievalEvent,
)
from memories.retrieval import context, expansion
from memories.retrieval.filters import TIME_PRESETS, SearchFilters, time_preset
from memories.writes.entities import speakers_of
from memories.writes.kernel import DECAY_RATE_MAX, TTL_MAX_SECONDS
from memory_platform.config import config
from tenants.models import Session


class StrictSerializer(serializers.Serializer):
    """Rejects fields it does not declare: a client learns at once that `status` or
    `retrieval_count` are the server's, instead of having them silently dropped."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["expected a JSON object"]})
        unknown = sorted(set(data) - set(self.fields))
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            detail = dict(exc.detail)
            detail.update({name: ["unknown or read-only field"] for name in unknown})
            raise serializers.ValidationError(detail) from None
        if unknown:
            raise serializers.ValidationError({name: ["unknown or read-only field"] for name in unknown})
        return value


class UnitIntervalField(serializers.FloatField):
    """A score in [0, 1], stored with three decimals."""

    def __init__(self, **kwargs):
        super().__init__(min_value=0.0, max_value=1.0, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        # The bounds first: DRF checks them only after this method, and quantizing 1e308 to
        # three decimals raises (a 500) instead of failing validation.
        self.run_validators(value)
        return Decimal(str(value)).quantize(Decimal("0.001"), rounding=ROUND_HALF_EVEN)


TAG_LIST_LIMIT = 50
# A pagination cursor is a short base64 text (DRF's CursorPagination); this is far past one.
CURSOR_MAX_CHARS = 1000
MAX_RELATIONSHIP_WEIGHT = 1000.0
# The largest value of the PositiveIntegerField the version is stored in.
MAX_VERSION = 2**31 - 1


class MemoryFieldsMixin(StrictSerializer):
    category = serializers.ChoiceField(Memory.Category.choices, required=False)
    memory_type = serializers.ChoiceField(Memory.MemoryType.choices, required=False)
    confidence = UnitIntervalField(required=False)
    importance = UnitIntervalField(required=False)
    sensitivity = CleanCharField(secrets=Secrets.REFUSE, min_length=1, max_length=64, required=False)
    scope = NamespaceField(secrets=Secrets.REFUSE, minimum=0, required=False,
                           help_text='The namespace, by its older name; "" (or []) for none.')
    namespace = NamespaceField(secrets=Secrets.REFUSE, required=False)
    key = CleanCharField(secrets=Secrets.REFUSE, min_length=1, max_length=256, required=False, allow_null=True)
    metadata = CleanJSONField(secrets=Secrets.RECORDED, required=False)
    expires_at = serializers.DateTimeField(required=False, allow_null=True)
    ttl = serializers.IntegerField(min_value=1, max_value=TTL_MAX_SECONDS, required=False,
                                   help_text="Time to live in seconds: the memory expires that long after this "
                                             "write (or after a read that refreshes it). Not with expires_at.")
    valid_from = serializers.DateTimeField(required=False, allow_null=True)
    valid_until = serializers.DateTimeField(required=False, allow_null=True)
    event_time = serializers.DateTimeField(required=False, allow_null=True)

    def validate(self, attrs):
        if "scope" in attrs:
            if "namespace" in attrs:
                raise serializers.ValidationError({"namespace": ["send scope or namespace, not both"]})
            attrs["namespace"] = attrs.pop("scope")
        if "ttl" in attrs and attrs.get("expires_at") is not None:
            raise serializers.ValidationError({"ttl": ["send ttl or expires_at, not both"]})
        start, end = attrs.get("valid_from"), attrs.get("valid_until")
        if start and end and end < start:
            raise serializers.ValidationError({"valid_until": ["must not be before valid_from"]})
        return attrs


class EntityGivenSerializer(StrictSerializer):
    """An entity the agent names with a write (besides those the extractor finds)."""

    name = CleanCharField(secrets=Secrets.REDACT, min_length=1, max_length=256)
    type = serializers.ChoiceField(Entity.Kind.choices, default=Entity.Kind.PERSON)
    aliases = serializers.ListField(child=CleanCharField(secrets=Secrets.REDACT, min_length=1, max_length=256),
                                    required=False, max_length=20)


SPEAKER_MAX_CHARS = 128


class SpeakerField(CleanCharField):
    """Who said the memory: a person's name ("Melanie"), linked to the memory as its speaker
    (the person is found by name, alias or short name in the memory's namespace, or created)."""

    def __init__(self, **kwargs):
        super().__init__(secrets=Secrets.REDACT, min_length=1, max_length=SPEAKER_MAX_CHARS, **kwargs)

    def run_validation(self, data=serializers.empty):
        value = super().run_validation(data)
        if isinstance(value, str) and (not any(character.isalpha() for character in value) or "\n" in value):
            raise serializers.ValidationError("a person's name: letters, on one line")
        return value


def as_speaker(given) -> str | None:
    """`given` as a speaker, if it is a person's name as SpeakerField takes one; None otherwise
    (a door that finds a name in data it does not own, such as a store item's value or a Mem0
    message's name, keeps the data as it is and names no speaker)."""
    if not isinstance(given, str):
        return None
    try:
        return SpeakerField().run_validation(given)
    except serializers.ValidationError:
        return None


SPEAKER_HELP = ("Who said it: a person's name. Linked to the memory as its speaker, which a search that names "
                "the person prefers; it overrides the speaker the text's shape shows (\"Name: ...\", "
                "\"Name said: ...\"), which is found when this is not given.")


class MemoryCreateSerializer(MemoryFieldsMixin):
    content = CleanCharField(secrets=Secrets.RECORDED, max_length=CONTENT_MAX_CHARS)
    source = serializers.ChoiceField(Memory.Source.choices, required=False)
    session_id = serializers.UUIDField(required=False, allow_null=True)
    provenance = CleanJSONField(secrets=Secrets.RECORDED, required=False)
    decay_rate = serializers.FloatField(min_value=0.0, max_value=DECAY_RATE_MAX, required=False,
                                        help_text="How fast the memory fades unless it is retrieved (0: never; "
                                                  "default 0.1, and 0 for episodes).")
    tags = serializers.ListField(child=TagField(secrets=Secrets.REFUSE), required=False, max_length=TAG_LIST_LIMIT)
    entities = EntityGivenSerializer(many=True, required=False, max_length=50,
                                     help_text="Entities the memory is about, with their aliases; the built-in "
                                               "extractor finds people, places, organisations, dates and "
                                               "quantities too.")
    speaker = SpeakerField(required=False, help_text=SPEAKER_HELP)

    def validate(self, attrs):
        attrs = super().validate(attrs)
        attrs.setdefault("category", Memory.Category.FACTUAL)
        return attrs


class BatchField(serializers.ListField):
    """The memories of a batch, at most MEMORY_PLATFORM_BATCH_LIMIT, counted before any is read."""

    def to_internal_value(self, data):
        limit = config().batch_limit
        if isinstance(data, list) and len(data) > limit:
            raise serializers.ValidationError(f"at most {limit} memories per batch")
        return super().to_internal_value(data)


class MemoryBatchCreateSerializer(StrictSerializer):
    memories = BatchField(child=MemoryCreateSerializer(), min_length=1)


class MemoryUpdateSerializer(MemoryFieldsMixin):
    content = CleanCharField(secrets=Secrets.RECORDED, max_length=CONTENT_MAX_CHARS, required=False)
    version = serializers.IntegerField(min_value=1, max_value=MAX_VERSION, required=False,
                                       help_text="The version being changed, if If-Match is not sent.")
    speaker = SpeakerField(required=False, allow_null=True,
                           help_text="Who said it (a person's name); null: nobody named, the text's shape "
                                     "decides. Unsent: unchanged.")

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if not set(attrs) - {"version"}:
            raise serializers.ValidationError({"non_field_errors": ["nothing to change"]})
        return attrs


class VersionOnlySerializer(StrictSerializer):
    version = serializers.IntegerField(min_value=1, max_value=MAX_VERSION, required=False)


class SupersedeSerializer(StrictSerializer):
    content = CleanCharField(secrets=Secrets.RECORDED, max_length=CONTENT_MAX_CHARS)
    reason = CleanCharField(secrets=Secrets.REDACT, max_length=1000, required=False, allow_blank=True)
    confidence = UnitIntervalField(required=False)
    category = serializers.ChoiceField(Memory.Category.choices, required=False)
    metadata = CleanJSONField(secrets=Secrets.RECORDED, required=False)
    version = serializers.IntegerField(min_value=1, max_value=MAX_VERSION, required=False)
    speaker = SpeakerField(required=False, allow_null=True,
                           help_text="Who said the correction (a person's name); unsent: the speaker named for the "
                                     "memory it corrects; null: nobody named.")


class FeedbackSerializer(StrictSerializer):
    useful = serializers.BooleanField(required=False)
    score = serializers.FloatField(min_value=0.0, max_value=1.0, required=False)

    def validate(self, attrs):
        if ("useful" in attrs) == ("score" in attrs):
            raise serializers.ValidationError({"non_field_errors": ["send exactly one of useful (true/false) or score (0..1)"]})
        return attrs


class TagsSerializer(StrictSerializer):
    tags = serializers.ListField(child=TagField(secrets=Secrets.REFUSE), min_length=1, max_length=TAG_LIST_LIMIT)


class TagListSerializer(serializers.Serializer):
    """A memory's tags, as every tags endpoint answers: none left is an empty list."""

    tags = serializers.ListField(child=serializers.CharField())


class RelationshipCreateSerializer(StrictSerializer):
    target_id = serializers.UUIDField()
    relation_type = serializers.ChoiceField(MemoryRelationship.RelationType.choices)
    confidence = UnitIntervalField(required=False)
    predicate = CleanCharField(secrets=Secrets.REDACT, max_length=128, required=False, allow_blank=True)
    # Spec §4 stores weight as REAL (float4, overflows above ~3.4e38); a relative strength
    # needs nothing near that.
    weight = serializers.FloatField(required=False, min_value=0.0, max_value=MAX_RELATIONSHIP_WEIGHT)
    metadata = CleanJSONField(secrets=Secrets.REDACT, required=False)


class MemoryListQuerySerializer(StrictSerializer):
    """Filters of GET /memories, from the query string."""

    category = serializers.ChoiceField(Memory.Category.choices, required=False)
    status = serializers.ChoiceField(Memory.Status.choices, required=False)
    memory_type = serializers.ChoiceField(Memory.MemoryType.choices, required=False)
    agent = serializers.UUIDField(required=False)
    session = serializers.UUIDField(required=False)
    namespace = NamespaceField(secrets=Secrets.LOOKUP, required=False,
                               help_text="Prefix: `memories` matches memories/user-1 too.")
    tag = serializers.ListField(child=TagField(secrets=Secrets.LOOKUP), required=False)
    created_after = serializers.DateTimeField(required=False)
    created_before = serializers.DateTimeField(required=False)
    include_deleted = serializers.BooleanField(required=False, default=False)
    include_expired = serializers.BooleanField(required=False, default=False,
                                               help_text="Also memories past their expiry, not yet swept away.")
    cursor = CleanCharField(secrets=Secrets.LOOKUP, max_length=CURSOR_MAX_CHARS, required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=200)

    def validate(self, attrs):
        after, before = attrs.get("created_after"), attrs.get("created_before")
        if after and before and before < after:
            raise serializers.ValidationError({"created_before": ["must not be before created_after"]})
        return attrs


# Far past any real list, and within what PostgreSQL's OFFSET takes (a bigint).
MAX_OFFSET = 2**31 - 1


class EntityListQuerySerializer(StrictSerializer):
    """Filters of GET /entities, from the query string."""

    namespace = NamespaceField(secrets=Secrets.LOOKUP, required=False,
                               help_text="Prefix: `memories` matches memories/user-1 too.")
    type = serializers.ChoiceField(Entity.Kind.choices, required=False)
    q = CleanCharField(secrets=Secrets.LOOKUP, max_length=256, required=False,
                              help_text="A name or an alias, or the beginning of one of its words; any case.")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=100, help_text="Default 50.")
    cursor = CleanCharField(secrets=Secrets.LOOKUP, max_length=CURSOR_MAX_CHARS, required=False,
                            help_text="The page after (or before) one: as `next` and `previous` carry it.")
    offset = serializers.IntegerField(required=False, min_value=0, max_value=MAX_OFFSET,
                                      help_text="Deprecated: skips that many (slow deep in a large list), and "
                                                "answers `count`. Follow `next` instead.")

    def validate(self, attrs):
        if "cursor" in attrs and "offset" in attrs:
            raise serializers.ValidationError({"cursor": ["give a cursor or an offset, not both"]})
        return attrs


def query_data(query_params, list_fields=("tag",)) -> dict:
    """A QueryDict as serializer input: repeated parameters become lists where expected, and a
    namespace sent as repeated labels (?namespace=users&namespace=alice) their list."""
    data = {}
    for name in query_params:
        values = query_params.getlist(name)
        repeated_labels = name == "namespace" and len(values) > 1
        data[name] = values if name in list_fields or repeated_labels else query_params.get(name)
    return data


def validated(serializer_class, data) -> dict:
    """The serializer's validated data, or its ValidationError naming each field: how every
    door (the REST API, the LangGraph store API, MCP's tools) reads its input."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


# --------------------------------------------------------------------------- output


class MemorySerializer(serializers.ModelSerializer):
    org_id = serializers.UUIDField(read_only=True)
    agent_id = serializers.UUIDField(read_only=True)
    session_id = serializers.UUIDField(read_only=True, allow_null=True)
    scope = serializers.CharField(source="namespace", read_only=True)  # the namespace, joined with "/"
    namespace = serializers.SerializerMethodField()
    tags = serializers.SerializerMethodField()
    confidence = serializers.FloatField()
    usefulness_score = serializers.FloatField()
    importance = serializers.FloatField()
    superseded_by = serializers.UUIDField(source="superseded_by_id", allow_null=True)
    merged_into = serializers.UUIDField(source="merged_into_id", allow_null=True)
    embedding_status = serializers.SerializerMethodField()
    # Kept in memory_usage and read through Memory's manager (memories migration 0009).
    retrieval_count = serializers.IntegerField(read_only=True)
    last_retrieved_at = serializers.DateTimeField(read_only=True, allow_null=True)
    strength = serializers.SerializerMethodField(
        help_text="How strongly the memory is held now, 0-1 (decay since its last retrieval or change; "
                  "archived below the decay threshold). 1 for memories that do not decay.")
    speaker = serializers.SerializerMethodField(
        help_text="Who said it: the person linked to the memory as its speaker (named with the write, or "
                  "found in the text's shape), by the name the namespace knows them by; null if nobody.")

    class Meta:
        model = Memory
        fields = [
            "id", "org_id", "agent_id", "session_id", "content", "content_hash", "category", "memory_type", "source",
            "status", "confidence", "usefulness_score", "importance", "sensitivity", "validation_status", "scope",
            "namespace", "key", "provenance", "metadata", "tags", "retrieval_count", "last_retrieved_at",
            "last_injected_at", "decay_rate", "is_protected", "strength", "reinforced_at", "valid_from",
            "valid_until", "event_time", "superseded_by", "merged_into", "expires_at", "ttl_seconds", "deleted_at",
            "version", "embedding_status", "speaker",
            "embedding_model", "created_at", "updated_at",
        ]
        read_only_fields = fields

    def get_namespace(self, memory) -> list[str]:
        return namespace_labels(memory.namespace)

    def get_tags(self, memory) -> list[str]:
        # A search loads the names with the memory (retrieval.records.load); lists prefetch the tags.
        names = getattr(memory, "tag_names", None)
        if names is None:
            prefetched = getattr(memory, "_prefetched_objects_cache", {}).get("tags")
            # Not memory.tags.all(), which names the memory alone: with its organisation too, a
            # Citus cluster asks that organisation's shard only (docs/adr/0042).
            tags = prefetched if prefetched is not None else MemoryTag.objects.filter(
                org_id=memory.org_id, memory_id=memory.pk)
            names = [tag.tag for tag in tags]
        return sorted(names)

    def get_embedding_status(self, memory) -> str:
        if not memory.indexed:  # never embedded: a store item kept out of search by meaning
            return "not_indexed"
        return "ready" if memory.embedding_dimensions else "pending"

    def get_strength(self, memory) -> float:
        return round(strength.of(memory, timezone.now()), 4)

    def get_speaker(self, memory) -> str | None:
        # A search's records carry it (retrieval.records.load), lists prefetch the links.
        if hasattr(memory, "speaker_name"):
            return memory.speaker_name
        prefetched = getattr(memory, "_prefetched_objects_cache", {}).get("entity_links")
        if prefetched is not None:
            return next((link.entity.name for link in prefetched if link.role == "speaker"), None)
        return speakers_of(memory.org_id, [memory.pk]).get(memory.pk)


class WeakQuerySerializer(StrictSerializer):
    """Filters of GET /memories/weak, from the query string."""

    below = serializers.FloatField(min_value=0.0, max_value=1.0, required=False,
                                   help_text="Strength under which a memory is listed (default 0.5).")
    namespace = NamespaceField(secrets=Secrets.LOOKUP, required=False,
                               help_text="Prefix: `users/alice` matches users/alice/... too.")
    limit = serializers.IntegerField(min_value=1, max_value=200, default=50)
    offset = serializers.IntegerField(min_value=0, max_value=10**9, default=0)


class FadingSerializer(serializers.Serializer):
    """A memory that is fading (memories.lifecycle.decay.Fading)."""

    memory = MemorySerializer()
    strength = serializers.FloatField(help_text="How strongly it is held now, 0-1.")
    archived_after = serializers.DateTimeField(
        allow_null=True, help_text="When the nightly decay will archive it unless it is retrieved, changed or "
                                   "confirmed first (the decay threshold, 0.05 by default).")

    def to_representation(self, fading):
        data = super().to_representation(fading)
        data["strength"] = round(fading.strength, 4)
        return data


class StatsQuerySerializer(StrictSerializer):
    namespace = NamespaceField(secrets=Secrets.LOOKUP, required=False,
                               help_text="Prefix: `users/alice` counts users/alice/... too.")


class ExplanationSerializer(serializers.Serializer):
    """memories.retrieval.explain.Explanation."""

    memory = MemorySerializer()
    strength = serializers.DictField(help_text="How strongly it is held (value), what drives it, and when the "
                                               "nightly decay would archive it (archived_after; null if never).")
    ranking = serializers.DictField(help_text="What it brings to any search's final score besides relevance: "
                                              "each part, its weight, and their weighted sum.")
    versions = serializers.ListField(child=serializers.DictField())
    relationships = serializers.ListField(child=serializers.DictField(),
                                          help_text="Both directions, those whose other end is in reach.")
    entities = serializers.ListField(child=serializers.DictField())
    provenance = serializers.ListField(child=serializers.DictField())
    retrievals = serializers.ListField(child=serializers.DictField(), allow_null=True,
                                       help_text="The latest searches that returned it, with its rank there "
                                                 "(null for a key limited to namespaces).")


class EntitySerializer(serializers.ModelSerializer):
    type = serializers.ChoiceField(Entity.Kind.choices, source="kind", read_only=True)
    scope = serializers.CharField(source="namespace", read_only=True)  # the namespace, joined with "/"
    namespace = serializers.SerializerMethodField()
    aliases = serializers.SerializerMethodField()

    class Meta:
        model = Entity
        fields = ["id", "name", "type", "scope", "namespace", "aliases", "summary", "attributes", "mention_count",
                  "first_seen_at", "last_seen_at"]
        read_only_fields = fields

    def get_namespace(self, entity) -> list[str]:
        return namespace_labels(entity.namespace)

    def get_aliases(self, entity) -> list[str]:
        return [alias.alias for alias in entity.aliases.all()]  # prefetched, in order (selectors)


class EntityFactSerializer(serializers.ModelSerializer):
    """A memory that mentions an entity, in few words: what it says, where and when."""

    namespace = serializers.SerializerMethodField()

    class Meta:
        model = Memory
        fields = ["id", "content", "namespace", "event_time", "created_at"]
        read_only_fields = fields

    def get_namespace(self, memory) -> list[str]:
        return namespace_labels(memory.namespace)


class EntityDetailSerializer(EntitySerializer):
    """An entity with what is remembered of it."""

    # Read from the entity, where the view sets them (selectors.entity_facts, entity_timeline).
    facts = EntityFactSerializer(many=True, read_only=True,
                                 help_text="The latest live memories that mention it, the most recent first.")
    timeline = EntityFactSerializer(many=True, read_only=True,
                                    help_text="The live memories that mention it and say when they happened "
                                              "(event_time), the earliest first.")

    class Meta(EntitySerializer.Meta):
        fields = [*EntitySerializer.Meta.fields, "facts", "timeline"]
        read_only_fields = fields


class NearDuplicateSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    similarity = serializers.FloatField()
    content = serializers.CharField()


class WriteResultSerializer(serializers.Serializer):
    memory = MemorySerializer()
    created = serializers.BooleanField()
    deduplicated = serializers.BooleanField()
    embedding_status = serializers.CharField()
    near_duplicates = serializers.SerializerMethodField()

    def get_near_duplicates(self, result) -> list[dict]:
        return [{"id": str(memory.pk), "similarity": similarity, "content": memory.content}
                for memory, similarity in result.near_duplicates]


class BatchItemResultSerializer(serializers.Serializer):
    """One item of a batch create: what the client needs to refer to the memory, without
    echoing back what it just sent (a batch of 100 stays cheap to answer)."""

    id = serializers.UUIDField(source="memory.pk")
    created = serializers.BooleanField()
    deduplicated = serializers.BooleanField()
    embedding_status = serializers.CharField()
    content_hash = serializers.CharField(source="memory.content_hash")
    version = serializers.IntegerField(source="memory.version")


class VersionSerializer(serializers.ModelSerializer):
    memory_id = serializers.UUIDField(read_only=True)
    changed_by_agent_id = serializers.UUIDField(read_only=True, allow_null=True)
    confidence = serializers.FloatField()
    changed_by_user = serializers.CharField(source="changed_by_user.username", default=None, allow_null=True)

    class Meta:
        model = MemoryVersion
        fields = ["id", "memory_id", "version_num", "operation", "content", "category", "confidence", "status",
                  "metadata", "snapshot", "changed_by_type", "changed_by_agent_id", "changed_by_user",
                  "change_reason", "created_at"]
        read_only_fields = fields


class RelationshipSerializer(serializers.ModelSerializer):
    source_id = serializers.UUIDField(read_only=True)
    target_id = serializers.UUIDField(read_only=True)
    confidence = serializers.FloatField()

    class Meta:
        model = MemoryRelationship
        fields = ["id", "source_id", "target_id", "relation_type", "predicate", "weight", "confidence",
                  "metadata", "created_at"]
        read_only_fields = fields


class SearchFiltersSerializer(StrictSerializer):
    agent = serializers.ListField(child=serializers.UUIDField(), required=False)
    session = serializers.UUIDField(required=False)
    namespace = NamespaceField(secrets=Secrets.RECORDED, required=False,
                               help_text="Prefix: `users/alice` matches users/alice/... too.")
    category = serializers.ListField(child=serializers.ChoiceField(Memory.Category.choices), required=False)
    memory_type = serializers.ListField(child=serializers.ChoiceField(Memory.MemoryType.choices), required=False)
    status = serializers.ListField(child=serializers.ChoiceField(Memory.Status.choices), required=False,
                                   help_text="Default: active only.")
    sensitivity = serializers.ListField(child=CleanCharField(secrets=Secrets.RECORDED, max_length=64), required=False)
    require_verified = serializers.BooleanField(required=False)
    min_confidence = serializers.FloatField(min_value=0.0, max_value=1.0, required=False)
    created_after = serializers.DateTimeField(required=False)
    created_before = serializers.DateTimeField(required=False)
    time_range = serializers.ChoiceField(list(TIME_PRESETS), required=False,
                                         help_text="Shorthand for created_after.")
    valid_at = serializers.DateTimeField(required=False)
    event_after = serializers.DateTimeField(required=False, help_text="Happened at or after (event_time).")
    event_before = serializers.DateTimeField(required=False, help_text="Happened before (event_time).")
    tags = serializers.ListField(child=TagField(secrets=Secrets.RECORDED), required=False)
    include_expired = serializers.BooleanField(required=False)
    include_deleted = serializers.BooleanField(required=False)

    def validate(self, attrs):
        if "time_range" in attrs and "created_after" in attrs:
            raise serializers.ValidationError({"time_range": ["send time_range or created_after, not both"]})
        if "event_after" in attrs and "event_before" in attrs and attrs["event_before"] <= attrs["event_after"]:
            raise serializers.ValidationError({"event_before": ["must be after event_after"]})
        return attrs

    @staticmethod
    def to_filters(data: dict):
        return SearchFilters(
            agent_ids=data.get("agent", []), session_id=data.get("session"), namespace=data.get("namespace"),
            categories=data.get("category", []), memory_types=data.get("memory_type", []),
            statuses=data.get("status") or ["active"], sensitivity=data.get("sensitivity", []),
            require_verified=data.get("require_verified", False), min_confidence=data.get("min_confidence"),
            created_after=time_preset(data["time_range"]) if "time_range" in data else data.get("created_after"),
            created_before=data.get("created_before"), valid_at=data.get("valid_at"),
            event_after=data.get("event_after"), event_before=data.get("event_before"), tags=data.get("tags", []),
            include_expired=data.get("include_expired", False), include_deleted=data.get("include_deleted", False),
        )


@extend_schema_field({"oneOf": [{"type": "boolean"}, {"type": "integer", "minimum": 0, "maximum": expansion.MAX_HOPS}]})
class ExpandField(serializers.Field):
    """How many relationships from the best results a search reaches: false or 0 (none), true
    or 1, or 2 (spec §4's multi-hop)."""

    default_error_messages = {"invalid": "Must be true, false, or a number of hops from 0 to {maximum}."}

    def to_internal_value(self, data):
        if isinstance(data, bool):
            return int(data)
        if isinstance(data, int) and 0 <= data <= expansion.MAX_HOPS:
            return data
        self.fail("invalid", maximum=expansion.MAX_HOPS)

    def to_representation(self, value):
        return value


class SearchRequestSerializer(StrictSerializer):
    query = CleanCharField(secrets=Secrets.RECORDED, max_length=4000)
    limit = serializers.IntegerField(min_value=1, max_value=100, default=10)
    mode = serializers.ChoiceField(["hybrid", "vector", "fulltext"], default="hybrid")
    expand = ExpandField(default=0, help_text="Add the memories this many relationships from the best results: "
                                              "true or 1, or 2 (a fact that leads to the next); false or 0 for none.")
    threshold = serializers.FloatField(min_value=0.0, max_value=1.0, required=False,
                                       help_text="Keep vector matches at or above this cosine similarity.")
    filters = SearchFiltersSerializer(required=False)


class RetrieveRequestSerializer(StrictSerializer):
    """Spec §2's retrieve request."""

    query = CleanCharField(secrets=Secrets.RECORDED, max_length=4000)
    scope = NamespaceField(secrets=Secrets.RECORDED, help_text="The namespace prefix searched.")
    allowed_sensitivity = serializers.ListField(child=CleanCharField(secrets=Secrets.RECORDED, min_length=1,
                                                                     max_length=64),
                                                min_length=1, default=lambda: ["internal"])
    require_verified = serializers.BooleanField(default=False)
    limit = serializers.IntegerField(min_value=1, max_value=32, default=8)


class ContextRequestSerializer(StrictSerializer):
    """Spec §4's context assembly: the memories for a prompt, within a token budget."""

    query = CleanCharField(secrets=Secrets.RECORDED, max_length=4000,
                           help_text="The request the context is for, as the user put it.")
    max_tokens = serializers.IntegerField(min_value=16, max_value=100_000, default=1000,
                                          help_text="The budget: the returned text has at most this many tokens.")
    encoding = serializers.ChoiceField(list(context.ENCODINGS), default="o200k_base",
                                       help_text="The tokenizer that counts them: OpenAI's o200k_base (GPT-4o and "
                                                 "later) or cl100k_base (GPT-4, GPT-3.5).")
    candidates = serializers.IntegerField(
        min_value=1, max_value=100, required=False,
        help_text="How many of the search's best results are considered; by default as many as the budget "
                  "could hold: max_tokens / 20, at least 30, at most 100.")
    order = serializers.ChoiceField(list(context.ORDERS), default="relevance",
                                    help_text="The lines by rank, or in the order the memories happened.")
    filters = SearchFiltersSerializer(required=False)


class HotQuerySerializer(StrictSerializer):
    limit = serializers.IntegerField(min_value=1, max_value=50, default=20)


class RetrievalEventQuerySerializer(StrictSerializer):
    kind = serializers.ChoiceField(RetrievalEvent.Kind.values, required=False)
    agent = serializers.UUIDField(required=False)
    created_after = serializers.DateTimeField(required=False)
    created_before = serializers.DateTimeField(required=False)
    cursor = CleanCharField(secrets=Secrets.LOOKUP, max_length=CURSOR_MAX_CHARS, required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=200)


class SearchResultSerializer(serializers.Serializer):
    memory = MemorySerializer()
    score = serializers.FloatField()
    signals = serializers.DictField()


class RetrievedMemorySerializer(serializers.Serializer):
    """Spec §2's retrieved memory: only what a caller needs to decide on context."""

    id = serializers.UUIDField(source="memory.pk")
    summary = serializers.CharField(source="memory.content")
    scope = serializers.CharField(source="memory.namespace")
    sensitivity = serializers.CharField(source="memory.sensitivity")
    validation_status = serializers.CharField(source="memory.validation_status")
    provenance = serializers.DictField(source="memory.provenance")
    artifact_refs = serializers.SerializerMethodField()

    def get_artifact_refs(self, result) -> list[dict]:
        return [{"id": str(link.artifact.pk), "scope": link.artifact.namespace, "sha256": link.artifact.sha256,
                 "storage_uri": link.artifact.storage_uri, "artifact_type": link.artifact.artifact_type}
                for link in self.context.get("artifacts", {}).get(result.memory.pk, [])]


class RetrievalEventSerializer(serializers.ModelSerializer):
    agent_id = serializers.UUIDField(read_only=True, allow_null=True)
    scope = serializers.CharField(source="namespace", read_only=True)  # the namespace prefix asked
    replay_of = serializers.UUIDField(source="replay_of_id", read_only=True, allow_null=True)
    results = serializers.SerializerMethodField()

    class Meta:
        model = RetrievalEvent
        fields = ["id", "kind", "agent_id", "query", "scope", "filters", "returned_memory_ids", "returned_scores",
                  "returned_artifact_ids", "results", "details", "replay_of", "created_at"]
        read_only_fields = fields

    def get_results(self, event) -> list[dict]:
        signals = event.details.get("signals", {})
        return [{"rank": rank, "id": str(memory_id), "score": score, "signals": signals.get(str(memory_id), {})}
                for rank, (memory_id, score) in enumerate(zip(event.returned_memory_ids, event.returned_scores), 1)]


class EraseRequestSerializer(StrictSerializer):
    """What the calling agent erases of its own data: a namespace (and all under it), or a session."""

    namespace = NamespaceField(secrets=Secrets.REFUSE, required=False,
                               help_text='e.g. ["users", "alice"] or "users/alice": that namespace and every one '
                                         "under it")
    session = serializers.UUIDField(required=False)
    dry_run = serializers.BooleanField(default=False, help_text="Count what would be erased, erase nothing.")

    def validate(self, data):
        if ("namespace" in data) == ("session" in data):
            raise serializers.ValidationError({"namespace": ["give the namespace or the session to erase (one of them)"]})
        return data


class ErasureSerializer(serializers.Serializer):
    erasure_id = serializers.UUIDField(allow_null=True, help_text="The erasure's record; null for a dry run.")
    scope = serializers.DictField()
    erased = serializers.DictField(child=serializers.IntegerField(), help_text="Rows deleted (or, for a dry run, "
                                                                              "that would be), by kind.")
    dry_run = serializers.BooleanField()


# --------------------------------------------------------------------------- sessions


class SessionCreateSerializer(StrictSerializer):
    external_id = CleanCharField(secrets=Secrets.REFUSE, min_length=1, max_length=256, required=False,
                                        help_text="The agent's own id for the conversation (a thread id): sent "
                                                  "again while the session is open, it finds that session.")
    namespace = NamespaceField(secrets=Secrets.REFUSE, required=False,
                               help_text='Whose conversation it is, e.g. ["users", "alice"] or "users/alice". A key '
                                         "limited to namespaces must give one it reaches.")
    metadata = CleanJSONField(secrets=Secrets.REDACT, required=False)


class SessionListQuerySerializer(StrictSerializer):
    agent = serializers.UUIDField(required=False)
    status = serializers.ChoiceField(["open", "closed"], required=False)
    namespace = NamespaceField(secrets=Secrets.LOOKUP, required=False,
                               help_text="Prefix: `users` matches users/alice too.")
    external_id = CleanCharField(secrets=Secrets.LOOKUP, max_length=256, required=False)
    cursor = CleanCharField(secrets=Secrets.LOOKUP, max_length=CURSOR_MAX_CHARS, required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=200)


class SessionCloseSerializer(StrictSerializer):
    consolidate = serializers.BooleanField(default=True, help_text="Propose merges of the session's near-duplicates "
                                                                  "and a summary for review (default true).")


class HistoryQuerySerializer(StrictSerializer):
    cursor = CleanCharField(secrets=Secrets.LOOKUP, max_length=CURSOR_MAX_CHARS, required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=200)


class SessionMemoriesQuerySerializer(StrictSerializer):
    cursor = CleanCharField(secrets=Secrets.LOOKUP, max_length=CURSOR_MAX_CHARS, required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=200)


class SessionSerializer(serializers.ModelSerializer):
    agent_id = serializers.UUIDField(read_only=True, allow_null=True)
    namespace = serializers.SerializerMethodField()
    status = serializers.SerializerMethodField()
    memory_count = serializers.IntegerField(read_only=True, help_text="Its live memories.")
    consolidation = serializers.DictField(read_only=True, allow_null=True,
                                          help_text="What the consolidation proposed once it ran: merge proposals "
                                                    "(duplicate_pairs) and summaries waiting for review.")

    class Meta:
        model = Session
        fields = ["id", "agent_id", "external_id", "namespace", "metadata", "status", "started_at", "ended_at",
                  "consolidated_at", "consolidation", "memory_count"]

    def get_namespace(self, session) -> list[str]:
        return namespace_labels(session.namespace)

    def get_status(self, session) -> str:
        return "closed" if session.ended_at else "open"
