"""gunicorn settings for `manage.py run`: each web worker loads the embedding model once,
before its first request, instead of making that request wait for it."""


def post_worker_init(worker):
    from memories.embeddings import get_embedder

    get_embedder()
