"""Lists benchmark: what a page of each list costs deep in one large organisation, read by
OFFSET (as the lists were) and by key (memories.keyset, docs/adr/0046).

    .venv/bin/python benchmarks/lists/run.py --rows 100000

Loads one organisation of `rows` memories (a tenth of them in one namespace, users/u0, the
rest spread over 1,000 more), as many entities (most mentioned once), a fifth as many sessions
and as many retrieval events, by SQL on the embedded PostgreSQL of MEMORY_PLATFORM_DATA_DIR
(it empties that database's organisations first). Then, for each list, EXPLAIN ANALYZE of the
first page, of a page 90% deep by OFFSET, and of the same page by key. Results go to
results-<rows>.json beside this file.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_platform.settings.base")

LIMIT = 50


def load(rows: int) -> tuple[str, str]:
    from benchmarks.search.run import insert_tenants, owner_connection

    org_id, agent_id = uuid.uuid4(), uuid.uuid4()
    with owner_connection(superuser=True) as conn:
        conn.execute("TRUNCATE organizations CASCADE")
        insert_tenants(conn, {"lists": (org_id, agent_id, rows)})
        started = time.perf_counter()
        conn.execute("""
            INSERT INTO memories (id, org_id, agent_id, content, content_hash, embedding_model, category,
                memory_type, source, status, confidence, usefulness_score, importance, sensitivity,
                validation_status, scope, provenance, metadata, decay_rate, is_protected, version,
                created_at, updated_at)
            SELECT gen_random_uuid(), %(org)s, %(agent)s, 'memory number ' || n, encode(sha256(n::text::bytea), 'hex'), '',
                (ARRAY['factual','preference','procedural'])[1 + n %% 3], 'semantic', 'imported',
                CASE WHEN n %% 100 = 0 THEN 'pending_review' WHEN n %% 50 = 1 THEN 'archived' ELSE 'active' END,
                0.8, 0.5, 0.0, 'internal', 'unverified',
                CASE WHEN n %% 10 = 0 THEN 'users/u0' ELSE 'users/u' || (1 + n %% 1000) END, '{}', '{}', 0.1,
                false, 1, t, t
            FROM generate_series(1, %(rows)s) n,
                 LATERAL (SELECT now() - (n::float / %(rows)s) * interval '365 days' AS t) times
        """, {"org": org_id, "agent": agent_id, "rows": rows})
        conn.execute("""
            INSERT INTO entities (id, org_id, scope, kind, name, key, summary, attributes, mention_count,
                                  first_seen_at, last_seen_at)
            SELECT gen_random_uuid(), %(org)s, CASE WHEN n %% 10 = 0 THEN 'users/u0' ELSE 'users/u' || (1 + n %% 1000) END,
                (ARRAY['person','place','organization'])[1 + n %% 3], 'Name ' || n, 'name ' || n, '', '{}',
                CASE WHEN n %% 20 = 0 THEN 1 + n %% 37 ELSE 1 END, now(), now()
            FROM generate_series(1, %(rows)s) n
        """, {"org": org_id, "rows": rows})
        conn.execute("""
            INSERT INTO sessions (id, org_id, agent_id, scope, external_id, metadata, started_at)
            SELECT gen_random_uuid(), %(org)s, %(agent)s, 'users/u' || (n %% 1000), 'thread-' || n, '{}',
                   now() - (n::float / %(rows)s) * interval '365 days'
            FROM generate_series(1, %(rows)s / 5) n
        """, {"org": org_id, "agent": agent_id, "rows": rows})
        conn.execute("""
            INSERT INTO retrieval_events (id, org_id, agent_id, kind, query, scope, filters, returned_memory_ids,
                returned_scores, returned_artifact_ids, details, created_at)
            SELECT gen_random_uuid(), %(org)s, %(agent)s, (ARRAY['search','retrieve','context'])[1 + n %% 3],
                   'query ' || n, '', '{}', '{}', '{}', '{}', '{}', now() - (n::float / %(rows)s) * interval '365 days'
            FROM generate_series(1, %(rows)s) n
        """, {"org": org_id, "agent": agent_id, "rows": rows})
        conn.execute("VACUUM ANALYZE")
        print(f"loaded in {time.perf_counter() - started:.0f} s")
    return str(org_id), str(agent_id)


def plan(queryset) -> dict:
    """Execution time and the plan's shape (the nodes and indexes it used) of one page."""
    text = queryset.explain(analyze=True, buffers=True)
    ms = float(re.search(r"Execution Time: ([\d.]+) ms", text).group(1))
    nodes = sorted(set(re.findall(r"(Seq Scan|Index Only Scan|Index Scan|Bitmap Heap Scan|Sort|Incremental Sort)"
                                  r"(?: Backward)?(?: using (\w+))?", text)))
    return {"ms": ms, "nodes": [f"{kind} {index}".strip() for kind, index in nodes], "text": text}


def lists(org_id: str, agent_id: str, rows: int):
    """(name, queryset, order) of each list, as its door builds it."""
    from memories import keyset
    from memories.access import Caller
    from memories.models import Memory
    from memories.use_cases import lifecycle, records, retrieval

    caller = Caller(org_id=uuid.UUID(org_id))
    sessions_order = keyset.Order(("started_at", "id"))
    yield "memories", records.memory_list(caller), keyset.NEWEST_FIRST
    yield "memories ?namespace=users/u0", records.memory_list(caller, namespace="users/u0"), keyset.NEWEST_FIRST
    yield "memories ?status=archived", records.memory_list(caller, status="archived"), keyset.NEWEST_FIRST
    yield "memories ?category&agent", records.memory_list(caller, category="preference", agent=agent_id), \
        keyset.NEWEST_FIRST
    yield "memories ?include_deleted", records.memory_list(caller, include_deleted=True), keyset.NEWEST_FIRST
    for sort in ("newest", "oldest"):
        yield f"console memories sort={sort}", console_memories(org_id, {"sort": sort}), console_order(sort)
    yield "console memories namespace&category", console_memories(
        org_id, {"namespace": "users/u0", "category": "preference"}), console_order("newest")
    yield "entities", lifecycle.entity_list(caller), keyset.Order(("mention_count", "id"))
    yield "entities ?namespace=users/u0", lifecycle.entity_list(caller, namespace="users/u0"), \
        keyset.Order(("mention_count", "id"))
    yield "sessions", lifecycle.session_list(caller), sessions_order
    yield "retrieval events", retrieval.retrieval_event_list(caller), keyset.NEWEST_FIRST
    yield "retrieval events ?kind=search", retrieval.retrieval_event_list(caller, kind="search"), keyset.NEWEST_FIRST
    yield "review queue", Memory.objects.filter(org_id=org_id, status="pending_review", deleted_at__isnull=True), \
        keyset.OLDEST_FIRST


def console_memories(org_id: str, query: dict):
    """The console's memory browser's queryset without a search, as console.views.memories builds it."""
    from django.http import QueryDict

    from console.forms import MemoryFilterForm
    from memories.models import Memory

    form = MemoryFilterForm(QueryDict(mutable=True) | query, agents=[])
    assert form.is_valid(), form.errors
    where, params = form.search_filters().where(org_id, alias="memories")
    return Memory.objects.filter(org_id=org_id).extra(where=[where], params=params).defer("embedding", "search_vector")


def console_order(sort: str):
    from console.views.memories import BY_KEY

    return BY_KEY[sort]


def measure(org_id: str, agent_id: str, rows: int) -> dict:
    from memories import keyset
    from tenants.context import tenant_context

    results = {}
    with tenant_context(org_id):
        for name, queryset, order in lists(org_id, agent_id, rows):
            ordered = queryset.order_by(*order.order_by())
            total = ordered.count()
            depth = max(0, int(total * 0.9) - 1)
            deep_row = ordered[depth:depth + 1].first() if total else None
            entry = {"rows": total, "depth": depth + 1, "first page": plan(ordered[:LIMIT + 1]),
                     "deep by offset": plan(ordered[depth:depth + LIMIT + 1])}
            if deep_row is not None:
                entry["deep by key"] = plan(keyset.after(queryset, order=order, key=keyset.key_of(deep_row, order))
                                            .order_by(*order.order_by())[:LIMIT + 1])
            results[name] = entry
            print(f"{name:34} {total:>7} rows  first {entry['first page']['ms']:8.2f} ms  "
                  f"offset {depth + 1} {entry['deep by offset']['ms']:8.2f} ms  "
                  f"key {entry.get('deep by key', {}).get('ms', 0):8.2f} ms  {entry.get('deep by key', entry['first page'])['nodes']}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument("--label", default="after")
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command

    from memory_platform import local_services

    local_services.start_for_settings()
    call_command("migrate", verbosity=0)
    from django.conf import settings

    state = Path(settings.MEMORY_PLATFORM_DATA_DIR if hasattr(settings, "MEMORY_PLATFORM_DATA_DIR")
                 else os.environ.get("MEMORY_PLATFORM_DATA_DIR", ROOT / ".data")) / f"bench-lists-{args.rows}.json"
    if args.skip_load and state.exists():
        org_id, agent_id = json.loads(state.read_text())
    else:
        org_id, agent_id = load(args.rows)
        state.write_text(json.dumps([org_id, agent_id]))
    results = measure(org_id, agent_id, args.rows)
    out = Path(__file__).with_name(f"results-{args.rows}.json")
    recorded = json.loads(out.read_text()) if out.exists() else {}
    recorded[args.label] = {name: {key: ({k: v for k, v in value.items() if k != "text"} if isinstance(value, dict)
                                         else value) for key, value in entry.items()} for name, entry in results.items()}
    out.write_text(json.dumps(recorded, indent=2) + "\n")


if __name__ == "__main__":
    main()
