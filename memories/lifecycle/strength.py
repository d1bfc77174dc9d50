"""How strongly a memory is held: spec §4's Ebbinghaus decay with access reinforcement, as
one formula spelled in Python (`strength`) and in SQL (`strength_sql`).

    strength = exp(-rate * days ** 0.8)
    rate     = decay_rate * (1 - importance / 2) / (1 + ln(1 + retrievals))

`days` runs from the memory's last reinforcement: its last retrieval, or the last time it was
written, changed, confirmed, approved, restored or unarchived (`reinforced_at`, else
`created_at`). Every retrieval restarts the clock and, by its count, slows the decay that
follows (spacing); an important memory fades at up to half the rate. A memory whose
decay_rate is 0 keeps strength 1: confirmed (protected) memories, and episodes by default
(the record of what happened is not forgotten for being old; the agent may give one a rate).

Strength is computed when read, never stored: the nightly job (memories.lifecycle.decay)
reads it to archive what fell below the threshold, and running the job twice leaves the same
state as once. With the default rate of 0.1 an unimportant memory nobody retrieves reaches
0.05 after about 70 days; one retrieved 10 times holds 0.4 70 days after the last.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

EXPONENT = 0.8
SECONDS_PER_DAY = 86400.0
# The exponent is floored here: PostgreSQL's exp() raises on underflow, and exp(-50) is
# already far below any threshold.
FLOOR = -50.0


def rate(decay_rate: float, importance: float, retrieval_count: int) -> float:
    """The memory's effective decay rate per day**0.8."""
    return float(decay_rate) * (1 - float(importance) / 2) / (1 + math.log1p(retrieval_count or 0))


def last_reinforced(created_at: datetime, reinforced_at: datetime | None,
                    last_retrieved_at: datetime | None) -> datetime:
    """When the decay clock last restarted."""
    return max(moment for moment in (created_at, reinforced_at, last_retrieved_at) if moment is not None)


def strength(*, decay_rate: float, importance: float, retrieval_count: int, since: datetime, now: datetime) -> float:
    """How strongly the memory is held now, in (0, 1]; `since` is last_reinforced(...)."""
    days = max((now - since).total_seconds(), 0.0) / SECONDS_PER_DAY
    return math.exp(max(-rate(decay_rate, importance, retrieval_count) * days ** EXPONENT, FLOOR))


def of(memory, now: datetime) -> float:
    """strength() of anything with a memory's columns and its usage (a Memory read with its
    default manager, a search's RankingRow)."""
    return strength(decay_rate=memory.decay_rate, importance=memory.importance,
                    retrieval_count=memory.retrieval_count,
                    since=last_reinforced(memory.created_at, memory.reinforced_at, memory.last_retrieved_at), now=now)


def days_until(threshold: float, *, decay_rate: float, importance: float, retrieval_count: int) -> float | None:
    """Days after its last reinforcement at which the memory's strength reaches `threshold`
    (None: it never does)."""
    per_day = rate(decay_rate, importance, retrieval_count)
    if per_day <= 0:
        return None
    return (-math.log(threshold) / per_day) ** (1 / EXPONENT)


def fades_at(memory, threshold: float) -> datetime | None:
    """When the memory's strength reaches `threshold` if nothing reinforces it first (None: never)."""
    days = days_until(threshold, decay_rate=memory.decay_rate, importance=memory.importance,
                      retrieval_count=memory.retrieval_count)
    if days is None:
        return None
    return last_reinforced(memory.created_at, memory.reinforced_at, memory.last_retrieved_at) + timedelta(days=days)


def strength_sql(memory: str = "m", usage: str = "u") -> str:
    """strength() as a SQL expression of the memories row `memory` and its memory_usage row
    `usage` (which may be missing: a memory never retrieved), at the statement's now()."""
    since = (f"greatest({memory}.created_at, {memory}.reinforced_at, {usage}.last_retrieved_at)")
    per_day = (f"({memory}.decay_rate * (1 - {memory}.importance::float8 / 2) "
               f"/ (1 + ln(1 + coalesce({usage}.retrieval_count, 0))))")
    # In float8: extract() gives numeric, whose power() took most of the weak list's time.
    days = f"greatest(extract(epoch FROM now() - {since})::float8, 0) / {SECONDS_PER_DAY}"
    return f"exp(greatest(-{per_day} * power({days}, {EXPONENT}), {FLOOR}))"
