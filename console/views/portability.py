"""Export and import, for an organisation's admins (memories.lifecycle.export, .importing).

A download is streamed as the export reads, in a transaction of its own (the request's has
ended when the body is sent): the browser shows how much has arrived. An upload is kept and
imported by the worker, which can take longer than a request may; the page polls its
progress (the file checked, then imported) and shows the report when it is done.
"""

import redis
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from console.access import ADMIN, console_view
from console.forms import ExportForm, ImportForm
from console.responses import INVALID, failed, page
from memories.lifecycle.portability import ExportScope
from memories.use_cases import organisation
from tenants.models import Agent


def _readable(result: dict | None) -> dict | None:
    """A finished import's report, its counts named in words."""
    if not result or "error" in result:
        return result
    return {**result, **{name: [(kind.replace("_", " "), n) for kind, n in result[name].items() if n]
                         for name in ("created", "present", "left_out")}}


def _page(request, *, export_form=None, import_form=None, job_id=None, status: int = 200):
    """The page, or with HTMX its import part (the form, and the progress of the import it started)."""
    agents = Agent.objects.filter(org_id=request.org.id).order_by("name")
    context = {"export_form": export_form or ExportForm(agents=agents), "import_form": import_form or ImportForm(),
               "memories": organisation.export_count(request.caller, ExportScope())}
    if job_id:
        progress = organisation.import_status(request.caller, job_id)
        context.update(job_id=job_id, status=progress, report=_readable(progress.result if progress else None))
    return page(request, "console/portability.html", context, partial="import", status=status)


@require_GET
@console_view(ADMIN)
def portability(request):
    return _page(request)


@require_GET
@console_view(ADMIN)
def export_download(request):
    form = ExportForm(request.GET, agents=Agent.objects.filter(org_id=request.org.id).order_by("name"))
    if not form.is_valid():
        return _page(request, export_form=form, status=INVALID)
    agent = form.agents.get(form.cleaned_data["agent"])
    scope = ExportScope(namespace=form.cleaned_data["namespace"], agent_id=agent.pk if agent else None,
                        agent_name=agent.name if agent else None)
    org = request.org
    lines = organisation.export_lines(request.caller, org=org, scope=scope,
                                      embeddings=not form.cleaned_data["without_embeddings"])
    response = StreamingHttpResponse((text.encode() for text in lines), content_type="application/x-ndjson")
    response["Content-Disposition"] = (f'attachment; filename="{org.slug}-memories-'
                                       f'{timezone.now():%Y%m%d-%H%M%S}.jsonl"')
    response["Cache-Control"] = "no-store"
    return response


@require_POST
@console_view(ADMIN)
def import_upload(request):
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return _page(request, import_form=form, status=INVALID)
    upload = form.cleaned_data["file"]
    try:
        job_id = organisation.import_start(request.caller, chunks=upload.chunks(), name=upload.name,
                                           skip_bad_lines=form.cleaned_data["skip_bad_lines"])
    except (OSError, redis.RedisError):
        return failed(request, "The import could not be queued (the job queue or the data folder is unreachable). "
                               "Nothing was imported; try again.", reverse("console:portability",
                                                                           args=[request.org.slug]))
    if not request.htmx:
        return redirect(reverse("console:import", args=[request.org.slug, job_id]))
    return _page(request, job_id=job_id)  # the form again, and under it the import's progress, polled


@require_GET
@console_view(ADMIN)
def import_progress(request, job_id):
    progress = organisation.import_status(request.caller, job_id)
    if progress is None:
        raise Http404("no such import")
    return page(request, "console/portability_import.html", {
        "job_id": str(job_id), "status": progress, "report": _readable(progress.result)}, partial="import-status")
