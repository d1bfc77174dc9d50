"""Who and what a memory speaks of, found without a model or the network (spec §4's
entities; the rows are memories.models.Entity, EntityAlias and MemoryEntity).

`extract(text)` finds mentions, deterministically:
- people: the speaker of a line written in one of the common transcript shapes (`speaker_of`:
  "Caroline: ...", "Caroline said: ...", "[Caroline] ...", "<Caroline> ...", "**Caroline**: ...",
  "Caroline (10:32): ...", "[10:32] Caroline: ...", "> Caroline wrote: ...", "\"...,\" said
  Caroline."), and capitalised names inside a sentence ("... with Melanie and her kids"),
  possessives folded ("Caroline's" is Caroline);
- organisations and places: capitalised names ending in a word that says so ("Lakeside
  High School", "Ocean Avenue"); organisations after a word of work ("works at Siemens",
  "joined Acme Robotics") and single words after "at" ("at Siemens": a workplace, a shop or a
  venue more often than a town, which "in" names); places after "in", "from", "to", "near"
  ("moved from Sweden");
- dates ("8 May, 2023", "May 2023", "2023-05-08"; memories.understanding.when reads the same
  forms from queries) and quantities ("3 kids", "$500", "10 km").
A capitalised word that opens a sentence is only a candidate (it may be any word): it counts
when it names an entity the namespace already knows (`Mention.known_only`).

Aliases resolve within a namespace: a name recorded as an alias of an entity is that entity,
a person's short name is the person whose name it begins ("Mel" is Melanie) and a first name
alone the person whose full name it begins ("Bob" is Bob Smith), when exactly one person of
the namespace has such a name (memories.writes.entities.resolve).
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
# A name after one of these is where someone works: an organisation ("works at Siemens", "a job
# with Acme", "joined Initech"), whatever its words.
WORK_CUES = re.compile(r"\b(?:(?:work|works|worked|working|job|jobs|employed|intern|interned|interning|internship|"
                       r"position|career|hired|engineer|manager|developer|consultant|volunteer|volunteers|"
                       r"volunteered|volunteering)\s+(?:at|for|with|by)|joined|joining|joins|employer)\s+(?:the\s+)?$",
                       re.IGNORECASE)
CONNECTORS = {"of", "the", "de", "la", "van", "von", "da", "del", "and"}
TITLES = {"mr", "mrs", "ms", "dr"}  # "Dr Patel: ...": a title before a name is part of it
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
# The speaker of a line of a transcript, chat log or mail thread (`speaker_of`): a name of one
# to three capitalised words where such a line puts it. Optionally quoted ("> "), after a time
# ("[10:32] Name: ...", "10:32 - Name: ...", a chat export's "8/5/23, 10:32 PM - Name: ..."),
# then: "Name: ...", "**Name**: ...", "[Name] ...", "<Name> ...", "Name (10:32): ...",
# "Name - ...", or "Name said: ..." and the other verbs of reported speech ("Name wrote:",
# "Name asked ..."). Or a quotation attributed after it, as prose writes speech
# ("\"I went camping,\" said Name." / "... Name said.": ATTRIBUTED).
SPEAKER_NAME = r"(?P<name>[A-Z][\w'’\-]*(?:[ \t]+[A-Z][\w'’\-]*){0,2})"
SPEAKER_TIME = r"\d{1,2}:\d{2}(?::\d{2})?(?:[ \t]?[AaPp]\.?[Mm]\.?)?"
SPEAKER_DATE = r"\d{1,4}[-/.]\d{1,2}[-/.]\d{2,4}"  # 2023-05-08, 8/5/23, 08.05.2023
SPEECH_VERBS = ("said|says|wrote|writes|asked|asks|replied|replies|answered|answers|added|adds|explained|"
                "explains|responded|responds|told|tells|shared|shares|mentioned|mentions|texted|texts|posted|posts")
SPEAKER = re.compile(
    rf"""^\s*(?:>[ \t]*)*                                      # quoted, in a mail thread
    (?:\[[\d:/.,\-\sAaPpMmTZ]{{4,40}}\][ \t]*       # [10:32] / 10:32 - / 8/5/23, 10:32 PM -
      |(?:{SPEAKER_DATE},?[ \t]+)?{SPEAKER_TIME}[ \t]*[-–—|]?[ \t]*)?
    (?:\*\*{SPEAKER_NAME}\*\*[ \t]*:|\*\*{SPEAKER_NAME.replace("name", "bold")}:\*\*   # **Name**: / **Name:**
      |\[{SPEAKER_NAME.replace("name", "bracketed")}\][ \t]*:?                  # [Name] / [Name]:
      |<{SPEAKER_NAME.replace("name", "angled")}>[ \t]*:?                         # <Name>
      |{SPEAKER_NAME.replace("name", "timed")}[ \t]*\([^()\n]{{1,40}}\)[ \t]*:     # Name (10:32):
      |{SPEAKER_NAME.replace("name", "reporting")}[ \t]+(?:{SPEECH_VERBS})\b[ \t]*[:,]?    # Name said: / said,
      |{SPEAKER_NAME.replace("name", "dashed")}[ \t]+[-–—][ \t]+                  # Name - / Name —
      |{SPEAKER_NAME.replace("name", "plain")}[ \t]*:(?!//))                      # Name: (not a URL)
    """, re.VERBOSE)
ATTRIBUTED = re.compile(
    rf"""^\s*["“].+["”][ \t]*,?[ \t]*                        # "I went camping," (quotes inside too)
    (?:(?:{SPEECH_VERBS})[ \t]+{SPEAKER_NAME.replace("name", "after")}          # said Name.
      |{SPEAKER_NAME.replace("name", "before")}[ \t]+(?:{SPEECH_VERBS}))        # Name said.
    [ \t]*[.!]?\s*$""", re.VERBOSE)
# Capitalised words before a colon or a dash that head a line but name nobody: labels of
# notes, mail and documents ("Note:", "Re:", "Update -"), and the roles of a chat
# ("User:", "Assistant:"), which are not a person's name (the Mem0 door maps a role to one).
NOT_SPEAKERS = {
    "note", "notes", "nb", "update", "updates", "re", "fw", "fwd", "subject", "summary", "todo", "to-do", "done",
    "warning", "important", "reminder", "tip", "hint", "question", "answer", "q", "a", "ps", "edit", "edited",
    "context", "example", "step", "goal", "goals", "result", "results", "status", "action", "task", "tasks", "title",
    "date", "time", "from", "cc", "bcc", "topic", "agenda", "decision", "reason", "source", "sources", "fact",
    "facts", "preference", "memory", "memories", "info", "fyi", "tl;dr", "tldr", "conclusion", "problem",
    "solution", "issue", "bug", "fix", "error", "caution", "attention", "breaking", "news", "location", "address",
    "phone", "email", "url", "link", "price", "cost", "total", "name", "age", "level", "score", "rule", "rules",
    "user", "users", "assistant", "system", "bot", "ai", "human", "agent", "customer", "support", "admin",
    "moderator", "host", "guest", "speaker", "narrator", "interviewer", "interviewee", "me", "everyone", "all",
    "morning", "afternoon", "evening", "night", "weekend", "week", "day", "plan", "plans", "idea", "ideas",
    "chapter", "part", "section", "figure", "table", "appendix", "day", "session", "meeting", "minutes",
}
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
    if WORK_CUES.search(preceding):
        return "organization", True
    if before == "at" and len(words) == 1:  # "at Siemens", "at Starbucks": towns are mostly "in"
        return "organization", True
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


# Shapes other texts take too ("Paris - a city I love", "Rome said goodbye to..."): the
# name they show is a person only if the namespace does not know it as something else.
WEAK_SHAPES = {"dashed", "reporting"}


def speaker_of(text: str) -> tuple[str, int] | None:
    """Who speaks the text, if it opens in one of the common shapes of a transcript's line
    (SPEAKER), and where their words begin; None when it does not, or when what stands there
    is a label or a role rather than a name (NOT_SPEAKERS, NOT_NAMES)."""
    found = _speaker(text)
    return found[:2] if found else None


def _speaker(text: str) -> tuple[str, int, bool, int] | None:
    """speaker_of's name and where the words begin, whether the shape is a weak one, and where
    the words end (before an attribution that follows them)."""
    match = SPEAKER.match(text)
    attributed = ATTRIBUTED.match(text) if match is None else None
    if attributed is not None:  # the words are the quotation before the name
        match = attributed
    if match is None:
        return None
    shape, name = next((group, value) for group, value in match.groupdict().items() if value)
    words = [word.lower() for word in name.split()]
    if any(word in NOT_SPEAKERS for word in words) or any(
            word in NOT_NAMES and not (index == 0 < len(words) - 1 and word in TITLES) for index, word in enumerate(words)):
        return None
    if name.isupper() and len(name) <= 5:  # "FAQ:", "NB:": an acronym labels, it does not speak
        return None
    if attributed is not None:
        return name, 0, False, match.start(shape)
    return name, match.end(), shape in WEAK_SHAPES and not match.group(0).rstrip().endswith(":"), len(text)


# What the parentheses of "Name (10:32): ..." hold when they are the line's time stamp.
STAMP = re.compile(rf"[ \t]*(?:{SPEAKER_DATE}|{SPEAKER_TIME})(?:[ \t,T]+{SPEAKER_TIME})?[ \t]*")


def as_said(text: str) -> str:
    """The text with each of its lines that a transcript writes in one of its shapes (SPEAKER,
    ATTRIBUTED) written "Name: words": without the line's time stamp, the markup around the name
    and the quotation marks. What a memory's embedding is made of (embeddings.embed_contents), so
    that the vector of what someone said does not depend on how a transcript wrote who said it
    and when (a chat export's "8/5/23, 10:32 PM - Caroline: ...", prose's '"...," said
    Caroline.'): a time stamp, different on every line, is nothing a question means. A line in a
    weak shape ("Paris - a city I love"), a label's ("Note: ..."), or whose parentheses hold more
    than a time ("Budget (2024): ...") stays as written; so does a line already "Name: words"."""
    return "\n".join(_said(line) for line in text.split("\n"))


def _said(line: str) -> str:
    found = _speaker(line)
    if found is None or found[2]:
        return line
    name, start, _, end = found
    match = SPEAKER.match(line)
    if match is not None and match.group("timed"):
        stamp = line[match.end("timed"):match.end()].strip().removesuffix(":").strip()
        if not STAMP.fullmatch(stamp.removeprefix("(").removesuffix(")")):
            return line
    words = line[start:end]
    if end < len(line):  # a quotation attributed after it: '"I went camping," said Caroline.'
        closes = max(words.rfind('"'), words.rfind("”"))
        words = words[:closes].strip().removeprefix('"').removeprefix("“").strip().removesuffix(",")
    words = words.strip()
    return f"{name}: {words}" if words else line


def names(text: str) -> list[Mention]:
    found = []
    speaker = _speaker(text)
    body_start, body_end = 0, len(text)
    if speaker:
        found.append(Mention(speaker[0], "person", speaker[0], speaker=True, guessed=speaker[2]))
        body_start, body_end = speaker[1], speaker[3]
    for match in NAME.finditer(text, body_start, body_end):
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


def first_name_of(short: str, full: str) -> bool:
    """Whether `short` is the first name alone of the person name `full` ("bob" of "bob smith")."""
    words = full.split()
    return len(words) > 1 and " " not in short and words[0] == short
