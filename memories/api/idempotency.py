"""Idempotency-Key on POST: a retried request gets the first response, and creates nothing new.

The record is inserted before the work, in the request's transaction: a concurrent retry
blocks on the unique (org, agent, key) index until the first request commits (then it
replays the stored response) or rolls back (then it does the work itself).

The key is stored as its SHA-256: clients send whatever they like there (a request id, a
user's name and a time...), and it is needed only to be matched again.
"""

from __future__ import annotations

import functools
import hashlib
import json

from django.db import IntegrityError, transaction
from rest_framework import exceptions
from rest_framework.response import Response

from memories.models import IdempotencyRecord

HEADER = "Idempotency-Key"


class IdempotencyKeyReused(exceptions.APIException):
    status_code = 422
    default_code = "idempotency_key_reused"
    default_detail = f"this {HEADER} was used with a different request body, or by another API key"


def _fingerprint(request) -> str:
    """The request as sent, and by which key: another key of the same agent (one limited to
    other namespaces, say) must not be handed this one's response."""
    body = json.dumps(request.data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{request.user.api_key.pk} {request.method} {request.path}\n{body}".encode()).hexdigest()


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def idempotent(view_method):
    @functools.wraps(view_method)
    def wrapper(self, request, *args, **kwargs):
        key = request.headers.get(HEADER)
        if key is None:
            return view_method(self, request, *args, **kwargs)
        if not 1 <= len(key) <= 255 or not key.isprintable():
            raise exceptions.ValidationError({HEADER: ["must be 1 to 255 printable characters"]})
        principal = request.user
        fingerprint = _fingerprint(request)
        key = key_digest(key)
        try:
            with transaction.atomic():
                record = IdempotencyRecord.objects.create(
                    org_id=principal.org_id, agent_id=principal.agent_id, key=key, request_fingerprint=fingerprint
                )
        except IntegrityError:
            first = IdempotencyRecord.objects.get(org_id=principal.org_id, agent_id=principal.agent_id, key=key)
            if first.request_fingerprint != fingerprint:
                raise IdempotencyKeyReused() from None
            return Response(first.response_body, status=first.response_status, headers={"Idempotent-Replayed": "true"})
        response = view_method(self, request, *args, **kwargs)
        # An error response rolls the whole request back, this record included: retrying
        # such a request runs it again.
        record.response_status, record.response_body = response.status_code, response.data
        record.save(update_fields=["response_status", "response_body"])
        return response

    return wrapper
