"""Log lines carry no values: an exception is logged by its type and where it was raised.

An exception's message often quotes the data it choked on: PostgreSQL's unique violation
names the key it found (a namespace, a content hash), a DataError the value it could not
store. Those are the agents' users' data, and logs are kept and shipped far more freely than
the database. The traceback's frames say where to look; the data is in the database.
"""

from __future__ import annotations

import logging
import traceback


class NoValuesFormatter(logging.Formatter):
    def formatException(self, exc_info) -> str:
        exc_type, exc, tb = exc_info
        lines = ["Traceback (most recent call last):\n", *traceback.format_tb(tb)]
        chained = exc.__cause__ or exc.__context__ if exc is not None else None
        if chained is not None:
            lines.insert(0, f"(while handling {type(chained).__module__}.{type(chained).__qualname__})\n")
        lines.append(f"{exc_type.__module__}.{exc_type.__qualname__} (message not logged: it may hold data)")
        return "".join(lines).rstrip("\n")
