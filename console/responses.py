"""How a console action answers: the named partial for HTMX, a redirect (with a message) for a
plain form post, so every action works with and without JavaScript."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.utils.cache import patch_vary_headers

# Statuses a failed action answers with. The request's transaction rolls back (>= 400), and
# htmx is configured (base.html) to swap 4xx answers, so the error is shown where it happened.
REJECTED = 409
INVALID = 422


def page(request, template: str, context: dict, *, partial: str | None = None, status: int = 200):
    """The whole page, or with HTMX the named partial of the same template when the request
    targets it (django-template-partials: "template.html#partial")."""
    if partial and request.htmx and request.htmx.target == partial:
        template = f"{template}#{partial}"
    response = TemplateResponse(request, template, context, status=status)
    # One address answers with a fragment or a whole page: caches must keep them apart.
    patch_vary_headers(response, ["HX-Request", "HX-Target"])
    return response


def done(request, message: str, to: str, *, template: str | None = None, context: dict | None = None):
    """Success: with HTMX, the fragment to swap in (and the message out of band); otherwise a
    redirect to `to`, where the message is shown."""
    messages.success(request, message)
    if request.htmx:
        if template:
            return TemplateResponse(request, template, context or {})
        response = HttpResponse()
        response["HX-Redirect"] = to  # a new page: htmx loads it whole
        return response
    return redirect(to)


def failed(request, message: str, to: str, *, status: int = REJECTED):
    """The action was refused (a stale version, a memory in the wrong state...)."""
    messages.error(request, message)
    if request.htmx:
        response = TemplateResponse(request, "console/partials/messages.html", {"oob": True}, status=status)
        response["HX-Reswap"] = "none"  # keep the page as it is; the message swaps in out of band
        return response
    return redirect(to)
