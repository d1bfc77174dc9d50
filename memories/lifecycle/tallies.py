"""Each organisation's memories counted as they change: what the stats and the dashboard read
instead of counting the organisation's rows (docs/adr/0045).

A row trigger on memories appends what each write changed to memory_tally_deltas (migration
0035); `fold` moves the deltas into memory_tallies every 30 s (memories.cron); `tallies`
reads both, so its counts are exactly those of the rows its snapshot sees, folded or not, as
the word statistics' (memories.understanding.lexicon). Counted: the memories not deleted, per
(agent, status, category, memory type): n, and of them those that expire, wait for their
embedding and never decay; per UTC day, the memories created that day not deleted
(migration 0037), which the growth per day reads; and per (namespace, status), the memories
not deleted, the store items among them and those of both that expire, with the namespace's
first and last activity (migration 0049), which the lists of namespaces read. And per
relationship type, the relationships between two memories not deleted (migration 0053), which
the organisation's stats read; `repair_relationships` settles what two transactions racing on
one relationship's memories left (docs/adr/0060).
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone

from memory_platform import database
from tenants.context import service_account

logger = logging.getLogger(__name__)

TABLES = ("memory_tallies", "memory_tally_deltas", "memory_day_tallies", "memory_day_tally_deltas",
          "memory_namespace_tallies", "memory_namespace_tally_deltas", "memory_relationship_tallies",
          "memory_relationship_tally_deltas")
KEY = ("agent_id", "status", "category", "memory_type")
COUNTS = ("n", "expiring", "embedding_pending", "not_decaying")
NAMESPACE_COUNTS = ("n", "items", "expiring", "expiring_items")
FOLD_LOCK = 0x7A11_0045  # pg_try_advisory_xact_lock key: one fold at a time

# What the tallies of one organisation should be, counted from its rows: the migration's
# backfill, `differences` and `rebuild` count the same way.
RECOUNT = """
    SELECT agent_id, status, category, memory_type, count(*), count(*) FILTER (WHERE expires_at IS NOT NULL),
           count(*) FILTER (WHERE embedding IS NULL AND indexed), count(*) FILTER (WHERE decay_rate = 0)
    FROM memories WHERE org_id = %s AND deleted_at IS NULL
    GROUP BY agent_id, status, category, memory_type
"""

# The memories created each UTC day, not deleted, counted from the rows.
RECOUNT_DAYS = """
    SELECT (created_at AT TIME ZONE 'UTC')::date, count(*) FROM memories
    WHERE org_id = %s AND deleted_at IS NULL GROUP BY 1
"""

# The memories not deleted of each namespace and status, counted from the rows: n, the store
# items (a key), those that expire, the store items that expire (NAMESPACE_COUNTS), and the
# first and last activity the rows still show (what a rebuild starts from).
RECOUNT_NAMESPACES = """
    SELECT scope, status, count(*), count(*) FILTER (WHERE key IS NOT NULL),
           count(*) FILTER (WHERE expires_at IS NOT NULL),
           count(*) FILTER (WHERE key IS NOT NULL AND expires_at IS NOT NULL), min(created_at), max(updated_at)
    FROM memories WHERE org_id = %s AND deleted_at IS NULL GROUP BY scope, status
"""

# The namespace tallies' rows of one organisation, folded and not, to be added up by whoever
# reads them (a condition on scope reaches both tables' primary keys).
NAMESPACE_ROWS = """
    SELECT scope, status, n, items, expiring, expiring_items, first_at, last_at
    FROM memory_namespace_tallies WHERE org_id = %(org)s
    UNION ALL
    SELECT scope, status, n, items, expiring, expiring_items, first_at, last_at
    FROM memory_namespace_tally_deltas WHERE org_id = %(org)s
"""

# Per namespace and status, the counts and the first and last activity.
CURRENT_NAMESPACES = f"""
    SELECT scope, status, sum(n)::bigint AS n, sum(items)::bigint AS items, sum(expiring)::bigint AS expiring,
           sum(expiring_items)::bigint AS expiring_items, min(first_at) AS first_at, max(last_at) AS last_at
    FROM ({NAMESPACE_ROWS}) counted
    GROUP BY scope, status
    HAVING sum(n) <> 0 OR sum(items) <> 0 OR sum(expiring) <> 0 OR sum(expiring_items) <> 0
"""

# The active memories of each namespace not deleted nor expired, from its tallies (folded and
# not): those past their expiry that the sweep (every minute) has not removed yet are counted
# out, read on the index of expiring memories (memories_expiring), a handful at any time.
LIVE_NAMESPACES = f"""
    SELECT kept.scope, kept.n - coalesce(expired.n, 0), kept.first_at, kept.last_at
    FROM ({CURRENT_NAMESPACES}) kept
    LEFT JOIN (SELECT scope, count(*) AS n FROM memories
               WHERE org_id = %(org)s AND deleted_at IS NULL AND expires_at <= now() AND status = %(status)s
               GROUP BY scope) expired ON expired.scope = kept.scope
    WHERE kept.status = %(status)s AND kept.n - coalesce(expired.n, 0) > 0
"""

# The day tallies of one organisation from a day on, folded and not, added up.
CURRENT_DAYS = """
    SELECT day, sum(created)::bigint FROM (
        SELECT day, created FROM memory_day_tallies WHERE org_id = %(org)s AND day >= %(since)s
        UNION ALL
        SELECT day, created FROM memory_day_tally_deltas WHERE org_id = %(org)s AND day >= %(since)s
    ) counted
    GROUP BY day HAVING sum(created) <> 0
"""

# Neither memory of the relationship r is deleted: what its flag memory_relationships.counted
# says (migration 0053, which tests it the same way); a deleted memory is found on the partial
# index of the deleted ones (memories_deleted, a few percent of the organisation).
ENDS_KEPT = ("NOT EXISTS (SELECT FROM memories m WHERE m.org_id = r.org_id "
             "AND m.id IN (r.source_id, r.target_id) AND m.deleted_at IS NOT NULL)")

# The relationships of one organisation between memories not deleted, counted from its rows.
RECOUNT_RELATIONSHIPS = f"""
    SELECT relation_type, count(*) FROM memory_relationships r WHERE org_id = %s AND {ENDS_KEPT}
    GROUP BY relation_type
"""

# The relationships of one organisation whose flag disagrees with their memories, among those of
# the memories changed since a moment (deleted and restored memories are changed: their
# updated_at; the index memories_org_changed), set right; their triggers count them in or out.
REPAIR_RELATIONSHIPS = f"""
    UPDATE memory_relationships r SET counted = NOT r.counted
    FROM (SELECT DISTINCT related.id FROM memories changed
          JOIN memory_relationships related ON related.org_id = changed.org_id
                                           AND (related.source_id = changed.id OR related.target_id = changed.id)
          WHERE changed.org_id = %(org)s AND changed.updated_at >= %(since)s) touched
    WHERE r.org_id = %(org)s AND r.id = touched.id AND r.counted <> ({ENDS_KEPT})
"""
REPAIR_WINDOW = timedelta(hours=2)  # twice the hourly job's interval: a run missed is made up

# The relationship tallies of one organisation, folded and not, added up by type.
CURRENT_RELATIONSHIPS = """
    SELECT relation_type, sum(n)::bigint FROM (
        SELECT relation_type, n FROM memory_relationship_tallies WHERE org_id = %(org)s
        UNION ALL
        SELECT relation_type, n FROM memory_relationship_tally_deltas WHERE org_id = %(org)s
    ) counted
    GROUP BY relation_type HAVING sum(n) <> 0
"""

# Both tables' counts for one organisation: folded and not yet folded, added up.
CURRENT = """
    SELECT agent_id, status, category, memory_type, sum(n)::bigint, sum(expiring)::bigint,
           sum(embedding_pending)::bigint, sum(not_decaying)::bigint
    FROM (
        SELECT agent_id, status, category, memory_type, n, expiring, embedding_pending, not_decaying
        FROM memory_tallies WHERE org_id = %(org)s
        UNION ALL
        SELECT agent_id, status, category, memory_type, n, expiring, embedding_pending, not_decaying
        FROM memory_tally_deltas WHERE org_id = %(org)s
    ) counted
    GROUP BY agent_id, status, category, memory_type
    HAVING sum(n) <> 0 OR sum(expiring) <> 0 OR sum(embedding_pending) <> 0 OR sum(not_decaying) <> 0
"""


# Every memory of one organisation, deleted ones too (the export's and an erasure of everything's
# count): the tallies' memories not deleted, folded and not, and the deleted ones counted on
# their partial index (memories_deleted, migration 0048; a few percent of the organisation). One
# statement, so one snapshot for both.
HELD = """
    SELECT (SELECT coalesce(sum(n), 0) FROM (
                SELECT n FROM memory_tallies WHERE org_id = %(org)s
                UNION ALL
                SELECT n FROM memory_tally_deltas WHERE org_id = %(org)s) counted)
           + (SELECT count(*) FROM memories WHERE org_id = %(org)s AND deleted_at IS NOT NULL)
"""


@dataclass(frozen=True)
class Tally:
    """The memories (not deleted) of one agent, status, category and type."""

    agent_id: uuid.UUID
    status: str
    category: str
    memory_type: str
    n: int
    expiring: int
    embedding_pending: int
    not_decaying: int


def tallies(org_id) -> list[Tally]:
    """The organisation's tallies, as of this statement's snapshot: one round trip, reading
    one row per (agent, status, category, type) and the deltas not yet folded. The caller has
    set the tenant."""
    with connection.cursor() as cursor:
        cursor.execute(CURRENT, {"org": org_id})
        return [Tally(*row) for row in cursor.fetchall()]


def memories_held(org_id) -> int:
    """How many memories the organisation holds, deleted or not, as of one snapshot, without
    reading the memories not deleted. The caller has set the tenant."""
    with connection.cursor() as cursor:
        cursor.execute(HELD, {"org": org_id})
        return int(cursor.fetchone()[0])


@dataclass(frozen=True)
class NamespaceTally:
    """The live memories of one namespace (active, not deleted nor expired), and when it was
    first and last written: the earliest created_at counted in since it last held none, and the
    last time a memory arrived there, left or changed status, key or expiry."""

    namespace: str
    memories: int
    first_at: datetime | None
    last_at: datetime | None


def namespace_held(org_id, namespace: str) -> int:
    """How many memories (not deleted, any status) the namespace itself holds, those under it
    not counted: a row or two of its tallies. The caller has set the tenant."""
    return namespaces_held(org_id, [("scope = %s", [namespace])])


def namespaces_held(org_id, conditions: list[tuple[str, list]], statuses=(), *, items: bool = False) -> int:
    """How many memories not deleted the namespaces meeting `conditions` hold (SQL on a
    column "scope", each with its parameters, as SearchFilters.namespace_conditions writes
    them), in these statuses (any if none), only the store's items if `items`: from their
    tallies, folded and not, a row per namespace and status however many memories they hold.
    The caller has set the tenant."""
    text, values = database.named(conditions)
    if statuses:
        text += " AND status = ANY(%(statuses)s)"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT coalesce(sum({'items' if items else 'n'}), 0) FROM ({NAMESPACE_ROWS}) counted "
                       f"WHERE TRUE{text}", {**values, "org": org_id, "statuses": list(statuses)})
        return int(cursor.fetchone()[0])


def live_namespaces(org_id) -> list[NamespaceTally]:
    """Each namespace of the organisation that holds live memories, in no order: one round
    trip reading a row per namespace, not its memories. The caller has set the tenant."""
    with connection.cursor() as cursor:
        cursor.execute(LIVE_NAMESPACES, {"org": org_id, "status": "active"})
        return [NamespaceTally(*row) for row in cursor.fetchall()]


def created_per_day(org_id, since) -> dict:
    """The memories (not deleted) created each UTC day from `since` (a date) on: day -> how
    many, the days with none left out. One round trip, bounded by the days."""
    with connection.cursor() as cursor:
        cursor.execute(CURRENT_DAYS, {"org": org_id, "since": since})
        return dict(cursor.fetchall())


def relationships(org_id) -> dict:
    """The organisation's relationships between memories not deleted, by type (the types with
    none left out, in their order): a row per type, folded or not. The caller has set the tenant."""
    with connection.cursor() as cursor:
        cursor.execute(CURRENT_RELATIONSHIPS, {"org": org_id})
        return dict(sorted(cursor.fetchall()))


def summed(rows: list[Tally], by: str | None = None, **where) -> dict | int:
    """n of the tallies matching `where` (attribute=value), in all or per value of `by`."""
    chosen = [row for row in rows if all(getattr(row, name) == value for name, value in where.items())]
    if by is None:
        return sum(row.n for row in chosen)
    per: dict = {}
    for row in chosen:
        per[getattr(row, by)] = per.get(getattr(row, by), 0) + row.n
    return {key: n for key, n in sorted(per.items()) if n}


@dataclass(frozen=True)
class Folded:
    """One kind of tallies the fold moves its deltas into: the deltas' table, the tallies' table,
    the key beside org_id (column -> its SQL type) and the counts added up; `kept` columns are
    merged by their own SQL (the namespaces' first and last activity)."""

    deltas: str
    tallies: str
    key: dict
    counts: tuple
    kept: dict = field(default_factory=dict)  # column -> (aggregate over the deltas, merge with the tally's)


FOLDED = (
    Folded("memory_tally_deltas", "memory_tallies", {name: "text" for name in KEY} | {"agent_id": "uuid"}, COUNTS),
    Folded("memory_day_tally_deltas", "memory_day_tallies", {"day": "date"}, ("created",)),
    # A namespace whose memories are all gone loses its row (its name may be a person's: an
    # erasure of it leaves none here after the next fold).
    Folded("memory_namespace_tally_deltas", "memory_namespace_tallies", {"scope": "text", "status": "text"},
           NAMESPACE_COUNTS, {"first_at": ("min", "least"), "last_at": ("max", "greatest")}),
    Folded("memory_relationship_tally_deltas", "memory_relationship_tallies", {"relation_type": "text"}, ("n",)),
)


def _fold_one(cursor, kind: Folded) -> tuple[int, int]:
    """Move one kind's deltas into its tallies and delete the tallies left counting nothing:
    (deltas folded, tallies deleted)."""
    key = ["org_id", *kind.key]
    columns = [*key, *kind.counts, *kind.kept]
    nonzero = " OR ".join(f"{count} <> 0" for count in kind.counts)
    zero = " AND ".join(f"{{t}}.{count} = 0" for count in kind.counts)
    summed = ", ".join([*(f"sum({count}) AS {count}" for count in kind.counts),
                        *(f"{aggregate}({column}) AS {column}" for column, (aggregate, _) in kind.kept.items())])
    merged = ", ".join([*(f"{count} = t.{count} + excluded.{count}" for count in kind.counts),
                        *(f"{column} = {merge}(t.{column}, excluded.{column})"
                          for column, (_, merge) in kind.kept.items())])
    cursor.execute(f"""
        WITH moved AS (DELETE FROM {kind.deltas} RETURNING {", ".join(columns)}),
        summed AS (SELECT {", ".join(key)}, {summed}, count(*) AS deltas FROM moved GROUP BY {", ".join(key)}),
        upserted AS (
            INSERT INTO {kind.tallies} AS t ({", ".join(columns)})
            SELECT {", ".join(columns)} FROM summed WHERE {nonzero}
            ON CONFLICT ({", ".join(key)}) DO UPDATE SET {merged}
            RETURNING {", ".join(columns)}
        )
        SELECT (SELECT coalesce(sum(deltas), 0) FROM summed), {", ".join(f"array_agg({column})" for column in key)}
        FROM upserted u WHERE {zero.format(t="u")}
    """)
    folded, *emptied_keys = cursor.fetchone()
    if not emptied_keys[0]:
        return int(folded), 0
    types = ["uuid", *kind.key.values()]
    cursor.execute(f"""
        DELETE FROM {kind.tallies} t
        USING unnest({", ".join(f"%s::{type_}[]" for type_ in types)}) e({", ".join(key)})
        WHERE {" AND ".join(f"t.{column} = e.{column}" for column in key)} AND {zero.format(t="t")}
    """, emptied_keys)
    return int(folded), cursor.rowcount


def fold() -> dict:
    """Move every organisation's deltas into its tallies, in one transaction, as the service
    account; the tallies that count nothing any more are deleted. Readers never wait for it,
    nor it for them; a second fold while one runs returns at once. Returns what it did."""
    started = time.monotonic()
    with service_account(), database.exclusive_transaction(FOLD_LOCK) as cursor:
        if cursor is None:
            return {"folded": 0, "emptied": 0, "skipped": True}
        folded = emptied = 0
        for kind in FOLDED:
            moved, deleted = _fold_one(cursor, kind)
            folded, emptied = folded + moved, emptied + deleted
    done = {"folded": folded, "emptied": emptied, "seconds": round(time.monotonic() - started, 3)}
    if folded:
        logger.info("memory tallies folded", extra=done)
    return done


def differences(org_id) -> list[tuple[tuple, tuple, tuple]]:
    """Where the organisation's tallies (folded and not) differ from a count of its rows:
    (key, counts kept, counts counted). None unless a write bypassed the triggers (or, for the
    relationships, two transactions raced on one's memories: repair_relationships). Reads every
    memory and relationship of the organisation: a maintenance check (and the tests')."""
    with connection.cursor() as cursor:
        cursor.execute(CURRENT, {"org": org_id})
        kept = {tuple(row[:4]): tuple(row[4:]) for row in cursor.fetchall()}
        cursor.execute(RECOUNT, [org_id])
        recounted = {tuple(row[:4]): tuple(row[4:]) for row in cursor.fetchall()}
        cursor.execute(CURRENT_DAYS, {"org": org_id, "since": date.min})
        kept.update({("day", day): (created,) for day, created in cursor.fetchall()})
        cursor.execute(RECOUNT_DAYS, [org_id])
        recounted.update({("day", day): (created,) for day, created in cursor.fetchall()})
        cursor.execute(CURRENT_NAMESPACES, {"org": org_id})
        kept.update({("namespace", *row[:2]): tuple(row[2:6]) for row in cursor.fetchall()})
        cursor.execute(RECOUNT_NAMESPACES, [org_id])
        recounted.update({("namespace", *row[:2]): tuple(row[2:6]) for row in cursor.fetchall()})
        cursor.execute(CURRENT_RELATIONSHIPS, {"org": org_id})
        kept.update({("relationships", relation_type): (n,) for relation_type, n in cursor.fetchall()})
        cursor.execute(RECOUNT_RELATIONSHIPS, [org_id])
        recounted.update({("relationships", relation_type): (n,) for relation_type, n in cursor.fetchall()})

    def of(counts: dict, key: tuple) -> tuple:
        return counts.get(key, (0,) if key[0] in ("day", "relationships") else (0, 0, 0, 0))

    return [(key, of(kept, key), of(recounted, key)) for key in sorted(kept.keys() | recounted.keys(), key=str)
            if of(kept, key) != of(recounted, key)]


def repair_relationships(window: timedelta = REPAIR_WINDOW) -> dict:
    """Set right the relationship flags that two transactions racing on one relationship's
    memories left wrong: one relating a memory while another deletes it (neither sees the
    other's row), or two restoring its two memories at once (each sees the other still
    deleted). Only the relationships of memories changed within `window` can be such: for each
    organisation, in its own transaction, as the service account. The worker runs it hourly
    (memories.cron); the counts are right again within the hour. Returns what it did."""
    from tenants.models import Organization

    since = timezone.now() - window
    with service_account():
        org_ids = list(Organization.objects.values_list("id", flat=True))
    repaired = 0
    for org_id in org_ids:
        with transaction.atomic(), service_account(), connection.cursor() as cursor:
            cursor.execute(REPAIR_RELATIONSHIPS, {"org": org_id, "since": since})
            if cursor.rowcount:
                logger.warning("relationship tallies: %d relationship(s) of organisation %s counted again",
                               cursor.rowcount, org_id)
                repaired += cursor.rowcount
    return {"organisations": len(org_ids), "repaired": repaired}


def rebuild(org_id) -> int:
    """Count the organisation's tallies again from its rows and replace what is kept (folded
    and not): the repair for a write that bypassed the triggers. Returns the rows written. The
    caller has set the tenant; the memories are locked against writes meanwhile."""
    org_id = uuid.UUID(str(org_id))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("LOCK TABLE memories, memory_relationships IN SHARE MODE")
        cursor.execute("DELETE FROM memory_tally_deltas WHERE org_id = %s", [org_id])
        cursor.execute("DELETE FROM memory_tallies WHERE org_id = %s", [org_id])
        cursor.execute("DELETE FROM memory_day_tally_deltas WHERE org_id = %s", [org_id])
        cursor.execute("DELETE FROM memory_day_tallies WHERE org_id = %s", [org_id])
        cursor.execute("DELETE FROM memory_namespace_tally_deltas WHERE org_id = %s", [org_id])
        cursor.execute("DELETE FROM memory_namespace_tallies WHERE org_id = %s", [org_id])
        cursor.execute("DELETE FROM memory_relationship_tallies WHERE org_id = %s", [org_id])
        # ON CONFLICT (never met) keeps a Citus cluster from writing by COPY (as lexicon.rebuild).
        cursor.execute(f"""
            INSERT INTO memory_tallies AS t (org_id, agent_id, status, category, memory_type, n, expiring,
                                             embedding_pending, not_decaying)
            SELECT %s, * FROM ({RECOUNT}) counted
            ON CONFLICT (org_id, agent_id, status, category, memory_type) DO UPDATE SET n = excluded.n
        """, [org_id, org_id])
        written = cursor.rowcount
        cursor.execute(f"""
            INSERT INTO memory_day_tallies AS t (org_id, day, created) SELECT %s, * FROM ({RECOUNT_DAYS}) counted
            ON CONFLICT (org_id, day) DO UPDATE SET created = excluded.created
        """, [org_id, org_id])
        written += cursor.rowcount
        # The first and last activity the rows still show (what went before is not kept).
        cursor.execute(f"""
            INSERT INTO memory_namespace_tallies AS t (org_id, scope, status, n, items, expiring, expiring_items,
                                                       first_at, last_at)
            SELECT %s, * FROM ({RECOUNT_NAMESPACES}) counted
            ON CONFLICT (org_id, scope, status) DO UPDATE SET n = excluded.n
        """, [org_id, org_id])
        written += cursor.rowcount
        # Each relationship's flag set again from its memories (its triggers append deltas:
        # deleted with those kept before), then the types counted again from the memories.
        cursor.execute(f"UPDATE memory_relationships r SET counted = NOT r.counted "
                       f"WHERE org_id = %s AND r.counted <> ({ENDS_KEPT})", [org_id])
        cursor.execute("DELETE FROM memory_relationship_tally_deltas WHERE org_id = %s", [org_id])
        cursor.execute(f"""
            INSERT INTO memory_relationship_tallies AS t (org_id, relation_type, n)
            SELECT %s, * FROM ({RECOUNT_RELATIONSHIPS}) counted
            ON CONFLICT (org_id, relation_type) DO UPDATE SET n = excluded.n
        """, [org_id, org_id])
        return written + cursor.rowcount
