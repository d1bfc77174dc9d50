"""Each organisation's word statistics, which full text's BM25 ranks by (docs/adr/0037).

A trigger on memories appends what each write statement changed to memory_lexeme_deltas
(migration 0018); `fold` moves the deltas into memory_lexeme_stats every 30 s; `statistics`
reads both, so a search sees exactly the counts of the rows its snapshot sees, folded or not.
Counted per organisation: the live memories holding each lexeme (docs) and how often they
hold it (tokens), and under the lexeme '' the live memories holding any word and the words
they hold in all.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass

from django.db import connection, transaction

from memories.models import live_sql
from memory_platform import database
from tenants.context import service_account

logger = logging.getLogger(__name__)

# The statistics, their deltas, and the statistics a fold empties (named there only inside the
# fold's transaction): each an organisation's rows, under its row-level security.
TABLES = ("memory_lexeme_stats", "memory_lexeme_deltas", "memory_lexeme_emptied")
TOTAL = ""  # the lexeme under which an organisation's N and token total are kept
FOLD_LOCK = 0x1E7E_0037  # pg_try_advisory_xact_lock key: one fold at a time

# What the statistics of one organisation should be, counted from its rows: the migration's
# backfill, `verify` and `rebuild` count the same way.
RECOUNT = f"""
    SELECT coalesce(u.lexeme, '') AS lexeme, count(DISTINCT m.id) AS docs, sum(cardinality(u.positions)) AS tokens
    FROM memories m CROSS JOIN LATERAL unnest(m.search_vector) u
    WHERE m.org_id = %s AND {live_sql("m")}
    GROUP BY GROUPING SETS ((u.lexeme), ())
    HAVING count(*) > 0
"""

# Both tables' counts for one organisation: folded and not yet folded, added up.
CURRENT = """
    SELECT lexeme, sum(docs)::bigint, sum(tokens)::bigint FROM (
        SELECT lexeme, docs, tokens FROM memory_lexeme_stats WHERE org_id = %(org)s {which}
        UNION ALL
        SELECT lexeme, docs, tokens FROM memory_lexeme_deltas WHERE org_id = %(org)s {which}
    ) counted
    GROUP BY lexeme
"""


@dataclass(frozen=True)
class Statistics:
    """What BM25 needs to know of an organisation for one query."""

    documents: int  # N: live memories holding any word
    tokens: int  # the words they hold in all
    frequency: dict[str, int]  # lexeme -> live memories holding it (df); 0 if none

    @property
    def average_length(self) -> float:
        return self.tokens / self.documents if self.documents else 0.0


def statistics(org_id, lexemes: list[str]) -> Statistics:
    """The organisation's counts for these lexemes, as of this statement's snapshot: one
    round trip, two index probes a lexeme. The caller has set the tenant (row-level security
    keeps every other organisation's rows out as well)."""
    with connection.cursor() as cursor:
        cursor.execute(CURRENT.format(which="AND lexeme = ANY(%(lexemes)s)"),
                       {"org": org_id, "lexemes": [TOTAL, *lexemes]})
        counted = {lexeme: (docs, tokens) for lexeme, docs, tokens in cursor.fetchall()}
    documents, tokens = counted.pop(TOTAL, (0, 0))
    return Statistics(max(documents, 0), max(tokens, 0),
                      {lexeme: max(counted.get(lexeme, (0, 0))[0], 0) for lexeme in lexemes})


def fold() -> dict:
    """Move every organisation's deltas into its statistics, in one transaction, as the
    service account: the deltas are deleted as they are read, added to the statistics, and
    the statistics no live memory holds any more are deleted. Readers never wait for it, nor
    it for them; a second fold while one runs returns at once. Returns what it did."""
    started = time.monotonic()
    with service_account(), database.exclusive_transaction(FOLD_LOCK) as cursor:
        if cursor is None:
            return {"folded": 0, "emptied": 0, "skipped": True}
        cursor.execute("""
            WITH moved AS (DELETE FROM memory_lexeme_deltas RETURNING org_id, lexeme, docs, tokens),
            summed AS (
                SELECT org_id, lexeme, sum(docs) AS docs, sum(tokens) AS tokens, count(*) AS deltas
                FROM moved GROUP BY org_id, lexeme
            ), upserted AS (
                INSERT INTO memory_lexeme_stats AS s (org_id, lexeme, docs, tokens)
                SELECT org_id, lexeme, docs, tokens FROM summed WHERE docs <> 0 OR tokens <> 0
                ON CONFLICT (org_id, lexeme) DO UPDATE SET docs = s.docs + excluded.docs,
                                                           tokens = s.tokens + excluded.tokens
                RETURNING org_id, lexeme, docs
            ), emptied AS (
                INSERT INTO memory_lexeme_emptied (org_id, lexeme)
                SELECT org_id, lexeme FROM upserted WHERE docs <= 0
                RETURNING 1
            )
            SELECT (SELECT coalesce(sum(deltas), 0) FROM summed), (SELECT count(*) FROM emptied)
        """)
        folded, emptied = cursor.fetchone()
        if emptied:  # named in a table, not in this process: an erased organisation's every word
            cursor.execute("DELETE FROM memory_lexeme_stats s USING memory_lexeme_emptied e "
                           "WHERE s.org_id = e.org_id AND s.lexeme = e.lexeme AND s.docs <= 0")
            emptied = cursor.rowcount
            cursor.execute("DELETE FROM memory_lexeme_emptied")
    done = {"folded": int(folded), "emptied": emptied, "seconds": round(time.monotonic() - started, 3)}
    if folded:
        logger.info("lexeme statistics folded", extra=done)
    return done


def differences(org_id) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    """Where the organisation's statistics (folded and not) differ from a count of its rows:
    (lexeme, (docs, tokens) kept, (docs, tokens) counted). None unless a write bypassed the
    triggers. Reads every live memory of the organisation: a maintenance check."""
    with connection.cursor() as cursor:
        cursor.execute(CURRENT.format(which=""), {"org": org_id})
        kept = {lexeme: (docs, tokens) for lexeme, docs, tokens in cursor.fetchall() if docs or tokens}
        cursor.execute(RECOUNT, [org_id])
        counted = {lexeme: (docs, tokens) for lexeme, docs, tokens in cursor.fetchall()}
    return [(lexeme, kept.get(lexeme, (0, 0)), counted.get(lexeme, (0, 0)))
            for lexeme in sorted(kept.keys() | counted.keys()) if kept.get(lexeme) != counted.get(lexeme)]


def rebuild(org_id) -> int:
    """Count the organisation's statistics again from its rows and replace what is kept
    (folded and not): the repair for a write that bypassed the triggers. Returns the rows
    written. The caller has set the tenant; the memories are locked against writes meanwhile."""
    org_id = uuid.UUID(str(org_id))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("LOCK TABLE memories IN SHARE MODE")
        cursor.execute("DELETE FROM memory_lexeme_deltas WHERE org_id = %s", [org_id])
        cursor.execute("DELETE FROM memory_lexeme_stats WHERE org_id = %s", [org_id])
        # ON CONFLICT (never met: the rows were just deleted) also keeps a Citus cluster from
        # writing the count to the shard by COPY, which row-level security refuses.
        cursor.execute(f"INSERT INTO memory_lexeme_stats AS s (org_id, lexeme, docs, tokens) "
                       f"SELECT %s, lexeme, docs, tokens FROM ({RECOUNT}) counted "
                       f"ON CONFLICT (org_id, lexeme) DO UPDATE SET docs = excluded.docs, tokens = excluded.tokens",
                       [org_id, org_id])
        return cursor.rowcount

