"""Log lines carry no values: an exception is logged by its type and where it was raised, a
request by its route's pattern rather than its path.

An exception's message often quotes the data it choked on: PostgreSQL's unique violation
names the key it found (a namespace, a content hash), a DataError the value it could not
store. Those are the agents' users' data, and logs are kept and shipped far more freely than
the database. The traceback's frames say where to look; the data is in the database.
"""

from __future__ import annotations

import logging
import re
import traceback

from django.conf import settings
from django.urls import resolve


class NoValuesFormatter(logging.Formatter):
    def formatException(self, exc_info) -> str:
        exc_type, exc, tb = exc_info
        lines = ["Traceback (most recent call last):\n", *traceback.format_tb(tb)]
        chained = exc.__cause__ or exc.__context__ if exc is not None else None
        if chained is not None:
            lines.insert(0, f"(while handling {type(chained).__module__}.{type(chained).__qualname__})\n")
        lines.append(f"{exc_type.__module__}.{exc_type.__qualname__} (message not logged: it may hold data)")
        return "".join(lines).rstrip("\n")


# --------------------------------------------------------------------------- request paths

# What a log line says for a path that matches no route: the path itself is whatever the
# client typed, which may be anything (a token, an address).
UNMATCHED = "<unmatched>"

_CONVERTER = re.compile(r"<(?:\w+:)?(\w+)>")  # <uuid:memory_id> -> <memory_id>


def _pattern_text(route: str) -> str:
    """A route as Django's resolver joined it, values left out: `path()` converters by name,
    a regex's named groups by name, its anchors dropped."""
    text, out, index = _CONVERTER.sub(r"<\1>", route), [], 0
    while index < len(text):
        group = re.match(r"\(\?P<(\w+)>", text[index:])
        if group:  # skip to the group's closing parenthesis
            depth, index = 1, index + group.end()
            while index < len(text) and depth:
                depth += {"(": 1, ")": -1}.get(text[index], 0) if text[index - 1] != "\\" else 0
                index += 1
            out.append(f"<{group[1]}>")
            continue
        if text[index] not in "^$":
            out.append(text[index])
        index += 1
    return "/" + "".join(out)


def route_of(path: str) -> str:
    """The route a path is served by, as its pattern ("/api/v1/memories/<memory_id>/tags/<tag>"),
    never the values in it; static files as "/static/<file>"; UNMATCHED for anything else."""
    static = "/" + settings.STATIC_URL.lstrip("/")
    if path.startswith(static):
        return static + "<file>"
    try:
        return _pattern_text(resolve(path).route)
    except Exception:  # Resolver404, or a converter refusing the value: no route
        return UNMATCHED


def request_route(request) -> str:
    """route_of(request.path), from the match Django already made when it has made one."""
    match = getattr(request, "resolver_match", None)
    return _pattern_text(match.route) if match is not None else route_of(request.path_info)


class RequestPathsAsRoutes(logging.Filter):
    """A logging filter: Django's request lines ("Not Found: <path>", "Forbidden (...): <path>")
    name the route pattern instead of the path, which may carry a tag, a key or anything a
    client typed."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        path = getattr(request, "path", None)
        if path and isinstance(record.args, tuple):
            # django.utils.log.log_response escapes its arguments before logging them.
            forms = {path, path.encode("unicode_escape").decode("ascii")}
            if any(isinstance(arg, str) and arg in forms for arg in record.args):
                route = request_route(request)
                record.args = tuple(route if isinstance(arg, str) and arg in forms else arg for arg in record.args)
        return True


# A job's description as RQ writes it: the function's dotted name and its arguments' reprs.
_JOB_CALL = re.compile(r"([A-Za-z_][\w.]*)\((.*)\)", flags=re.S)


class JobArgumentsHidden(logging.Filter):
    """A logging filter: RQ's lines name a job by its description, the call with its arguments
    ("default: memories.lifecycle.erasure.erase_job(scope={...}) (<id>)"), and an argument may
    be a namespace or a subject; the lines keep the function and the job's id, not the values."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "rq" or record.name.startswith("rq."):
            if isinstance(record.args, tuple) and record.args:
                record.args = tuple(_JOB_CALL.sub(r"\1(…)", arg) if isinstance(arg, str) else arg
                                    for arg in record.args)
            elif isinstance(record.msg, str) and not record.args:
                record.msg = _JOB_CALL.sub(r"\1(…)", record.msg)
        return True
