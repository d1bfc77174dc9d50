"""The platform's errors as exceptions: every API error is JSON,
{"error": {"code", "message", "fields"}}, and each status is a class of its own."""

from __future__ import annotations

from typing import Any

import httpx


class PlatformError(Exception):
    """An error answer: `status`, the server's `code`, `message` and `fields` (what was wrong
    with which field, e.g. {"namespace": ["..."]})."""

    def __init__(self, message: str, *, status: int, code: str = "error", fields: dict | None = None,
                 body: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.fields = fields or {}
        self.body = body


class InvalidInput(PlatformError, ValueError):
    """400 or 422: the request failed validation (fields names what)."""


class NotAuthenticated(PlatformError):
    """401: a missing, unknown or revoked API key."""


class OutOfReach(PlatformError):
    """403: what this key may not do (read-only, or limited to other namespaces)."""


class NotFound(PlatformError):
    """404: nothing of that id in the key's organisation and reach."""


class Conflict(PlatformError):
    """409: the change contradicts the current state (a taken key, a closed session...)."""


class PreconditionFailed(PlatformError):
    """412 or 428: a stale or missing version (If-Match)."""


class RateLimited(PlatformError):
    """429: past a rate limit; retry_after says how many seconds to wait."""

    retry_after: float | None = None


class ServerError(PlatformError):
    """5xx."""


BY_STATUS = {400: InvalidInput, 401: NotAuthenticated, 403: OutOfReach, 404: NotFound, 409: Conflict,
             412: PreconditionFailed, 422: InvalidInput, 428: PreconditionFailed, 429: RateLimited}


def error_from(response: httpx.Response) -> PlatformError:
    """The exception an error response stands for, with the server's message."""
    try:
        body = response.json()
    except ValueError:
        body = response.text
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        message, code, fields = str(error.get("message") or response.reason_phrase), error.get("code", "error"), \
            error.get("fields") or {}
    else:
        message, code, fields = (str(body) or response.reason_phrase), "error", {}
    kind = BY_STATUS.get(response.status_code, ServerError if response.status_code >= 500 else PlatformError)
    exc = kind(message, status=response.status_code, code=code, fields=fields, body=body)
    if isinstance(exc, RateLimited) and response.headers.get("Retry-After"):
        exc.retry_after = float(response.headers["Retry-After"])
    return exc
