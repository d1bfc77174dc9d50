"""The class a question asks for when its members go by a name (memories.understanding.asks),
read without a model or a server."""

import pytest

from memories.understanding.asks import named_class, singular


@pytest.mark.parametrize("query, asks_for", [
    ("What books has Tim read?", "books"),
    ("Which two fantasy novels does Tim particularly enjoy?", "novels"),
    ("What European countries has Maria been to?", "countries"),
    ("Which US cities does John mention visiting?", "cities"),
    ("What fantasy movies does Tim like?", "movies"),
    ("What kind of games has James tried to develop?", "games"),
    ("What type of restaurant did they pick?", "restaurant"),
    ("Which football club does John support?", "club"),
    ("What churches has she sung in?", "churches"),
    ("which country has Tim visited most?", "country"),
    ("Which book did Tim recommend to John?", "book"),
    # narrowed to a place or a part before the auxiliary: the class is still the noun asked for
    ("Which places in Canada was Evan visiting in July 2023?", "places"),
    ("Which city in Ireland will Tim be staying in?", "city"),
    ("What bands from the nineties has Melanie seen?", "bands"),
])
def test_a_class_whose_members_go_by_a_name(query, asks_for):
    assert named_class(query) == asks_for


@pytest.mark.parametrize("query", [
    "What activities does Melanie partake in?",  # pottery, camping: no names
    "What kind of art does Caroline make?",
    "What hobbies does Evan have?",
    "What is Caroline's identity?",
    "What did Tim read last week?",  # no class asked for
    "When did John visit Chicago?",
    "Which is better?",
    "What activities in the park does Melanie enjoy?",  # narrowed, and still no names
    "books",
    "",
])
def test_a_class_that_goes_by_no_name_or_none_asked_for(query):
    assert named_class(query) is None


def test_the_singular_forms_a_plural_may_have():
    assert "city" in singular("cities") and "movie" in singular("movies")
    assert "church" in singular("churches") and "book" in singular("books")
    assert singular("class") == ("class",)  # "ss" is not a plural
