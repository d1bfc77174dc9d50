"""The embedder: all-MiniLM-L6-v2 in ONNX Runtime gives the vectors sentence-transformers gives,
so memories embedded by either runtime, and the queries searching them, share one space."""

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection
from django.test import override_settings

from memories.caching import cache
from memories.vectors import embeddings
from tests.knobs import with_search_knobs

# The process's embedder is the active model's, which the database names.
pytestmark = pytest.mark.django_db

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
        assert all(other.name.startswith(graph.stem)  # nor the graphs of other versions
                   for other in graph.parent.glob("*.onnx"))
    finally:
        if graph.read_bytes() != good:
            graph.write_bytes(good)


# --------------------------------------------------------------------------- int8 queries


def test_the_quantized_model_gives_nearly_the_float32_vectors():
    exact = np.array(embeddings.get_embedder().embed(TEXTS))
    quantized = np.array(embeddings.load_onnx_embedder(quantized=True).embed(TEXTS))
    assert np.allclose(np.linalg.norm(quantized, axis=1), 1.0, atol=1e-5)
    cosine = (exact * quantized).sum(axis=1)
    assert cosine.min() > 0.97 and cosine.min() < 0.99999  # near, and really another model
    assert embeddings.quantized_graph().stat().st_size < embeddings.onnx_graph().stat().st_size / 3


def test_a_query_embedded_in_int8_still_finds_the_float32_memory_it_means():
    memories = np.array(embeddings.get_embedder().embed([TEXTS[0], TEXTS[3]]))  # tea, invoices
    question = np.array(embeddings.load_onnx_embedder(quantized=True).embed(
        ["What does the user drink in the morning?"])[0])
    assert question @ memories[0] > question @ memories[1] + 0.3


def test_a_quantized_graph_that_cannot_be_loaded_is_made_again():
    graph = embeddings.quantized_graph()
    good = graph.read_bytes()
    try:
        graph.write_bytes(good[: len(good) // 2])
        embedder = embeddings.load_onnx_embedder(quantized=True)
        assert embedder.graph == graph and graph.stat().st_size == len(good)
        assert not list(graph.parent.glob("*.partial"))
    finally:
        if graph.read_bytes() != good:
            graph.write_bytes(good)


def test_queries_are_embedded_in_float32_unless_int8_is_asked_for(int8_queries, settings):
    assert embeddings.get_query_embedder().graph == embeddings.quantized_graph()
    assert embeddings.get_embedder().graph == embeddings.onnx_graph()  # memories: float32 still
    with override_settings(MEMORY_PLATFORM=with_search_knobs(settings.MEMORY_PLATFORM,
                                                             QUERY_EMBEDDING_PRECISION="float32")):
        assert embeddings.get_query_embedder() is embeddings.get_embedder()


def test_an_unknown_precision_stops_the_product_before_it_serves(settings):
    settings.MEMORY_PLATFORM = with_search_knobs(settings.MEMORY_PLATFORM, QUERY_EMBEDDING_PRECISION="int4")
    # `manage.py run` runs the system checks before it migrates or starts a server
    with pytest.raises(SystemCheckError, match="MEMORY_PLATFORM_QUERY_EMBEDDING_PRECISION must be one of "
                                               "float32, int8, not 'int4'"):
        call_command("check")


def test_the_query_cache_never_serves_one_precision_for_the_other(int8_queries, settings, embedded_servers):
    text = "a query asked in both precisions 51d0"
    int8_key = cache.query_key(text)
    cache.client().delete(int8_key)
    int8_vector = np.array(cache.query_embedding(text))
    assert cache.client().exists(int8_key)
    with override_settings(MEMORY_PLATFORM=with_search_knobs(settings.MEMORY_PLATFORM,
                                                             QUERY_EMBEDDING_PRECISION="float32")):
        float32_key = cache.query_key(text)
        cache.client().delete(float32_key)
        cache._embed_query_cached.cache_clear()
        float32_vector = np.array(cache.query_embedding(text))
    assert float32_key != int8_key
    assert np.allclose(float32_vector, embeddings.get_embedder().embed([text])[0], atol=1e-6)
    assert not np.allclose(int8_vector, float32_vector, atol=1e-4)


def test_the_databases_text_hash_is_pythons_for_any_text():
    """The switch compares memory_embeddings.text_hash, made in Python, with the hash of each
    memory's content made in SQL: both are SHA-256 of the UTF-8 bytes, backslashes and
    bytea's own escapes included."""
    texts = [*TEXTS, "back\\slash", "\\x41", "\\001\\377", "ends in \\", "\\\\", "", "Grüße ☕ 𝄞"]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {embeddings.text_hash_sql('t')} FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, n) "
                       "ORDER BY n", [texts])
        assert [digest for (digest,) in cursor.fetchall()] == [embeddings.text_hash(text) for text in texts]
