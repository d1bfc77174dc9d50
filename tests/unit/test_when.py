"""The period a query names (memories.understanding.when), read without a model or a server."""

from datetime import datetime, timezone

import pytest

from memories.understanding.when import Period, period

NOW = datetime(2026, 11, 23, 15, 30, tzinfo=timezone.utc)  # a Monday


def day(year, month, day_):
    return datetime(year, month, day_, tzinfo=timezone.utc)


@pytest.mark.parametrize("query, start, end", [
    ("What did Mel paint in July 2023?", day(2023, 7, 1), day(2023, 8, 1)),
    ("What did they paint in december 2023", day(2023, 12, 1), day(2024, 1, 1)),
    ("Who did Maria have dinner with on May 3, 2023?", day(2023, 5, 3), day(2023, 5, 4)),
    ("What was the pet's name on 3 June, 2023?", day(2023, 6, 3), day(2023, 6, 4)),
    ("the 13th of October 2023 show", day(2023, 10, 13), day(2023, 10, 14)),
    ("notes from 2023-05-08", day(2023, 5, 8), day(2023, 5, 9)),
    ("How often did Melanie go to the beach in 2023?", day(2023, 1, 1), day(2024, 1, 1)),
    ("What happened before April 10, 2023?", None, day(2023, 4, 10)),
    ("anything after 2022", day(2023, 1, 1), None),
    ("since March 2024", day(2024, 3, 1), None),
    ("what happened yesterday", day(2026, 11, 22), day(2026, 11, 23)),
    ("what did I say today", day(2026, 11, 23), day(2026, 11, 24)),
    ("last week's plans", day(2026, 11, 16), day(2026, 11, 23)),
    ("what did we do last weekend", day(2026, 11, 21), day(2026, 11, 23)),
    ("the budget last month", day(2026, 10, 1), day(2026, 11, 1)),
    ("trips last year", day(2025, 1, 1), day(2026, 1, 1)),
    ("this month so far", day(2026, 11, 1), None),
])
def test_a_named_period_is_read_as_its_dates(query, start, end):
    found = period(query, NOW)
    assert (found.start, found.end, found.months) == (start, end, ())


def test_a_month_without_a_year_is_that_month_of_every_year():
    found = period("When did Melanie go camping in June?", NOW)
    assert found.months == (6,) and found.phrase == "in June"
    assert found.contains(day(2023, 6, 20)) and found.contains(day(2019, 6, 1))
    assert not found.contains(day(2023, 7, 1))


def test_a_time_ago_is_about_then():
    found = period("the concert two weeks ago", NOW)
    assert found.contains(day(2026, 11, 9)) and not found.contains(day(2026, 11, 1))
    assert not found.contains(day(2026, 11, 20))


@pytest.mark.parametrize("query", ["I may go tomorrow", "May I ask about tea?", "What does Alice drink?",
                                   "the 1990s band", "room 2023 is booked"])
def test_no_period_where_none_is_named(query):
    assert period(query, NOW) is None


def test_the_most_specific_date_wins_over_a_relative_phrase():
    assert period("last weekend before April 10, 2023", NOW) == Period(None, day(2023, 4, 10), "April 10, 2023")


def test_a_day_the_month_does_not_have_is_read_as_the_month():
    assert period("on 31 June, 2023", NOW) == Period(day(2023, 6, 1), day(2023, 7, 1), "June, 2023")


@pytest.mark.parametrize("query", ["3000 years ago", "99999999 days ago", "what happened 999999999999 years ago"])
def test_a_time_ago_before_any_date_a_calendar_holds_names_no_period(query):
    assert period(query, NOW) is None


@pytest.mark.parametrize("query, start, end, phrase", [
    ("Where was John between August 11 and August 15 2023?", day(2023, 8, 11), day(2023, 8, 16),
     "between August 11 and August 15 2023"),
    ("between 3 May and 9 May, 2023", day(2023, 5, 3), day(2023, 5, 10), "between 3 May and 9 May, 2023"),
    ("from June to August 2023", day(2023, 6, 1), day(2023, 9, 1), "from June to August 2023"),
    ("from May 3, 2022 until March 2023", day(2022, 5, 3), day(2023, 4, 1), "from May 3, 2022 until March 2023"),
    ("Where was Tim in the week before 16 November 2023?", day(2023, 11, 9), day(2023, 11, 16),
     "the week before 16 November 2023"),
    ("What did John do the week before August 3, 2023 with his kids?", day(2023, 7, 27), day(2023, 8, 3),
     "the week before August 3, 2023"),
    ("the day after May 3, 2023", day(2023, 5, 4), day(2023, 5, 5), "the day after May 3, 2023"),
])
def test_a_range_between_dates_or_beside_one_is_read_whole(query, start, end, phrase):
    """Not the last date alone ("August 15 2023"), nor everything before it ("before 16 November")."""
    assert period(query, NOW) == Period(start, end, phrase)


@pytest.mark.parametrize("query, start, end", [
    ("between Tim and John on May 3, 2023", day(2023, 5, 3), day(2023, 5, 4)),  # names, not dates
    ("between August 15 and August 11 2023", day(2023, 8, 11), day(2023, 8, 12)),  # no backwards range
])
def test_what_is_no_range_is_read_as_before(query, start, end):
    found = period(query, NOW)
    assert (found.start, found.end) == (start, end)


@pytest.mark.parametrize("query, start, end, phrase", [
    ("Which country was Tim visiting in the second week of November 2023?", day(2023, 11, 8), day(2023, 11, 15),
     "the second week of November 2023"),
    ("plans for the first week of June, 2023", day(2023, 6, 1), day(2023, 6, 8), "the first week of June, 2023"),
    ("in the last week of September 2023", day(2023, 9, 24), day(2023, 10, 1), "the last week of September 2023"),
    ("the first weekend of August 2023", day(2023, 8, 5), day(2023, 8, 7), "the first weekend of August 2023"),
    ("the last weekend of February 2024", day(2024, 2, 24), day(2024, 2, 26), "the last weekend of February 2024"),
    ("Which classes did Evan join in mid-August 2023?", day(2023, 8, 11), day(2023, 8, 21), "mid-August 2023"),
    ("early March 2024", day(2024, 3, 1), day(2024, 3, 11), "early March 2024"),
    ("late February 2024", day(2024, 2, 21), day(2024, 3, 1), "late February 2024"),
])
def test_a_part_of_a_month_is_read_as_its_days(query, start, end, phrase):
    assert period(query, NOW) == Period(start, end, phrase)


def test_a_part_of_a_month_without_its_year_is_the_month():
    assert period("in the second week of November", NOW) == Period(None, None, "of November", months=(11,))


@pytest.mark.parametrize("query, start, end, phrase", [
    ("What happened in Sam's life towards the end of summer 2023?", day(2023, 8, 1), day(2023, 9, 1),
     "the end of summer 2023"),
    ("trips in the summer of 2023", day(2023, 6, 1), day(2023, 9, 1), "summer of 2023"),
    ("early spring 2024", day(2024, 3, 1), day(2024, 4, 1), "early spring 2024"),
    ("what did we plan for fall 2023", day(2023, 9, 1), day(2023, 12, 1), "fall 2023"),
    ("the beginning of autumn, 2022", day(2022, 9, 1), day(2022, 10, 1), "the beginning of autumn, 2022"),
    ("in winter 2023", day(2022, 12, 1), day(2023, 3, 1), "winter 2023"),
    ("late winter 2024", day(2024, 2, 1), day(2024, 3, 1), "late winter 2024"),
    ("mid-winter 2024", day(2024, 1, 1), day(2024, 2, 1), "mid-winter 2024"),
])
def test_a_season_of_a_year_is_read_as_its_months(query, start, end, phrase):
    assert period(query, NOW) == Period(start, end, phrase)


@pytest.mark.parametrize("query, start, end, phrase", [
    ("What did Jon do at the end of May 2023?", day(2023, 5, 21), day(2023, 6, 1), "the end of May 2023"),
    ("the beginning of June 2023", day(2023, 6, 1), day(2023, 6, 11), "the beginning of June 2023"),
    ("in the middle of March, 2024", day(2024, 3, 11), day(2024, 3, 21), "the middle of March, 2024"),
])
def test_the_end_or_the_beginning_of_a_month_is_read_as_its_days(query, start, end, phrase):
    assert period(query, NOW) == Period(start, end, phrase)


@pytest.mark.parametrize("query", ["When did Evan's son fall off his bike?", "What did James enjoy on cold winter days?",
                                   "Caroline's plans for the summer"])
def test_a_season_without_a_year_names_no_period(query):
    assert period(query, NOW) is None
