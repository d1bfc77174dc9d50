"""The embedding model (memories.lifecycle.reembed): which one the memories' vectors come from,
the others being built or kept to roll back to, and each build's progress.

An organisation's admins see it. The model is the deployment's, every organisation's alike,
so only an admin who is also one of the deployment's staff (a Django admin user) may build
another, switch to it or roll back: an organisation's admin must not change how every other
organisation's memories are searched, nor spend the deployment's worker on it. A build or a
switch runs in the worker, a step at a time; the page polls its progress.
"""

import redis
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from console.access import ADMIN, console_view
from console.responses import failed, page
from memories.errors import Conflict, InvalidInput
from memories.lifecycle import reembed
from memories.models import EmbeddingModel

BAD_REQUEST = 400
ACTIONS = ("build", "activate", "rollback")


def may_change(request) -> bool:
    return request.user.is_staff


def _page(request, *, status: int = 200):
    standings = reembed.standings()
    context = {"standings": standings, "may_change": may_change(request),
               "busy": any(standing.busy for standing in standings),
               "rollback_to": next((standing.replaced for standing in standings if standing.active), "")}
    return page(request, "console/embeddings.html", context, partial="embeddings-status", status=status)


@require_GET
@console_view(ADMIN)
def embeddings(request):
    return _page(request)


@require_POST
@console_view(ADMIN)
def embeddings_change(request, action):
    if action not in ACTIONS:
        raise Http404("no such action")
    here = reverse("console:embeddings", args=[request.org.slug])
    if not may_change(request):
        message = "Only the deployment's staff may change the embedding model: it serves every organisation."
        if request.htmx:
            return failed(request, message, here, status=403)
        return render(request, "console/forbidden.html", {"needed": "staff (deployment-wide)"}, status=403)
    model = request.POST.get("model", "")
    if action == "rollback":
        current = EmbeddingModel.objects.filter(state=EmbeddingModel.State.ACTIVE).first()
        model = current.replaced if current else ""
        if not model:
            return failed(request, "Nothing to roll back to: no model was active before this one.", here)
    try:
        reembed.reembed_enqueue(model=model, then_activate=action != "build")
    except InvalidInput as exc:
        return failed(request, f"Refused: {exc.message}.", here, status=BAD_REQUEST)
    except Conflict as exc:
        return failed(request, f"Refused: {exc.message}.", here)
    except redis.RedisError:
        return failed(request, "The job queue is unreachable: nothing was started. Try again.", here)
    if not request.htmx:
        return redirect(here)
    return _page(request)  # the models again, the one under way with its progress, polled
