"""A word's other forms as the same verb or noun (memories.understanding.forms), read without
a database: what full text also looks for when a query holds the word."""

import pytest

from memories.understanding.forms import other_forms


@pytest.mark.parametrize("word, forms", [
    ("buy", {"bought"}),
    ("bought", {"buy"}),
    ("went", {"go", "gone"}),
    ("feel", {"felt"}),
    ("broken", {"break", "broke"}),
    ("children", {"child"}),
    ("met", {"meet"}),
])
def test_an_irregular_word_brings_its_other_forms(word, forms):
    assert forms <= set(other_forms(word))
    assert word not in other_forms(word)


@pytest.mark.parametrize("word", ["might", "may", "could", "does", "has"])
def test_a_word_that_can_be_an_auxiliary_brings_none(word):
    """"might" would bring "may", which is also a month."""
    assert other_forms(word) == ()


@pytest.mark.parametrize("word", ["melanie", "caroline", "2023"])
def test_a_name_or_a_number_brings_none(word):
    assert other_forms(word) == ()


def test_of_a_forms_spellings_only_the_usual_one():
    assert "dreamed" in other_forms("dream") and "dreamt" not in other_forms("dream")
    assert "stayed" in other_forms("stay") and "staid" not in other_forms("stay")


def test_a_form_is_one_word():
    """LemmInflect spells "overcome" "over-come" too: full text would read "come" in it, and
    "How did John overcome his injury?" would look for every memory that says "came"."""
    assert "overcame" in other_forms("overcome")
    assert all(form.isalpha() for form in other_forms("overcome") + other_forms("undergo"))
