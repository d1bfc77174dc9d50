"""gunicorn settings for `manage.py run`: each web worker loads the embedding model (and the
table of words' forms) once, before its first request, instead of making that request wait
for it; idle connections are kept open long enough for polling clients; workers die with
their master."""

import environ

# Idle keep-alive connections stay open this long (the uvicorn worker takes it as uvicorn's
# timeout_keep_alive). gunicorn's default, 2 s, raced a client polling every 2 s, whose pooled
# connection was closed just as it sent its request ("Remote end closed connection without
# response"). 75 s is what nginx keeps a client's: longer than most clients keep one idle.
keepalive = environ.Env().int("MEMORY_PLATFORM_KEEPALIVE_SECONDS", default=75)

# The access line: no query string (the store's and the list's carry namespaces, keys and tags,
# the agents' users' data), no referer or user agent. Under the uvicorn worker ProductApp writes
# it (memory_platform.serving), with the route's pattern where %(U)s is, since a path may name a
# tag (DELETE /memories/{id}/tags/{tag}) or anything a client typed.
access_log_format = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms'


def post_worker_init(worker):
    from memories.understanding import forms
    from memories.vectors.embeddings import get_embedder, get_query_embedder

    # One thread: a web worker embeds one text at a time, and a search's full-text statement
    # runs in the database meanwhile, on the other core.
    get_embedder(threads=1)
    get_query_embedder(threads=1)
    forms.load()  # a word's other forms, which full text looks for too


def post_fork(server, worker):
    from memory_platform.supervision import die_with_parent

    # A master killed with SIGKILL takes its workers along: the uvicorn worker, unlike gunicorn's
    # own, never checks its parent, and an orphan would keep serving the port unsupervised.
    die_with_parent(server.pid)
