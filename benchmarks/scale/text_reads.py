"""The text filters and whole-organisation counts issue 32's smoke run flagged (benchmarks/scale/
README.md, "What already grows at 10k -> 100k"), at two sizes of one organisation: the entity
list by the start of a word of a name or alias (REST's and the console's `?q`) before and after
docs/adr/0053, the retrieval events by a text in their query before and after docs/adr/0056,
the counts of the export and erasure pages of the whole organisation before (a count of its
memories, as both were) and after docs/adr/0056 (the tallies and the deleted memories' index),
and, as it is, Mem0's list of users.

    .venv/bin/python benchmarks/scale/text_reads.py --sizes 10000,100000

In process, as benchmarks/scale/reads_by_index.py (no HTTP, no template), on the embedded
PostgreSQL of MEMORY_PLATFORM_DATA_DIR (its organisations are emptied first), as the
application's role under row-level security. At each size one organisation is loaded by SQL
(benchmarks/lists/run.py's loader: memories over a year in 1,001 namespaces, one entity per
memory named "Name <n>", one retrieval event per memory asking "query <n>"), then every third
entity is given an alias ("Nick <n>"). "Before" is the previous statement (LIKE on the keys of
the entities and their aliases); "after" is memories.reads.selectors.entity_list's (its query for the matches' ids included). A page is
the first 50, most mentioned first, with their aliases (memories.keyset.page); an events page
the first 50, newest first, before by `query ILIKE`, after by the query's tails. p50 of --repeat
runs, milliseconds; results, with the plans' nodes at each size, to results-text-reads.json.
"""

from __future__ import annotations

import os
import re
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_platform.settings.base")

from benchmarks.scale import in_process  # noqa: E402
from benchmarks.scale.in_process import timed  # noqa: E402

PAGE = 50
# What each entity query is: every entity ("nam"), a word start that is a whole name and the
# start of ten more at 100k ("4321"), across words ("name 4321"), an alias ("nick 771"), a word's
# middle that matches nothing ("ame"), and nothing at all ("zzz").
ENTITY_QUERIES = ("nam", "4321", "name 4321", "nick 771", "ame", "zzz")
# The retrieval events' ("query <n>" each): every event ("query"), a word start that is one
# query's number and the start of ten more at 100k ("query 4321"), and nothing ("zzz").
EVENT_QUERIES = ("query", "query 4321", "zzz")


def shape(org_id: str) -> None:
    from benchmarks.search.run import owner_connection

    with owner_connection(superuser=True) as conn:
        conn.execute("""
            INSERT INTO entity_aliases (id, org_id, entity_id, alias, key, created_at)
            SELECT gen_random_uuid(), org_id, id, 'Nick ' || split_part(key, ' ', 2), 'nick ' || split_part(key, ' ', 2),
                   now()
            FROM entities WHERE org_id = %s AND split_part(key, ' ', 2)::int %% 3 = 0""", [org_id])
        conn.execute("VACUUM ANALYZE entities")
        conn.execute("VACUUM ANALYZE entity_aliases")
    # The tallies folded, as the worker does every 30 s: the counts after docs/adr/0056 read them.
    from memories.lifecycle import tallies

    tallies.fold()


def old_entity_list(org_id, query: str):
    """memories.reads.selectors.entity_list's match before docs/adr/0053."""
    from django.db.models import Q

    from memories.models import Entity, EntityAlias
    from memories.reads.selectors import _with_aliases
    from memories.understanding.entities import name_key

    key = name_key(query)
    named = Q(key__startswith=key) | Q(key__contains=f" {key}")
    aliased = EntityAlias.objects.filter(named, org_id=org_id)
    return _with_aliases(Entity.objects.filter(org_id=org_id).filter(named | Q(pk__in=aliased.values("entity_id"))),
                         org_id).order_by("-mention_count", "-id")


def nodes(queryset) -> list[str]:
    text = queryset.explain()
    found = re.findall(r"(Seq Scan|Index Only Scan|Index Scan|Bitmap Index Scan|Bitmap Heap Scan)"
                       r"(?: Backward)?(?: using| on) (\w+)", text)
    return sorted({f"{kind} {index}" for kind, index in found})


def reads(org_id: str):
    """(name, call, queryset to explain or None) of each read; entity reads both ways."""
    from memories import keyset
    from memories.access import Caller
    from memories.lifecycle.erasure import ErasureScope
    from memories.lifecycle.portability import ExportScope
    from memories.models import Memory, RetrievalEvent
    from memories.use_cases import lifecycle, organisation, retrieval

    caller = Caller(org_id=uuid.UUID(org_id))
    order = keyset.Order(("mention_count", "id"))
    for query in ENTITY_QUERIES:  # the list built in the call: after, that asks for the matches' ids
        for when, listed in (("before", lambda q=query: old_entity_list(org_id, q)),
                             ("after", lambda q=query: lifecycle.entity_list(caller, query=q))):
            yield (f"entities ?q={query} [{when}]",
                   lambda made=listed: [e.pk for e in keyset.page(made(), order=order, limit=PAGE).items], listed())
    for text in EVENT_QUERIES:  # after: the matches' ids are asked for in the call, as the entities'
        for when, listed in (("before", lambda q=text: RetrievalEvent.objects.filter(org_id=org_id, query__icontains=q)),
                             ("after", lambda q=text: retrieval.retrieval_event_list(caller, query_contains=q))):
            yield (f"events ?q={text} [{when}]",
                   lambda made=listed: [e.pk for e in keyset.page(made(), order=keyset.NEWEST_FIRST, limit=PAGE).items],
                   listed())
    every_memory = Memory.objects.without_usage().filter(org_id=org_id)  # the counts before docs/adr/0056
    yield "export page count [before]", every_memory.count, None
    yield "export page count [after]", lambda: organisation.export_count(caller, ExportScope()), None
    yield "erasure count, all [after]", lambda: organisation.erasure_count(caller, ErasureScope(everything=True)), None
    yield "mem0 users [as is]", lambda: lifecycle.namespace_tallies(caller, roots=("users",)), None


def measure(org_id: str, repeat: int) -> tuple[dict, dict, dict]:
    from django.db import connection

    from tenants.context import tenant_context

    results, plans, matches = {}, {}, {}
    with tenant_context(org_id):
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
            role = cursor.fetchone()
        assert not role[1] and not role[2], f"not the application's role: {role}"
        for name, call, queryset in reads(org_id):
            results[name] = timed(call, repeat)
            if queryset is not None:
                plans[name] = nodes(queryset)
                matches[name] = len(call()) if "entities" in name or "events" in name else None
            print(f"  {name:45} {results[name]:9.2f} ms  {plans.get(name, '')}", flush=True)
    return results, plans, matches


def measure_size(org_id: str, agent_id: str, repeat: int) -> dict:
    ms, plans, matches = measure(org_id, repeat)
    return {"ms": ms, "plans": plans, "page_items": matches}


def main() -> None:
    in_process.run(__doc__.splitlines()[0], measure_size, Path(__file__).with_name("results-text-reads.json"),
                   lambda org_id, agent_id: shape(org_id))


if __name__ == "__main__":
    main()
