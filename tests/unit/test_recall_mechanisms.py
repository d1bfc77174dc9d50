"""The parts of Rocchio feedback that need no server (memories.retrieval.rocchio): which
questions ask for an inference, and the query moved towards its seeds."""

import numpy as np
import pytest

from memories.retrieval import rocchio


def unit(*values) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


@pytest.mark.parametrize("question, infers", [
    ("Would Dana likely enjoy a pottery class?", True),
    ("What might Sam's job be?", True),
    ("Could Lee be considered a night owl?", True),
    ("What did Caroline paint last weekend?", False),
    ("When did Melanie go camping?", False),
    ("What kind of hobbies does Evan pursue?", False),
    ("Is the couldron ready?", False),  # a word, not a part of one
])
def test_which_questions_ask_for_an_inference(question, infers):
    assert rocchio.asks_inference(question) is infers


def test_rocchio_moves_the_query_towards_the_mean_of_its_seeds():
    query = [1.0, 0.0, 0.0]
    known = {"a": unit(0, 1, 0), "b": unit(0, 1, 0)}
    moved = np.array(rocchio.moved_query(query, ["a", "b", "gone"], known, blend=1.0))
    assert np.isclose(np.linalg.norm(moved), 1.0)
    assert np.allclose(moved, unit(1, 1, 0), atol=1e-6)  # halfway: the query and the seeds' mean weigh alike
    assert rocchio.moved_query(query, ["gone"], known, blend=1.0) is None
