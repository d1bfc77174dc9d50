"""The namespace store's reads (spec §3, in LangGraph's shapes; docs/adr/0040): an item by
namespace and key, the items under a namespace prefix whose value passes a filter, and the
namespaces that hold items. Within one organisation, and the caller's reach where given."""

from __future__ import annotations

from django.db import connection
from django.db.models import BooleanField
from django.db.models.expressions import RawSQL

from memories.access import EVERYWHERE, KeyReach, namespace_bounds, namespace_prefix_filter, namespace_sql
from memories.errors import NotFound
from memories.lifecycle import tallies
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
# each listed once, in the order of their labels (as Python sorts tuples: by code point).
# The namespaces are read from the namespace tallies (memories.lifecycle.tallies, folded and not:
# a row per namespace and status, docs/adr/0057), so the read costs the number of namespaces
# under the prefix's leading labels ({bounds}), not the number of items. A namespace whose every
# item expires is listed only if one has not expired yet (one probe of its items); the labels and
# the reach are checked on the namespaces found.
NAMESPACES_SQL = f"""
    SELECT DISTINCT labels[1:%(depth)s] AS listed
    FROM (SELECT string_to_array(m.scope, '/') COLLATE "C" AS labels
          FROM (SELECT scope COLLATE "C" AS scope, sum(items) AS items, sum(expiring_items) AS expiring_items
                FROM ({tallies.NAMESPACE_ROWS}) kept
                WHERE TRUE {{bounds}} GROUP BY 1 HAVING sum(items) > 0) m
          WHERE m.scope <> '' {{conditions}}
            AND (m.items > m.expiring_items
                 OR EXISTS (SELECT FROM memories item
                            WHERE item.org_id = %(org)s AND item.scope = m.scope COLLATE "default"
                              AND item.key IS NOT NULL AND item.deleted_at IS NULL
                              AND (item.expires_at IS NULL OR item.expires_at > now())))) AS items
    ORDER BY listed
    LIMIT %(limit)s OFFSET %(offset)s
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
    if leading:  # the namespace of the leading labels and those under it lie in [it, it + "0")
        itself, _, beyond = namespace_bounds("/".join(leading))
        bounds = "AND kept.scope ~>=~ %(itself)s AND kept.scope ~<~ %(beyond)s"
        named_bounds = {"itself": itself, "beyond": beyond}
    text, named = database.named([(" AND ".join(conditions), params)] if conditions else [])
    sql = NAMESPACES_SQL.format(bounds=bounds, conditions=text)
    with connection.cursor() as cursor:
        # labels[1:NULL] is NULL: no max_depth is the whole namespace (PostgreSQL's arrays hold
        # at most 6 dimensions, not labels: 2**31 - 1 covers any).
        cursor.execute(sql, {**named, **named_bounds, "org": org_id, "depth": max_depth if max_depth is not None else 2**31 - 1,
                             "limit": limit, "offset": offset})
        return [list(row[0]) for row in cursor.fetchall()]


