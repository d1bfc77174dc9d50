"""Work a request can leave until its response has gone out.

    after_response(lambda: client.set(key, value))

Inside a request, the callable runs when the server closes the response, once the client has
it (Django's request_finished signal); outside one (jobs, commands, the shell) it runs at
once. Each runs even if an earlier one failed: a failure is logged, never raised, since the
response has been sent. Only for work whose loss the caller can bear (a cache write, a
counter in Redis): a worker killed in between never runs it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

logger = logging.getLogger(__name__)

_local = threading.local()


def after_response(work: Callable[[], object]) -> None:
    pending = getattr(_local, "pending", None)
    if pending is None:
        work()
    else:
        pending.append(work)


def request_started(**kwargs) -> None:
    _local.pending = []


def request_finished(**kwargs) -> None:
    pending, _local.pending = getattr(_local, "pending", None), None
    for work in pending or ():
        try:
            work()
        except Exception:
            logger.exception("work left for after the response failed")
