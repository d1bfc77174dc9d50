"""How many rows a search may return, enough to choose each signal's path against the "few
rows" thresholds: EXACT_SCAN_ROWS (vectors ranked by their true distance) and TEXT_SCAN_ROWS
(full text matched row by row). The choice only decides speed, never what is found."""

from __future__ import annotations

from django.db import connection

from memories.retrieval import fulltext
from memories.retrieval.filters import SearchFilters
from memory_platform.config import config


def capped_count(cursor, where: str, params: list, cap: int) -> int:
    """The rows matching `where`, counted up to just past `cap`."""
    cursor.execute(f"SELECT count(*) FROM (SELECT 1 FROM memories m WHERE {where} LIMIT %s) capped",
                   [*params, cap + 1])
    return cursor.fetchone()[0]


def candidate_count(org_id, filters: SearchFilters) -> int:
    """About how many rows the search may return.

    An unfiltered search takes the tenant's live rows from the hourly estimate (tenant_text):
    counting up to 12,000 rows on every search cost ~20 ms for a tenant of that size. A
    filtered one counts, up to just past the larger threshold. Either way the choice only
    decides speed: the exact path returns the true nearest rows whatever their number, and
    the iterative index scan keeps going until it has k of the tenant's rows."""
    if not filters.narrows():
        return fulltext.tenant_text(org_id).rows
    cap = max(config().search.exact_scan_rows, config().search.text_scan_rows)
    where, params = filters.where(org_id)
    with connection.cursor() as cursor:
        return capped_count(cursor, where, params, cap)


def is_small(org_id, filters: SearchFilters) -> bool:
    """Whether the rows a search may return are few enough to rank them all by their true
    distance (at most EXACT_SCAN_ROWS): then the approximate index only costs."""
    return candidate_count(org_id, filters) <= config().search.exact_scan_rows
