"""The time signal: when a query names a period ("in July 2023", "last week"; memories.understanding.when),
the memories whose event time falls in it that match the query's words best (BM25, as the
full-text signal ranks them). Fused like the other signals, so a memory from that period
rises without the others being dropped: a period read wrongly costs little. Each hit says
which words it was read from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from memories.retrieval import fulltext, size
from memories.retrieval.filters import SearchFilters
from memories.retrieval.ranking import Hit
from memories.understanding.when import Period
from memory_platform.config import config


def within(filters: SearchFilters, period: Period) -> SearchFilters:
    """The search's filters, narrowed to the period (and to any event-time bounds they had)."""
    after = max((t for t in (filters.event_after, period.start) if t is not None), default=None)
    before = min((t for t in (filters.event_before, period.end) if t is not None), default=None)
    return replace(filters, event_after=after, event_before=before,
                   event_months=list(period.months) or filters.event_months)


def search(org_id, words: Sequence[str], filters: SearchFilters, period: Period, k: int) -> list[Hit]:
    """The k memories of the period that hold these words (fulltext.query_words) best."""
    narrowed = within(filters, period)
    small = size.candidate_count(org_id, narrowed) <= config().search.text_scan_rows
    hits = fulltext.search(org_id, words, narrowed, k, small)
    for hit in hits:
        hit.details["period"] = period.phrase
    return hits
