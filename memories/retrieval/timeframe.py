"""The time signals: when a query names a period ("in July 2023", "last week"; memories.understanding.when),
the memories whose event time falls in it (or soon after it, when it is told: REPORT_LAG) that
match the query's words best (BM25, as the full-text signal ranks them: `search`, the signal
"time") and those nearest its meaning (`nearest`, the signal "time_vector"). Fused like the
other signals, so a memory from that period rises without the others being dropped: a period
read wrongly costs little. Each hit says which words it was read from.

Both, because what happened in a period is mostly told in other words than a question about it
uses: "Which recreational activity was James pursuing on March 16, 2022?" is answered by "By the
way, yesterday I went bowling", which holds none of its words; among the few memories of a
period, the nearest in meaning is a far better guess than the nearest in the whole namespace.
Measured on LoCoMo (benchmarks/recall/README.md, issue 34 round seven): the period's memories by
meaning lifted recall@10 on both split halves, temporal questions most."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from memories.retrieval import fulltext, size, vector
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


@dataclass(frozen=True)
class Window:
    """The memories a period names to a search: its filters narrowed to the period (within) and
    about how many rows they leave (size.candidate_count), counted once for both signals."""

    filters: SearchFilters
    rows: int
    phrase: str  # the words the period was read from


def window(org_id, filters: SearchFilters, period: Period) -> Window:
    narrowed = within(filters, period)
    return Window(narrowed, size.candidate_count(org_id, narrowed), period.phrase)


def search(org_id, words: Sequence[str], period: Window, k: int, answers: bool = True) -> list[Hit]:
    """The k memories of the period that hold these words (fulltext.query_words) best; a
    reply with its question's words unless `answers` is False (fulltext, docs/adr/0070)."""
    hits = fulltext.search(org_id, words, period.filters, k, period.rows <= config().search.text_scan_rows,
                           answers=answers)
    return _read_from(hits, period)


def nearest(org_id, embedding: list[float], period: Window, k: int, vectors_of: str | None = None) -> list[Hit]:
    """The k memories of the period nearest the query's embedding (vector.search; vectors_of
    as there)."""
    hits, _ = vector.search(org_id, embedding, period.filters, k, period.rows <= config().search.exact_scan_rows,
                            vectors_of=vectors_of)
    return _read_from(hits, period)


def _read_from(hits: list[Hit], period: Window) -> list[Hit]:
    for hit in hits:
        hit.details["period"] = period.phrase
    return hits
