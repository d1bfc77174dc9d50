"""gunicorn settings for `manage.py run`: each web worker loads the embedding model once,
before its first request, instead of making that request wait for it."""


def post_worker_init(worker):
    from memories.embeddings import get_embedder, get_query_embedder

    # One thread: a web worker embeds one text at a time, and a search's full-text statement
    # runs in the database meanwhile, on the other core.
    get_embedder(threads=1)
    get_query_embedder(threads=1)
