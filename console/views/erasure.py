"""Erasure, for an organisation's admins (memories.lifecycle.erasure): "forget everything
about this user", an agent's or a session's memories, or the organisation's whole memory.

Two steps: the form counts what the scope holds and asks for the organisation's slug to be
typed; then the worker erases (a whole organisation's can outlast a request) while the page
follows its progress, and shows what went. The page lists the organisation's erasures: who,
what scope, how many rows, never what they held.
"""

import redis
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from console.access import ADMIN, console_view
from console.forms import EraseForm
from console.responses import INVALID, failed, page
from memories.models import Erasure
from memories.use_cases import organisation
from tenants.models import Agent

RECENT = 20  # erasures listed


def _readable(result: dict | None) -> dict | None:
    if not result or "error" in result:
        return result
    return {**result, "counts": [(kind.replace("_", " "), n) for kind, n in result["counts"].items() if n]}


def _page(request, form: EraseForm, *, counted: int | None = None, status: int = 200):
    recent = (Erasure.objects.filter(org_id=request.org.id).select_related("requested_by_user", "requested_by_agent")
              .order_by("-created_at")[:RECENT])
    return page(request, "console/erasure.html", {"form": form, "counted": counted, "erasures": recent},
                status=status)


@require_http_methods(["GET", "POST"])
@console_view(ADMIN)
def erase(request):
    """GET: the form. POST without a confirmation: count the scope and ask for it; with the
    organisation's slug typed: queue the erasure and follow it."""
    agents = Agent.objects.filter(org_id=request.org.id).order_by("name")
    if request.method == "GET":
        # A session picked on the sessions page (its "Erase…" link) comes chosen.
        picked = {"scope": "session", "session": request.GET["session"]} if request.GET.get("session") else {}
        return _page(request, EraseForm(initial=picked, agents=agents))
    form = EraseForm(request.POST, agents=agents)
    if not form.is_valid():
        return _page(request, form, status=INVALID)
    scope = form.erasure_scope()
    counted = organisation.erasure_count(request.caller, scope)
    if not form.data.get("confirm"):  # the first step: what it would erase
        return _page(request, form, counted=counted)
    if not form.confirmed(request.org.slug):
        form.add_error("confirm", f"Type {request.org.slug} to erase; nothing was erased.")
        return _page(request, form, counted=counted, status=INVALID)
    try:
        job_id = organisation.erasure_start(request.caller, scope)
    except redis.RedisError:
        return failed(request, "The erasure could not be queued (the job queue is unreachable). Nothing was erased; "
                               "try again.", reverse("console:erase", args=[request.org.slug]))
    return redirect(reverse("console:erasure", args=[request.org.slug, job_id]))


def _status_context(request, job_id) -> dict:
    status = organisation.erasure_status(request.caller, job_id)
    if status is None:
        raise Http404("no such erasure")
    return {"job_id": str(job_id), "status": status, "report": _readable(status.result)}


@require_GET
@console_view(ADMIN)
def erase_progress(request, job_id):
    return page(request, "console/erasure_run.html", _status_context(request, job_id), partial="erase-status")
