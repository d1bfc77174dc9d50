"""Mem0's requests and answers, as the `mem0ai` client (2.2.1: mem0/client/main.py, types.py)
sends and reads them and Mem0's API reference (docs/openapi.json) describes them.

Every field cleans what it reads (memories.api.fields). A field Mem0 has that this server cannot
honour is refused naming it and why (`unsupported`), never dropped; the few that only steer
Mem0's language model, which nothing here calls, are taken and have no effect (docs/mem0.md).
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from rest_framework import serializers

from integrations.mem0.scope import ENTITY_TYPES, Scope, entities_of, scope_of
from memories.api.fields import CleanCharField, CleanField, CleanJSONField, Secrets, clean_json
from memories.api.serializers import MemorySerializer as RecordSerializer
from memories.api.serializers import StrictSerializer, as_speaker
from memories.models import CONTENT_MAX_CHARS, Memory
from memories.retrieval.filters import SearchFilters
from memory_platform.config import config

ID_MAX_CHARS = 100  # users/<id>/agents/<id> stays within a namespace's 256 characters
ENTITY_IDS = ("user_id", "agent_id", "run_id")
PAGE_SIZE, PAGE_SIZE_MAX = 100, 200  # Mem0's default and largest page
TOP_K_MAX = 100  # the platform's largest search
TIMESTAMP_MAX = 32503680000  # the year 3000, in Unix seconds

APP_ID = ("apps are not supported by this server: a memory belongs to a user (user_id), an agent (agent_id) "
          "or a run (run_id)")
IDS_IN_FILTERS = "entity ids go inside `filters` here, as Mem0's v3 API takes them"
# The memory's fields an answer may be cut to (`fields`).
ANSWER_FIELDS = ("id", "memory", "user_id", "agent_id", "app_id", "run_id", "session_id", "metadata", "categories",
                 "score", "created_at", "updated_at", "expiration_date", "structured_attributes", "replaced_by",
                 "synthesized")


class Mem0Serializer(StrictSerializer):
    """A body or query as Mem0's client sends it. `unsupported`: fields of Mem0's this server
    does not honour, each refused with why (an empty value is no request, and passes)."""

    unsupported: dict[str, str] = {}

    def to_internal_value(self, data):
        if isinstance(data, dict):
            refused = {name: [why] for name, why in self.unsupported.items()
                       if data.get(name) not in (None, "", [], {}, False)}
            if refused:
                raise serializers.ValidationError(refused)
            data = {name: value for name, value in data.items() if name not in self.unsupported}
        return super().to_internal_value(data)


class IdField(CleanCharField):
    """One of Mem0's entity ids (user_id, agent_id, run_id): a label of a namespace here, so
    neither blank nor holding "/", and one entity, not a wildcard."""

    def __init__(self, *, secrets: Secrets, **kwargs):
        super().__init__(secrets=secrets, min_length=1, max_length=ID_MAX_CHARS, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not value.strip():
            raise serializers.ValidationError("an id may not be blank")
        if "/" in value:
            raise serializers.ValidationError("an id may not contain '/' (it is a label of a namespace here)")
        if value == "*":
            raise serializers.ValidationError("wildcards are not supported by this server: name one entity")
        return value


def instant(value) -> tuple[datetime, timedelta]:
    """A date (YYYY-MM-DD: its first instant, UTC) or a date and time (ISO 8601; UTC unless it
    says otherwise), and the step to the next instant it does not name (a day, a microsecond)."""
    if isinstance(value, str):
        try:
            day = parse_date(value)
            moment = None if day else parse_datetime(value)
        except ValueError:
            day = moment = None
        if day is not None:
            return datetime.combine(day, time.min, tzinfo=UTC), timedelta(days=1)
        if moment is not None:
            return (moment if timezone.is_aware(moment) else moment.replace(tzinfo=UTC)), timedelta(microseconds=1)
    raise serializers.ValidationError("a date (YYYY-MM-DD) or a date and time (ISO 8601)")


def later(moment: datetime, step: timedelta) -> datetime:
    """The instant a step after this one, if there is one (9999-12-31 has no next day)."""
    try:
        return moment + step
    except OverflowError:
        raise serializers.ValidationError("too late a date: at most 9999-12-30") from None


def created_bounds(operator: str, value) -> dict:
    """created_at compared with a date or a time, as the platform's bounds: created_after
    (inclusive) and created_before (exclusive)."""
    moment, step = instant(value)
    if operator not in ("gte", "gt", "lte", "lt", "eq"):
        raise serializers.ValidationError(f"the operator {operator!r} is not supported here for created_at: "
                                          "gte, gt, lte, lt or eq")
    after = moment if operator in ("gte", "eq") else later(moment, step) if operator == "gt" else None
    before = moment if operator == "lt" else later(moment, step) if operator in ("lte", "eq") else None
    return {name: bound for name, bound in (("created_after", after), ("created_before", before)) if bound}


class FiltersField(CleanField, serializers.Field):
    """Mem0's filters, the part of them this server honours: entity ids ({"user_id": "alice"},
    or {"user_id": {"eq": "alice"}}), all of them together, flat or as {"AND": [{...}, ...]};
    and, where `dates`, created_at compared with gte, gt, lte, lt or eq. Read as {"user_id",
    "agent_id", "run_id", "created_after", "created_before"} (those given). OR, NOT, wildcards,
    app_id and the other fields are refused, naming the condition."""

    secrets = Secrets.LOOKUP

    def __init__(self, *, dates: bool = True, **kwargs):
        self.dates = dates
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError('filters are a JSON object: {"user_id": "alice"}, or {"AND": [...]}')
        data = self.cleaned(clean_json, data)
        conditions = []  # (where it is, the field it compares, what with)
        for name, value in data.items():
            if name != "AND":
                conditions.append((name, name, value))
            elif isinstance(value, list) and all(isinstance(each, dict) for each in value):
                conditions += [(f"AND[{index}].{field}", field, each[field])
                               for index, each in enumerate(value) for field in each]
            else:
                raise serializers.ValidationError({"AND": ["a list of conditions, each a JSON object"]})
        read, problems = {}, {}
        for place, name, value in conditions:
            try:
                for field, got in self.condition(name, value).items():
                    read[field] = combined(field, read.get(field), got)
            except serializers.ValidationError as problem:
                problems[place] = problem.detail
        if problems:
            raise serializers.ValidationError(problems)
        return read

    def condition(self, name: str, value) -> dict:
        if name in ENTITY_IDS:
            if isinstance(value, dict):
                if set(value) != {"eq"}:
                    raise serializers.ValidationError(f"only eq compares an id here, not {', '.join(sorted(value))}")
                value = value["eq"]
            field = IdField(secrets=self.secrets)
            field.bind(name, self)
            return {name: field.run_validation(value)}
        if name == "created_at" and self.dates:
            if not isinstance(value, dict) or not value:
                raise serializers.ValidationError('compare created_at with an operator: {"gte": "2024-07-01"}')
            bounds: dict = {}
            for operator, moment in value.items():
                for field, got in created_bounds(operator, moment).items():
                    bounds[field] = combined(field, bounds.get(field), got)
            return bounds
        if name == "app_id":
            raise serializers.ValidationError(APP_ID)
        if name in ("OR", "NOT"):
            raise serializers.ValidationError(f"{name} is not supported by this server: one user, agent or run per "
                                              "request (AND, or the fields side by side)")
        supported = ", ".join([*ENTITY_IDS, *(["created_at"] if self.dates else [])])
        raise serializers.ValidationError(f"not a filter this server supports (it takes {supported})")


def combined(field: str, held, got):
    """A bound given twice: the narrower; an id given twice must be the same one."""
    if held is None or held == got:
        return got
    if field == "created_after":
        return max(held, got)
    if field == "created_before":
        return min(held, got)
    raise serializers.ValidationError(f"{field} is given twice, as {held!r} and {got!r}: one entity per request")


def scoped(ids: dict, field: str = "filters") -> Scope:
    scope = scope_of(**{name: ids.get(name) for name in ENTITY_IDS})
    if scope is None:
        raise serializers.ValidationError({field: ["one of user_id, agent_id or run_id is required"]})
    return scope


def end_of_day(day, field: str) -> datetime:
    """The first instant after a date (UTC): when a memory given it as its expiration date
    expires (it is visible through that date), or the end of a listing's end_date."""
    try:
        return datetime.combine(day, time.min, tzinfo=UTC) + timedelta(days=1)
    except OverflowError:
        raise serializers.ValidationError({field: ["too late a date: at most 9999-12-30"]}) from None


def limited_to_batch(items: list) -> list:
    limit = config().batch_limit
    if len(items) > limit:
        raise serializers.ValidationError(f"at most {limit} per request (MEMORY_PLATFORM_BATCH_LIMIT)")
    return items


# --------------------------------------------------------------------------- add


class MessageSerializer(StrictSerializer):
    role = serializers.ChoiceField(["user", "assistant", "system"])
    content = CleanCharField(secrets=Secrets.RECORDED, max_length=CONTENT_MAX_CHARS)
    name = CleanCharField(secrets=Secrets.RECORDED, max_length=256, required=False)


class AddSerializer(Mem0Serializer):
    """POST /v3/memories/add/. Read as {"messages", "scope", "infer", "metadata", "expires_at",
    "event_time"}."""

    unsupported = {"app_id": APP_ID, "immutable": "immutable memories are not supported by this server"}

    messages = serializers.ListField(child=MessageSerializer(), min_length=1)
    user_id = IdField(secrets=Secrets.REFUSE, required=False, allow_null=True)
    agent_id = IdField(secrets=Secrets.REFUSE, required=False, allow_null=True)
    run_id = IdField(secrets=Secrets.REFUSE, required=False, allow_null=True)
    filters = FiltersField(dates=False, required=False, allow_null=True)
    metadata = CleanJSONField(secrets=Secrets.RECORDED, required=False, allow_null=True)
    infer = serializers.BooleanField(default=True)
    expiration_date = serializers.DateField(required=False, allow_null=True)
    timestamp = serializers.IntegerField(min_value=0, max_value=TIMESTAMP_MAX, required=False, allow_null=True)
    # They steer the language model Mem0 extracts memories with; none is called here.
    custom_categories = serializers.ListField(child=CleanJSONField(secrets=Secrets.LOOKUP), required=False,
                                              allow_null=True)
    custom_instructions = CleanCharField(secrets=Secrets.LOOKUP, max_length=20000, required=False, allow_null=True,
                                         allow_blank=True)
    agent_custom_instructions = CleanCharField(secrets=Secrets.LOOKUP, max_length=20000, required=False,
                                               allow_null=True, allow_blank=True)
    includes = CleanCharField(secrets=Secrets.LOOKUP, max_length=20000, required=False, allow_null=True,
                              allow_blank=True)
    excludes = CleanCharField(secrets=Secrets.LOOKUP, max_length=20000, required=False, allow_null=True,
                              allow_blank=True)
    structured_data_schema = CleanJSONField(secrets=Secrets.LOOKUP, required=False, allow_null=True)
    enable_graph = serializers.BooleanField(required=False, allow_null=True)
    async_mode = serializers.BooleanField(required=False, allow_null=True)
    output_format = CleanCharField(secrets=Secrets.LOOKUP, max_length=16, required=False, allow_null=True)
    version = CleanCharField(secrets=Secrets.LOOKUP, max_length=16, required=False, allow_null=True)

    def validate_messages(self, messages):
        return limited_to_batch(messages)

    def validate(self, attrs):
        named = attrs.get("filters") or {}
        ids = {}
        for name in ENTITY_IDS:
            given, filtered = attrs.get(name), named.get(name)
            if given and filtered and given != filtered:
                raise serializers.ValidationError({name: [f"{given!r} here, {filtered!r} in filters: give one"]})
            ids[name] = given or filtered
        expiration = attrs.get("expiration_date")
        return {"messages": attrs["messages"], "scope": scoped(ids, "user_id"), "infer": attrs["infer"],
                "agent_id": ids["agent_id"],
                "metadata": attrs.get("metadata") or {},
                "expires_at": end_of_day(expiration, "expiration_date") if expiration else None,
                "event_time": datetime.fromtimestamp(attrs["timestamp"], UTC) if attrs.get("timestamp") is not None
                else None}


def memory_body(message: dict, add: dict, session_id) -> dict:
    """The memory a kept message becomes, in the REST API's shape (MemoryCreateSerializer):
    infer=True keeps what the user said, as facts; infer=False keeps every turn verbatim, as
    the episodes of a conversation, with who spoke in its metadata (as Mem0's own library
    does)."""
    metadata = dict(add["metadata"])
    if add["infer"]:
        kind = {"category": Memory.Category.FACTUAL, "memory_type": Memory.MemoryType.SEMANTIC}
    else:
        kind = {"category": Memory.Category.EPISODIC, "memory_type": Memory.MemoryType.EPISODIC}
        metadata["role"] = message["role"]
        if message.get("name"):
            metadata["actor_id"] = message["name"]
    body = {"content": message["content"], "namespace": add["scope"].namespace, "metadata": metadata,
            "source": Memory.Source.USER_PROVIDED, **kind}
    if speaker := speaker_of(message, add):
        body["speaker"] = speaker
    for name, value in (("session_id", session_id), ("expires_at", add["expires_at"]),
                        ("event_time", add["event_time"])):
        if value is not None:
            body[name] = value
    return body


def speaker_of(message: dict, add: dict) -> str | None:
    """Who said a message, as the memory's `speaker` (docs/mem0.md): the message's `name`; else,
    for the assistant, the agent the add names (agent_id). A user's message without a name has
    none (user_id is an id, not a name). A name that is no person's name (no letter, several
    lines, past 128 characters) is kept in the metadata only, as Mem0 keeps it."""
    name = message.get("name") or (add.get("agent_id") if message["role"] == "assistant" else None)
    return as_speaker(name)


def kept(messages: list[dict], *, infer: bool) -> list[dict]:
    """The messages an add keeps: with infer, the user's (what an assistant replies or a system
    prompt says is not a fact about the user); without, the user's and the assistant's
    (system prompts are skipped, as Mem0 skips them)."""
    roles = ("user",) if infer else ("user", "assistant")
    return [message for message in messages if message["role"] in roles]


# --------------------------------------------------------------------------- read


class ListSerializer(Mem0Serializer):
    """POST /v3/memories/ (get_all). page and page_size may come in the query string too, which
    wins (PageQuerySerializer)."""

    unsupported = {**{name: IDS_IN_FILTERS for name in (*ENTITY_IDS, "app_id")},
                   "categories": "filtering by category is not supported by this server",
                   "keywords": "filtering by keywords is not supported by this server: search instead"}

    filters = FiltersField()
    page = serializers.IntegerField(min_value=1, max_value=2**31 - 1, required=False)
    page_size = serializers.IntegerField(min_value=1, max_value=PAGE_SIZE_MAX, required=False)
    start_date = serializers.DateField(required=False, allow_null=True)
    end_date = serializers.DateField(required=False, allow_null=True)
    show_expired = serializers.BooleanField(default=False)
    fields = serializers.ListField(child=serializers.ChoiceField(ANSWER_FIELDS), required=False, allow_null=True)
    latest_only = serializers.BooleanField(required=False, allow_null=True)  # only the latest are listed anyway

    def validate(self, attrs):
        filters = attrs["filters"]
        for name, bound in (("start_date", "created_after"), ("end_date", "created_before")):
            if attrs.get(name) and bound in filters:
                raise serializers.ValidationError({name: ["give created_at in filters or the dates, not both"]})
        if attrs.get("start_date"):
            filters["created_after"] = datetime.combine(attrs["start_date"], time.min, tzinfo=UTC)
        if attrs.get("end_date"):
            filters["created_before"] = end_of_day(attrs["end_date"], "end_date")
        return {**attrs, "scope": scoped(filters)}


class PageQuerySerializer(StrictSerializer):
    page = serializers.IntegerField(min_value=1, max_value=2**31 - 1, required=False)
    page_size = serializers.IntegerField(min_value=1, max_value=PAGE_SIZE_MAX, required=False)


def listed(body: dict) -> dict:
    """What a get_all lists: records.memory_list's filters."""
    filters = body["filters"]
    return {"namespace": body["scope"].namespace, "session_external_id": body["scope"].run,
            "status": Memory.Status.ACTIVE, "include_expired": body["show_expired"],
            **{name: filters[name] for name in ("created_after", "created_before") if name in filters}}


class SearchSerializer(Mem0Serializer):
    """POST /v3/memories/search/."""

    unsupported = {**{name: IDS_IN_FILTERS for name in (*ENTITY_IDS, "app_id")},
                   "categories": "filtering by category is not supported by this server",
                   "metadata": "filtering by metadata is not supported by this server",
                   "reference_date": "searching as of another date is not supported by this server"}

    query = CleanCharField(secrets=Secrets.RECORDED, max_length=4000)
    filters = FiltersField()
    top_k = serializers.IntegerField(min_value=1, max_value=TOP_K_MAX, default=10)
    threshold = serializers.FloatField(min_value=0.0, max_value=1.0, required=False, allow_null=True)
    show_expired = serializers.BooleanField(default=False)
    fields = serializers.ListField(child=serializers.ChoiceField(ANSWER_FIELDS), required=False, allow_null=True)
    # The platform's ranking is one: hybrid (meaning and words), fused, always.
    rerank = serializers.BooleanField(required=False, allow_null=True)
    keyword_search = serializers.BooleanField(required=False, allow_null=True)
    latest_only = serializers.BooleanField(required=False, allow_null=True)

    def validate(self, attrs):
        return {**attrs, "scope": scoped(attrs["filters"])}


def search_filters(body: dict) -> SearchFilters:
    filters = body["filters"]
    return SearchFilters(namespace=body["scope"].namespace, session_external_id=body["scope"].run,
                         include_expired=body["show_expired"], created_after=filters.get("created_after"),
                         created_before=filters.get("created_before"))


class MemoryIdSerializer(StrictSerializer):
    memory_id = serializers.UUIDField()


class DeleteQuerySerializer(StrictSerializer):
    """DELETE /v1/memories/<id>/'s query."""

    delete_linked = serializers.BooleanField(default=False)

    def validate_delete_linked(self, delete_linked):
        if delete_linked:
            raise serializers.ValidationError("deleting the memories a memory replaced is not supported by this "
                                              "server: delete each by its id")
        return delete_linked


# --------------------------------------------------------------------------- change


class UpdateSerializer(Mem0Serializer):
    """PUT /v1/memories/<id>/. Read as the changes memories.use_cases.records.memory_update
    takes."""

    text = CleanCharField(secrets=Secrets.RECORDED, max_length=CONTENT_MAX_CHARS, required=False)
    metadata = CleanJSONField(secrets=Secrets.RECORDED, required=False, allow_null=True)
    expiration_date = serializers.DateField(required=False, allow_null=True)
    timestamp = serializers.FloatField(min_value=0, max_value=TIMESTAMP_MAX, required=False, allow_null=True)

    def validate(self, attrs):
        changes = {}
        if "text" in attrs:
            changes["content"] = attrs["text"]
        if "metadata" in attrs:
            changes["metadata"] = attrs["metadata"] or {}
        if "expiration_date" in attrs:  # null: it expires no more
            changes["expires_at"] = (end_of_day(attrs["expiration_date"], "expiration_date")
                                     if attrs["expiration_date"] else None)
        if attrs.get("timestamp") is not None:
            changes["event_time"] = datetime.fromtimestamp(attrs["timestamp"], UTC)
        if not changes:
            raise serializers.ValidationError({"text": ["give text, metadata, expiration_date or timestamp"]})
        return changes


class BatchUpdateItemSerializer(StrictSerializer):
    memory_id = serializers.UUIDField()
    text = CleanCharField(secrets=Secrets.RECORDED, max_length=CONTENT_MAX_CHARS, required=False)
    metadata = CleanJSONField(secrets=Secrets.RECORDED, required=False, allow_null=True)

    def validate(self, attrs):
        changes = {}
        if "text" in attrs:
            changes["content"] = attrs["text"]
        if "metadata" in attrs:
            changes["metadata"] = attrs["metadata"] or {}
        if not changes:
            raise serializers.ValidationError({"text": ["give text or metadata"]})
        return {"memory_id": attrs["memory_id"], "changes": changes}


class BatchUpdateSerializer(StrictSerializer):
    memories = serializers.ListField(child=BatchUpdateItemSerializer(), min_length=1)

    def validate_memories(self, memories):
        return limited_to_batch(memories)


class BatchDeleteItemSerializer(StrictSerializer):
    memory_id = serializers.UUIDField()


class BatchDeleteSerializer(StrictSerializer):
    memories = serializers.ListField(child=BatchDeleteItemSerializer(), min_length=1)

    def validate_memories(self, memories):
        return limited_to_batch(memories)


class DeleteAllQuerySerializer(Mem0Serializer):
    """DELETE /v1/memories/?user_id=...: the entity ids as query parameters, as the client sends them."""

    unsupported = {"app_id": APP_ID,
                   "filters": "give user_id, agent_id or run_id as query parameters (delete_all(user_id=...))",
                   "metadata": "deleting by metadata is not supported by this server"}

    user_id = IdField(secrets=Secrets.LOOKUP, required=False)
    agent_id = IdField(secrets=Secrets.LOOKUP, required=False)
    run_id = IdField(secrets=Secrets.LOOKUP, required=False)

    def validate(self, attrs):
        return {"scope": scoped(attrs, "user_id")}


class EntityPathSerializer(StrictSerializer):
    """DELETE /v2/entities/<entity_type>/<entity_id>/."""

    entity_type = serializers.ChoiceField([*ENTITY_TYPES.values(), "app"])
    entity_id = IdField(secrets=Secrets.LOOKUP)

    def validate_entity_type(self, entity_type):
        if entity_type == "app":
            raise serializers.ValidationError(APP_ID)
        return entity_type


FEEDBACK_USEFUL = {"POSITIVE": True, "NEGATIVE": False, "VERY_NEGATIVE": False}


class FeedbackSerializer(StrictSerializer):
    """POST /v1/feedback/. Folded into the memory's usefulness; the reason is not kept."""

    memory_id = serializers.UUIDField()
    feedback = serializers.ChoiceField(list(FEEDBACK_USEFUL), required=False, allow_null=True)
    feedback_reason = CleanCharField(secrets=Secrets.LOOKUP, max_length=1000, required=False, allow_null=True,
                                     allow_blank=True)

    def validate(self, attrs):
        if attrs.get("feedback") is None:
            raise serializers.ValidationError({"feedback": ["POSITIVE, NEGATIVE or VERY_NEGATIVE: there is no "
                                                            "feedback to clear here"]})
        return attrs


# --------------------------------------------------------------------------- answers


RECORD = RecordSerializer()  # for the memory's tags, read as the REST API reads them


class MemorySerializer(serializers.Serializer):
    """A memory as Mem0 answers it (GET /v1/memories/<id>/, get_all). context["runs"]: the
    external_id of each session the memories are in, by session id."""

    run_field = "session_id"  # get and get_all name the run so; search names it run_id

    id = serializers.UUIDField(source="pk")
    memory = serializers.CharField(source="content")
    metadata = serializers.JSONField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def to_representation(self, memory):
        entities = entities_of(memory.namespace)
        run = self.context.get("runs", {}).get(str(memory.session_id)) or entities["run_id"]
        answer = super().to_representation(memory)
        expires = memory.expires_at
        return {
            "id": answer["id"], "memory": answer["memory"], "user_id": entities["user_id"],
            "agent_id": entities["agent_id"], "app_id": None, self.run_field: run, "metadata": answer["metadata"],
            "categories": RECORD.get_tags(memory), "created_at": answer["created_at"],
            "updated_at": answer["updated_at"],
            # It was visible through the day before it expired.
            "expiration_date": (expires - timedelta(microseconds=1)).date().isoformat() if expires else None,
            "structured_attributes": structured_attributes(memory.created_at),
            "replaced_by": str(memory.superseded_by_id or memory.merged_into_id or "") or None,
            "synthesized": memory.source == Memory.Source.INFERRED,
        }


class SearchResultSerializer(MemorySerializer):
    """A search's result, (memory, score), as Mem0 answers it."""

    run_field = "run_id"

    def to_representation(self, result):
        memory, score = result
        return {**super().to_representation(memory), "score": round(score, 6)}


def structured_attributes(moment: datetime) -> dict:
    """Mem0's breakdown of when a memory was written (UTC)."""
    moment = moment.astimezone(UTC)
    return {"day": moment.day, "month": moment.month, "year": moment.year, "hour": moment.hour,
            "minute": moment.minute, "day_of_week": moment.strftime("%A").lower(), "is_weekend": moment.weekday() >= 5,
            "quarter": (moment.month - 1) // 3 + 1, "week_of_year": moment.isocalendar().week}


def cut(answer: dict, fields: list[str] | None) -> dict:
    """The answer cut to the fields asked for (`fields`), when some were."""
    return {name: value for name, value in answer.items() if name in fields} if fields else answer


HISTORY_EVENTS = {"create": "ADD", "delete": "DELETE"}  # every other change is an UPDATE


class HistorySerializer(serializers.Serializer):
    """A memory's history as Mem0 answers it: one entry per version, with the content before
    it (old_memory) and after (new_memory; none once deleted). context["runs"] as above,
    context["before"]: each version's previous content, by version id."""

    id = serializers.UUIDField()
    memory_id = serializers.UUIDField()
    metadata = serializers.JSONField()
    created_at = serializers.DateTimeField()

    def to_representation(self, version):
        answer = super().to_representation(version)
        snapshot = version.snapshot or {}
        entities = entities_of(snapshot.get("scope", ""))
        event = HISTORY_EVENTS.get(version.operation, "UPDATE")
        run = self.context.get("runs", {}).get(str(snapshot.get("session_id"))) or entities["run_id"]
        return {
            "id": answer["id"], "memory_id": answer["memory_id"], "input": [],
            "old_memory": self.context.get("before", {}).get(version.pk),
            "new_memory": None if event == "DELETE" else version.content,
            "user_id": entities["user_id"], "agent_id": entities["agent_id"], "app_id": None, "session_id": run,
            "categories": list(snapshot.get("tags", [])), "event": event, "metadata": answer["metadata"],
            "created_at": answer["created_at"], "updated_at": answer["created_at"],
        }
