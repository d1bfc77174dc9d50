"""The parts of Rocchio feedback that need no server (memories.retrieval.rocchio): which
questions it runs for (an inference, the members of a class), and the query moved towards its
seeds."""

import numpy as np
import pytest

from memories.retrieval import rocchio


def unit(*values) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


@pytest.mark.parametrize("question, infers, category", [
    ("Would Dana likely enjoy a pottery class?", True, False),
    ("What might Sam's job be?", True, False),
    ("Could Lee be considered a night owl?", True, False),
    ("What kind of hobbies does Dana have?", False, True),
    ("Which types of music does Sam play?", False, True),
    ("What did Dana paint last weekend?", False, False),
    ("When did Sam go camping?", False, False),
    ("Is the couldron ready?", False, False),  # a word, not a part of one
    ("What kindness did Lee show?", False, False),
])
def test_which_questions_it_runs_for(question, infers, category):
    assert rocchio.asks_inference(question) is infers
    assert rocchio.asks_category(question) is category
    assert rocchio.applies(question) is (infers or category)


def test_rocchio_moves_the_query_towards_the_mean_of_its_seeds():
    query = [1.0, 0.0, 0.0]
    known = {"a": unit(0, 1, 0), "b": unit(0, 1, 0)}
    moved = np.array(rocchio.moved_query(query, ["a", "b", "gone"], known, blend=1.0))
    assert np.isclose(np.linalg.norm(moved), 1.0)
    assert np.allclose(moved, unit(1, 1, 0), atol=1e-6)  # halfway: the query and the seeds' mean weigh alike
    assert rocchio.moved_query(query, ["gone"], known, blend=1.0) is None
