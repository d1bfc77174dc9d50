"""What a question asks for, when its answers go by a name.

"What books has Tim read?", "Which city did John recommend?", "What kind of games has James
tried?" ask for the members of a class whose members are called by a name: a book by its
title, a city, a team, a game. Such a question is answered by memories that name something
(memories.retrieval.naming; docs/adr/0067). The class is the noun the question asks about
("what/which", up to two words before it, then an auxiliary; or "what kind/type/sort of"), and
it goes by a name when it is one of the product's own place and organisation words
(memories.understanding.entities) or a titled work (NAMED_WORKS).
"""

from __future__ import annotations

import re

from memories.understanding.entities import ORGANIZATION_WORDS, PLACE_WORDS

# Classes whose members are called by a name, beside the places and organisations the entity
# extractor already knows by these words.
NAMED_WORKS = {
    "book", "novel", "movie", "film", "show", "series", "song", "album", "podcast", "game", "app", "band", "team",
    "brand", "author", "artist", "composer", "writer", "musician", "singer", "actor", "restaurant", "place",
    "location", "destination",
}
NAMED_CLASSES = frozenset(PLACE_WORDS | ORGANIZATION_WORDS | NAMED_WORKS)

AUXILIARY = r"(?:is|are|was|were|do|does|did|has|have|had|can|could|would|will|might|should)"
KIND_OF = re.compile(r"\b(?:what|which)\s+(?:kinds?|types?|sorts?)\s+of\s+([a-z]+)\b", re.IGNORECASE)
# "Which two fantasy novels does ...": the last word before the auxiliary, up to two words after
# "what/which", or before a place or part it is narrowed to ("Which places in Canada was ...",
# "Which city in Ireland will ...").
NARROWED = r"(?:\s+(?:in|of|from|on|at|near|around|across|outside)\s+(?:the\s+)?[\w-]+)?"
CLASS = re.compile(rf"\b(?:what|which)\s+(?!{AUXILIARY}\b)(?:[\w-]+\s+){{0,2}}?([a-z]+){NARROWED}\s+{AUXILIARY}\b",
                   re.IGNORECASE)


def singular(word: str) -> tuple[str, ...]:
    """The forms `word` may be the plural of, itself first: cities -> city, movies -> movie,
    churches -> church."""
    forms = [word]
    if word.endswith("ies"):
        forms += [word[:-3] + "y", word[:-1]]
    if word.endswith("es"):
        forms.append(word[:-2])
    if word.endswith("s") and not word.endswith("ss"):
        forms.append(word[:-1])
    return tuple(forms)


def named_class(query: str) -> str | None:
    """The class the question asks for, as written, if its members go by a name; else None."""
    found = KIND_OF.search(query) or CLASS.search(query)
    if found is None:
        return None
    word = found.group(1)
    return word if any(form in NAMED_CLASSES for form in singular(word.lower())) else None
