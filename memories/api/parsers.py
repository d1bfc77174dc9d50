"""Request bodies: JSON only (anything else is 415), at most MAX_REQUEST_BYTES (413), chunked
or not, and only what the store can keep (memories.api.storable)."""

from __future__ import annotations

import json
import math

from rest_framework import exceptions, parsers
from rest_framework.request import Request

from memories.api import storable
from memories.intake.cleaning import TOO_DEEP_MESSAGE
from memory_platform.config import config


class PayloadTooLarge(exceptions.APIException):
    status_code = 413
    default_code = "payload_too_large"
    default_detail = "request body too large"


class LengthRequired(exceptions.APIException):
    status_code = 411
    default_code = "length_required"
    default_detail = "send Content-Length (this server cannot read a chunked request body)"


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: json gives inf, which jsonb and every float column refuse
        raise ValueError(f"number out of range: {text}")
    return value


def _no_constants(name: str):
    raise ValueError(f"{name} is not a JSON number")


class LimitedJSONParser(parsers.BaseParser):
    """Reads at most MAX_REQUEST_BYTES + 1 bytes of the body, whether or not the client sent
    Content-Length, and parses them as strict JSON (no NaN or Infinity, every number finite,
    nesting bounded).

    Deliberately not a DRF JSONParser: for those DRF reads `request.body` whole first, which
    raises Django's RequestDataTooBig above DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB; it was a 500)
    before any limit of ours is looked at, and never sees a chunked body.
    """

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        limit = config().max_request_bytes
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(f"request body is {int(declared)} bytes; the limit is {limit}")
        body = stream.read(limit + 1) if stream is not None else b""
        if len(body) > limit:
            raise PayloadTooLarge(f"request body exceeds the limit of {limit} bytes")
        try:
            data = json.loads(body.decode("utf-8"), parse_float=_finite, parse_constant=_no_constants)
        except RecursionError:
            raise exceptions.ParseError(f"JSON parse error - {TOO_DEEP_MESSAGE}") from None
        except ValueError as exc:  # malformed JSON, bad UTF-8, out-of-range numbers
            raise exceptions.ParseError(f"JSON parse error - {exc}") from None
        storable.check(data)
        return data


class BoundedBodyRequest(Request):
    """DRF's Request, also reading bodies sent with Transfer-Encoding: chunked.

    DRF (like Django) treats a request without Content-Length as having no body, so a
    chunked JSON body arrived as `{}`. Servers that de-chunk the body for the application
    say so with `wsgi.input_terminated` (gunicorn, the production server, does): then the
    body is read from wsgi.input to its end, the parser's limit applying as to any other.
    Elsewhere (runserver) reading it could block or misread, so the answer is 411.
    """

    def _load_stream(self):
        meta = self._request.META
        chunked = "chunked" in meta.get("HTTP_TRANSFER_ENCODING", "").lower()
        if not chunked or meta.get("CONTENT_LENGTH"):
            return super()._load_stream()
        if not meta.get("wsgi.input_terminated"):
            raise LengthRequired()
        self._stream = meta["wsgi.input"]
