"""GET /health: is every part of the product up? JSON.

200 "ok": everything is up. 200 "degraded": Redis or the worker is down; the app still serves
(writes are stored with their embedding pending, searches skip the cache), so a load balancer
keeps sending it traffic. 503 "down": the database is unreachable, nothing can be served.
On a Citus cluster `database.nodes` lists the coordinator and the workers (cluster_nodes).
"""

from __future__ import annotations

import time
from pathlib import PurePosixPath

from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from memory_platform import database, distribution
from memory_platform.local_services import FULL_TEXT_MATCH, LEAKPROOF_FUNCTIONS
from memory_platform.security import hide_url_passwords


def _timed(check):
    started = time.perf_counter()
    try:
        report = check()
    except Exception as exc:  # any failure of a dependency is a report, not a crash
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        report = {"ok": False, "error": f"{type(exc).__name__}: {hide_url_passwords(first_line)}"}
    report["latency_ms"] = round((time.perf_counter() - started) * 1000, 1)
    return report


def cluster_nodes() -> list[dict] | None:
    """On a Citus cluster, its nodes (distribution.nodes); None on a single PostgreSQL.

    /health answers anyone: a node is named by its host alone, no port, and a local node (a
    Unix socket folder) by the folder's last part (`worker-1`), never the path; what
    `manage.py cluster_status` shows operators in full."""
    if not database.citus_present():
        return None
    return [{"name": PurePosixPath(node["name"]).name if node["name"].startswith("/") else node["name"],
             **{key: node[key] for key in ("role", "active", "holds_shards")}}
            for node in distribution.nodes("default")]


def check_database() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version'), current_user")
        server_version, role = cursor.fetchone()
        cursor.execute("SELECT f FROM unnest(%s::text[]) f WHERE NOT (SELECT proleakproof FROM pg_proc "
                       "WHERE oid = f::regprocedure)", [list(LEAKPROOF_FUNCTIONS)])
        not_leakproof = [function for (function,) in cursor.fetchall()]
    fulltext_indexable = FULL_TEXT_MATCH not in not_leakproof
    pgvector = database.pgvector_version()
    nodes = cluster_nodes()
    return {
        "ok": pgvector is not None,
        "server_version": server_version,
        "role": role,
        "pgvector": pgvector,
        # False: full-text search cannot use its index under row-level security (slow, not
        # wrong); a superuser runs ALTER FUNCTION ts_match_vq(tsvector, tsquery) LEAKPROOF.
        "fulltext_index_usable": fulltext_indexable,
        # Each function here keeps an index out of reads under row-level security (slower, not
        # wrong) until a superuser runs ALTER FUNCTION <it> LEAKPROOF (docs/operations.md).
        "not_leakproof": not_leakproof,
        "embedded": settings.EMBEDDED_POSTGRES,
        **({} if nodes is None else {"nodes": nodes}),
        **({} if pgvector else {"error": "pgvector extension is not installed"}),
    }


def _redis():
    import django_rq

    return django_rq.get_connection("default")


def check_redis() -> dict:
    info = _redis().info("server")
    return {
        "ok": True,
        "server_version": info.get("valkey_version") or info.get("redis_version"),
        "embedded": settings.EMBEDDED_REDIS,
    }


def check_worker() -> dict:
    from rq import Worker

    workers = Worker.all(connection=_redis())
    return {
        "ok": bool(workers),
        "count": len(workers),
        "workers": [{"name": w.name, "state": w.get_state(), "queues": w.queue_names()} for w in workers],
        **({} if workers else {"error": "no RQ worker is running"}),
    }


@require_GET
def health_view(request):
    checks = {"database": _timed(check_database), "redis": _timed(check_redis)}
    checks["worker"] = _timed(check_worker) if checks["redis"]["ok"] else {"ok": False, "error": "redis is down"}
    if not checks["database"]["ok"]:
        response = JsonResponse({"status": "down", **checks}, status=503)
        response["Retry-After"] = str(database.UNREACHABLE_RETRY_SECONDS)
        return response
    healthy = all(check["ok"] for check in checks.values())
    return JsonResponse({"status": "ok" if healthy else "degraded", **checks}, status=200)
