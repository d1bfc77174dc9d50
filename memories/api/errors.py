"""Every API error is JSON: {"error": {"code", "message", "fields"}}, never a stack trace."""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.http import Http404, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response

from memories import errors
from memory_platform import database
from memory_platform.log_format import request_route

logger = logging.getLogger(__name__)

SERVICE_STATUS = {
    errors.NotFound: status.HTTP_404_NOT_FOUND,
    errors.InvalidInput: status.HTTP_400_BAD_REQUEST,
    errors.Conflict: status.HTTP_409_CONFLICT,
    errors.StaleVersion: status.HTTP_412_PRECONDITION_FAILED,
    errors.VersionRequired: status.HTTP_428_PRECONDITION_REQUIRED,
    errors.OutOfReach: status.HTTP_403_FORBIDDEN,
}


def error_body(code: str, message: str, fields: dict | None = None, **extra) -> dict:
    return {"error": {"code": code, "message": message, "fields": fields or {}, **extra}}


def database_unreachable_body() -> dict:
    """What every door answers, with 503 and Retry-After, while the database is out of reach."""
    return error_body("database_unavailable",
                      f"the database cannot be reached; retry in {database.UNREACHABLE_RETRY_SECONDS} s")


def database_contended_body() -> dict:
    """What every door answers, with 503 and Retry-After, for a request the database rolled
    back to settle a deadlock with another (memory_platform.database.contended)."""
    return error_body("database_contended",
                      "the request met another one's locks and was rolled back: nothing was changed; "
                      f"send it again in {database.CONTENDED_RETRY_SECONDS} s")


def flatten(detail, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error detail as {"memories[2].content": ["..."]}."""
    if isinstance(detail, dict):
        flat = {}
        for key, value in detail.items():
            if isinstance(key, int):  # a list field's errors come keyed by index
                path = f"{prefix}[{key}]"
            else:
                name = key if key != "non_field_errors" else ""
                path = f"{prefix}.{name}" if prefix and name else (prefix or name or "non_field_errors")
            flat.update(flatten(value, path))
        return flat
    if isinstance(detail, list):
        if all(isinstance(item, str) for item in detail):
            return {prefix or "non_field_errors": [str(item) for item in detail]}
        flat = {}
        for index, item in enumerate(detail):
            if item:
                flat.update(flatten(item, f"{prefix}[{index}]"))
        return flat
    return {prefix or "non_field_errors": [str(detail)]}


def _message(fields: dict[str, list[str]]) -> str:
    first, messages = next(iter(fields.items()))
    more = f" (and {len(fields) - 1} more)" if len(fields) > 1 else ""
    return f"{first}: {messages[0]}{more}" if first != "non_field_errors" else messages[0] + more


def api_exception_handler(exc, context):
    """DRF's EXCEPTION_HANDLER."""
    if isinstance(exc, errors.MemoryServiceError):
        fields = {exc.field: [exc.message]} if exc.field else {}
        extra = {}
        if isinstance(exc, errors.StaleVersion):
            extra["current_version"] = exc.current_version
        if isinstance(exc, errors.Conflict) and exc.existing_id:
            extra["existing_id"] = str(exc.existing_id)
        return Response(error_body(exc.code, exc.message, fields, **extra), status=SERVICE_STATUS[type(exc)])
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    if isinstance(exc, exceptions.ValidationError):
        fields = flatten(exc.detail)
        return Response(error_body("invalid", _message(fields), fields), status=exc.status_code)
    if isinstance(exc, exceptions.APIException):
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else exc.default_code
        headers = {}
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header
        if getattr(exc, "wait", None):
            headers["Retry-After"] = str(int(exc.wait))
        return Response(error_body(code, str(exc.detail)), status=exc.status_code, headers=headers)
    return None  # anything else is a bug: JsonErrorMiddleware answers 500


class JsonErrorMiddleware:
    """Under /api/, unhandled exceptions and Django's own 404/405 pages become JSON errors too,
    whatever DEBUG says."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.path.startswith("/api/") and response.status_code >= 400 and not _is_json(response):
            return JsonResponse(
                error_body(_default_code(response.status_code), response.reason_phrase or "error"),
                status=response.status_code,
            )
        return response

    def process_exception(self, request, exception):
        if not request.path.startswith("/api/"):
            return None
        if database.unreachable(exception) or database.contended(exception):
            return None  # the request's transaction middleware answers 503 (tenants.middleware)
        # Django's own refusals of a request (outside DRF's handler, e.g. a body read through
        # request.body above DATA_UPLOAD_MAX_MEMORY_SIZE) are the client's fault, not ours.
        if isinstance(exception, RequestDataTooBig):
            return JsonResponse(error_body("payload_too_large", str(exception)), status=413)
        if isinstance(exception, SuspiciousOperation):
            return JsonResponse(error_body("bad_request", "the request was refused as malformed"), status=400)
        logger.error("unhandled error on %s %s", request.method, request_route(request), exc_info=exception)
        return JsonResponse(error_body("server_error", "internal error; it has been logged"), status=500)


def _is_json(response) -> bool:
    return response.get("Content-Type", "").startswith("application/json")


def _default_code(status_code: int) -> str:
    return {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 411: "length_required",
            413: "payload_too_large",
            500: "server_error"}.get(status_code, "error")
