"""The references to a tenant row that outlive it: cleared by whoever deletes the row, in its
transaction, before the row goes.

A reference that may outlive its row (a session's agent, a memory's superseded_by...) was a
composite foreign key ON DELETE SET NULL (x). A Citus cluster distributed by org_id refuses
SET NULL and SET DEFAULT on a foreign key that carries the distribution column, so these keys
are ON DELETE NO ACTION (memories 0030): the database still refuses a reference to a row that
does not exist, and every deletion of a parent (the ORM's, tenants.models.ReferencesCleared;
the erasure's SQL, memories.lifecycle.erasure) clears the references to it first with
clear_references. What a user sees is what SET NULL did: the row that referred stays, its
reference empty.

The statements are built without a database (clearing_statements) and run in one place
(clear_references).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connections


@dataclass(frozen=True)
class Reference:
    """A column of `table` that holds the id of a row of another (org_id alongside)."""

    table: str
    column: str


# Parent table -> the nullable references to its rows, emptied when a row goes.
CLEARED: dict[str, tuple[Reference, ...]] = {
    "agents": (
        Reference("sessions", "agent_id"),
        Reference("memory_versions", "changed_by_agent_id"),
        Reference("retrieval_events", "agent_id"),
        Reference("erasures", "requested_by_agent_id"),
    ),
    "sessions": (Reference("memories", "session_id"),),
    "memories": (Reference("memories", "superseded_by"), Reference("memories", "merged_into")),
    "retrieval_events": (Reference("retrieval_events", "replay_of"),),
}

# Parent table -> the rows its deletion takes with it (ON DELETE CASCADE) that have cleared
# references of their own: an agent's memories go with it, and other memories may point at them.
CASCADED: dict[str, tuple[Reference, ...]] = {
    "agents": (Reference("memories", "agent_id"),),
}


def cleared_columns(table: str) -> tuple[str, ...]:
    """The columns of `table` a deletion elsewhere may empty (an append-only table's runtime
    role may UPDATE these and nothing else, memory_platform.database)."""
    return tuple(sorted({reference.column for references in CLEARED.values()
                         for reference in references if reference.table == table}))


@dataclass(frozen=True)
class Rows:
    """Rows of one parent table within one organisation, as a query that yields their ids."""

    sql: str
    params: tuple = ()

    @classmethod
    def ids(cls, ids: Iterable[uuid.UUID | str]) -> Rows:
        return cls("SELECT unnest(%s::uuid[])", (list(ids),))


def clearing_statements(parent: str, org_id, rows: Rows) -> list[tuple[str, list]]:
    """The UPDATEs, as (sql, params), that empty every reference to `rows` of `parent` and to
    the rows their deletion cascades to."""
    statements = [
        (f"UPDATE {reference.table} SET {reference.column} = NULL "
         f"WHERE org_id = %s AND {reference.column} IN ({rows.sql})", [org_id, *rows.params])
        for reference in CLEARED.get(parent, ())
    ]
    for child in CASCADED.get(parent, ()):
        cascaded = Rows(f"SELECT id FROM {child.table} WHERE org_id = %s AND {child.column} IN ({rows.sql})",
                        (org_id, *rows.params))
        statements += clearing_statements(child.table, org_id, cascaded)
    return statements


def clear_references(parent: str, *, org_id, rows: Rows | Iterable[uuid.UUID | str], using: str = "default") -> int:
    """Empty every reference to these rows of `parent` (a table) of the organisation, as the
    caller's transaction and tenant (row-level security keeps it inside); returns how many
    references were emptied. Call it in the transaction that deletes them, before the DELETE."""
    if not isinstance(rows, Rows):
        rows = Rows.ids(rows)
    cleared = 0
    with connections[using].cursor() as cursor:
        for sql, params in clearing_statements(parent, org_id, rows):
            cursor.execute(sql, params)
            cleared += cursor.rowcount
    return cleared
