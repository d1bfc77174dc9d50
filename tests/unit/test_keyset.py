"""memories.keyset's cursors and orders, without a database (docs/adr/0046)."""

import datetime
import decimal
import uuid

import pytest

from memories import keyset
from memories.errors import InvalidInput
from memories.models import Entity, Memory

WHEN = datetime.datetime(2026, 11, 26, 15, 30, 45, 123456, tzinfo=datetime.UTC)
ID = uuid.UUID("6c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f")


def test_a_cursor_holds_the_key_exactly_and_its_direction():
    for backwards in (False, True):
        position = keyset.cursor_decode(keyset.cursor_encode((WHEN, ID), backwards=backwards), model=Memory,
                                        order=keyset.NEWEST_FIRST)
        assert position.key == (WHEN, ID) and position.backwards is backwards
    order = keyset.Order(("confidence", "created_at", "id"))
    assert keyset.cursor_decode(keyset.cursor_encode((decimal.Decimal("0.125"), WHEN, ID)), model=Memory,
                                order=order).key == (decimal.Decimal("0.125"), WHEN, ID)
    counted = keyset.Order(("mention_count", "id"))
    assert keyset.cursor_decode(keyset.cursor_encode((3, ID)), model=Entity, order=counted).key == (3, ID)


@pytest.mark.parametrize("cursor", [
    "", "nonsense", "%%%", "e30", keyset.cursor_encode(["yesterday", str(ID)]), keyset.cursor_encode([WHEN]),
    keyset.cursor_encode([WHEN, ID, 3]), keyset.cursor_encode([None, ID]), keyset.cursor_encode([WHEN, "not-a-uuid"]),
    "eyJrIjpbMSwyXSwiYiI6Mn0", "W10", "bnVsbA",
])
def test_anything_else_is_invalid_input_on_cursor(cursor):
    with pytest.raises(InvalidInput) as refused:
        keyset.cursor_decode(cursor, model=Memory, order=keyset.NEWEST_FIRST)
    assert refused.value.field == "cursor"


def test_an_order_reads_one_way_and_back():
    assert keyset.NEWEST_FIRST.order_by() == ["-created_at", "-id"]
    assert keyset.NEWEST_FIRST.order_by(backwards=True) == ["created_at", "id"]
    assert keyset.OLDEST_FIRST.order_by() == ["created_at", "id"]
