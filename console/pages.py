"""The console's lists, a page at a time: by key (memories.keyset: "Newer" / "Older" links that
carry a cursor, no page numbers and no count of the whole list), or, for a list already bounded
(a search's best hundred), by number. templates/console/partials/pagination.html shows either."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import QueryDict

from memories import keyset
from memories.errors import InvalidInput


@dataclass
class ListPage:
    object_list: list
    next: str | None = None  # the query string of the page after
    previous: str | None = None  # and of the page before
    label: str = ""  # where the page is ("Page 2 of 4"), when that is known cheaply

    @property
    def has_other_pages(self) -> bool:
        return bool(self.next or self.previous)


def _with(query: QueryDict, **values) -> str:
    state = query.copy()
    for name in ("cursor", "page"):
        state.pop(name, None)
    for name, value in values.items():
        if value is not None:
            state[name] = value
    return state.urlencode()


def by_key(queryset, *, order: keyset.Order, limit: int, query: QueryDict) -> ListPage:
    """A page of the queryset in the order from the query's `cursor`; a cursor that is not one
    (an edited link) shows the first page."""
    try:
        found = keyset.page(queryset, order=order, limit=limit, cursor=query.get("cursor") or None)
    except InvalidInput:
        found = keyset.page(queryset, order=order, limit=limit)
    return ListPage(list(found.items), _with(query, cursor=found.next) if found.next else None,
                    _with(query, cursor=found.previous) if found.previous else None)


def by_number(items: list, *, limit: int, query: QueryDict) -> ListPage:
    """A page of a list already in memory and bounded (a search's results)."""
    pages = max(1, -(-len(items) // limit))
    try:
        number = min(max(1, int(query.get("page", 1))), pages)
    except ValueError:
        number = 1
    return ListPage(items[(number - 1) * limit:number * limit],
                    _with(query, page=str(number + 1)) if number < pages else None,
                    _with(query, page=str(number - 1)) if number > 1 else None,
                    f"Page {number} of {pages} ({len(items)} in all)" if pages > 1 else "")
