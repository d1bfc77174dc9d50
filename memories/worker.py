"""The RQ worker `manage.py run` starts."""

import functools
import os

from rq.worker import SimpleWorker

from memory_platform import supervision


# How often the worker's maintenance runs (RQ's default: 10 minutes). It is also when a worker
# without a scheduler tries again for the scheduler's locks: a worker restarted after a crash
# asks for them once as it starts, and if its predecessor's scheduler has not let them go yet
# (it stops on its parent's death, but not always before the new worker asks), the new one
# would run without a scheduler for ten minutes. Each run also cleans the queues' registries,
# a few Redis commands.
MAINTENANCE_SECONDS = 30


class EmbeddingWorker(SimpleWorker):
    """Runs jobs in its own process (no fork per job) and loads the embedding model before it
    registers, so the first job does not pay for loading it and a worker that /health reports
    is ready to embed. What it forks (RQ's scheduler, with --with-scheduler) dies with it, and a
    worker that could not take the scheduler's locks as it started tries again every
    MAINTENANCE_SECONDS."""

    def __init__(self, *args, **kwargs):
        from memories.vectors.embeddings import get_embedder

        get_embedder()
        _children_die_with_their_parent()
        kwargs.setdefault("maintenance_interval", MAINTENANCE_SECONDS)
        super().__init__(*args, **kwargs)


@functools.cache
def _children_die_with_their_parent() -> None:
    """Every process forked from here on gets SIGTERM when its parent dies. RQ's scheduler takes
    it as a stop, releasing its locks; without it, a worker killed with SIGKILL left its
    scheduler running under init, holding the locks the restarted worker's scheduler needs."""
    forked_by = {}
    os.register_at_fork(before=lambda: forked_by.__setitem__("pid", os.getpid()),
                        after_in_child=lambda: supervision.die_with_parent(forked_by["pid"]))
