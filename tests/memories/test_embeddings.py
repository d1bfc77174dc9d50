"""The embedder: all-MiniLM-L6-v2 in ONNX Runtime gives the vectors sentence-transformers gives,
so memories embedded by either runtime, and the queries searching them, share one space."""

import numpy as np
import pytest

from memories import embeddings

TEXTS = [
    "The user drinks green tea every morning",
    "x",
    "Der Nutzer trinkt morgens grünen Tee 🍵",
    "Invoices go out on the first working day of each month, and late ones are chased weekly. " * 12,  # > 256 tokens
    "  spaces   and\ttabs\nand newlines  ",
]


@pytest.fixture(scope="module")
def reference():
    return embeddings.SentenceTransformerEmbedder()


def test_the_process_embedder_runs_the_model_in_onnx_runtime():
    embedder = embeddings.get_embedder()
    assert isinstance(embedder, embeddings.OnnxEmbedder)
    assert embeddings.onnx_graph().exists()


def test_onnx_runtime_and_sentence_transformers_give_the_same_vectors(reference):
    ours = np.array(embeddings.get_embedder().embed(TEXTS))
    theirs = np.array(reference.embed(TEXTS))
    assert ours.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert (ours * theirs).sum(axis=1).min() > 0.99999  # long text included: both truncate at 256 tokens


@pytest.mark.parametrize("batch_size", [128, 2], ids=["one batch", "several batches"])
def test_a_batch_of_mixed_lengths_keeps_its_order_and_equals_each_text_alone(batch_size):
    embedder = embeddings.OnnxEmbedder(embeddings.onnx_graph(), batch_size=batch_size)
    batch = np.array(embedder.embed(TEXTS))
    alone = np.array([embedder.embed([text])[0] for text in TEXTS])
    assert (batch * alone).sum(axis=1).min() > 0.99999  # padding and sorting by length change nothing
    assert embedder.embed([]) == []


def test_meaning_decides_nearness():
    tea, invoices, question = np.array(embeddings.get_embedder().embed(
        [TEXTS[0], TEXTS[3], "What does the user drink in the morning?"]))
    assert question @ tea > question @ invoices + 0.3


def test_the_exported_graph_is_reused_not_exported_again():
    graph = embeddings.onnx_graph()
    stamp = graph.stat().st_mtime_ns
    assert embeddings.onnx_graph() == graph and graph.stat().st_mtime_ns == stamp


def test_a_graph_file_that_cannot_be_loaded_is_exported_again():
    graph = embeddings.onnx_graph()
    good = graph.read_bytes()
    try:
        graph.write_bytes(good[: len(good) // 3])  # a copy cut short
        embedder = embeddings.load_onnx_embedder()
        assert np.allclose(embedder.embed([TEXTS[0]]), embeddings.get_embedder().embed([TEXTS[0]]), atol=1e-5)
        assert graph.stat().st_size == len(good)
        assert not list(graph.parent.glob("*.partial"))  # no export leaves a partial file behind
        assert list(graph.parent.glob("*.onnx")) == [graph]  # nor the graphs of other versions
    finally:
        if graph.read_bytes() != good:
            graph.write_bytes(good)
