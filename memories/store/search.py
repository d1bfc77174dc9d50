"""The namespace store's search by meaning (LangGraph's search with a query; docs/adr/0040).

LangGraph orders a store search by similarity alone and pages it with limit and offset: the
pipeline's vector signal (its query embedding cache, its exact or approximate path for
tenants of every size) finds the nearest items, and nothing is blended in, so the order is
the order of similarity and a page is a slice of it.
"""

from __future__ import annotations

from memories.retrieval import pipeline, records
from memories.retrieval.filters import SearchFilters
from memories.retrieval.ranking import Result, SearchOutcome

# A store search's pages reach at most this far (offset + limit): HNSW's candidate list
# (hnsw.ef_search) stops at 1000 as well.
DEPTH_MAX = 1000


def store_search(*, org_id, query: str, filters: SearchFilters, limit: int = 10, offset: int = 0) -> SearchOutcome:
    """The store items (filters.store_items) nearest the query, best first, `offset` of them
    skipped; each result's score is its cosine similarity in [0, 1]. Items kept out of search
    by meaning (never embedded) are not found. If the query cannot be embedded, full text ranks
    instead (outcome.degraded says so, and its scores are not similarities)."""
    found = pipeline.search_begun(org_id=org_id, query=query, filters=filters, limit=offset + limit,
                                  mode=pipeline.VECTOR_ONLY)
    pipeline.run_signals(found)
    degraded = found.degraded is not None
    hits = found.hits.get("fulltext" if degraded else "vector", [])[offset:offset + limit]
    loaded = records.load(org_id, [hit.memory_id for hit in hits])
    results = [Result(loaded[hit.memory_id], hit.score, {"fulltext" if degraded else "vector": hit.explanation()})
               for hit in hits if hit.memory_id in loaded]
    return SearchOutcome(results=results, degraded=found.degraded, vector_method=found.vector_method,
                         understood={"signals": ["fulltext" if degraded else "vector"] if hits else []})
