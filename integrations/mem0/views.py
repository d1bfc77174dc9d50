"""Mem0's platform API, the part the `mem0ai` MemoryClient calls (docs/adr/0044, docs/mem0.md),
under /api/mem0/ (the client's `host`):

    GET    /v1/ping/                        the key is valid                      MemoryClient()
    POST   /v3/memories/add/                messages -> memories                  add
    POST   /v3/memories/                    list by filters, paged                get_all
    POST   /v3/memories/search/             search by filters                     search
    GET    /v1/memories/<id>/               one memory                            get
    PUT    /v1/memories/<id>/               change its text, metadata, expiry     update
    DELETE /v1/memories/<id>/               delete it (its history stays)         delete
    GET    /v1/memories/<id>/history/       its versions                          history
    DELETE /v1/memories/                    erase a user's, agent's or run's      delete_all
    GET    /v1/entities/                    the users, agents and runs            users
    DELETE /v2/entities/<type>/<name>/      erase one of them                     delete_users, reset
    PUT    /v1/batch/, DELETE /v1/batch/    change or delete many                 batch_update, batch_delete
    POST   /v1/feedback/                    was it useful                         feedback
    POST   /v1/exports/, /v1/exports/get/,  501: they need a language model       create_memory_export,
           /v1/summary/                                                           get_memory_export, get_summary

Authenticated (`Authorization: Token <API key>`, as the client sends it; Bearer too), rate
limited and scoped by the platform's API key like every door. Views parse (serializers), call
the use cases (memories.use_cases), which decide what the key reaches, and shape Mem0's answers;
the entity ids' namespaces are integrations.mem0.scope's. Errors are the platform's error body
with Mem0's `detail` beside it (the message the client raises with).
"""

from __future__ import annotations

from contextlib import suppress

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from integrations.mem0 import serializers as s
from integrations.mem0.scope import ENTITY_TYPES, entity_namespace
from memories.api import serializers as rest
from memories.api.serializers import query_data
from memories.api.views import AgentAPIView
from memories.errors import NotFound
from memories.use_cases import lifecycle, records, retrieval
from tenants.authentication import ApiKeyAuthentication


class TokenAuthentication(ApiKeyAuthentication):
    """The platform's API key as Mem0's client sends it: `Authorization: Token <key>`."""

    keyword = "Token"
    schemes = ("Token", "Bearer")


# Mem0's shapes, documented by Mem0 (docs/mem0.md), not in the platform's OpenAPI schema.
@extend_schema(exclude=True)
class Mem0View(AgentAPIView):
    authentication_classes = [TokenAuthentication]

    def handle_exception(self, exc):
        response = super().handle_exception(exc)
        error = response.data.get("error") if isinstance(response.data, dict) else None
        if isinstance(error, dict):  # the client raises with `detail`
            response.data = {"detail": error.get("message", ""), **response.data}
        return response

    def runs(self, session_ids) -> dict[str, str]:
        """The external_id (Mem0's run_id) of each of these sessions in reach, by its id."""
        session_ids = {str(session_id) for session_id in session_ids if session_id}
        if not session_ids:
            return {}
        return {str(session.pk): session.external_id
                for session in lifecycle.session_list(self.caller, session_ids=session_ids) if session.external_id}

    def memory_answer(self, memory) -> dict:
        return s.MemorySerializer(memory, context={"runs": self.runs([memory.session_id])}).data

    def live_memory(self, memory_id, *, field: str = "memory_id"):
        """The memory by its id, as Mem0 knows it: one deleted is gone."""
        memory_id = self.validated(s.MemoryIdSerializer, {"memory_id": memory_id})["memory_id"]
        memory = records.memory_get(self.caller, memory_id, field=field)
        if memory.deleted_at is not None:
            raise NotFound(f"memory {memory_id} not found", field=field)
        return memory


class PingView(Mem0View):
    def get(self, request):
        # A Mem0 key belongs to a project, as the platform's belongs to an agent: the agent stands for the
        # project (the client needs one; its project and webhook calls find no route here).
        return Response({"status": "ok", "org_id": str(self.caller.org_id), "project_id": str(self.caller.agent_id),
                         "user_email": None})


class AddView(Mem0View):
    def rate_limit_scope_for(self, request) -> str | None:
        messages = request.data.get("messages") if isinstance(request.data, dict) else None
        return "batch" if isinstance(messages, list) and len(messages) > 1 else None

    def post(self, request):
        body = self.validated(s.AddSerializer, request.data)
        scope, keeping = body["scope"], s.kept(body["messages"], infer=body["infer"])
        session_id = None
        if scope.run is not None and keeping:
            session, _ = lifecycle.session_open(self.caller, external_id=scope.run, namespace=scope.namespace)
            session_id = session.pk
        written = [records.memory_create(self.caller, self.validated(rest.MemoryCreateSerializer,
                                                                     s.memory_body(message, body, session_id)))
                   for message in keeping]
        # One equal to a live memory in the namespace is that memory (the write path's dedup): nothing was added.
        added = [{"id": str(result.memory.pk), "data": {"memory": result.memory.content}, "event": "ADD"}
                 for result in written if result.created]
        return Response({"results": added, "status": "SUCCEEDED",
                         "message": f"{len(added)} memor{'y' if len(added) == 1 else 'ies'} added"})


class MemoryListView(Mem0View):
    reads_only = True

    def post(self, request):
        body = self.validated(s.ListSerializer, request.data)
        paging = self.validated(s.PageQuerySerializer, query_data(request.query_params, ()))
        page = paging.get("page") or body.get("page") or 1
        size = paging.get("page_size") or body.get("page_size") or s.PAGE_SIZE
        memories = records.memory_list(self.caller, **s.listed(body)).order_by("-created_at", "-id")
        count = memories.count()
        if page > 1 and (page - 1) * size >= count:
            raise NotFound("Invalid page.", field="page")
        rows = list(memories[(page - 1) * size:page * size])
        url = replace_query_param(request.build_absolute_uri(), "page_size", size)
        results = s.MemorySerializer(rows, many=True, context={"runs": self.runs(m.session_id for m in rows)}).data
        return Response({"count": count,
                         "next": replace_query_param(url, "page", page + 1) if page * size < count else None,
                         "previous": replace_query_param(url, "page", page - 1) if page > 1 else None,
                         "results": [s.cut(answer, body.get("fields")) for answer in results]})


class SearchView(Mem0View):
    reads_only = True
    rate_limit_scope = "search"

    def post(self, request):
        body = self.validated(s.SearchSerializer, request.data)
        found = retrieval.memory_search(self.caller, query=body["query"], filters=s.search_filters(body),
                                        limit=body["top_k"], threshold=body.get("threshold"))
        results = [(result.memory, result.score) for result in found.outcome.results]
        answers = s.SearchResultSerializer(results, many=True,
                                           context={"runs": self.runs(memory.session_id for memory, _ in results)}).data
        return Response({"results": [s.cut(answer, body.get("fields")) for answer in answers]})


class MemoryDetailView(Mem0View):
    def get(self, request, memory_id):
        return Response(self.memory_answer(self.live_memory(memory_id)))

    def put(self, request, memory_id):
        changes = self.validated(s.UpdateSerializer, request.data)
        memory = self.live_memory(memory_id)
        # Mem0 has no versions: the change is made to the version just read.
        changed = records.memory_update(self.caller, memory.pk, changes=changes, expected_version=memory.version)
        return Response(self.memory_answer(changed))

    def delete(self, request, memory_id):
        self.validated(s.DeleteQuerySerializer, query_data(request.query_params, ()))
        records.memory_delete(self.caller, self.live_memory(memory_id).pk)
        return Response({"message": "Memory deleted successfully!"})


class MemoryHistoryView(Mem0View):
    def get(self, request, memory_id):
        memory_id = self.validated(s.MemoryIdSerializer, {"memory_id": memory_id})["memory_id"]
        versions = list(records.memory_versions(self.caller, memory_id))
        before = {later.pk: earlier.content for earlier, later in zip(versions, versions[1:])}
        runs = self.runs((version.snapshot or {}).get("session_id") for version in versions)
        return Response(s.HistorySerializer(versions, many=True, context={"runs": runs, "before": before}).data)


class MemoriesView(Mem0View):
    def delete(self, request):
        scope = self.validated(s.DeleteAllQuerySerializer, query_data(request.query_params, ()))["scope"]
        if scope.run is None:
            with suppress(NotFound):  # erasing nothing is no error, as in Mem0
                lifecycle.erase(self.caller, namespace=scope.namespace)
        else:
            lifecycle.erase_run(self.caller, namespace=scope.namespace, external_id=scope.run)
        return Response({"message": "Memories deleted successfully!"})


class EntitiesView(Mem0View):
    def get(self, request):
        owner = request.user.org.name
        results = [{"id": f"{row['root']}/{row['name']}", "name": row["name"], "type": ENTITY_TYPES[row["root"]],
                    "created_at": row["first_created_at"], "updated_at": row["last_updated_at"],
                    "total_memories": row["memories"], "owner": owner, "metadata": None}
                   for row in lifecycle.namespace_tallies(self.caller, roots=tuple(ENTITY_TYPES))]
        totals = {f"total_{kind}s": sum(1 for row in results if row["type"] == kind)
                  for kind in ("user", "agent", "app", "run")}
        return Response({"count": len(results), "next": None, "previous": None, "results": results, **totals})


class EntityView(Mem0View):
    def delete(self, request, entity_type, entity_id):
        entity = self.validated(s.EntityPathSerializer, {"entity_type": entity_type, "entity_id": entity_id})
        namespace = entity_namespace(entity["entity_type"], entity["entity_id"])
        with suppress(NotFound):  # erasing nothing is no error, as in Mem0
            lifecycle.erase(self.caller, namespace=namespace)
        return Response({"message": "Entity deleted successfully!"})


class BatchView(Mem0View):
    rate_limit_scope = "batch"

    def put(self, request):
        items = self.validated(s.BatchUpdateSerializer, request.data)["memories"]
        for index, item in enumerate(items):  # one transaction: one refused, none changed
            memory = self.live_memory(item["memory_id"], field=f"memories[{index}].memory_id")
            records.memory_update(self.caller, memory.pk, changes=item["changes"], expected_version=memory.version)
        return Response({"message": f"Successfully updated {len(items)} memories"})

    def delete(self, request):
        items = self.validated(s.BatchDeleteSerializer, request.data)["memories"]
        for index, item in enumerate(items):
            records.memory_delete(self.caller, self.live_memory(item["memory_id"],
                                                                field=f"memories[{index}].memory_id").pk)
        return Response({"message": f"Successfully deleted {len(items)} memories"})


class FeedbackView(Mem0View):
    def post(self, request):
        body = self.validated(s.FeedbackSerializer, request.data)
        memory = self.live_memory(body["memory_id"])
        records.memory_feedback(self.caller, memory.pk, useful=s.FEEDBACK_USEFUL[body["feedback"]])
        return Response({"id": str(memory.pk), "feedback": body["feedback"],
                         "feedback_reason": body.get("feedback_reason")})


class NeedsLanguageModelView(Mem0View):
    """What Mem0 makes with a language model (a structured export filled in to a schema, a
    summary), which this server never calls: 501, saying what to use instead."""

    reads_only = True

    def post(self, request):
        return Response({"detail": "this server calls no language model, which Mem0's structured exports and "
                                   "summaries are made with: list the memories with get_all instead",
                         "error": {"code": "not_supported", "message": "needs a language model", "fields": {}}},
                        status=status.HTTP_501_NOT_IMPLEMENTED)
