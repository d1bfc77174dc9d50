"""gunicorn settings for `manage.py run`: each web worker loads the embedding model once,
before its first request, instead of making that request wait for it."""

# The access log names the path without its query string: the store's and the list's query
# strings carry namespaces, keys and tags, which are the agents' users' data. No referer or
# user agent either, for the same reason. (A path may still name a tag, in DELETE
# /memories/{id}/tags/{tag}; tags holding a secret, or personal data by policy, are never stored.)
access_log_format = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms'


def post_worker_init(worker):
    from memories.embeddings import get_embedder, get_query_embedder

    # One thread: a web worker embeds one text at a time, and a search's full-text statement
    # runs in the database meanwhile, on the other core.
    get_embedder(threads=1)
    get_query_embedder(threads=1)
