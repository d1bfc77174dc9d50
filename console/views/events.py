"""Retrieval events: what an agent was shown, in order, with scores; and their replay."""

from django.http import Http404
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from console.access import OPERATOR, VIEWER, console_view
from console.forms import EventFilterForm
from console.pages import by_key
from console.responses import failed, page
from memories import keyset
from memories.errors import Conflict, NotFound
from memories.models import Memory, RetrievalEvent
from memories.use_cases import retrieval
from tenants.models import Agent

PAGE_SIZE = 50


@require_GET
@console_view(VIEWER)
def event_list(request):
    agents = list(Agent.objects.filter(org_id=request.org.id))
    form = EventFilterForm(request.GET, agents=agents)
    asked = {}
    if form.is_valid():
        asked = {"agent": form.cleaned_data["agent"] or None, "kind": form.cleaned_data["kind"] or None,
                 "query_contains": form.cleaned_data["q"] or None}
    events = retrieval.retrieval_event_list(request.caller, **asked).select_related("agent", "user")
    return page(request, "console/event_list.html",
                {"form": form, "page": by_key(events, order=keyset.NEWEST_FIRST, limit=PAGE_SIZE, query=request.GET)},
                partial="results")


def _event(request, event_id) -> RetrievalEvent:
    try:
        return retrieval.retrieval_event_get(request.caller, event_id)
    except NotFound:
        raise Http404("no such retrieval event") from None


def _shown(request, event: RetrievalEvent) -> list[dict]:
    """The memories the caller was shown, in order, as they are now (or that they are gone)."""
    memories = Memory.objects.filter(org_id=request.org.id, pk__in=event.returned_memory_ids).defer(
        "embedding", "search_vector").in_bulk()
    signals = event.details.get("signals", {})
    return [{"rank": rank, "id": memory_id, "memory": memories.get(memory_id), "score": score,
             "signals": signals.get(str(memory_id), {})}
            for rank, (memory_id, score) in enumerate(zip(event.returned_memory_ids, event.returned_scores), start=1)]


@require_GET
@console_view(VIEWER)
def event_detail(request, event_id):
    event = _event(request, event_id)
    return page(request, "console/event_detail.html", {
        "event": event, "shown": _shown(request, event),
        "request_json": event.filters.get("request", {}), "filters_json": event.filters.get("filters", {})})


@require_POST
@console_view(OPERATOR)
def event_replay(request, event_id):
    event = _event(request, event_id)
    try:
        replay = retrieval.retrieval_event_replay(request.caller, event.pk)
    except Conflict as refused:  # asked with redacted values: it cannot be asked again
        return failed(request, refused.message, reverse("console:event", args=[request.org.slug, event.pk]))
    return page(request, "console/event_detail.html", {
        "event": event, "shown": _shown(request, event), "replay": replay, "replay_shown": _shown(request, replay.event),
        "request_json": event.filters.get("request", {}), "filters_json": event.filters.get("filters", {})},
        partial="replay")
