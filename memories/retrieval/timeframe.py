"""The time signal: when a query names a period ("in July 2023", "last week"; memories.understanding.when),
the memories whose event time falls in it (or soon after it, when it is told: REPORT_LAG) that
match the query's words best (BM25, as the full-text signal ranks them). Fused like the other
signals, so a memory from that period rises without the others being dropped: a period read
wrongly costs little. Each hit says which words it was read from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from memories.retrieval import fulltext, size
from memories.retrieval.filters import SearchFilters
from memories.retrieval.ranking import Hit
from memories.understanding.when import Period
from memory_platform.config import config


# What happened in a period is mostly told during it or soon after ("last week we went to the
# memorial", said on 3 August, is about the week before the 3rd): the period's memories are read
# up to this long past its end, or the period's own length if that is shorter (a day's, a day).
REPORT_LAG = timedelta(days=7)


def told_by(period: Period) -> datetime | None:
    """When what happened in the period has mostly been told: its end, plus the report lag."""
    if period.end is None:
        return None
    return period.end + (REPORT_LAG if period.start is None else min(REPORT_LAG, period.end - period.start))


def within(filters: SearchFilters, period: Period) -> SearchFilters:
    """The search's filters, narrowed to the period and the time after it in which it is told
    (and to any event-time bounds they had)."""
    after = max((t for t in (filters.event_after, period.start) if t is not None), default=None)
    before = min((t for t in (filters.event_before, told_by(period)) if t is not None), default=None)
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
