"""Vector search: the k memories nearest the query's embedding (docs/adr/0035).

The search returns the k nearest rows of the tenant whatever the tenant's size:
  * a tenant (after its cheap filters) with at most EXACT_SCAN_ROWS candidates is searched
    exactly: its rows come from a b-tree index and are sorted by distance;
  * a larger one goes through the approximate index with an iterative scan (pgvector 0.8),
    which keeps scanning past rows the tenant filter rejects until k rows are found; a tenant
    with an HNSW index of its own (memories.vectors.index) goes through that one.
The query knobs are set with SET LOCAL, so they end with the search's transaction; the
planner's page cost the exact path sets (EXACT_PATH_SETTINGS) is undone as soon as it has run.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, replace
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from memories.retrieval import size
from memories.retrieval.filters import SearchFilters
from memories.retrieval.ranking import Hit, memory_columns, ranked_hits, ranking_columns, usage_join
from memories.vectors import index as vector_index
from memories.vectors.embeddings import vector_literal
from memory_platform.config import config
from memory_platform.database import set_local

_index_cache: dict = {}

# The exact path reads the tenant's rows from the covering index of live vectors (an index-only
# scan: no heap page, the tenant's rows only). At PostgreSQL's default random_page_cost (4, a
# disk's seek) the planner prices each of that index's pages as four of the heap's, so where the
# tenant holds most of the table (a deployment of one organisation, or a Citus shard it nearly
# fills) it reads the heap by a sequential scan instead: more pages, every column, and
# row-level security tested on every row; on a cluster's worker, where the policy is evaluated
# per row rather than once (docs/adr/0042), 3-4x slower (benchmarks/cluster: 5,000 rows, 9.8 ms
# against 2.9 on one node). Every exact search reads that index, so its pages are cached: the
# exact path prices them so (1.1, the usual figure for pages in memory or on SSD), for its
# statement only.
EXACT_PATH_SETTINGS = {"random_page_cost": "1.1"}
INDEX_CACHE_SECONDS = 60
HNSW_EF_SEARCH_MAX = 1000  # pgvector's limit


def reset_caches() -> None:
    """Forget the indexes this process has read (read again at the next search)."""
    _index_cache.clear()


def _refresh_index_cache() -> None:
    """Read what the database has (at most once a minute): the shared approximate index's kind
    and options, and the tenants with a valid index of their own, of each kind."""
    now = timezone.now()
    if not _index_cache or now - _index_cache["at"] > timedelta(seconds=INDEX_CACHE_SECONDS):
        kind, options = vector_index.current_index(using="default")
        own = {own_kind.prefix: {org for org, valid in vector_index.tenant_indexes(own_kind, using="default").items()
                                 if valid}
               for own_kind in vector_index.OWN_KINDS}
        _index_cache.update(kind=kind, options=options, own=own, at=now)


def shared_index() -> tuple[str | None, dict]:
    """The shared approximate index's kind ("hnsw", "ivfflat", or None) and options."""
    _refresh_index_cache()
    return _index_cache["kind"], _index_cache["options"]


def has_own_index(org_id, kind: vector_index.OwnKind = vector_index.MEMORIES) -> bool:
    """Whether the tenant has an HNSW index of this kind of its own (memories.vectors.index)."""
    _refresh_index_cache()
    return uuid.UUID(str(org_id)) in _index_cache["own"][kind.prefix]


def own_index(org_id, filters: SearchFilters) -> tuple[str | None, bool]:
    """The tenant's own index a search of live memories may walk ("hnsw_store" for the store's
    items, "hnsw_tenant" for its memories, or None), and whether it holds exactly the rows the
    search asks for (the filters narrow nothing else)."""
    if not filters.uses_live_index():
        return None, False
    if filters.store_items and has_own_index(org_id, vector_index.STORE_ITEMS):
        return "hnsw_store", not replace(filters, store_items=False).narrows()
    if has_own_index(org_id):
        return "hnsw_tenant", not filters.narrows()
    return None, False


def ivfflat_probes(options: dict) -> int:
    configured = config().search.ivfflat_probes
    return configured or max(1, round(math.sqrt(int(options.get("lists", 100)))))


@dataclass
class VectorQuery:
    sql: str
    params: list
    method: str  # "exact", "hnsw", "ivfflat", "hnsw_tenant" or "hnsw_store" (the tenant's own HNSW indexes)
    knobs: dict  # SET LOCAL name -> value


def hnsw_ef_search(org_id, k: int) -> int:
    """The HNSW candidate list for k rows of this tenant: HNSW_EF_SEARCH, longer for a tenant
    holding a small share of the table. A pass over the index keeps only about that share of
    the candidates it visits; when that falls short of k, the iterative scan makes another
    pass, which costs more than a longer first one (at 1M memories, k 50 for a 10% tenant:
    ef_search 500 took 12.4 / 22.2 ms p50 / p95, 600 took 9.7 / 15.2)."""
    ef = max(config().search.hnsw_ef_search, k)
    share = size.tenant_size(org_id).share
    if share > 0:
        ef = max(ef, math.ceil(1.2 * k / share))
    return min(ef, HNSW_EF_SEARCH_MAX)


# While a switch of model moves vectors a batch at a time (memories.lifecycle.reembed), a
# memory's vector of the model a search compares with is its own (memories.embedding) if it is
# labelled so, else the one kept beside it in memory_embeddings: the model's vector of every
# memory, whichever batches have moved. Joined on (org_id, model, memory_id), the unique key
# memory_embeddings_unique, within the tenant (a router join on a Citus cluster).
VECTORS_OF_SQL = """
    LEFT JOIN memory_embeddings kept ON kept.org_id = m.org_id AND kept.model = %s AND kept.memory_id = m.id
                                        AND m.embedding_model IS DISTINCT FROM %s
"""
VECTOR_OF_SQL = "CASE WHEN m.embedding_model = %s THEN m.embedding ELSE kept.embedding END"


def statement(cursor, org_id, embedding: list[float], filters: SearchFilters, k: int,
              small: bool | None = None, vectors_of: str | None = None) -> VectorQuery:
    """The statement search runs, and the settings it runs under. small: whether the
    candidate rows are few (size.is_small), if the caller knows already. vectors_of: compare
    with this model's vectors wherever they are (a switch is moving them, docs/adr/0050): an
    exact scan, since the approximate indexes hold memories.embedding's mix of two models."""
    where, params = filters.where(org_id)
    if vectors_of:
        sql = f"""
            SELECT nearest.id, 1 - nearest.distance AS similarity, {ranking_columns("nearest")}
            FROM (
                SELECT m.id, {memory_columns("m")}, ({VECTOR_OF_SQL}) <=> %s::vector AS distance
                FROM memories m {VECTORS_OF_SQL}
                WHERE {where} AND ({VECTOR_OF_SQL}) IS NOT NULL
                ORDER BY distance
                LIMIT %s
            ) nearest {usage_join("nearest")}
            ORDER BY nearest.distance, nearest.id
        """
        return VectorQuery(sql, [vectors_of, vector_literal(embedding), vectors_of, vectors_of, *params, vectors_of,
                                 k, org_id], "exact_switching", {})
    exact_limit = config().search.exact_scan_rows
    kind, options = shared_index() if filters.uses_live_index() else (None, {})
    own, whole = own_index(org_id, filters)
    settings_for_search: dict = {}
    if whole:
        small = False  # its own index holds exactly the rows searched: faster than any exact scan
    elif small is None:
        small = size.capped_count(cursor, where, params, exact_limit) <= exact_limit
    if small or (kind is None and not own):
        method = "exact"
        settings_for_search = dict(EXACT_PATH_SETTINGS)
        # "+ 0" keeps the planner from ordering through the approximate index: the rows come
        # from the tenant's b-tree indexes and are sorted by their true distance.
        distance = "(m.embedding <=> %s::vector) + 0"
    else:
        method = own or kind
        distance = "m.embedding <=> %s::vector"
        if kind == "ivfflat":
            settings_for_search = {"ivfflat.probes": ivfflat_probes(options),
                                   "ivfflat.iterative_scan": "relaxed_order",
                                   "ivfflat.max_probes": config().search.ivfflat_max_probes}
        if own or kind == "hnsw":
            # The tenant's own index holds its rows only: no share of the candidates is lost
            # (its store's index, its items only: the planner takes the smaller of the two).
            ef = (min(max(config().search.tenant_index_ef_search, k), HNSW_EF_SEARCH_MAX) if own
                  else hnsw_ef_search(org_id, k))
            settings_for_search |= {"hnsw.ef_search": ef,
                                    "hnsw.iterative_scan": "relaxed_order",
                                    "hnsw.max_scan_tuples": config().search.hnsw_max_scan_tuples}
    # The distance is computed once a row and sorted on by its name: an expression in the
    # select list beside another in ORDER BY is computed twice for every row an exact search
    # reads (a quarter of its time at 10,000 rows). The inner query may return rows slightly out
    # of order (relaxed iterative scan); the outer one puts them in exact order.
    # The ranking's columns come with the rows: from the heap tuple an index scan reads, or
    # from the covering index an exact scan reads (memories migration 0012).
    sql = f"""
        SELECT nearest.id, 1 - nearest.distance AS similarity, {ranking_columns("nearest")}
        FROM (
            SELECT m.id, {memory_columns("m")}, {distance} AS distance
            FROM memories m
            WHERE {where} AND m.embedding IS NOT NULL
            ORDER BY distance
            LIMIT %s
        ) nearest {usage_join("nearest")}
        ORDER BY nearest.distance, nearest.id
    """
    return VectorQuery(sql, [vector_literal(embedding), *params, k, org_id], method, settings_for_search)


def search(org_id, embedding: list[float], filters: SearchFilters, k: int,
           small: bool | None = None, vectors_of: str | None = None) -> tuple[list[Hit], str]:
    """The k nearest memories by cosine similarity, and how they were found ("exact" or the
    index kind). Its index settings are SET LOCAL: they stay until the transaction ends (a
    savepoint's release would not end them either), and each search sets its own."""
    with connection.cursor() as cursor:
        query = statement(cursor, org_id, embedding, filters, k, small, vectors_of)
        # One round trip: the knobs, the statement, and the exact path's page cost undone.
        set_local(cursor, query.knobs, query.sql, query.params,
                  then_reset=EXACT_PATH_SETTINGS.keys() & query.knobs.keys())
        rows = cursor.fetchall()
    return ranked_hits(((memory_id, max(0.0, min(1.0, float(similarity))), *ranking)
                        for memory_id, similarity, *ranking in rows), measure="similarity"), query.method
