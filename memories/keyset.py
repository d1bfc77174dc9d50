"""Pages by key (keyset pagination): a page starts after the last row of the one before it, by
its sort key and id, so reading page 1,000 costs what page 1 costs (an index walked from the key,
no OFFSET) and a write between two reads neither skips nor repeats a row that was there before
and after it (docs/adr/0046).

An order is a few columns of one model, all in one direction, the last one unique (the id);
the next page is a row comparison, `(created_at, id) < (%s, %s)`, which PostgreSQL answers from
a btree index over those columns (after the organisation). The cursor is opaque to the caller:
base64 of the last row's key and the direction to read in; a cursor that does not decode is
InvalidInput on the field `cursor`.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import decimal
import json
import uuid
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db.models import BooleanField, QuerySet
from django.db.models.expressions import RawSQL

from memories.errors import InvalidInput

CURSOR_FIELD = "cursor"


@dataclass(frozen=True)
class Order:
    """Columns (model field names) read in one direction; the last one is unique."""

    fields: tuple[str, ...]
    descending: bool = True

    def order_by(self, *, backwards: bool = False) -> list[str]:
        down = self.descending != backwards
        return [f"-{name}" if down else name for name in self.fields]


NEWEST_FIRST = Order(("created_at", "id"))
OLDEST_FIRST = Order(("created_at", "id"), descending=False)


@dataclass(frozen=True)
class Page:
    items: list
    next: str | None  # the cursor of the page after, None after the last
    previous: str | None  # the cursor of the page before, None on the first


def _plain(value):
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, (uuid.UUID, decimal.Decimal)):
        return str(value)
    return value


def cursor_encode(values, *, backwards: bool = False) -> str:
    text = json.dumps({"k": [_plain(v) for v in values], "b": int(backwards)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@dataclass(frozen=True)
class Position:
    key: tuple
    backwards: bool


def cursor_decode(cursor: str, *, model, order: Order) -> Position:
    """The key a cursor holds, each value as its model field reads it."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
        values, backwards = data["k"], data["b"]
        if not isinstance(values, list) or len(values) != len(order.fields) or backwards not in (0, 1):
            raise ValueError
        key = tuple(model._meta.get_field(name).to_python(value) for name, value in zip(order.fields, values))
        if any(v is None for v in key):
            raise ValueError
    except (ValueError, TypeError, KeyError, ValidationError, binascii.Error, UnicodeDecodeError, RecursionError):
        raise InvalidInput("not a cursor this list returned", field=CURSOR_FIELD) from None
    return Position(key=key, backwards=bool(backwards))


def after(queryset: QuerySet, *, order: Order, key: tuple, backwards: bool = False) -> QuerySet:
    """The rows past `key` in the order (before it, backwards): one row comparison, which an
    index over the order's columns answers as a range."""
    meta = queryset.model._meta
    columns = ", ".join(f'"{meta.db_table}"."{meta.get_field(name).column}"' for name in order.fields)
    down = order.descending != backwards
    placeholders = ", ".join(["%s"] * len(key))
    return queryset.filter(RawSQL(f"({columns}) {'<' if down else '>'} ({placeholders})", key,
                                  output_field=BooleanField()))


def key_of(row, order: Order) -> tuple:
    return tuple(getattr(row, name) for name in order.fields)


def page(queryset: QuerySet, *, order: Order, limit: int, cursor: str | None = None) -> Page:
    """One page of the queryset in the order, from the cursor (the first page without one)."""
    if not cursor:
        rows = list(queryset.order_by(*order.order_by())[:limit + 1])
        more = len(rows) > limit
        rows = rows[:limit]
        return Page(rows, cursor_encode(key_of(rows[-1], order)) if more else None, None)
    position = cursor_decode(cursor, model=queryset.model, order=order)
    rows = list(after(queryset, order=order, key=position.key, backwards=position.backwards)
                .order_by(*order.order_by(backwards=position.backwards))[:limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    if position.backwards:
        if not rows:  # everything before was deleted meanwhile: the first page is the one before
            return page(queryset, order=order, limit=limit)
        rows.reverse()
        # Going back, the page after is the one we came from; the one before exists if more did.
        previous = cursor_encode(key_of(rows[0], order), backwards=True) if more else None
        return Page(rows, cursor_encode(key_of(rows[-1], order)), previous)
    following = cursor_encode(key_of(rows[-1], order)) if more else None
    previous = cursor_encode(key_of(rows[0], order) if rows else position.key, backwards=True)
    return Page(rows, following, previous)
