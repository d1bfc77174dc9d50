"""LangGraph's store API over HTTP, as langgraph_sdk's StoreClient calls it (docs/adr/0040):

    PUT    /store/items          {namespace, key, value, index?, ttl?}      -> 204
    GET    /store/items          ?namespace=a.b&key=k[&refresh_ttl=false]   -> Item, or null
    DELETE /store/items          {namespace, key}                           -> 204
    POST   /store/items/search   {namespace_prefix, filter?, limit, offset, query?, refresh_ttl?}
                                                                            -> {"items": [SearchItem]}
    POST   /store/namespaces     {prefix?, suffix?, max_depth?, limit, offset} -> {"namespaces": [[...]]}

Authenticated, rate limited and scoped by the API key like the rest of the API (AgentAPIView:
`x-api-key`, which the SDK sends, or `Authorization: Bearer`). Views parse and shape; the
store's use cases (memories.use_cases.store) decide, as they do for MCP's store tools. Where the reference server answers 422 (a body or a
namespace that fails validation) so does this door, with the platform's error body naming the
field; the SDK raises it with that message.
"""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import status
from rest_framework.response import Response

from integrations.langgraph_store import serializers as s
from memories.api.schema import documented, documented_error
from memories.api.serializers import query_data
from memories.api.views import AgentAPIView
from memories.errors import NotFound
from memories.use_cases import store

ITEM_PROPERTIES = {
    "namespace": {"type": "array", "items": {"type": "string"}},
    "key": {"type": "string"},
    "value": {"type": "object", "additionalProperties": True},
    "created_at": {"type": "string", "format": "date-time"},
    "updated_at": {"type": "string", "format": "date-time"},
}
ITEM_OR_NULL = {"type": "object", "nullable": True, "properties": ITEM_PROPERTIES, "required": list(ITEM_PROPERTIES),
                "description": "LangGraph's Item, or null when there is none (or it is out of the key's reach)."}
EXAMPLE_ITEM = {"namespace": ["users", "alice"], "key": "diet", "value": {"text": "vegetarian", "since": 2019},
                "created_at": "2026-11-21T16:31:56.123456Z", "updated_at": "2026-11-21T16:35:10.654321Z"}
INVALID = dict([documented_error(422, "invalid", "namespace: namespace label 'a.b' may not contain '.'",
                                 {"namespace": ["namespace label 'a.b' may not contain '.'"]},
                                 note="A request that fails validation, as the reference server answers it.")])


class LangGraphStoreView(AgentAPIView):
    """The platform's API view, answering a request that fails validation with 422."""

    def handle_exception(self, exc):
        response = super().handle_exception(exc)
        error = response.data.get("error", {}) if isinstance(response.data, dict) else {}
        if response.status_code == status.HTTP_400_BAD_REQUEST and error.get("code") == "invalid":
            response.status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
        return response


class BodyOnDeleteSchema(AutoSchema):
    """Documents a DELETE's body too: LangGraph's delete_item sends {namespace, key} as JSON on
    DELETE, and drf-spectacular reads the bodies of PUT, PATCH and POST only, so generated
    clients (clients/typescript) would send none."""

    def _get_request_body(self, direction="request"):
        if self.method != "DELETE":
            return super()._get_request_body(direction)
        self.method = "POST"
        try:
            return super()._get_request_body(direction)
        finally:
            self.method = "DELETE"


class StoreItemView(LangGraphStoreView):
    """An item by its namespace and key (LangGraph's put_item, get_item and delete_item)."""

    schema = BodyOnDeleteSchema()

    @documented(summary="Put an item (LangGraph's put_item): upsert by namespace and key, every write versioned",
                request=s.PutItemSerializer, response=OpenApiResponse(description="stored"), status=204,
                request_example={"namespace": ["users", "alice"], "key": "diet",
                                 "value": {"text": "vegetarian", "since": 2019}, "index": ["text"], "ttl": 1440},
                description="`value` is any JSON object. `index`: null embeds the whole value's JSON, false "
                            "embeds nothing (the item is found by key and filters, not by meaning), a list of "
                            "field paths embeds their text. `ttl`: minutes (null: no expiry). `speaker`: who said it "
                            "(else a name the value holds under \"speaker\").",
                errors=INVALID, operation_id="store_put_item")
    def put(self, request):
        body = self.validated(s.PutItemSerializer, request.data)
        store.store_put(self.caller, namespace=body["namespace"], key=body["key"], value=body["value"],
                        index=body["index"], ttl=body["ttl"], speaker=body["speaker"])
        return Response(status=status.HTTP_204_NO_CONTENT)

    @documented(summary="Get an item (LangGraph's get_item); null when there is none", response=ITEM_OR_NULL,
                parameters=[s.GetItemQuerySerializer], response_example=EXAMPLE_ITEM, errors=INVALID,
                operation_id="store_get_item")
    def get(self, request):
        where = self.validated(s.GetItemQuerySerializer, query_data(request.query_params, ()))
        try:
            memory = store.store_get(self.caller, namespace=where["namespace"], key=where["key"],
                                     refresh_ttl=where["refresh_ttl"])
        except NotFound:  # the reference server's answer: JSON null, not an empty body
            return HttpResponse(b"null", content_type="application/json")
        return Response(s.ItemSerializer(memory).data)

    @documented(summary="Delete an item (LangGraph's delete_item); deleting none is no error",
                request=s.DeleteItemSerializer, response=OpenApiResponse(description="deleted, or there was none"),
                status=204, request_example={"namespace": ["users", "alice"], "key": "diet"}, errors=INVALID,
                operation_id="store_delete_item")
    def delete(self, request):
        body = self.validated(s.DeleteItemSerializer, request.data)
        store.store_delete(self.caller, namespace=body["namespace"], key=body["key"])
        return Response(status=status.HTTP_204_NO_CONTENT)


class StoreSearchView(LangGraphStoreView):
    """LangGraph's search_items."""

    reads_only = True

    def rate_limit_scope_for(self, request) -> str | None:
        # With a query it embeds one, as /search does, and counts as a search.
        return "search" if isinstance(request.data, dict) and request.data.get("query") else None

    @documented(
        summary="Search items (LangGraph's search_items): under a namespace prefix, by filter over the value, "
                "by meaning with a query",
        request=s.SearchItemsSerializer, response=s.SearchItemsResponseSerializer,
        request_example={"namespace_prefix": ["users", "alice"], "filter": {"since": {"$gte": 2018}},
                         "query": "what does she eat?", "limit": 5},
        response_example={"items": [{**EXAMPLE_ITEM, "score": 0.62}]},
        description="Without a query: the items last updated first, `score` null. With one: the items nearest "
                    "it by cosine similarity (`score`, 0 to 1), best first; items put with `index: false` are "
                    "not found this way. Each search by meaning is recorded as a retrieval event.",
        errors=INVALID, operation_id="store_search_items")
    def post(self, request):
        body = self.validated(s.SearchItemsSerializer, request.data)
        found = store.store_search(self.caller, namespace_prefix=body["namespace_prefix"],
                                   value_filter=body["filter"], limit=body["limit"], offset=body["offset"],
                                   query=body["query"], threshold=body["threshold"],
                                   refresh_ttl=body["refresh_ttl"] is not False)  # LangGraph's default: reads refresh
        return Response({"items": s.SearchItemSerializer(found, many=True).data})


class StoreNamespacesView(LangGraphStoreView):
    """LangGraph's list_namespaces."""

    reads_only = True

    @documented(summary="List namespaces (LangGraph's list_namespaces)", request=s.ListNamespacesSerializer,
                response=s.ListNamespacesResponseSerializer,
                request_example={"prefix": ["users"], "max_depth": 2, "limit": 100},
                response_example={"namespaces": [["users", "alice"], ["users", "bob"]]},
                description="The namespaces holding items: those beginning with `prefix` and ending with "
                            "`suffix` (a label `*` matches any), cut to `max_depth` labels and listed once each, "
                            "in order.",
                errors=INVALID, operation_id="store_list_namespaces")
    def post(self, request):
        body = self.validated(s.ListNamespacesSerializer, request.data)
        namespaces = store.store_namespaces(self.caller, prefix=body["prefix"], suffix=body["suffix"],
                                            max_depth=body["max_depth"], limit=body["limit"], offset=body["offset"])
        return Response({"namespaces": namespaces})

