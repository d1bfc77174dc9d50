"""Who and what a memory speaks of, found by rules (memories.understanding.entities.extract): no model, no
network, the same answer every time."""

import pytest

from memories.understanding.entities import extract, name_key, nickname_of


def found(text):
    return [(mention.name, mention.kind) for mention in extract(text)]


@pytest.mark.parametrize("text, expected", [
    ("Caroline: I went to the LGBTQ support group yesterday", [("Caroline", "person")]),
    ("Melanie: thanks Caroline, the kids loved it", [("Melanie", "person"), ("Caroline", "person")]),
    ("Caroline: I moved from Sweden four years ago", [("Caroline", "person"), ("Sweden", "place")]),
    ("My friend Jenny teaches at Lakeside High School", [("Jenny", "person"), ("Lakeside High School", "organization")]),
    ("We drove along Ocean Avenue to Lake Tahoe", [("Ocean Avenue", "place"), ("Lake Tahoe", "place")]),
    ("John volunteers with the Red Cross", [("John", "person"), ("Red Cross", "organization")]),
    ("Caroline's painting won", [("Caroline", "person")]),
])
def test_names_and_what_they_name(text, expected):
    assert found(text) == expected


def test_dates_and_quantities():
    assert found("We raised $1,500 on 8 May, 2023 with 3 kids, and ran 10 km in June 2023") == [
        ("2023-05-08", "date"), ("2023-06", "date"), ("$1500", "quantity"), ("3 kids", "quantity"),
        ("10 km", "quantity")]


def test_a_word_opening_a_sentence_counts_only_if_the_namespace_knows_it():
    mentions = {mention.name: mention.known_only for mention in extract("Painting is fun. Oscar chewed it, said Mel")}
    assert mentions == {"Painting": True, "Oscar": True, "Mel": False}


@pytest.mark.parametrize("text", ["I think so. OK, thanks!", "Hey! Wow, great news", "it may rain in May",
                                  "the NASA and LGBTQ groups"])
def test_words_that_name_nothing(text):
    assert [name for name, kind in found(text) if kind != "date"] == []


def test_keys_fold_case_possessives_and_punctuation():
    assert name_key("  Caroline's ") == "caroline" == name_key("CAROLINE")
    assert name_key("Lake  Tahoe.") == "lake tahoe"


def test_a_short_name_is_the_start_of_a_first_name_of_three_letters_or_more():
    assert nickname_of("mel", "melanie") and nickname_of("mel", "melanie smith")
    assert not nickname_of("me", "melanie") and not nickname_of("melanie", "melanie")
    assert not nickname_of("ann", "joanne") and not nickname_of("mel smith", "melanie")
