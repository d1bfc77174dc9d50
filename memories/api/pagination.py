"""The REST API's pages by key (memories.keyset): `?cursor=` and `?limit=`, answered as DRF's
CursorPagination answers ({"next", "previous", "results"}, each link the same URL with another
cursor), so clients that followed `next` before follow it still. A cursor that is not one is a
400 naming `cursor` (DRF's own said 404)."""

from __future__ import annotations

from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

from memories import keyset
from memories.errors import InvalidInput


class KeysetPagination:
    order: keyset.Order = keyset.NEWEST_FIRST
    default_limit = 50
    max_limit = 200

    def __init__(self, order: keyset.Order | None = None):
        if order is not None:
            self.order = order

    def limit(self, request) -> int:
        raw = request.query_params.get("limit")
        if raw is None:
            return self.default_limit
        try:
            value = int(raw)
        except ValueError:
            raise InvalidInput("must be an integer", field="limit") from None
        if not 1 <= value <= self.max_limit:
            raise InvalidInput(f"must be between 1 and {self.max_limit}", field="limit")
        return value

    def paginate_queryset(self, queryset, request) -> keyset.Page:
        self.request = request
        self.page = keyset.page(queryset, order=self.order, limit=self.limit(request),
                                cursor=request.query_params.get("cursor") or None)
        return self.page

    def link(self, cursor: str | None) -> str | None:
        if cursor is None:
            return None
        return replace_query_param(remove_query_param(self.request.build_absolute_uri(), "offset"), "cursor", cursor)

    def get_paginated_response(self, data, **extra) -> Response:
        return Response({**extra, "next": self.link(self.page.next), "previous": self.link(self.page.previous),
                         "results": data})
