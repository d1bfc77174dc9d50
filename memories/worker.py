"""The RQ worker `manage.py run` starts."""

from rq.worker import SimpleWorker


class EmbeddingWorker(SimpleWorker):
    """Runs jobs in its own process (no fork per job) and loads the embedding model before it
    registers, so the first job does not pay for loading it and a worker that /health reports
    is ready to embed."""

    def __init__(self, *args, **kwargs):
        from memories.embeddings import get_embedder

        get_embedder()
        super().__init__(*args, **kwargs)
