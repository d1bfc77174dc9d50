"""set_local: settings for the rest of the transaction, and with `then` a statement that runs
under them in the same round trip, its rows the cursor's (memory_platform.database)."""

import pytest
from django.db import connection, transaction

from memory_platform.database import set_local

pytestmark = pytest.mark.django_db


def setting(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting(%s, true)", [name])
        return cursor.fetchone()[0]


def test_the_statement_after_the_settings_reads_under_them_and_returns_its_rows():
    with transaction.atomic(), connection.cursor() as cursor:
        set_local(cursor, {"app.current_org_id": "", "app.api_key_hash": "50% off; 'quoted'"},
                  "SELECT current_setting('app.api_key_hash'), %s::int + 1", [41])
        assert cursor.fetchall() == [("50% off; 'quoted'", 42)]  # a value's % and quotes are its own
        set_local(cursor, {"random_page_cost": "1.1"}, "SELECT current_setting('random_page_cost')")
        assert cursor.fetchone() == ("1.1",)  # without parameters, as written
        assert setting("app.api_key_hash") == "50% off; 'quoted'"  # they hold for what follows
        assert setting("random_page_cost") == "1.1"


def test_then_reset_undoes_settings_once_the_statement_has_run():
    default = setting("random_page_cost")
    with transaction.atomic(), connection.cursor() as cursor:
        set_local(cursor, {"random_page_cost": "1.1", "hnsw.ef_search": "77"},
                  "SELECT current_setting('random_page_cost'), %s", ["x"], then_reset=["random_page_cost"])
        assert cursor.fetchall() == [("1.1", "x")]
        assert setting("random_page_cost") == default
        assert setting("hnsw.ef_search") == "77"


def test_a_setting_name_is_never_sql():
    with transaction.atomic(), connection.cursor() as cursor:
        with pytest.raises(ValueError, match="not a setting name"):
            set_local(cursor, {"app.x; DROP TABLE memories": "1"}, "SELECT 1")
        with pytest.raises(ValueError, match="not a setting name"):
            set_local(cursor, {"app.x": "1"}, "SELECT 1", then_reset=["app.y = 2; SELECT"])
