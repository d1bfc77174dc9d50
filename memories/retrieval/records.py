"""Whole memory records, loaded for the few memories a search returns (or the hot set)."""

from __future__ import annotations

import functools

from django.db import connection

from memories.models import Memory
from memories.retrieval.ranking import USAGE_COLUMNS, Result, usage_join
from memory_platform.database import prepared_cursor

# A loaded record: every column of the memory but the vector and the tsvector, which nobody
# reads back (a read of either loads it then), with its tags and the artifacts it refers to.
# Written as SQL: built with the ORM (an annotated, filtered queryset, then the tags prefetched
# and the artifacts read apart), the load of a search's ten records cost 8.2 ms p50 at 1M
# memories, two thirds of it building and compiling the statements. Sent through a prepared
# cursor (planned once a connection, docs/adr/0063) and read into Memory instances as
# Memory.objects.raw would (_records). The organisation is a literal in each part (a Citus
# cluster routes the statement to its shard only so).
MEMORY_COLUMNS = {field.column: field for field in Memory._meta.concrete_fields}  # as the rows name them
RECORD_COLUMNS = ", ".join(f"m.{field.column}" for field in Memory._meta.concrete_fields
                           if field.name not in ("embedding", "search_vector"))
RECORDS_SQL = f"""
    SELECT {RECORD_COLUMNS},
           ARRAY(SELECT t.tag FROM memory_tags t WHERE t.org_id = %s AND t.memory_id = m.id) AS tag_names,
           ARRAY(SELECT a.artifact_id FROM memory_artifacts a WHERE a.org_id = %s AND a.memory_id = m.id)
             AS artifact_ids,
           (SELECT e.name FROM memory_entities me JOIN entities e ON e.org_id = me.org_id AND e.id = me.entity_id
            WHERE me.org_id = %s AND me.memory_id = m.id AND me.role = 'speaker'
            ORDER BY me.source, me.created_at LIMIT 1) AS speaker_name{{usage_columns}}
    FROM unnest(%s::uuid[]) AS wanted(id) JOIN memories m ON m.org_id = %s AND m.id = wanted.id
    {{usage_join}}
"""


def load(org_id, ids, usage: dict | None = None) -> dict:
    """Full records, each with `tag_names`, `artifact_ids` and `speaker_name` (RECORDS_SQL), by id. usage: each
    memory's RankingRow, when the caller has read them already (then the records are read
    without looking their usage up again: 1 ms of a 3.5 ms load at 1M memories)."""
    ids = [str(memory_id) for memory_id in ids]
    if usage is None:
        sql = RECORDS_SQL.format(usage_columns=", " + USAGE_COLUMNS, usage_join=usage_join("m"))
        return _records(sql, [org_id, org_id, org_id, ids, org_id, org_id])
    loaded = _records(RECORDS_SQL.format(usage_columns="", usage_join=""), [org_id, org_id, org_id, ids, org_id])
    for memory_id, memory in loaded.items():
        memory.retrieval_count = usage[memory_id].retrieval_count
        memory.last_retrieved_at = usage[memory_id].last_retrieved_at
    return loaded


def _records(sql: str, params: list) -> dict:
    """Memory instances of the statement's rows, its other columns set on each as attributes
    (as Memory.objects.raw gives them). Read by id, so planned once a connection (prepared_cursor:
    the three lookups per record made planning it cost more than running it)."""
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        columns = [column.name for column in cursor.description]
        rows = cursor.fetchall()
    fields = [name for name in columns if name in MEMORY_COLUMNS]
    attnames = [MEMORY_COLUMNS[name].attname for name in fields]
    converted = [(columns.index(name), _converters(name)) for name in fields]
    extras = [(position, name) for position, name in enumerate(columns) if name not in MEMORY_COLUMNS]
    loaded = {}
    for row in rows:
        values = []
        for position, (column, converters) in converted:
            value = row[position]
            for convert in converters:
                value = convert(value, column, connection)
            values.append(value)
        memory = Memory.from_db(connection.alias, attnames, values)
        for position, name in extras:
            setattr(memory, name, row[position])
        loaded[memory.pk] = memory
    return loaded


@functools.cache
def _converters(name: str) -> tuple[object, list]:
    """The column of the Memory field stored in column `name` and what turns its value as read
    into the field's (a JSON field's text into its value...), as the ORM's compiler applies them."""
    column = MEMORY_COLUMNS[name].get_col(Memory._meta.db_table)
    return column, connection.ops.get_db_converters(column) + column.get_db_converters(connection)


def fill(org_id, results: list[Result], usage: dict) -> None:
    """Put each result's whole record in place of the RankingRow it was ranked on."""
    full = load(org_id, [result.memory.pk for result in results], usage=usage)
    for result in results:
        result.memory = full[result.memory.pk]
