"""The agent REST API (/api/v1/). Views parse and shape; services and selectors decide."""

from __future__ import annotations

import re

from rest_framework import permissions, status
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from memories import selectors, services
from memories.api import serializers as s
from memories.api.idempotency import idempotent
from memories.api.parsers import LimitedJSONParser
from memories.errors import InvalidInput
from memories.services import Actor
from tenants.authentication import ApiKeyAuthentication

ETAG = re.compile(r'^\s*(?:W/)?"?(\d+)"?\s*$')


class MemoryCursorPagination(CursorPagination):
    ordering = ("-created_at", "-id")
    page_size = 50
    page_size_query_param = "limit"
    max_page_size = 200


class AgentAPIView(APIView):
    """Authenticated by an agent's API key; everything happens in its organisation."""

    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [LimitedJSONParser]

    @property
    def org_id(self):
        return self.request.user.org_id

    @property
    def agent_id(self):
        return self.request.user.agent_id

    def actor(self, reason: str = "") -> Actor:
        return Actor(agent_id=self.agent_id, reason=reason)

    def validated(self, serializer_class, data):
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

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

    def fresh(self, memory_id):
        return selectors.memory_get(org_id=self.org_id, memory_id=memory_id)


def write_result(result: services.WriteResult) -> dict:
    return s.WriteResultSerializer(result).data


# --------------------------------------------------------------------------- memories


class MemoryCollectionView(AgentAPIView):
    """GET: list memories (cursor pagination, filters). POST: create one, or a batch."""

    def get(self, request):
        filters = self.validated(s.MemoryListQuerySerializer, s.query_data(request.query_params))
        queryset = selectors.memory_list(org_id=self.org_id, **filters)
        paginator = MemoryCursorPagination()
        page = paginator.paginate_queryset(queryset, request, view=self)
        return paginator.get_paginated_response(s.MemorySerializer(page, many=True).data)

    @idempotent
    def post(self, request):
        if isinstance(request.data, dict) and "memories" in request.data:
            items = self.validated(s.MemoryBatchCreateSerializer, request.data)["memories"]
            results = services.memory_create_batch(org_id=self.org_id, agent_id=self.agent_id,
                                                   items=[self._create_fields(dict(i)) for i in items])
            created = any(r.created for r in results)
            return Response({"results": [write_result(r) for r in results]},
                            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
        fields = self._create_fields(self.validated(s.MemoryCreateSerializer, request.data))
        result = services.memory_create(org_id=self.org_id, agent_id=self.agent_id, **fields)
        return Response(write_result(result), status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
                        headers={"ETag": f'"{result.memory.version}"'})

    @staticmethod
    def _create_fields(fields: dict) -> dict:
        fields.pop("namespace", None)
        return fields


class MemoryDetailView(AgentAPIView):
    def get(self, request, memory_id):
        return self.memory_response(self.fresh(memory_id))

    def patch(self, request, memory_id):
        changes = self.validated(s.MemoryUpdateSerializer, request.data)
        expected = self.expected_version(changes.pop("version", None))
        services.memory_update(org_id=self.org_id, memory_id=memory_id, changes=changes,
                               expected_version=expected, actor=self.actor())
        return self.memory_response(self.fresh(memory_id))

    def delete(self, request, memory_id):
        services.memory_delete(org_id=self.org_id, memory_id=memory_id, actor=self.actor(),
                               expected_version=self.expected_version(None))
        return self.memory_response(self.fresh(memory_id))


class MemoryRestoreView(AgentAPIView):
    def post(self, request, memory_id):
        body = self.validated(s.VersionOnlySerializer, request.data or {})
        services.memory_restore(org_id=self.org_id, memory_id=memory_id, actor=self.actor(),
                                expected_version=self.expected_version(body.get("version")))
        return self.memory_response(self.fresh(memory_id))


class MemoryConfirmView(AgentAPIView):
    def post(self, request, memory_id):
        body = self.validated(s.VersionOnlySerializer, request.data or {})
        services.memory_confirm(org_id=self.org_id, memory_id=memory_id, actor=self.actor(),
                                expected_version=self.expected_version(body.get("version")))
        return self.memory_response(self.fresh(memory_id))


class MemorySupersedeView(AgentAPIView):
    """Correct a memory: the new one replaces it (also at /correct, seed 004's correct_fact)."""

    @idempotent
    def post(self, request, memory_id):
        body = self.validated(s.SupersedeSerializer, request.data)
        expected = self.expected_version(body.pop("version", None))
        old, result = services.memory_supersede(
            org_id=self.org_id, memory_id=memory_id, agent_id=self.agent_id, content=body.pop("content"),
            reason=body.pop("reason", ""), actor=self.actor(), expected_version=expected, **body,
        )
        return Response({"superseded": s.MemorySerializer(self.fresh(old.pk)).data, **write_result(result)},
                        status=status.HTTP_201_CREATED)


class MemoryFeedbackView(AgentAPIView):
    def post(self, request, memory_id):
        body = self.validated(s.FeedbackSerializer, request.data)
        services.memory_feedback(org_id=self.org_id, memory_id=memory_id, **body)
        return self.memory_response(self.fresh(memory_id))


class MemoryHistoryView(AgentAPIView):
    def get(self, request, memory_id):
        versions = selectors.memory_versions(org_id=self.org_id, memory_id=memory_id)
        return Response({"results": s.VersionSerializer(versions, many=True).data})


# --------------------------------------------------------------------------- tags and relationships


class MemoryTagsView(AgentAPIView):
    def get(self, request, memory_id):
        return Response({"tags": selectors.memory_tags(org_id=self.org_id, memory_id=memory_id)})

    def post(self, request, memory_id):
        body = self.validated(s.TagsSerializer, request.data)
        tags = services.memory_tags_add(org_id=self.org_id, memory_id=memory_id, tags=body["tags"],
                                        actor=self.actor())
        return Response({"tags": tags})


class MemoryTagDetailView(AgentAPIView):
    def delete(self, request, memory_id, tag):
        tags = services.memory_tag_remove(org_id=self.org_id, memory_id=memory_id, tag=tag, actor=self.actor())
        return Response({"tags": tags})


class MemoryRelationshipsView(AgentAPIView):
    def get(self, request, memory_id):
        relationships = selectors.memory_relationships(org_id=self.org_id, memory_id=memory_id)
        return Response({"results": s.RelationshipSerializer(relationships, many=True).data})

    def post(self, request, memory_id):
        body = self.validated(s.RelationshipCreateSerializer, request.data)
        relationship = services.relationship_create(org_id=self.org_id, source_id=memory_id, **body)
        return Response(s.RelationshipSerializer(relationship).data, status=status.HTTP_201_CREATED)


class RelationshipDetailView(AgentAPIView):
    def delete(self, request, relationship_id):
        services.relationship_delete(org_id=self.org_id, relationship_id=relationship_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --------------------------------------------------------------------------- the namespace store (seed 003)


class StoreItemView(AgentAPIView):
    """PUT upserts by namespace + key; GET and DELETE take ?namespace=a/b&key=k."""

    def put(self, request):
        body = self.validated(s.StorePutSerializer, request.data)
        result = services.store_put(org_id=self.org_id, agent_id=self.agent_id, scope=body["namespace"],
                                    key=body["key"], content=body["content"], metadata=body.get("metadata"),
                                    category=body.get("category", "factual"))
        memory = self.fresh(result.memory.pk)
        return Response(s.StoreItemSerializer(memory).data,
                        status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
                        headers={"ETag": f'"{memory.version}"'})

    def get(self, request):
        where = self.validated(s.StoreLocatorSerializer, s.query_data(request.query_params, ()))
        memory = selectors.store_get(org_id=self.org_id, scope=where["namespace"], key=where["key"])
        return Response(s.StoreItemSerializer(memory).data, headers={"ETag": f'"{memory.version}"'})

    def delete(self, request):
        where = self.validated(s.StoreLocatorSerializer, s.query_data(request.query_params, ()))
        memory = selectors.store_get(org_id=self.org_id, scope=where["namespace"], key=where["key"])
        services.memory_delete(org_id=self.org_id, memory_id=memory.pk, actor=self.actor())
        return Response(status=status.HTTP_204_NO_CONTENT)


class StoreKeysView(AgentAPIView):
    def get(self, request):
        where = self.validated(s.StoreNamespaceQuerySerializer, s.query_data(request.query_params, ()))
        return Response({"namespace": s.scope_to_namespace(where["namespace"]),
                         "keys": selectors.store_keys(org_id=self.org_id, scope=where["namespace"])})


class StoreNamespacesView(AgentAPIView):
    def get(self, request):
        where = self.validated(s.StoreNamespacesQuerySerializer, s.query_data(request.query_params, ()))
        scopes = selectors.store_namespaces(org_id=self.org_id, prefix=where.get("prefix", ""))
        return Response({"namespaces": [s.scope_to_namespace(scope) for scope in scopes]})
