"""The namespace store's reads (spec §3, in LangGraph's shapes; docs/adr/0040): an item by
namespace and key, the items under a namespace prefix whose value passes a filter, and the
namespaces that hold items. Within one organisation, and the caller's reach where given."""

from __future__ import annotations

from django.db import connection
from django.db.models import BooleanField
from django.db.models.expressions import RawSQL

from memories.access import EVERYWHERE, KeyReach, namespace_prefix_filter, namespace_sql
from memories.errors import NotFound
from memories.models import Memory
from memories.reads.selectors import NOT_EXPIRED, with_tags
from memories.store import values
from memory_platform import database


def store_get(*, org_id, namespace: str, key: str) -> Memory:
    """The store item at namespace and key."""
    memory = with_tags(Memory.objects.filter(NOT_EXPIRED, org_id=org_id, namespace=namespace, key=key,
                                              deleted_at__isnull=True), org_id).first()
    if memory is None:
        raise NotFound(f"no item {key!r} in namespace {namespace!r}", field="key")
    return memory


def store_items(*, org_id, prefix: str = "", value_filter: dict | None = None, limit: int = 10, offset: int = 0,
                reach: KeyReach = EVERYWHERE, exactly: bool = False) -> list[Memory]:
    """LangGraph's search without a query: the items under a namespace prefix ("" for all)
    whose value passes the filter (memories.store.values), the last updated first, `offset`
    of them skipped. exactly: the items of the namespace `prefix` alone."""
    queryset = Memory.objects.filter(NOT_EXPIRED, reach.memories(), org_id=org_id, key__isnull=False,
                                     deleted_at__isnull=True)
    if exactly:  # the namespace itself, none under it
        queryset = queryset.filter(namespace=prefix)
    elif prefix:
        queryset = queryset.filter(namespace_prefix_filter(prefix))
    if value_filter:
        sql, params = values.filter_sql(values.filter_conditions(value_filter), '"memories"."metadata"')
        queryset = queryset.filter(RawSQL(sql, params, output_field=BooleanField()))
    return list(queryset.order_by("-updated_at", "id")[offset:offset + limit])


# LangGraph's list_namespaces over the namespaces that hold items: a namespace is its labels
# (the column scope split at "/"), matched label by label ("*" matches any one), cut to max_depth,
# each listed once, in the order of their labels (as Python sorts tuples: by code point, which is
# how PostgreSQL compares text[] under the "C" collation). The namespaces are read from the
# namespace tallies (memories.lifecycle.tallies, folded and not: a row per namespace and status,
# docs/adr/0057) in their labels' order, on the index of them (memories migration 0054), a chunk
# at a time, until the page is full: the read costs the namespaces it passes, not every one the
# organisation holds (4,919 at 1M in benchmarks/scale, for a page of 100). A chunk is the next
# namespaces of the folded tallies holding items (labels > %(after)s), as many as the page
# wants, four times as many each time after (some did not match or were cut to the same labels),
# at most CHUNK; NAMESPACES_SQL reads
# them with the deltas not folded yet (a namespace new since the last fold is met as its labels
# come), up to the chunk's last labels, and keeps those holding items, under the prefix's leading labels
# ({bounds}), matching the labels and the reach ({conditions}). A namespace whose every item
# expires is listed only if one has not expired yet (one probe of its items).
LABELS = "string_to_array(scope, '/') COLLATE \"C\""
CHUNK = 10_000  # at most: a first chunk is the page's size (100 from the start: 1.5 ms at 1M)
NEXT_NAMESPACES_SQL = f"""
    SELECT {LABELS} FROM memory_namespace_tallies
    WHERE org_id = %(org)s AND items > 0 AND {LABELS} > %(after)s {{bounds}}
    GROUP BY 1 ORDER BY 1 LIMIT %(chunk)s
"""
# The folded tallies' rows of a namespace that holds no item add nothing to its sums: the index
# holds only those with items, and the deltas are read whole (a few: the fold empties them).
NAMESPACES_SQL = f"""
    SELECT DISTINCT m.labels[1:%(depth)s] AS listed
    FROM (SELECT {LABELS} AS labels, scope, sum(items) AS items, sum(expiring_items) AS expiring_items
          FROM (SELECT scope, items, expiring_items FROM memory_namespace_tallies
                WHERE org_id = %(org)s AND items > 0 AND {LABELS} > %(after)s {{upto}} {{bounds}}
                UNION ALL
                SELECT scope, items, expiring_items FROM memory_namespace_tally_deltas
                WHERE org_id = %(org)s AND {LABELS} > %(after)s {{upto}} {{bounds}}) kept
          GROUP BY scope HAVING sum(items) > 0) m
    WHERE m.scope <> '' {{conditions}}
      AND (m.items > m.expiring_items
           OR EXISTS (SELECT FROM memories item
                      WHERE item.org_id = %(org)s AND item.scope = m.scope
                        AND item.key IS NOT NULL AND item.deleted_at IS NULL
                        AND (item.expires_at IS NULL OR item.expires_at > now())))
    ORDER BY listed
"""


def _labels_match(path: tuple[str, ...], from_end: bool) -> tuple[list[str], list]:
    """Conditions that the namespace's labels begin (or end, from_end) with `path`."""
    conditions, params = ["cardinality(string_to_array(m.scope, '/')) >= %s"], [len(path)]
    for position, label in enumerate(path):
        if label == "*":
            continue
        if from_end:
            conditions.append("(string_to_array(m.scope, '/'))[cardinality(string_to_array(m.scope, '/')) - %s] = %s")
            params += [len(path) - 1 - position, label]
        else:
            conditions.append("(string_to_array(m.scope, '/'))[%s] = %s")
            params += [position + 1, label]
    return conditions, params


def store_namespaces(*, org_id, prefix: tuple[str, ...] = (), suffix: tuple[str, ...] = (),
                     max_depth: int | None = None, limit: int = 100, offset: int = 0,
                     reach: KeyReach = EVERYWHERE) -> list[list[str]]:
    """The namespaces that hold store items, as lists of labels: those beginning with `prefix`
    and ending with `suffix` ("*" matches any label), cut to their first max_depth labels and
    then listed once each, in order; `offset` of them skipped."""
    conditions, params = [], []
    for path, from_end in ((prefix, False), (suffix, True)):
        if path:
            more, values = _labels_match(tuple(path), from_end)
            conditions += more
            params += values
    if reach.limited:
        under = [namespace_sql(namespace, "m.scope") for namespace in reach.namespaces]
        conditions.append("(" + " OR ".join(sql for sql, _ in under) + ")")
        params += [value for _, values in under for value in values]
    bounds, named_bounds, leading = "", {}, []
    for label in prefix:
        if label == "*":
            break
        leading.append(label)
    if leading:  # the labels beginning with the leading ones lie in [them, them with the last one + "\x01")
        bounds = f"AND {LABELS} >= %(lowest)s::text[] AND {LABELS} < %(beyond)s::text[]"
        named_bounds = {"lowest": leading, "beyond": [*leading[:-1], leading[-1] + "\x01"]}
    text, named = database.named([(" AND ".join(conditions), params)] if conditions else [])
    wanted = offset + limit
    listed: list[tuple] = []
    after: list[str] = []  # the empty array sorts before every namespace's labels
    with connection.cursor() as cursor:
        size = min(CHUNK, wanted)  # a page that every namespace fills is one chunk
        while len(listed) < wanted:
            cursor.execute(NEXT_NAMESPACES_SQL.format(bounds=bounds),
                           {**named_bounds, "org": org_id, "after": after, "chunk": size})
            chunk = [row[0] for row in cursor.fetchall()]
            upto = chunk[-1] if len(chunk) == size else None  # None: the folded tallies end in this chunk
            # labels[1:NULL] is NULL: no max_depth is the whole namespace (PostgreSQL's arrays
            # hold at most 6 dimensions, not labels: 2**31 - 1 covers any).
            cursor.execute(NAMESPACES_SQL.format(bounds=bounds, conditions=text,
                                                 upto=f"AND {LABELS} <= %(upto)s" if upto else ""),
                           {**named, **named_bounds, "org": org_id, "after": after, "upto": upto,
                            "depth": max_depth if max_depth is not None else 2**31 - 1})
            for (labels,) in cursor.fetchall():
                if not listed or listed[-1] != tuple(labels):  # cut to the same labels as the last chunk's last
                    listed.append(tuple(labels))
            if upto is None:
                break
            after, size = upto, min(CHUNK, size * 4)  # few matched: take more at a time
    return [list(labels) for labels in listed[offset:wanted]]


