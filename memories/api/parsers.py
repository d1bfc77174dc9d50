from django.conf import settings
from rest_framework import exceptions, parsers


class PayloadTooLarge(exceptions.APIException):
    status_code = 413
    default_code = "payload_too_large"
    default_detail = "request body too large"


class LimitedJSONParser(parsers.JSONParser):
    """JSON only (anything else is 415), and no body over MAX_REQUEST_BYTES (413), whether
    or not the client sent Content-Length."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.MEMORY_PLATFORM["MAX_REQUEST_BYTES"]
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(f"request body is {int(declared)} bytes; the limit is {limit}")
        body = stream.read(limit + 1) if stream is not None else b""
        if len(body) > limit:
            raise PayloadTooLarge(f"request body exceeds the limit of {limit} bytes")
        from io import BytesIO

        return super().parse(BytesIO(body), media_type, parser_context)
