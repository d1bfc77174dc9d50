"""The write path's building blocks on their own (no database): what makes two memories the
same, what content is refused, how a vector is written for PostgreSQL."""

import numpy as np
import pytest

from memories.errors import InvalidInput
from memories.models import CONTENT_MAX_CHARS
from memories.vectors.embeddings import vector_literal
from memories.writes.kernel import Actor, check_content, content_hash, normalise


@pytest.mark.parametrize("variant", ["tea is good", "Tea  is\tGOOD ", "\u0054ea is good", "Ｔｅａ is good",
                                     "TEA IS GOOD\n"])
def test_spelling_variants_of_one_sentence_are_the_same_memory(variant):
    assert normalise(variant) == "tea is good"
    assert content_hash(variant) == content_hash("tea is good")


def test_different_sentences_are_different_memories():
    assert content_hash("tea is good") != content_hash("tea is bad")
    assert content_hash("Straße") == content_hash("STRASSE")  # case folding, as Unicode defines it


@pytest.mark.parametrize("content", ["", "   ", "\n\t"])
def test_empty_content_is_refused_naming_the_field(content):
    with pytest.raises(InvalidInput) as refused:
        check_content(content)
    assert refused.value.field == "content"


def test_content_up_to_the_limit_is_kept_and_past_it_refused():
    check_content("x" * CONTENT_MAX_CHARS)
    with pytest.raises(InvalidInput, match=str(CONTENT_MAX_CHARS)) as refused:
        check_content("x" * (CONTENT_MAX_CHARS + 1))
    assert refused.value.field == "content"


def test_a_vectors_sql_text_gives_back_the_float32_values_pgvector_stores():
    rng = np.random.default_rng(7)
    vector = rng.standard_normal(384).astype(np.float32)
    vector /= np.linalg.norm(vector)
    text = vector_literal(vector.tolist())
    assert text.startswith("[") and text.endswith("]") and " " not in text
    parsed = np.array([float(part) for part in text[1:-1].split(",")], dtype=np.float32)
    assert np.array_equal(parsed, vector)


def test_an_actor_recording_another_reason_is_otherwise_the_same():
    actor = Actor(changed_by_type="user", agent_id=None, user="someone", reason="first")
    assert actor.because("second") == Actor("user", None, "someone", "second")
    assert actor.reason == "first"
