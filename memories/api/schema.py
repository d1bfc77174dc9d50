"""OpenAPI descriptions (drf-spectacular): the API key scheme, the error shape, and request and
response examples for every endpoint."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers

MEMORY_ID = "3f1c9a52-7a0b-4a4e-9d1e-1d2b3c4d5e6f"
EXAMPLE_MEMORY = {
    "id": MEMORY_ID, "org_id": "0b9d8199-de11-447d-96d1-289e11788ece",
    "agent_id": "6a76cab1-20b1-47ac-a95e-2451ee6478c8", "session_id": None,
    "content": "The user prefers green tea in the morning",
    "content_hash": "400bdb578d4f5569900727b1e2869c39078f0fdc36eb380b2ac8e37190653876",
    "category": "preference", "memory_type": "semantic", "source": "extracted", "status": "active",
    "confidence": 0.9, "usefulness_score": 0.5, "importance": 0.4, "sensitivity": "internal",
    "validation_status": "unverified", "scope": "memories/user-42", "namespace": ["memories", "user-42"],
    "key": None, "provenance": {}, "metadata": {"turn": 4}, "tags": ["drinks"], "retrieval_count": 0,
    "last_retrieved_at": None, "last_injected_at": None, "decay_rate": 0.1, "is_protected": False,
    "strength": 1.0, "reinforced_at": None, "ttl_seconds": None,
    "valid_from": None, "valid_until": None, "event_time": None, "superseded_by": None, "merged_into": None,
    "expires_at": None, "deleted_at": None, "version": 1, "embedding_status": "ready", "speaker": None,
    "embedding_model": "all-MiniLM-L6-v2", "created_at": "2026-11-21T16:31:56Z", "updated_at": "2026-11-21T16:31:56Z",
}
EXAMPLE_SESSION = {
    "id": "c2a4e6f8-1b3d-4f5a-8c7e-9d0b1a2c3e4f", "agent_id": EXAMPLE_MEMORY["agent_id"], "external_id": "thread-81",
    "namespace": ["users", "alice"], "metadata": {"channel": "chat"}, "status": "open",
    "started_at": "2026-11-21T16:30:00Z", "ended_at": None, "consolidated_at": None, "consolidation": None,
    "memory_count": 12,
}
EXAMPLE_VERSION = {
    "id": "91da50c5-27fc-4281-af64-a83cd4bb1957", "memory_id": MEMORY_ID, "version_num": 1, "operation": "create",
    "content": EXAMPLE_MEMORY["content"], "category": "preference", "confidence": 0.9, "status": "active",
    "metadata": {"turn": 4}, "snapshot": {"tags": ["drinks"], "scope": "memories/user-42"},
    "changed_by_type": "agent", "changed_by_agent_id": EXAMPLE_MEMORY["agent_id"], "changed_by_user": None,
    "change_reason": "", "created_at": "2026-11-21T16:31:56Z",
}
EXAMPLE_RELATIONSHIP = {
    "id": "5b0c3f3e-1a2b-4c5d-8e9f-0a1b2c3d4e5f", "source_id": MEMORY_ID,
    "target_id": "9e8d7c6b-5a49-4382-b1a0-f9e8d7c6b5a4", "relation_type": "contradicts", "predicate": "",
    "weight": 1.0, "confidence": 0.8, "metadata": {}, "created_at": "2026-11-21T16:40:00Z",
}
EXAMPLE_ENTITY = {
    "id": "7d2e4f60-8a1b-4c3d-9e5f-6a7b8c9d0e1f", "name": "Lisbon", "type": "place", "scope": "memories/user-42",
    "namespace": ["memories", "user-42"], "aliases": ["Lisboa"], "summary": "", "attributes": {},
    "mention_count": 3, "first_seen_at": "2026-11-20T09:12:00Z", "last_seen_at": "2026-11-21T16:31:56Z",
}
EXAMPLE_FACT = {
    "id": MEMORY_ID, "content": "The user moved to Lisbon in May 2023", "namespace": ["memories", "user-42"],
    "event_time": "2023-05-08T00:00:00Z", "created_at": "2026-11-21T16:31:56Z",
}


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "tenants.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer",
                "description": "An agent's API key: `Authorization: Bearer mp_...` (or `x-api-key: mp_...`, as "
                               "LangGraph's SDK sends it)"}


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    fields = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


def documented_error(status: int, code: str, message: str, fields: dict | None = None,
                     note: str = "") -> tuple[int, OpenApiResponse]:
    """One documented error response: (status, its OpenAPI description with an example)."""
    description = f"{message} {note}".strip()
    return status, OpenApiResponse(ErrorSerializer, description=description, examples=[OpenApiExample(
        code, value={"error": {"code": code, "message": message, "fields": fields or {}}}, response_only=True,
        status_codes=[str(status)])])


COMMON_ERRORS = dict([
    documented_error(400, "invalid", "content: This field may not be blank.", {"content": ["This field may not be blank."]}),
    documented_error(401, "not_authenticated", "Authentication credentials were not provided."),
    # A key limited to namespaces, or to reads, is refused what it may not do (memories.access).
    documented_error(403, "out_of_reach", "this API key is read-only",
           note="Only for keys issued limited to namespace prefixes or read-only (docs/api.md, \"Who may touch what\")."),
    documented_error(404, "not_found", "memory 3f1c9a52-... not found"),
    # Every endpoint counts against its API key's rates (and searches against their own).
    documented_error(429, "rate_limited", "Too many requests for this API key. Retry after 12 seconds.",
           note="The `Retry-After` header says how many seconds to wait (docs/security.md, \"Rate limits\")."),
])
PRECONDITION_ERRORS = dict([
    documented_error(412, "version_mismatch", "memory 3f1c9a52-... is at version 3, not 2"),
    documented_error(428, "version_required", "send If-Match with the memory's current version (its ETag), or `version`"),
])
IF_MATCH = OpenApiParameter("If-Match", str, OpenApiParameter.HEADER, required=False,
                            description='The ETag of the version being changed, e.g. "2" (or send `version`).')
IDEMPOTENCY_KEY = OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=False,
                                   description="Retries with the same key and body get the first response.")


# Whatever an operation that takes a body is sent (memories.api.parsers).
BODY_ERRORS = dict([
    documented_error(413, "payload_too_large", "request body exceeds the limit of 2097152 bytes"),
    documented_error(415, "unsupported_media_type", 'Unsupported media type "text/plain" in request.'),
])
IDEMPOTENCY_ERRORS = dict([
    documented_error(422, "idempotency_key_reused", "this Idempotency-Key was used with a different request body, or by another API key"),
])


def list_of(serializer_class, name: str, *, paginated: bool = False):
    """The shape of the API's lists: {"results": [...]}, with the cursor links when paginated."""
    fields = {"results": serializer_class(many=True)}
    if paginated:
        fields = {"next": serializers.URLField(allow_null=True), "previous": serializers.URLField(allow_null=True),
                  **fields}
    return inline_serializer(name, fields)


def documented(*, summary: str, request=None, response=None, status: int = 200, also: tuple[int, ...] = (),
               request_example=None, response_example=None, errors: dict | None = None, parameters=(),
               description: str = "", operation_id: str | None = None):
    """extend_schema with one request example and one response example. `also`: other success
    statuses with the same body (an upsert's 200 beside its 201)."""
    examples = []
    if request_example is not None:
        examples.append(OpenApiExample("request", value=request_example, request_only=True))
    if response_example is not None:
        examples.append(OpenApiExample("response", value=response_example, response_only=True,
                                       status_codes=[str(status)]))
    responses = {status: response, **{code: response for code in also}, **COMMON_ERRORS,
                 **(BODY_ERRORS if request is not None else {}), **(errors or {})}
    return extend_schema(summary=summary, description=description, request=request, responses=responses,
                         examples=examples, parameters=list(parameters), operation_id=operation_id)
