"""Facts about the database the product runs on, and the privileges of its runtime role."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import psycopg
from django.core.management.base import CommandError
from django.db import connection, connections, transaction
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper
from psycopg import sql

from memory_platform import references

logger = logging.getLogger(__name__)

MINIMUM_PGVECTOR = (0, 8, 0)

# Tables whose rows, once written, are history: the runtime role may add and erase them but
# never rewrite them, only empty their references to a row deleted elsewhere (an agent's, a
# replayed event's: memory_platform.references, which their append_only triggers allow).
APPEND_ONLY_TABLES = ("memory_versions", "retrieval_events")


# A setting's name, as SET LOCAL takes it unquoted: a custom one (app.current_org_id) or one of
# PostgreSQL's or an extension's (hnsw.ef_search).
_SETTING_NAME = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?")


def set_local(cursor, settings: dict[str, object], then: str | None = None, params=None, *,
              then_reset: Iterable[str] = ()) -> None:
    """SET LOCAL each setting, in one round trip: they last until the transaction ends. With
    `then`, that statement follows in the same round trip, under the settings, its `params`
    bound on the client, and the cursor holds its rows (authentication reads the key and the
    agent so, and the vector search: each a round trip fewer); and after it the settings named
    in `then_reset` go back to their defaults (reset_local), still in that round trip.

    SET LOCAL, not set_config(..., true), which does the same on one server: on a Citus cluster
    (citus.propagate_set_commands = local) SET LOCAL is also sent to every worker the
    transaction reaches, so the row-level security policies and the search's index settings
    hold there too; a set_config call is not (docs/adr/0042). The values are written into the
    statement as literals (a utility statement takes no parameters), quoted by psycopg; several
    statements go in one simple-protocol message (a cursor that binds on the server, such as
    prepared_cursor's, cannot send them). On a Citus cluster `then` and the resets go in round
    trips of their own.
    """
    statements = []
    for name, value in settings.items():
        if not _SETTING_NAME.fullmatch(name):
            raise ValueError(f"not a setting name: {name!r}")
        statements.append(f"SET LOCAL {name} = {sql.quote(str(value))}")
    if then is None:
        if statements:
            cursor.execute("; ".join(statements))
        return
    resets = _reset_statements(then_reset)
    if on_citus(cursor.db.alias):
        # A cluster's coordinator fails the transaction when one message holds a statement it
        # sends to a worker beside others ("failure on connection marked as essential"): a
        # round trip each, as set_local and reset_local would take.
        if statements:
            cursor.execute("; ".join(statements))
        cursor.execute(then, params)
        if resets:
            with cursor.db.cursor() as other:  # this one keeps the statement's rows
                other.execute("; ".join(resets))
        return
    setting = "".join(f"{statement}; " for statement in statements)
    resetting = "".join(f"; {statement}" for statement in resets)
    if params is not None:
        setting, resetting = setting.replace("%", "%%"), resetting.replace("%", "%%")
    cursor.execute(setting + then + resetting, params)
    for _ in statements:  # past each SET's empty result, to the statement's rows
        cursor.nextset()


def prepared_cursor() -> CursorWrapper:
    """A cursor whose statements PostgreSQL plans once per connection: bound on the server and
    prepared on first use (the connection's prepare_threshold is 0; settings._database), where
    every other cursor binds on the client and prepares nothing (docs/adr/0063).

    Only for a statement whose best plan does not depend on its parameters' values: a read by
    key (memories by id, the turns next to some, a few people by name). Planning such a
    statement cost more than running it (the neighbours signal's: 2.0 ms planning, 0.5 ms
    executing at 100k memories): the table's 32 indexes, 19 of them partial, are weighed for
    every reference to it. Never for the vector or full-text statements, whose plans hang on
    the query vector and the words' frequencies (docs/adr/0035, "Generic plans"). Django's own
    wrapper, so execute wrappers and the test suite's query capture see its statements."""
    connection.ensure_connection()
    wrapper = CursorDebugWrapper if connection.queries_logged else CursorWrapper
    return wrapper(psycopg.Cursor(connection.connection), connection)


def named(conditions: list[tuple[str, list]], start: int = 0) -> tuple[str, dict]:
    """SQL conditions with positional parameters (%s), each with its values, as one text of
    " AND condition" parts with named parameters (%(p0)s, %(p1)s... from `start`) and their
    values by name: for a statement whose other parameters are named."""
    text, values = "", {}
    for sql_text, params in conditions:
        names = iter([f"p{start + len(values) + number}" for number in range(len(params))])
        text += " AND " + re.sub(r"%s", lambda _: f"%({next(names)})s", sql_text)
        values |= {f"p{start + len(values) + number}": value for number, value in enumerate(params)}
    return text, values


@contextmanager
def exclusive_transaction(lock: int) -> Iterator[object | None]:
    """A transaction that holds the advisory lock `lock` until it ends: yields its cursor, or
    None at once when another transaction holds the lock (a periodic job whose run is already
    under way has nothing to do)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [lock])
        yield cursor if cursor.fetchone()[0] else None


def reset_local(cursor, names) -> None:
    """Undo set_local for these settings before the transaction ends (SET LOCAL ... TO DEFAULT,
    propagated to a cluster's workers as set_local is): for a setting that must hold for one
    statement only, not for the rest of the request."""
    if statements := _reset_statements(names):
        cursor.execute("; ".join(statements))


def _reset_statements(names: Iterable[str]) -> list[str]:
    statements = []
    for name in names:
        if not _SETTING_NAME.fullmatch(name):
            raise ValueError(f"not a setting name: {name!r}")
        statements.append(f"SET LOCAL {name} TO DEFAULT")
    return statements


# For a statement over a whole organisation that joins two of its tables: a hash or merge join,
# linear whatever the statistics say. Statistics that have not seen an organisation yet (an
# import that just committed, before autovacuum analyses the tables) cost its rows at one, and
# the planner chose a nested loop that read the inner table's rows of the organisation again
# for every outer row: quadratic (docs/adr/0045).
HASH_OR_MERGE_JOINS = {"enable_nestloop": "off"}


@contextmanager
def local_settings(cursor, settings: dict[str, object]) -> Iterator[None]:
    """These settings for the statements inside only: set_local in a savepoint and reset_local
    after them; a statement that fails takes them with its savepoint's rollback."""
    with transaction.atomic(using=cursor.db.alias):
        set_local(cursor, settings)
        yield
        reset_local(cursor, settings)


# What a request refused for want of the database tells its client to wait: the embedded
# PostgreSQL restarts in about 3 s (docs/adr/0036), a managed one fails over in tens of seconds.
UNREACHABLE_RETRY_SECONDS = 5

# The connection failed or was lost (class 08), or the server is shutting down, crashed, or
# still starting (57P01-57P03). A statement's own failure (a deadlock, a cancelled query) is not.
_UNREACHABLE_SQLSTATES = ("57P01", "57P02", "57P03")


def unreachable(exc: BaseException | None) -> bool:
    """Whether this exception (or one it was raised from) says the database is out of reach:
    it cannot be connected to, the connection was lost, or the server is not accepting work.
    psycopg raises these without an SQLSTATE when no server answered at all."""
    error = _raised_from(exc, psycopg.OperationalError)
    if error is None:
        return False
    state = error.sqlstate
    return state is None or state.startswith("08") or state in _UNREACHABLE_SQLSTATES


def _raised_from(exc: BaseException | None, kind: type[psycopg.Error]) -> psycopg.Error | None:
    """The first exception of `kind` among this one and those it was raised from."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, kind):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


# A transaction the database rolled back whole to settle a conflict with another: a deadlock
# (40P01; also how a Citus cluster ends a transaction caught in a distributed deadlock, as with
# a shard move's switch, docs/adr/0042) or a serialization failure (40001). Nothing it wrote
# remains, so the client may send the same request again at once.
# So is a statement Citus planned for a shard that a split retired as it ran (an internal
# error, XX000, told by its message).
CONTENDED_RETRY_SECONDS = 1
_CONTENDED_SQLSTATES = ("40P01", "40001")
_SHARD_RETIRED = "could not find valid entry for shard"


def contended(exc: BaseException | None) -> bool:
    """Whether this exception (or one it was raised from) is a transaction rolled back for a
    deadlock or a serialization failure, or a statement sent to a shard a split retired."""
    error = _raised_from(exc, psycopg.Error)
    if error is None:
        return False
    return error.sqlstate in _CONTENDED_SQLSTATES or (
        error.sqlstate == "XX000" and (error.diag.message_primary or "").startswith(_SHARD_RETIRED))


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def describe(alias: str) -> str:
    settings = connections[alias].settings_dict
    host = settings.get("HOST") or "localhost"
    return f"{settings.get('NAME')} on {host}:{settings.get('PORT') or 5432}"


@functools.cache
def on_citus(using: str = "default") -> bool:
    """citus_present, asked once per process: a running process never changes engine. For the
    statements that spell a condition differently on a cluster."""
    return citus_present(using)


def citus_present(using: str = "default") -> bool:
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'")
        return cursor.fetchone() is not None


def pgvector_version(alias: str = "default") -> str | None:
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    return row[0] if row else None


def require_pgvector(alias: str) -> str:
    """Return the installed pgvector version, or raise a one-line CommandError saying what is missing."""
    try:
        installed = pgvector_version(alias)
        if installed is None:
            with connections[alias].cursor() as cursor:
                cursor.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
                available = cursor.fetchone()
    except Exception as exc:  # connection refused, bad password, no such database...
        raise CommandError(f"cannot reach the database {describe(alias)}: {str(exc).strip().splitlines()[0]}") from exc
    if installed is None:
        if available is None:
            raise CommandError(
                f"the PostgreSQL server behind DATABASE_URL ({describe(alias)}) has no pgvector extension: "
                "install pgvector >= 0.8 on that server (e.g. the pgvector/pgvector:pg16 image), "
                "or unset DATABASE_URL to use the embedded server"
            )
        raise CommandError(
            f"pgvector {available[0]} is available but not created in {describe(alias)}: "
            "a superuser must run CREATE EXTENSION vector in that database"
        )
    if _version_tuple(installed) < MINIMUM_PGVECTOR:
        raise CommandError(
            f"pgvector {installed} in {describe(alias)} is too old: 0.8.0 or newer is required "
            "(ALTER EXTENSION vector UPDATE after upgrading the package)"
        )
    return installed


def _runtime_role(using: str) -> sql.Identifier | None:
    runtime_user = connections["default"].settings_dict["USER"]
    if not runtime_user or runtime_user == connections[using].settings_dict["USER"]:
        logger.warning(
            "DATABASE_URL and DATABASE_OWNER_URL use the same role: row-level security does not hold "
            "against a table owner that can disable it; give the application its own role"
        )
        return None
    return sql.Identifier(runtime_user)


def grant_default_privileges(using: str = "owner") -> None:
    """Before migrate: existing tables, and those the owner creates from now on, are readable
    and writable by the runtime role (some of Django's own data migrations read through
    `default`, so the grant cannot wait until the end).

    Never TRUNCATE (which ignores row-level security) and no DDL right.
    """
    role = _runtime_role(using)
    if role is None:
        return
    with connections[using].cursor() as cursor:
        cursor.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(role))
        cursor.execute(sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {}").format(role))
        cursor.execute(sql.SQL("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {}").format(role))
        cursor.execute(
            sql.SQL(
                "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {}"
            ).format(role)
        )
        cursor.execute(
            sql.SQL("ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO {}").format(role)
        )


def restrict_runtime_privileges(sender, using="owner", **kwargs) -> None:
    """After migrate: take back what the runtime role must not do, rewrite history or the
    migration record; of history, it may update only the references a deletion empties. And
    let it analyse the tables an import wrote, through the one function that does that."""
    if getattr(sender, "label", None) != "memories":
        return  # post_migrate fires once per app; one pass at the end is enough
    role = _runtime_role(using)
    if role is None:
        return
    with connections[using].cursor() as cursor:
        cursor.execute(sql.SQL("REVOKE INSERT, UPDATE, DELETE ON django_migrations FROM {}").format(role))
        for table in APPEND_ONLY_TABLES:
            cursor.execute("SELECT to_regclass(%s)", [table])
            if cursor.fetchone()[0] is not None:  # absent after migrating to zero
                cursor.execute(sql.SQL("REVOKE UPDATE ON {} FROM {}").format(sql.Identifier(table), role))
                if columns := references.cleared_columns(table):
                    cursor.execute(sql.SQL("GRANT UPDATE ({}) ON {} TO {}").format(
                        sql.SQL(", ").join(map(sql.Identifier, columns)), sql.Identifier(table), role))
        # The one function it may call with the owner's rights: ANALYZE of the tables an
        # import wrote (memories migration 0058).
        cursor.execute("SELECT to_regprocedure('analyse_imported_tables()')")
        if cursor.fetchone()[0] is not None:
            cursor.execute(sql.SQL("GRANT EXECUTE ON FUNCTION analyse_imported_tables() TO {}").format(role))
