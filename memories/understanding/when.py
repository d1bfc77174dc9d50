"""The time a query speaks of: "in May 2023", "on 8 May, 2023", "October 13, 2023", "in June",
"in 2023", "yesterday", "last week", "3 days ago", "before April 10, 2023", "after 2022",
"between August 11 and August 15 2023", "the week before 16 November 2023", "the second week
of November 2023", "mid-August 2023", "the end of May 2023", "summer 2023", "late summer 2023".

`period(query, now)` returns the first such phrase as a Period (a half-open [start, end) in
UTC, either end open) or None. A search that finds one adds a signal of the memories whose
event time falls in it or soon after it (memories.retrieval.timeframe); its words stay in the
query for the other signals. A month without a year ("in June") is every June: Period.months
lists them. Relative phrases count back from `now`, the moment of the search. Deterministic, no
model.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
MONTHS |= {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name}
MONTH = r"(?P<month>" + "|".join(sorted((re.escape(name) for name in MONTHS), key=len, reverse=True)) + r")\.?"
YEAR = r"(?P<year>(?:19|20)\d\d)"
DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
           "ten": 10, "a": 1, "an": 1}
UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}


@dataclass(frozen=True)
class Period:
    start: datetime | None  # inclusive; None: open
    end: datetime | None  # exclusive; None: open
    phrase: str  # the words it was read from
    months: tuple[int, ...] = field(default=())  # set for "in June": that month of any year

    def as_json(self) -> dict:
        return {"phrase": self.phrase, "start": self.start.isoformat() if self.start else None,
                "end": self.end.isoformat() if self.end else None, "months": list(self.months)}

    def contains(self, moment: datetime) -> bool:
        if self.months:
            return moment.month in self.months
        return (self.start is None or moment >= self.start) and (self.end is None or moment < self.end)


def utc(year: int, month: int = 1, day: int = 1) -> datetime:
    return datetime(year, month, day, tzinfo=timezone.utc)


def month_start(year: int, month: int) -> datetime:
    """The first of a month counted on from January of the year (13: January of the next)."""
    return utc(year + (month - 1) // 12, (month - 1) % 12 + 1)


def month_after(year: int, month: int) -> datetime:
    return month_start(year, month + 1)


def day_period(year: int, month: int, day: int, phrase: str) -> Period | None:
    try:
        start = utc(year, month, day)
    except ValueError:  # "31 June"
        return None
    return Period(start, start + timedelta(days=1), phrase)


# Most specific first: a date with a day, then a month and year, a year, a month alone.
DATE_PATTERNS = [
    re.compile(rf"\b{DAY}\s+(?:of\s+)?{MONTH},?\s+{YEAR}\b", re.IGNORECASE),  # 8 May, 2023
    re.compile(rf"\b{MONTH}\s+{DAY},?\s+{YEAR}\b", re.IGNORECASE),  # May 8, 2023
    re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)\b"),  # 2023-05-08
    re.compile(rf"\b{MONTH},?\s+{YEAR}\b", re.IGNORECASE),  # May 2023
    re.compile(rf"\b(?:in|of|during|since|before|after|until|by)\s+{YEAR}\b", re.IGNORECASE),  # in 2023
    re.compile(rf"\b(?:in|during|of|since|before|after|until|by)\s+(?:early\s+|late\s+|mid-?)?{MONTH}(?![\w-])",
               re.IGNORECASE),  # in June
]
RELATIVE = re.compile(r"\b(?:(?P<simple>yesterday|today|tonight|this morning)"
                      r"|(?P<which>last|this|past|previous)\s+(?P<unit>day|week|weekend|month|year)"
                      r"|(?P<count>\d+|one|two|three|four|five|six|seven|eight|nine|ten|a|an)\s+"
                      r"(?P<units>day|week|month|year)s?\s+ago)\b", re.IGNORECASE)
BOUND = re.compile(r"\b(?P<bound>before|after|since|until|by)\s+$", re.IGNORECASE)


def month_number(word: str) -> int | None:
    """The month a date's month part names (a name, an abbreviation or two digits); None for
    "may" in lower case, the verb far more often than the month."""
    if word.isdigit():
        return int(word)
    if word.lower().rstrip(".") == "may" and not word[0].isupper():
        return None
    return MONTHS[word.lower().rstrip(".")]


def absolute(query: str) -> Period | None:
    for pattern in DATE_PATTERNS:
        for match in pattern.finditer(query):
            parts = match.groupdict()
            month = None
            if parts.get("month") and (month := month_number(parts["month"])) is None:
                continue
            year = int(parts["year"]) if parts.get("year") else None
            phrase = match.group(0)
            if parts.get("day"):
                found = day_period(year, month, int(parts["day"]), phrase)
            elif month and year:
                found = Period(utc(year, month), month_after(year, month), phrase)
            elif year:
                found = Period(utc(year), utc(year + 1), phrase)
            else:
                found = Period(None, None, phrase, months=(month,))
            if found is not None:
                return bounded(query[:match.start()], found)
    return None


BOUNDS = ("before", "after", "since", "until", "by")


def bounded(preceding: str, found: Period) -> Period:
    """'before X' is everything until X starts, 'after X' everything from its end, 'since X'
    from its start (the bound word leads the phrase, or comes just before it)."""
    first = found.phrase.split()[0].lower()
    bound = first if first in BOUNDS else (match.group("bound").lower() if (match := BOUND.search(preceding)) else None)
    if bound is None or found.months:
        return found
    if bound in ("before", "until", "by"):
        return Period(None, found.start, found.phrase)
    return Period(found.end if bound == "after" else found.start, None, found.phrase)


def relative(query: str, now: datetime) -> Period | None:
    match = RELATIVE.search(query)
    if match is None:
        return None
    today = now.astimezone(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    phrase = match.group(0)
    if simple := match.group("simple"):
        start = today - timedelta(days=1) if simple.lower() == "yesterday" else today
        return Period(start, start + timedelta(days=1), phrase)
    if unit := match.group("unit"):
        unit = unit.lower()
        which = match.group("which").lower()
        if unit == "weekend":  # the last Saturday and Sunday before today
            saturday = today - timedelta(days=(today.weekday() - 5) % 7 or 7)
            return Period(saturday, saturday + timedelta(days=2), phrase)
        if which == "this":
            starts = {"day": today, "week": today - timedelta(days=today.weekday()),
                      "month": today.replace(day=1), "year": today.replace(month=1, day=1)}
            return Period(starts[unit], None, phrase)
        if which == "past":  # the past week: the last seven days
            return Period(now - timedelta(days=UNITS[unit]), None, phrase)
        if unit == "day":
            return Period(today - timedelta(days=1), today, phrase)
        if unit == "week":
            monday = today - timedelta(days=today.weekday())
            return Period(monday - timedelta(days=7), monday, phrase)
        if unit == "month":
            first = today.replace(day=1)
            return Period((first - timedelta(days=1)).replace(day=1), first, phrase)
        return Period(utc(today.year - 1), utc(today.year), phrase)
    count = match.group("count").lower()
    count = int(count) if count.isdigit() else NUMBERS[count]
    days = count * UNITS[match.group("units").lower()]
    slack = max(1, days // 7)  # "3 weeks ago" is about then, give or take
    try:
        centre = today - timedelta(days=days)
        return Period(centre - timedelta(days=slack), centre + timedelta(days=slack + 1), phrase)
    except OverflowError:  # "3000 years ago" lies before the first date a datetime holds
        return None


# "between August 11 and August 15 2023", "from June to August 2023": the first date may leave
# out the year the second gives.
RANGE = re.compile(r"\b(?:between|from)\s+(?P<first>[\w ,.-]+?)\s+(?:and|to|until|through)\s+(?P<second>[\w ,.-]+)",
                   re.IGNORECASE)
# "the week before 16 November 2023", "the day after May 3, 2023".
BESIDE = re.compile(r"\b(?:the\s+)?(?P<unit>day|week)\s+(?P<side>before|after)\s+(?P<date>[\w ,.-]+)", re.IGNORECASE)


def dated(text: str) -> Period | None:
    """The first date in the text, as absolute reads it (no bound words: the callers' own)."""
    found = absolute(text)
    return found if found is not None and found.start is not None and found.end is not None else None


def ranged(query: str) -> Period | None:
    """A range between two dates, from the start of the first to the end of the second."""
    for match in RANGE.finditer(query):
        second = dated(match.group("second"))
        if second is None:
            continue
        first = dated(match.group("first")) or dated(f"{match.group('first')} {second.start.year}")
        if first is not None and first.start < second.end:
            return Period(first.start, second.end, through(query, match, "second", second))
    return None


def through(query: str, match: re.Match, group: str, found: Period) -> str:
    """The words of the match up to the end of the date found in its group."""
    end = match.start(group) + match.group(group).find(found.phrase) + len(found.phrase)
    return query[match.start():end]


def beside(query: str) -> Period | None:
    """The day or the week just before or just after a date."""
    match = BESIDE.search(query)
    if match is None or (found := dated(match.group("date"))) is None:
        return None
    length = timedelta(days=1 if match.group("unit").lower() == "day" else 7)
    phrase = through(query, match, "date", found)
    if match.group("side").lower() == "before":
        return Period(found.start - length, found.start, phrase)
    return Period(found.end, found.end + length, phrase)


# "the second week of November 2023", "the first weekend of August 2023", "mid-August 2023":
# a part of a month of a given year (without the year, the month as absolute reads it).
ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "last": -1}
WEEK_OF = re.compile(rf"\b(?:the\s+)?(?P<ordinal>{'|'.join(ORDINALS)})\s+(?P<unit>week|weekend)\s+of\s+{MONTH},?\s+{YEAR}\b",
                     re.IGNORECASE)
# "The end of May 2023", "the beginning of June 2023": the same thirds as late and early.
PART = r"(?P<part>early|mid|late|(?:the\s+)?(?:beginning|start|middle|end)\s+of)"
PART_OF = re.compile(rf"\b{PART}[\s-]+{MONTH},?\s+{YEAR}\b", re.IGNORECASE)
# Days 1-10, 11-20, 21 to the end; in this order a season's first, second and third month.
PARTS = {"early": (1, 11), "mid": (11, 21), "late": (21, None)}
PART_WORDS = {"beginning": "early", "start": "early", "middle": "mid", "end": "late"}


def part_name(words: str) -> str:
    """early, mid or late, for a part's words ("the end of" is late)."""
    word = words.lower().split()[-2] if words.lower().endswith("of") else words.lower()
    return PART_WORDS.get(word, word)


def part_of_month(query: str) -> Period | None:
    """A week, a weekend or a third of a month of a given year."""
    for match in (*WEEK_OF.finditer(query), *PART_OF.finditer(query)):
        if (month := month_number(match.group("month"))) is None:
            continue
        year = int(match.group("year"))
        first, following = utc(year, month), month_after(year, month)
        if "part" in match.groupdict():
            start_day, end_day = PARTS[part_name(match.group("part"))]
            end = following if end_day is None else utc(year, month, end_day)
            return Period(utc(year, month, start_day), end, match.group(0))
        nth = ORDINALS[match.group("ordinal").lower()]
        if match.group("unit").lower() == "week":  # days 1-7, 8-14, ...; the last: the month's last 7
            start = following - timedelta(days=7) if nth < 0 else first + timedelta(days=7 * nth)
            return Period(start, start + timedelta(days=7), match.group(0))
        saturdays = [first + timedelta(days=(5 - first.weekday()) % 7 + 7 * n) for n in range(5)]
        saturdays = [saturday for saturday in saturdays if saturday < following]
        if nth >= len(saturdays):
            continue
        return Period(saturdays[nth], saturdays[nth] + timedelta(days=2), match.group(0))
    return None


# "summer 2023", "the summer of 2023", "late summer 2023", "the end of summer 2023": the
# northern hemisphere's seasons by whole months (meteorological: spring March to May, summer
# June to August, autumn September to November); winter 2023 is December 2022 to February 2023,
# the winter whose January and February bear the year. A part is one of the season's months
# (early: its first, mid: its second, late: its third). Not without a year: "fall" alone is far
# more often the verb.
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
SEASON = re.compile(rf"\b(?:{PART}[\s-]+(?:the\s+)?)?(?P<season>spring|summer|autumn|fall|winter)(?:\s+of)?,?\s+{YEAR}\b",
                    re.IGNORECASE)


def season(query: str) -> Period | None:
    match = SEASON.search(query)
    if match is None:
        return None
    first = SEASONS[match.group("season").lower()]
    year = int(match.group("year")) - (first == 12)
    offset, length = (0, 3) if match.group("part") is None else (list(PARTS).index(part_name(match.group("part"))), 1)
    return Period(month_start(year, first + offset), month_start(year, first + offset + length), match.group(0))


def period(query: str, now: datetime) -> Period | None:
    """The period the query names: a range between two dates or beside one, else a part of a
    month or a season, else the most specific date, else a relative phrase."""
    return (ranged(query) or beside(query) or part_of_month(query) or season(query) or absolute(query)
            or relative(query, now))
