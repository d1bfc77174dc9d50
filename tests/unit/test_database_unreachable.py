"""Which database errors mean "out of reach" (503 with Retry-After at every door) rather than
a statement's own failure (memory_platform.database.unreachable)."""

import django.db
import psycopg
import pytest
from psycopg import errors

from memory_platform.database import unreachable


def raised_by_django(cause: Exception, wrapper=django.db.OperationalError) -> Exception:
    """As Django's backend raises it: its own class, from psycopg's."""
    try:
        try:
            raise cause
        except Exception as exc:
            raise wrapper(*exc.args) from exc
    except Exception as wrapped:
        return wrapped


@pytest.mark.parametrize("error", [
    psycopg.OperationalError("connection failed: No such file or directory"),  # no server: no SQLSTATE
    psycopg.OperationalError("consuming input failed: server closed the connection unexpectedly"),
    errors.AdminShutdown("terminating connection due to administrator command"),
    errors.CrashShutdown("terminating connection because of crash of another server process"),
    errors.CannotConnectNow("the database system is starting up"),
    errors.ConnectionFailure("connection failure"),
])
def test_a_lost_or_refused_connection_is_the_database_out_of_reach(error):
    assert unreachable(error)
    assert unreachable(raised_by_django(error))


@pytest.mark.parametrize("error", [
    errors.QueryCanceled("canceling statement due to statement timeout"),
    errors.DeadlockDetected("deadlock detected"),
    errors.UniqueViolation("duplicate key value"),
    psycopg.InterfaceError("the cursor is closed"),
    ValueError("not a database error"),
    None,
])
def test_a_statements_own_failure_is_not(error):
    assert not unreachable(error)
    if error is not None:
        assert not unreachable(raised_by_django(error, django.db.DatabaseError))
