"""An organisation's sessions (an agent's conversations or task runs), newest first and paged by
key, filtered by namespace, agent and whether they are still open; a session's page lists its
memories. The erasure form's session scope links here to pick one."""

from django.http import Http404
from django.views.decorators.http import require_GET

from console.access import VIEWER, console_view
from console.forms import SessionFilterForm
from console.pages import ListPage, by_key
from console.responses import INVALID, page
from memories import keyset
from memories.errors import NotFound
from memories.models import Memory
from memories.use_cases import lifecycle
from tenants.models import Agent

PAGE_SIZE = 50
# The key the list's pages follow: sessions_org_started (org, started_at DESC, id DESC).
NEWEST_STARTED = keyset.Order(("started_at", "id"))


@require_GET
@console_view(VIEWER)
def session_list(request):
    agents = list(Agent.objects.filter(org_id=request.org.id).order_by("name"))
    form = SessionFilterForm(request.GET, agents=agents)
    if not form.is_valid():
        return page(request, "console/session_list.html", {"form": form, "page": ListPage([])}, status=INVALID)
    data = form.cleaned_data
    found = lifecycle.session_list(request.caller, agent=data["agent"] or None, status=data["state"] or None,
                                   namespace=data["namespace"] or None).select_related("agent")
    return page(request, "console/session_list.html",
                {"form": form, "page": by_key(found, order=NEWEST_STARTED, limit=PAGE_SIZE, query=request.GET)})


@require_GET
@console_view(VIEWER)
def session_detail(request, session_id):
    try:
        session = lifecycle.session_get(request.caller, session_id)
    except NotFound:
        raise Http404("no such session") from None
    memories = (Memory.objects.filter(request.caller.memories(), org_id=request.org.id, session_id=session.pk)
                .defer("embedding", "search_vector"))
    agent = Agent.objects.filter(org_id=request.org.id, pk=session.agent_id).first() if session.agent_id else None
    return page(request, "console/session_detail.html", {
        "session": session, "agent": agent,
        "page": by_key(memories, order=keyset.NEWEST_FIRST, limit=PAGE_SIZE, query=request.GET)})
