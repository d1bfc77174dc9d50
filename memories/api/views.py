"""The agent REST API (/api/v1/). Views parse and shape; services and selectors decide."""

from __future__ import annotations

import re

from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, inline_serializer
from rest_framework import status
from rest_framework import serializers as drf
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from memories import keyset
from memories.access import Caller
from memories.api import serializers as s
from memories.api import storable
from memories.api.idempotency import idempotent
from memories.api.pagination import KeysetPagination
from memories.api.parsers import BoundedBodyRequest, LimitedJSONParser
from memories.api.schema import (
    EXAMPLE_ENTITY,
    EXAMPLE_FACT,
    EXAMPLE_MEMORY,
    EXAMPLE_RELATIONSHIP,
    EXAMPLE_SESSION,
    EXAMPLE_VERSION,
    IDEMPOTENCY_ERRORS,
    IDEMPOTENCY_KEY,
    IF_MATCH,
    PRECONDITION_ERRORS,
    documented,
    documented_error,
    list_of,
)
from memories.errors import InvalidInput
from memories.use_cases import lifecycle, records
from tenants.authentication import ApiKeyAuthentication, KeyMayAct
from tenants.throttles import RateLimited

ETAG = re.compile(r'^\s*(?:W/)?"?(\d+)"?\s*$')


class AgentAPIView(APIView):
    """Authenticated by an agent's API key: each view parses the request, calls one use case
    (memories.use_cases) with the key's Caller, and shapes the answer. The use case keeps the
    caller within its organisation and its key's reach."""

    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [KeyMayAct]
    reads_only = False  # a POST that only reads (a search): a read-only key may send it
    parser_classes = [LimitedJSONParser]
    # Heavier requests also count against a rate of their own (RATE_LIMITS["SEARCH"], ...).
    rate_limit_scope: str | None = None

    def rate_limit_scope_for(self, request) -> str | None:
        return self.rate_limit_scope

    def throttled(self, request, wait):
        raise RateLimited(wait=wait or 1, detail="Too many requests for this API key.")

    def initialize_request(self, request, *args, **kwargs):
        # DRF's own, with the Request that reads chunked bodies too.
        return BoundedBodyRequest(request, parsers=self.get_parsers(), authenticators=self.get_authenticators(),
                                  negotiator=self.get_content_negotiator(),
                                  parser_context=self.get_parser_context(request))

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)  # authentication, permissions, rate limits
        # The body is checked as it is parsed; the URL's parts get the same check here.
        storable.check({name: values[0] if len(values) == 1 else values
                        for name, values in request.query_params.lists()})
        storable.check({name: value for name, value in kwargs.items() if isinstance(value, str)})

    @property
    def caller(self) -> Caller:
        return self.request.user.caller

    def validated(self, serializer_class, data):
        return s.validated(serializer_class, data)

    def expected_version(self, body_version: int | None) -> int | None:
        """If-Match (the ETag a GET returned) or a `version` in the body."""
        header = self.request.headers.get("If-Match")
        if header is None:
            return body_version
        if header.strip() == "*":
            return None
        match = ETAG.match(header)
        if not match:
            raise InvalidInput('If-Match must be an ETag such as "3"', field="If-Match")
        if body_version is not None and body_version != int(match.group(1)):
            raise InvalidInput("If-Match and version disagree", field="version")
        return int(match.group(1))

    def memory_response(self, memory, *, status_code=status.HTTP_200_OK) -> Response:
        return Response(s.MemorySerializer(memory).data, status=status_code, headers={"ETag": f'"{memory.version}"'})


BATCH_RESULT = inline_serializer("BatchWriteResult", {"results": s.BatchItemResultSerializer(many=True)})


def write_result(result: records.WriteResult) -> dict:
    return s.WriteResultSerializer(result).data


# --------------------------------------------------------------------------- memories


class MemoryCollectionView(AgentAPIView):
    """GET: list memories (cursor pagination, filters). POST: create one, or a batch."""

    def rate_limit_scope_for(self, request) -> str | None:
        if request.method == "POST" and isinstance(request.data, dict) and "memories" in request.data:
            return "batch"
        return None

    @documented(summary="List memories", response=list_of(s.MemorySerializer, "MemoryPage", paginated=True), parameters=[
        s.MemoryListQuerySerializer], response_example={"next": None, "previous": None, "results": [EXAMPLE_MEMORY]},
        operation_id="memories_list")
    def get(self, request):
        filters = self.validated(s.MemoryListQuerySerializer, s.query_data(request.query_params))
        queryset = records.memory_list(self.caller, **filters)
        paginator = KeysetPagination(keyset.NEWEST_FIRST)
        page = paginator.paginate_queryset(queryset, request)
        return paginator.get_paginated_response(s.MemorySerializer(page.items, many=True).data)

    @documented(
        summary="Create a memory, or a batch",
        request=PolymorphicProxySerializer("MemoryCreateOrBatch", [s.MemoryCreateSerializer, s.MemoryBatchCreateSerializer],
                                           resource_type_field_name=None),
        response=PolymorphicProxySerializer("WriteResultOrBatch", [s.WriteResultSerializer, BATCH_RESULT],
                                            resource_type_field_name=None),
        status=201, also=(200,), parameters=[IDEMPOTENCY_KEY],
        description="One memory (embedded inline), or `{\"memories\": [...]}` for a batch (embedded by a worker "
                    "after commit; each result then carries only id, created, deduplicated, embedding_status, "
                    "content_hash and version). An equal live memory of the same agent in the same namespace is "
                    "returned with `deduplicated: true` and status 200 instead of a second row; the same "
                    "content in another namespace (another end user's) is a memory of its own.",
        request_example={"content": "The user prefers green tea in the morning", "category": "preference",
                         "namespace": ["memories", "user-42"], "tags": ["drinks"], "metadata": {"turn": 4}},
        response_example={"memory": EXAMPLE_MEMORY, "created": True, "deduplicated": False, "embedding_status": "ready", "near_duplicates": []},
        errors={**dict([documented_error(409, "key_exists", "key 'diet' already exists in this namespace")]), **IDEMPOTENCY_ERRORS},
        operation_id="memories_create")
    @idempotent
    def post(self, request):
        if isinstance(request.data, dict) and "memories" in request.data:
            items = self.validated(s.MemoryBatchCreateSerializer, request.data)["memories"]
            results = records.memory_create_batch(self.caller, [dict(item) for item in items])
            created = any(r.created for r in results)
            return Response({"results": s.BatchItemResultSerializer(results, many=True).data},
                            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
        result = records.memory_create(self.caller, self.validated(s.MemoryCreateSerializer, request.data))
        return Response(write_result(result), status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
                        headers={"ETag": f'"{result.memory.version}"'})


class MemoryDetailView(AgentAPIView):
    @documented(summary="Get a memory (its ETag is its version)", response=s.MemorySerializer,
                response_example=EXAMPLE_MEMORY, operation_id="memories_get")
    def get(self, request, memory_id):
        return self.memory_response(records.memory_get(self.caller, memory_id))

    @documented(summary="Change a memory (optimistic concurrency)", request=s.MemoryUpdateSerializer,
                response=s.MemorySerializer, parameters=[IF_MATCH],
                request_example={"content": "The user prefers black tea", "confidence": 0.95},
                response_example={**EXAMPLE_MEMORY, "content": "The user prefers black tea", "confidence": 0.95,
                                  "version": 2},
                errors={**PRECONDITION_ERRORS, **dict([documented_error(409, "duplicate", "an identical live memory exists")])},
                operation_id="memories_update")
    def patch(self, request, memory_id):
        changes = self.validated(s.MemoryUpdateSerializer, request.data)
        expected = self.expected_version(changes.pop("version", None))
        return self.memory_response(records.memory_update(self.caller, memory_id, changes=changes,
                                                          expected_version=expected))

    @documented(summary="Soft-delete a memory (history is kept; restore undoes it)", response=s.MemorySerializer,
                parameters=[IF_MATCH], response_example={**EXAMPLE_MEMORY, "deleted_at": "2026-11-21T17:00:00Z",
                                                         "version": 2},
                errors={**PRECONDITION_ERRORS, **dict([documented_error(409, "deleted", "memory is already deleted")])},
                operation_id="memories_delete")
    def delete(self, request, memory_id):
        return self.memory_response(records.memory_delete(self.caller, memory_id,
                                                          expected_version=self.expected_version(None)))


class MemoryRestoreView(AgentAPIView):
    @documented(summary="Restore a soft-deleted memory", request=s.VersionOnlySerializer, response=s.MemorySerializer,
                parameters=[IF_MATCH], request_example={}, response_example={**EXAMPLE_MEMORY, "version": 3},
                errors={**PRECONDITION_ERRORS, **dict([documented_error(409, "not_deleted", "memory is not deleted")])},
                operation_id="memories_restore")
    def post(self, request, memory_id):
        body = self.validated(s.VersionOnlySerializer, request.data or {})
        return self.memory_response(records.memory_restore(
            self.caller, memory_id, expected_version=self.expected_version(body.get("version"))))


class MemoryConfirmView(AgentAPIView):
    @documented(summary="Confirm a memory: confidence 1.0, protected from decay", request=s.VersionOnlySerializer,
                response=s.MemorySerializer, parameters=[IF_MATCH], request_example={},
                response_example={**EXAMPLE_MEMORY, "confidence": 1.0, "is_protected": True, "decay_rate": 0.0,
                                  "version": 2}, errors=PRECONDITION_ERRORS, operation_id="memories_confirm")
    def post(self, request, memory_id):
        body = self.validated(s.VersionOnlySerializer, request.data or {})
        return self.memory_response(records.memory_confirm(
            self.caller, memory_id, expected_version=self.expected_version(body.get("version"))))


class MemorySupersedeView(AgentAPIView):
    """Correct a memory: the new one replaces it (also at /correct, spec §4's correct_fact)."""

    @documented(summary="Supersede (correct) a memory", request=s.SupersedeSerializer,
                response=inline_serializer("SupersedeResult", {"superseded": s.MemorySerializer(),
                                                               "memory": s.MemorySerializer(),
                                                               "created": drf.BooleanField(),
                                                               "deduplicated": drf.BooleanField(),
                                                               "embedding_status": drf.CharField()}),
                status=201, parameters=[IF_MATCH, IDEMPOTENCY_KEY],
                request_example={"content": "The user now prefers coffee", "reason": "the user said so"},
                response_example={"superseded": {**EXAMPLE_MEMORY, "status": "superseded", "version": 2},
                                  **{"memory": EXAMPLE_MEMORY, "created": True, "deduplicated": False, "embedding_status": "ready", "near_duplicates": []}},
                errors={**PRECONDITION_ERRORS, **IDEMPOTENCY_ERRORS,
                        **dict([documented_error(409, "superseded", "memory is superseded; only an active memory can be superseded")])})
    @idempotent
    def post(self, request, memory_id):
        body = self.validated(s.SupersedeSerializer, request.data)
        expected = self.expected_version(body.pop("version", None))
        old, result = records.memory_supersede(self.caller, memory_id, content=body.pop("content"),
                                               reason=body.pop("reason", ""), expected_version=expected, **body)
        return Response({"superseded": s.MemorySerializer(old).data, **write_result(result)},
                        status=status.HTTP_201_CREATED)


class MemoryFeedbackView(AgentAPIView):
    @documented(summary="Report whether a memory was useful", request=s.FeedbackSerializer,
                response=s.MemorySerializer, request_example={"useful": True},
                response_example={**EXAMPLE_MEMORY, "usefulness_score": 0.6}, operation_id="memories_feedback")
    def post(self, request, memory_id):
        body = self.validated(s.FeedbackSerializer, request.data)
        return self.memory_response(records.memory_feedback(self.caller, memory_id, **body))


HISTORY_PAGE = 200


class MemoryHistoryView(AgentAPIView):
    @documented(summary="A memory's history: one version per change, the first first",
                response=list_of(s.VersionSerializer, "VersionList", paginated=True),
                parameters=[s.HistoryQuerySerializer],
                description=f"Paged by key: up to `limit` versions (default {HISTORY_PAGE}), `next` for more (a "
                            "store item upserted often has many).",
                response_example={"next": None, "previous": None, "results": [EXAMPLE_VERSION]},
                operation_id="memories_history")
    def get(self, request, memory_id):
        self.validated(s.HistoryQuerySerializer, s.query_data(request.query_params, ()))
        versions = records.memory_versions(self.caller, memory_id)
        paginator = KeysetPagination(keyset.Order(("version_num", "id"), descending=False))
        paginator.default_limit = HISTORY_PAGE
        page = paginator.paginate_queryset(versions, request)
        return paginator.get_paginated_response(s.VersionSerializer(page.items, many=True).data)



# --------------------------------------------------------------------------- tags and relationships


class MemoryTagsView(AgentAPIView):
    @documented(summary="A memory's tags", response=s.TagListSerializer, response_example={"tags": ["drinks"]},
                operation_id="memories_tags_list")
    def get(self, request, memory_id):
        return Response({"tags": records.memory_tags(self.caller, memory_id)})

    @documented(summary="Add tags", request=s.TagsSerializer, response=s.TagListSerializer,
                request_example={"tags": ["morning"]}, response_example={"tags": ["drinks", "morning"]},
                operation_id="memories_tags_add")
    def post(self, request, memory_id):
        body = self.validated(s.TagsSerializer, request.data)
        tags = records.memory_tags_add(self.caller, memory_id, tags=body["tags"])
        return Response({"tags": tags})


class MemoryTagDetailView(AgentAPIView):
    @documented(summary="Remove a tag", response=s.TagListSerializer, response_example={"tags": ["drinks"]},
                operation_id="memories_tags_remove")
    def delete(self, request, memory_id, tag):
        tags = records.memory_tag_remove(self.caller, memory_id, tag=tag)
        return Response({"tags": tags})


class MemoryRelationshipsView(AgentAPIView):
    @documented(summary="A memory's relationships, both directions", response=list_of(s.RelationshipSerializer, "RelationshipList"),
                response_example={"results": [EXAMPLE_RELATIONSHIP]}, operation_id="relationships_list")
    def get(self, request, memory_id):
        relationships = records.memory_relationships(self.caller, memory_id)
        return Response({"results": s.RelationshipSerializer(relationships, many=True).data})

    @documented(summary="Relate this memory to another", request=s.RelationshipCreateSerializer,
                response=s.RelationshipSerializer, status=201,
                request_example={"target_id": EXAMPLE_RELATIONSHIP["target_id"], "relation_type": "contradicts"},
                response_example=EXAMPLE_RELATIONSHIP,
                errors=dict([documented_error(409, "relationship_exists", "these memories are already linked by contradicts")]),
                operation_id="relationships_create")
    def post(self, request, memory_id):
        body = self.validated(s.RelationshipCreateSerializer, request.data)
        relationship = records.relationship_create(self.caller, memory_id, **body)
        return Response(s.RelationshipSerializer(relationship).data, status=status.HTTP_201_CREATED)


class RelationshipDetailView(AgentAPIView):
    @documented(summary="Delete a relationship", response=OpenApiResponse(description="deleted"), status=204,
                operation_id="relationships_delete")
    def delete(self, request, relationship_id):
        records.relationship_delete(self.caller, relationship_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --------------------------------------------------------------------------- entities (spec §4)


class EntityOffsetPagination(LimitOffsetPagination):
    """The old way, kept for clients that send `offset`: a count of the whole list and OFFSET,
    both slower the larger the list and the deeper the page."""

    default_limit = 50
    max_limit = 100


class EntityPagination(KeysetPagination):
    """Entities are ordered by how often they are mentioned, and most share a count (one
    mention): the key is (mention_count, id), so ties page like any other rows (DRF's cursor
    counted ties only up to 1000)."""

    order = keyset.Order(("mention_count", "id"))
    max_limit = 100


ENTITY_PAGE = inline_serializer("EntityPage", {
    "count": drf.IntegerField(allow_null=True, help_text="With `offset` only: null when paging by cursor."),
    "next": drf.URLField(allow_null=True), "previous": drf.URLField(allow_null=True),
    "results": s.EntitySerializer(many=True)})
FACTS_SHOWN = 20
TIMELINE_SHOWN = 50


class MemoryExplainView(AgentAPIView):
    @documented(summary="Explain a memory: strength, ranking parts, history, provenance, edges, entities, "
                        "and the searches that returned it", response=s.ExplanationSerializer,
                response_example={
                    "memory": EXAMPLE_MEMORY,
                    "strength": {"value": 0.62, "decay_rate": 0.1, "is_protected": False, "importance": 0.4,
                                 "retrieval_count": 2, "last_reinforced_at": "2026-11-01T09:00:00Z",
                                 "threshold": 0.05, "archived_after": "2027-03-02T09:00:00Z"},
                    "ranking": {"weights": {"relevance": 0.75, "importance": 0.08, "confidence": 0.08,
                                            "recency": 0.05, "usage": 0.04, "strength": 0.05},
                                "parts": {"importance": 0.4, "confidence": 0.9, "recency": 0.63, "usage": 0.24,
                                          "strength": 0.62},
                                "without_relevance": 0.1562},
                    "versions": [{"version_num": 1, "operation": "create", "status": "active",
                                  "changed_by_type": "agent", "change_reason": "",
                                  "created_at": "2026-11-01T09:00:00Z"}],
                    "relationships": [], "entities": [], "provenance": [],
                    "retrievals": [{"event_id": "6c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f", "kind": "search",
                                    "query": "What does the user drink?", "rank": 1, "score": 0.81,
                                    "created_at": "2026-11-20T10:00:00Z"}]},
                operation_id="memories_explain")
    def get(self, request, memory_id):
        return Response(s.ExplanationSerializer(records.memory_explain(self.caller, memory_id)).data)


class StatsView(AgentAPIView):
    @documented(summary="The store at a glance: memories by status, category, type and strength, growth, "
                        "relationships, entities, and the lifecycle jobs' last runs",
                response=inline_serializer("Stats", {
                    "memories": drf.DictField(), "growth": drf.ListField(child=drf.DictField()),
                    "relationships": drf.DictField(), "entities": drf.DictField(), "lifecycle": drf.DictField()}),
                parameters=[s.StatsQuerySerializer],
                response_example={
                    "memories": {"total": 120, "live": 112, "expiring": 3, "embedding_pending": 0,
                                 "by_status": {"active": 112, "archived": 6, "superseded": 2},
                                 "by_category": {"factual": 80, "preference": 40},
                                 "by_memory_type": {"episodic": 70, "semantic": 50},
                                 "strength": {"strong": 30, "fading": 9, "faded": 1, "not_decaying": 72}},
                    "growth": [{"date": "2026-11-24", "created": 12}],
                    "relationships": {"temporal": 69, "supersedes": 2}, "entities": {"person": 4, "place": 3},
                    "lifecycle": {"decay": {"finished_at": "2026-11-25T03:00:04Z",
                                            "counts": {"decaying": 40, "fading": 9, "archived": 1}},
                                  "expiry": None,
                                  "consolidation": {"finished_at": "2026-11-25T10:12:40Z",
                                                    "counts": {"memories": 14, "duplicate_pairs": 1,
                                                               "summaries": 1}}}},
                description="Within the key's reach. `memories.strength` counts live memories that decay: strong "
                            "(at least 0.5), fading, faded (below the decay threshold, archived by the next "
                            "nightly run), and those that do not decay. Over the whole organisation the bands are as "
                            "last counted (every 10 minutes): `about` true and `as_of` say when; under a namespace "
                            "or a key's namespaces they are counted for the answer; every other count is exact. "
                            "`lifecycle` says when the decay, the "
                            "expiry sweep and a session's consolidation last ran for the organisation, and what "
                            "they did (counts only for a key that reaches every namespace).",
                operation_id="stats")
    def get(self, request):
        query = self.validated(s.StatsQuerySerializer, s.query_data(request.query_params, ()))
        return Response(lifecycle.memory_stats(self.caller, namespace=query.get("namespace")))


class WeakMemoriesView(AgentAPIView):
    @documented(summary="What is fading: live memories whose strength is low, the weakest first",
                response=inline_serializer("WeakPage", {
                    "count": drf.IntegerField(),
                    "about": drf.BooleanField(required=False, help_text="Present (true) when the list and its "
                                              "count are as the weakest were last counted, with what changed "
                                              "since."),
                    "as_of": drf.DateTimeField(required=False, help_text="When they were last counted."),
                    "results": s.FadingSerializer(many=True)}),
                parameters=[s.WeakQuerySerializer],
                description="Strength falls with the time since a memory was last retrieved or changed (slower "
                            "for one retrieved often, or important); the nightly decay archives what falls below "
                            "the decay threshold (0.05). Confirming a memory protects it; episodes and confirmed "
                            "memories do not decay and are never listed. Over the whole organisation, the first "
                            "pages come from its weakest memories as last counted (every 10 minutes), each at its "
                            "strength now, with every memory changed since: `about` true and `as_of` say when; a "
                            "memory that only crossed `below` with the passing of time since then joins at the next "
                            "count. Under a namespace, for a key's namespaces, and deeper pages, they are counted "
                            "for the answer.",
                response_example={"count": 1, "results": [{"memory": EXAMPLE_MEMORY, "strength": 0.08,
                                                           "archived_after": "2027-01-10T09:00:00Z"}]},
                operation_id="memories_weak")
    def get(self, request):
        query = self.validated(s.WeakQuerySerializer, s.query_data(request.query_params, ()))
        weak = lifecycle.weak_memories(self.caller, below=query.get("below"), namespace=query.get("namespace"),
                                       limit=query["limit"], offset=query["offset"])
        return Response({"count": weak.count, **weak.label, "results": s.FadingSerializer(weak.fading, many=True).data})


class EntityCollectionView(AgentAPIView):
    @documented(summary="List entities: who and what the memories mention, the most mentioned first",
                response=ENTITY_PAGE, parameters=[s.EntityListQuerySerializer],
                description="A key limited to namespaces lists the entities of those namespaces only "
                            "(an entity belongs to the namespace of the memories that mention it). Paged by "
                            "key: follow `next` (`count` is null). An `offset` is still taken, with `count`, "
                            "but is slow deep in a large list. An entity whose mention count changes while "
                            "the list is walked moves in it.",
                response_example={"count": None, "next": None, "previous": None, "results": [EXAMPLE_ENTITY]},
                operation_id="entities_list")
    def get(self, request):
        query = self.validated(s.EntityListQuerySerializer, s.query_data(request.query_params, ()))
        entities = lifecycle.entity_list(self.caller, namespace=query.get("namespace"), kind=query.get("type"),
                                         query=query.get("q"))
        if "offset" in query:
            old_way = EntityOffsetPagination()
            found = old_way.paginate_queryset(entities, request, view=self)
            return old_way.get_paginated_response(s.EntitySerializer(found, many=True).data)
        paginator = EntityPagination()
        page = paginator.paginate_queryset(entities, request)
        return paginator.get_paginated_response(s.EntitySerializer(page.items, many=True).data, count=None)


class EntityDetailView(AgentAPIView):
    @documented(summary="Get an entity, with the memories that mention it (facts) and those that say when (timeline)",
                response=s.EntityDetailSerializer,
                description=f"`facts`: the latest {FACTS_SHOWN} live memories that mention it. `timeline`: up to "
                            f"{TIMELINE_SHOWN} of them that have an `event_time`, the earliest first.",
                response_example={**EXAMPLE_ENTITY, "facts": [EXAMPLE_FACT], "timeline": [EXAMPLE_FACT]},
                operation_id="entities_get")
    def get(self, request, entity_id):
        entity = lifecycle.entity_detail(self.caller, entity_id=entity_id, facts=FACTS_SHOWN, timeline=TIMELINE_SHOWN)
        return Response(s.EntityDetailSerializer(entity).data)


# --------------------------------------------------------------------------- sessions


SESSIONS_NEWEST_FIRST = keyset.Order(("started_at", "id"))


class SessionCollectionView(AgentAPIView):
    @documented(summary="List sessions, the newest first", parameters=[s.SessionListQuerySerializer],
                response=list_of(s.SessionSerializer, "SessionPage", paginated=True),
                response_example={"next": None, "previous": None, "results": [EXAMPLE_SESSION]},
                description="The organisation's sessions within the key's reach; filter by agent, status (open or "
                            "closed), namespace prefix or external_id.",
                operation_id="sessions_list")
    def get(self, request):
        query = self.validated(s.SessionListQuerySerializer, s.query_data(request.query_params, ()))
        queryset = lifecycle.session_list(self.caller, agent=query.get("agent"), status=query.get("status"),
                                          namespace=query.get("namespace"), external_id=query.get("external_id"))
        paginator = KeysetPagination(SESSIONS_NEWEST_FIRST)
        page = paginator.paginate_queryset(queryset, request)
        return paginator.get_paginated_response(s.SessionSerializer(page.items, many=True).data)

    @documented(summary="Open a session (or find the open one of this external_id)", request=s.SessionCreateSerializer,
                response=s.SessionSerializer, status=201, also=(200,), parameters=[IDEMPOTENCY_KEY],
                description="A session groups the memories an agent writes in one conversation or task run: name "
                            "it in their `session_id`. With an `external_id` (the agent's own id for the "
                            "conversation) the agent's open session of that id is returned with 200 instead of a "
                            "second one. Close it when the conversation ends.",
                request_example={"external_id": "thread-81", "namespace": ["users", "alice"],
                                 "metadata": {"channel": "chat"}},
                response_example={**EXAMPLE_SESSION, "memory_count": 0}, errors=IDEMPOTENCY_ERRORS,
                operation_id="sessions_create")
    @idempotent
    def post(self, request):
        body = self.validated(s.SessionCreateSerializer, request.data)
        session, created = lifecycle.session_open(self.caller, external_id=body.get("external_id", ""),
                                                  namespace=body.get("namespace", ""), metadata=body.get("metadata"))
        return Response(s.SessionSerializer(session).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class SessionDetailView(AgentAPIView):
    @documented(summary="Get a session", response=s.SessionSerializer, response_example=EXAMPLE_SESSION,
                operation_id="sessions_get")
    def get(self, request, session_id):
        return Response(s.SessionSerializer(lifecycle.session_get(self.caller, session_id)).data)


class SessionCloseView(AgentAPIView):
    @documented(summary="Close a session; its consolidation proposes merges and a summary for review",
                request=s.SessionCloseSerializer, response=s.SessionSerializer,
                description="A closed session takes no new memory (a write naming it is a 409 `session_closed`). "
                            "A worker then consolidates it, without a language model: pairs of its memories (same "
                            "agent and namespace) at least CONSOLIDATION_SIMILARITY alike become merge proposals "
                            "in the conflict queue, and from three memories on, a summary drawn from those that "
                            "cover the session best waits for review (status pending_review, tag "
                            "`session-summary`, derived_from edges to them). `consolidation` shows what it "
                            "proposed once it ran.",
                request_example={},
                response_example={**EXAMPLE_SESSION, "status": "closed", "ended_at": "2026-11-21T17:05:00Z"},
                errors=dict([documented_error(409, "session_closed", "session c2a4e6f8-... is already closed")]),
                operation_id="sessions_close")
    def post(self, request, session_id):
        body = self.validated(s.SessionCloseSerializer, request.data)
        session = lifecycle.session_close(self.caller, session_id, consolidate=body["consolidate"])
        return Response(s.SessionSerializer(session).data)


class SessionMemoriesView(AgentAPIView):
    @documented(summary="A session's memories, in the order they were written",
                parameters=[s.SessionMemoriesQuerySerializer],
                response=list_of(s.MemorySerializer, "SessionMemoryPage", paginated=True),
                response_example={"next": None, "previous": None, "results": [EXAMPLE_MEMORY]},
                description="Not deleted, not expired, whatever their status (a summary waiting for review "
                            "included); within the key's reach.",
                operation_id="sessions_memories")
    def get(self, request, session_id):
        self.validated(s.SessionMemoriesQuerySerializer, s.query_data(request.query_params, ()))
        queryset = lifecycle.session_memories(self.caller, session_id)
        # The order they were written in: the conversation's.
        paginator = KeysetPagination(keyset.OLDEST_FIRST)
        page = paginator.paginate_queryset(queryset, request)
        return paginator.get_paginated_response(s.MemorySerializer(page.items, many=True).data)


# --------------------------------------------------------------------------- erasure


class EraseView(AgentAPIView):
    @documented(summary="Erase the calling agent's memories of a namespace or a session, for good",
                description="A hard delete that leaves nothing behind: the agent's memories under the namespace "
                            "(or in the session) with their versions, relationships, tags, entity links, the "
                            "entities only they named, the retrieval events that returned them, their idempotency "
                            "records and their Redis entries. Other agents' memories stay. The erasure is recorded "
                            "without what was erased. `dry_run` counts first. 404 when there is nothing to erase.",
                request=s.EraseRequestSerializer, response=s.ErasureSerializer,
                request_example={"namespace": ["users", "alice"]},
                response_example={"erasure_id": "0b7f9c2e-3d4a-4b5c-8d6e-7f8a9b0c1d2e",
                                  "scope": {"namespace": "users/alice", "agent": "5e0c..."},
                                  "erased": {"memories": 42, "versions": 57, "relationships": 41, "tags": 3},
                                  "dry_run": False},
                operation_id="erase")
    def post(self, request):
        body = self.validated(s.EraseRequestSerializer, request.data)
        scope, outcome = lifecycle.erase(self.caller, namespace=body.get("namespace"), session_id=body.get("session"),
                                         dry_run=body["dry_run"])
        return Response({"erasure_id": outcome.erasure.pk if outcome.erasure else None, "scope": scope.as_json(),
                         "erased": outcome.counts, "dry_run": body["dry_run"]})
