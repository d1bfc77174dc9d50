"""Strength (memories.lifecycle.strength): Ebbinghaus decay with access reinforcement, as pure math."""

from datetime import datetime, timedelta, timezone

import pytest

from memories.lifecycle import strength

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)


def held(days: float, *, decay_rate=0.1, importance=0.0, retrievals=0) -> float:
    return strength.strength(decay_rate=decay_rate, importance=importance, retrieval_count=retrievals,
                             since=NOW - timedelta(days=days), now=NOW)


def test_a_memory_is_held_whole_when_written_and_fades_with_time():
    assert held(0) == 1.0
    values = [held(days) for days in (1, 7, 30, 60, 90)]
    assert values == sorted(values, reverse=True) and all(0 < value < 1 for value in values)
    # The default rate reaches the decay threshold (0.05, spec §4) after two to three months unused.
    assert held(60) > 0.05 > held(75)


def test_retrievals_and_importance_slow_the_decay_and_a_zero_rate_never_decays():
    assert held(30, retrievals=10) > held(30, retrievals=1) > held(30)
    assert held(30, importance=1.0) > held(30, importance=0.5) > held(30)
    assert held(10_000, decay_rate=0.0) == 1.0


def test_the_clock_runs_from_the_latest_of_writing_change_and_retrieval():
    written, changed, retrieved = NOW - timedelta(days=90), NOW - timedelta(days=40), NOW - timedelta(days=2)
    assert strength.last_reinforced(written, None, None) == written
    assert strength.last_reinforced(written, changed, None) == changed
    assert strength.last_reinforced(written, changed, retrieved) == retrieved
    assert strength.last_reinforced(written, None, retrieved) == retrieved


@pytest.mark.parametrize("retrievals, importance", [(0, 0.0), (5, 0.3), (50, 1.0)])
def test_days_until_is_when_strength_reaches_the_threshold(retrievals, importance):
    days = strength.days_until(0.05, decay_rate=0.1, importance=importance, retrieval_count=retrievals)
    assert held(days, retrievals=retrievals, importance=importance) == pytest.approx(0.05)
    assert strength.days_until(0.05, decay_rate=0.0, importance=0.0, retrieval_count=0) is None


def test_an_ancient_memory_floors_at_a_tiny_strength_instead_of_failing():
    assert 0 < held(700_000, decay_rate=10.0) < 1e-20
