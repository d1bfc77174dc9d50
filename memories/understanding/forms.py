"""A word's other forms as the same verb or noun: "bought" for "buy", "went" and "gone" for
"go", "children" for "child" (docs/adr/0071).

PostgreSQL's English stemmer (Snowball) gives "painted" and "painting" one lexeme, but not a
word's irregular forms: to full text "buy" and "bought", "go" and "went", "child" and
"children" are different words, and "What did Melanie buy?" never finds "I bought these
figurines yesterday". LemmInflect's lexicon (drawn from the AGID and SPECIALIST lexicons, for
any English text) knows each word's lemmas as each part of speech and each lemma's
inflections; full text takes a query word's other forms as the same word
(memories.retrieval.fulltext.query_terms).

A word that can be an auxiliary takes none: "might" would bring "may", which is also a month,
and "does" a deer. Of a form's spellings only the usual one is taken ("dreamed", not "dreamt";
"stayed", not "staid"), and only a single word: "over-come" would bring "come" and "came".
"""

from __future__ import annotations

import functools

import lemminflect

PARTS = ("VERB", "NOUN")


@functools.lru_cache(maxsize=20_000)
def other_forms(word: str) -> tuple[str, ...]:
    """The forms `word` (lower case) takes as the same verb or noun, itself left out, each once:
    "went" -> go, goes, going, gone; "children" -> child. Regular forms come too ("painted" ->
    paint, painting...): full text's stemmer gives most of them the word's own lexeme. Only
    forms written as one word of letters: a hyphenated spelling is several words to full text."""
    lemmas = lemminflect.getAllLemmas(word)
    if "AUX" in lemmas:
        return ()
    forms = (spellings[0] for part in PARTS for lemma in lemmas.get(part, ())
             for spellings in lemminflect.getAllInflections(lemma, upos=part).values())
    return tuple(form for form in dict.fromkeys(forms) if form != word and form.isalpha())


def load() -> None:
    """Read LemmInflect's tables now (a third of a second), not on a search."""
    other_forms("went")
