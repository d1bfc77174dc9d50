"""The reads docs/adr/0051 moved onto indexes, before and after, at two sizes of one organisation:
the console's sorts by confidence, importance and last change (a first page and a page 90% deep by
key), its "Most retrieved" sort and LangGraph's list_namespaces.

    .venv/bin/python benchmarks/scale/reads_by_index.py --sizes 10000,100000

A smaller, faster measurement than run.py (which needs the search benchmark's embedded corpus,
some 30 minutes to make on a shared 2-core machine): in process, on the embedded PostgreSQL of
MEMORY_PLATFORM_DATA_DIR (its organisations are emptied first). At each size one organisation is
loaded by SQL (benchmarks/lists/run.py's loader: one agent, memories over a year in 1,001
namespaces), then given confidence 0.5-1.0 and importance 0-1 at random, a last change spread
over the year, store items (one memory in 25, in 40 namespaces at every size) and usage (four
memories in ten retrieved 1-7 times). "Before" is the previous code's statement without
migration 0041's indexes (dropped, then built again, by the schema's owner): the sorts' pages
as they are (no index in their order), list_namespaces' DISTINCT over every item. p50 of
--repeat runs, milliseconds; results to results-reads-by-index.json (the recorded file also
holds the hot set's rebuild, by HOT_SCORE_SQL and by a threshold walk since reverted:
docs/adr/0051, measured by this file at commit f596f12).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_platform.settings.base")

from benchmarks.scale import in_process  # noqa: E402
from benchmarks.scale.in_process import timed  # noqa: E402

NEW_INDEXES = ("memories_org_confidence", "memories_org_importance", "memories_org_changed",
               "memories_store_namespaces", "memory_usage_most_retrieved")
PAGE = 25  # the console's page

# memories.store.reads.NAMESPACES_SQL before docs/adr/0051: a DISTINCT over every item.
OLD_NAMESPACES_SQL = """
    SELECT DISTINCT labels[1:%s] AS listed
    FROM (SELECT string_to_array(m.scope, '/') COLLATE "C" AS labels
          FROM memories m
          WHERE m.org_id = %s AND m.key IS NOT NULL AND m.deleted_at IS NULL AND m.scope <> ''
            AND (m.expires_at IS NULL OR m.expires_at > now()) {conditions}) AS items
    ORDER BY listed
    LIMIT %s OFFSET %s
"""


def shape(org_id: str, agent_id: str) -> None:
    """Give the loaded memories what these reads order by."""
    from benchmarks.search.run import owner_connection

    with owner_connection(superuser=True) as conn:
        conn.execute("""
            UPDATE memories SET confidence = round((0.5 + 0.5 * random())::numeric, 3),
                                importance = round(random()::numeric, 3),
                                updated_at = created_at + random() * (now() - created_at),
                                key = CASE WHEN split_part(content, ' ', 3)::int %% 25 = 3
                                           THEN 'item-' || split_part(content, ' ', 3) END
            WHERE org_id = %s""", [org_id])
        conn.execute("""
            INSERT INTO memory_usage (id, org_id, memory_id, retrieval_count, last_retrieved_at)
            SELECT gen_random_uuid(), org_id, id, 1 + split_part(content, ' ', 3)::int %% 7, now() - interval '1 day'
            FROM memories WHERE org_id = %s AND split_part(content, ' ', 3)::int %% 10 < 4""", [org_id])
        conn.execute("VACUUM ANALYZE memories")
        conn.execute("VACUUM ANALYZE memory_usage")


def reads(org_id: str, agent_id: str, after: bool):
    """(name, call) of each read, as the code before or after the change runs it."""
    from django.db import connection
    from django.http import QueryDict

    from console.forms import MemoryFilterForm
    from console.views.memories import BY_KEY, BY_USAGE
    from memories import keyset
    from memories.models import Memory, MemoryUsage
    from memories.store import reads as store_reads

    form = MemoryFilterForm(QueryDict(), agents=[])
    assert form.is_valid()
    where, params = form.search_filters().where(org_id, alias="memories")
    browsed = Memory.objects.filter(org_id=org_id).extra(where=[where], params=params).defer("embedding",
                                                                                           "search_vector")
    for sort in ("confidence", "importance", "updated"):
        order = BY_KEY[sort]
        ordered = browsed.order_by(*order.order_by())
        deep = ordered[int(ordered.count() * 0.9):][:1].get()
        yield f"console memories ?sort={sort}, first page", lambda o=ordered: list(o[:PAGE + 1])
        yield f"console memories ?sort={sort}, page at 90% by key", \
            lambda o=order, d=deep: list(keyset.after(browsed, order=o, key=keyset.key_of(d, o))
                                         .order_by(*o.order_by())[:PAGE + 1])
    if after:
        usage = (MemoryUsage.objects.filter(org_id=org_id, retrieval_count__gt=0)
                 .extra(tables=["memories"], where=["memories.id = memory_usage.memory_id",
                                                    "memories.org_id = memory_usage.org_id", where], params=params))
        ordered = usage.order_by(*BY_USAGE.order_by())
        deep = ordered[int(ordered.count() * 0.9):][:1].get()
        yield "console memories ?sort=retrieved, first page", lambda: list(ordered[:PAGE + 1])
        yield "console memories ?sort=retrieved, page at 90% by key", \
            lambda: list(keyset.after(usage, order=BY_USAGE, key=keyset.key_of(deep, BY_USAGE))
                         .order_by(*BY_USAGE.order_by())[:PAGE + 1])

    def old_namespaces(prefix):
        conditions, values = ([], []) if not prefix else store_reads._labels_match(prefix, False)
        with connection.cursor() as cursor:
            cursor.execute(OLD_NAMESPACES_SQL.format(conditions="".join(f" AND {c}" for c in conditions)),
                           [2, org_id, *values, 100, 0])
            return cursor.fetchall()

    for prefix in ((), ("users",)):
        label = f"list_namespaces prefix={list(prefix)}, max_depth 2"
        if after:
            yield label, lambda p=prefix: store_reads.store_namespaces(org_id=org_id, prefix=p, max_depth=2)
        else:
            yield label, lambda p=prefix: old_namespaces(p)



def measure(org_id: str, agent_id: str, repeat: int, after: bool) -> dict:
    from tenants.context import tenant_context

    results = {}
    with tenant_context(org_id):
        for name, call in reads(org_id, agent_id, after):
            results[name] = timed(call, repeat)
            print(f"  {'after ' if after else 'before'} {name:55} {results[name]:9.2f} ms", flush=True)
    return results


def before_and_after(org_id: str, agent_id: str, repeat: int) -> dict:
    """The reads as the code before ran them, without the indexes, then as it runs them now."""
    saved = in_process.drop_indexes(NEW_INDEXES, ("memories", "memory_usage"))
    before = measure(org_id, agent_id, repeat, after=False)
    in_process.restore_indexes(saved, ("memories", "memory_usage"))
    return {"before_ms": before, "after_ms": measure(org_id, agent_id, repeat, after=True)}


def main() -> None:
    in_process.run(__doc__.splitlines()[0], before_and_after, Path(__file__).with_name("results-reads-by-index.json"),
                   shape)


if __name__ == "__main__":
    main()
