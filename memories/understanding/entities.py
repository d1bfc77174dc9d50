"""Who and what a memory speaks of, found without a model or the network (spec §4's
entities; the rows are memories.models.Entity, EntityAlias and MemoryEntity).

`extract(text)` finds mentions, deterministically:
- people: a speaker's name before a colon ("Caroline: ..."), and capitalised names inside a
  sentence ("... with Melanie and her kids"), possessives folded ("Caroline's" is Caroline);
- organisations and places: capitalised names ending in a word that says so ("Lakeside
  High School", "Ocean Avenue"), or places after "in", "at", "from", "to", "near" ("moved
  from Sweden");
- dates ("8 May, 2023", "May 2023", "2023-05-08"; memories.understanding.when reads the same
  forms from queries) and quantities ("3 kids", "$500", "10 km").
A capitalised word that opens a sentence is only a candidate (it may be any word): it counts
when it names an entity the namespace already knows (`Mention.known_only`).

Aliases resolve within a namespace: a name recorded as an alias of an entity is that entity,
and a person's short name is the person whose name it begins ("Mel" is Melanie) when exactly
one person of the namespace has such a name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memories.understanding.when import DATE_PATTERNS, MONTHS, month_number

ORGANIZATION_WORDS = {
    "inc", "ltd", "llc", "corp", "corporation", "company", "co", "university", "college", "school", "academy",
    "institute", "bank", "foundation", "association", "club", "society", "agency", "center", "centre", "hospital",
    "clinic", "church", "museum", "library", "council", "committee", "department", "ministry", "group", "band",
    "studio", "studios", "shelter", "organization", "organisation", "charity", "federation", "union", "labs",
}
PLACE_WORDS = {
    "street", "st", "avenue", "ave", "road", "rd", "city", "town", "village", "county", "state", "province", "park",
    "lake", "river", "mountain", "mountains", "mount", "beach", "island", "islands", "bay", "valley", "hills",
    "forest", "canyon", "coast", "falls", "square", "station", "airport", "harbor", "harbour", "desert", "sea",
    "ocean", "peninsula", "country", "republic", "kingdom", "trail", "bridge",
}
PLACE_CUES = {"in", "at", "from", "to", "near", "visited", "visiting", "around", "across", "toward", "towards"}
CONNECTORS = {"of", "the", "de", "la", "van", "von", "da", "del", "and"}
# Capitalised words that are not names wherever they stand.
NOT_NAMES = {
    "i", "i'm", "i've", "i'd", "i'll", "im", "ive", "ok", "okay", "hey", "hi", "hello", "thanks", "thank", "wow",
    "yes", "yeah", "no", "oh", "omg", "lol", "haha", "cool", "great", "awesome", "sure", "congrats", "congratulations",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "today", "tomorrow", "yesterday",
    "mr", "mrs", "ms", "dr", "god", "mom", "dad", "mum", "christmas", "easter", "halloween", "thanksgiving",
    # Words that open sentences: never a name on their own.
    "a", "an", "the", "my", "our", "your", "his", "her", "their", "its", "we", "you", "he", "she", "they", "it",
    "this", "that", "these", "those", "there", "here", "what", "when", "where", "why", "how", "who", "which",
    "if", "so", "but", "and", "or", "also", "just", "then", "well", "maybe", "it's", "that's", "there's", "let's",
    "we're", "you're", "they're", "i'll", "we've", "don't", "didn't", "can't", "not", "all", "some", "any", "one",
    "after", "before", "as", "at", "in", "on", "for", "with", "by", "to", "from", "of", "do", "did", "does", "is",
    "are", "was", "were", "be", "been", "have", "has", "had", "will", "would", "could", "should", "can", "may",
    "might", "must", "really", "very", "definitely", "absolutely", "totally", "good", "nice", "glad", "sorry",
    *MONTHS,
}
WORD = r"[A-Z][a-zA-Z'’\-]*[a-zA-Z]"
NAME = re.compile(rf"\b{WORD}(?:\s+(?:(?:of|the|de|la|van|von|da|del)\s+)?{WORD})*")
SPEAKER = re.compile(r"^\s*([A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*)?)\s*:")
SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|:\s+|\n\s*|[\"“(]\s*)$")
QUANTITY = re.compile(
    r"(?<![\w.])(?:(?P<money>[$€£])\s?(?P<amount>\d[\d,]*(?:\.\d+)?)"
    r"|(?P<number>\d[\d,]*(?:\.\d+)?)\s?(?P<unit>%|percent|km|kilometers|kilometres|miles|mi|kg|kilograms|lbs|pounds|"
    r"hours|hour|minutes|minute|days|day|weeks|week|months|month|years|year|kids|children|people|times|dollars|"
    r"euros|books|pets|dogs|cats)\b)")


@dataclass(frozen=True)
class Mention:
    text: str  # as written
    kind: str  # an EntityKind value
    name: str  # the canonical form: "Caroline", "2023-05-08", "3 kids"
    known_only: bool = False  # opens a sentence: an entity only if the namespace knows it already
    guessed: bool = False  # the kind is a guess (a preposition before it, or none): a known entity's wins
    speaker: bool = False  # the memory is in this person's words ("Caroline: ...")

    @property
    def key(self) -> str:
        return name_key(self.name)


def name_key(name: str) -> str:
    """A name folded for matching: lower case, possessive and punctuation dropped, spaces single."""
    name = re.sub(r"['’]s\b", "", name.strip())
    return " ".join(re.sub(r"[^\w\s-]", " ", name.lower()).split())


def kind_of(name: str, preceding: str) -> tuple[str, bool]:
    """The kind of a capitalised name, and whether that is only a guess."""
    words = name.lower().split()
    if words[-1] in ORGANIZATION_WORDS:
        return "organization", False
    if words[-1] in PLACE_WORDS:
        return "place", False
    before = preceding.split()[-1].lower() if preceding.split() else ""
    if before in PLACE_CUES:
        return "place", True
    if before == "the":  # "the Red Cross", "the Boston Celtics": not a person
        return "organization", True
    return "person", True


def trimmed(name: str) -> str | None:
    """The name without possessive, leading "The" or words that are not names; None if nothing is left."""
    name = re.sub(r"['’]s$", "", name)
    words = name.split()
    while words and (words[0].lower() in NOT_NAMES or words[0].lower() in CONNECTORS):
        words = words[1:]
    while words and (words[-1].lower() in CONNECTORS or words[-1].lower() in NOT_NAMES):
        words = words[:-1]
    if not words or len("".join(words)) < 2:
        return None
    return " ".join(words)


def names(text: str) -> list[Mention]:
    found = []
    speaker = SPEAKER.match(text)
    body_start = 0
    if speaker and speaker.group(1).lower() not in NOT_NAMES:
        found.append(Mention(speaker.group(1), "person", speaker.group(1), speaker=True))
        body_start = speaker.end()
    for match in NAME.finditer(text, body_start):
        name = trimmed(match.group(0))
        if name is None or name.isupper() and len(name) <= 5:  # "LGBTQ", "OK": acronyms say too little
            continue
        preceding = text[:match.start()]
        opens = bool(SENTENCE_START.search(preceding)) and name.split()[0] == match.group(0).split()[0]
        kind, guessed = kind_of(name, preceding)
        found.append(Mention(name, kind, name, known_only=opens and " " not in name, guessed=guessed))
    return found


def dates(text: str) -> list[Mention]:
    found, taken = [], []
    for pattern in DATE_PATTERNS[:4]:  # with a year: "8 May, 2023", "May 8, 2023", "2023-05-08", "May 2023"
        for match in pattern.finditer(text):
            if any(start <= match.start() < end for start, end in taken):
                continue
            parts = match.groupdict()
            if (month := month_number(parts["month"])) is None:
                continue
            name = f"{parts['year']}-{month:02d}" + (f"-{int(parts['day']):02d}" if parts.get("day") else "")
            taken.append((match.start(), match.end()))
            found.append(Mention(match.group(0), "date", name))
    return found


def quantities(text: str) -> list[Mention]:
    found = []
    for match in QUANTITY.finditer(text):
        if match.group("money"):
            name = f"{match.group('money')}{match.group('amount').replace(',', '')}"
        else:
            name = f"{match.group('number').replace(',', '')} {match.group('unit').lower()}"
        found.append(Mention(match.group(0), "quantity", name))
    return found


def extract(text: str) -> list[Mention]:
    """The entities a text mentions, each once (by kind and key), in the order written; names
    that are dates ("May") are dates, not people."""
    seen, mentions = set(), []
    for mention in [*names(text), *dates(text), *quantities(text)]:
        if (mention.kind, mention.key) in seen or not mention.key:
            continue
        seen.add((mention.kind, mention.key))
        mentions.append(mention)
    return mentions


def nickname_of(short: str, full: str) -> bool:
    """Whether `short` is a short form of the person name `full` ("mel" of "melanie"): the first
    name begins with it, and it has at least three letters."""
    first = full.split()[0] if full else ""
    return len(short) >= 3 and " " not in short and first != short and first.startswith(short)
