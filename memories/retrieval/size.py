"""How many rows a search may return, enough to choose each signal's path against the "few
rows" thresholds: EXACT_SCAN_ROWS (vectors ranked by their true distance) and TEXT_SCAN_ROWS
(full text matched row by row). The choice only decides speed, never what is found."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from memories.lifecycle import tallies
from memories.models import LIVE_SQL
from memories.retrieval.filters import SearchFilters
from memory_platform.config import config
from memory_platform.database import on_citus

_tenant_size_cache: dict = {}
_shard_rows_cache: dict = {}  # "at": when counted, "rows": {shard id: its estimated rows}
TENANT_SIZE_CACHE_SECONDS = 3600


def reset_caches() -> None:
    """Forget the tenants' sizes this process has counted (tenant_size)."""
    _tenant_size_cache.clear()
    _shard_rows_cache.clear()


@dataclass(frozen=True)
class TenantSize:
    rows: int  # its live (active, not deleted) memories
    share: float  # rows as a share of the table's


def tenant_size(org_id) -> TenantSize:
    """The tenant's live rows and their share of the table, counted once and kept for an hour
    in the process: unfiltered searches size their paths by it (candidate_count), and the
    shared HNSW index its candidate list (vector.hnsw_ef_search)."""
    now = timezone.now()
    cached = _tenant_size_cache.get(str(org_id))
    if cached and now - cached[0] < timedelta(seconds=TENANT_SIZE_CACHE_SECONDS):
        return cached[1]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM memories WHERE org_id = %s AND {LIVE_SQL}", [org_id])
        rows = cursor.fetchone()[0]
        table_rows = _rows_beside(cursor, org_id, now)
    size = TenantSize(rows=rows, share=min(rows / table_rows, 1.0))
    if len(_tenant_size_cache) >= 10_000:  # many tenants: start over rather than grow without bound
        _tenant_size_cache.clear()
    _tenant_size_cache[str(org_id)] = (now, size)
    return size


def _rows_beside(cursor, org_id, now) -> float:
    """The estimated rows of the table whose HNSW index the tenant's searches walk: the whole
    table on one node; on a Citus cluster its shard of memories, where the index is (the
    estimates of every shard asked at once, at most hourly: one statement run on each)."""
    if not on_citus():
        cursor.execute("SELECT greatest(reltuples, 1) FROM pg_class WHERE oid = 'memories'::regclass")
        return cursor.fetchone()[0]
    if not _shard_rows_cache or now - _shard_rows_cache["at"] >= timedelta(seconds=TENANT_SIZE_CACHE_SECONDS):
        cursor.execute("SELECT shardid, result FROM run_command_on_shards('memories', "
                       "$$SELECT reltuples FROM pg_class WHERE oid = '%s'::regclass$$) WHERE success")
        _shard_rows_cache.update(at=now, rows={shard: float(rows) for shard, rows in cursor.fetchall()})
    cursor.execute("SELECT get_shard_id_for_distribution_column('memories', %s)", [org_id])
    return max(_shard_rows_cache["rows"].get(cursor.fetchone()[0], 1.0), 1.0)


def capped_count(cursor, where: str, params: list, cap: int) -> int:
    """The rows matching `where`, counted up to just past `cap`."""
    cursor.execute(f"SELECT count(*) FROM (SELECT 1 FROM memories m WHERE {where} LIMIT %s) capped",
                   [*params, cap + 1])
    return cursor.fetchone()[0]


# What the namespace tallies can size (memories.lifecycle.tallies: a namespace's memories not
# deleted, per status, and of them the store's items): a search narrowed by nothing else.
TALLIED = frozenset({"namespace", "within", "statuses", "store_items", "include_expired"})


def _tallied(filters: SearchFilters) -> bool:
    defaults = SearchFilters()
    return not filters.include_deleted and all(
        getattr(filters, name) == getattr(defaults, name) for name in filters.__dataclass_fields__
        if name not in TALLIED and name != "include_deleted")


def candidate_count(org_id, filters: SearchFilters) -> int:
    """About how many rows the search may return.

    An unfiltered search takes the tenant's live rows from the hourly count (tenant_size):
    counting up to 12,000 rows on every search cost ~20 ms for a tenant of that size. One
    narrowed only to namespaces (its own, its key's reach) and statuses, or to the store's items,
    adds up their namespace tallies, a row per namespace (the memories past their expiry that
    the sweep has not removed yet counted in: a few at any time). Any other filtered one
    counts, up to just past the larger threshold. Either way the choice only
    decides speed: the exact path returns the true nearest rows whatever their number, and
    the iterative index scan keeps going until it has k of the tenant's rows."""
    if not filters.narrows():
        return tenant_size(org_id).rows
    if _tallied(filters):
        return tallies.namespaces_held(org_id, filters.namespace_conditions("scope"), filters.statuses,
                                       items=filters.store_items)
    cap = max(config().search.exact_scan_rows, config().search.text_scan_rows)
    where, params = filters.where(org_id)
    with connection.cursor() as cursor:
        return capped_count(cursor, where, params, cap)


def is_small(org_id, filters: SearchFilters) -> bool:
    """Whether the rows a search may return are few enough to rank them all by their true
    distance (at most EXACT_SCAN_ROWS): then the approximate index only costs."""
    return candidate_count(org_id, filters) <= config().search.exact_scan_rows
