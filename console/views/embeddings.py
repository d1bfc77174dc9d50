"""The embedding model (memories.use_cases.embeddings): which one the memories' vectors come
from, the others being built or kept to roll back to, and each build's progress. An
organisation's admins see it; only the deployment's staff may change it. A build or a switch
runs in the worker, a step at a time; the page polls its progress.
"""

import redis
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from console.access import ADMIN, console_view
from console.responses import failed, page
from memories.errors import Conflict, InvalidInput, OutOfReach
from memories.use_cases import embeddings as use_cases

BAD_REQUEST = 400


def _page(request, *, status: int = 200):
    standings = use_cases.standings(request.caller)
    context = {"standings": standings, "may_change": use_cases.may_change(request.caller),
               "busy": any(standing.busy for standing in standings),
               "rollback_to": use_cases.rollback_target(standings)}
    return page(request, "console/embeddings.html", context, partial="embeddings-status", status=status)


@require_GET
@console_view(ADMIN)
def embeddings(request):
    return _page(request)


@require_POST
@console_view(ADMIN)
def embeddings_change(request, action):
    if action not in use_cases.ACTIONS:
        raise Http404("no such action")
    here = reverse("console:embeddings", args=[request.org.slug])
    try:
        use_cases.change(request.caller, action, request.POST.get("model", ""))
    except OutOfReach as exc:
        if request.htmx:
            return failed(request, f"{exc.message[0].upper()}{exc.message[1:]}.", here, status=403)
        return render(request, "console/forbidden.html", {"needed": "staff (deployment-wide)"}, status=403)
    except InvalidInput as exc:
        return failed(request, f"Refused: {exc.message}.", here, status=BAD_REQUEST)
    except Conflict as exc:
        return failed(request, f"Refused: {exc.message}.", here)
    except redis.RedisError:
        return failed(request, "The job queue is unreachable: nothing was started. Try again.", here)
    if not request.htmx:
        return redirect(here)
    return _page(request)  # the models again, the one under way with its progress, polled
