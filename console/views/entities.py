"""Entities: who and what the organisation's memories mention, and what is remembered of
each (the memories that mention it, and those that say when it happened)."""

import json

from django.http import Http404
from django.views.decorators.http import require_GET

from console.access import VIEWER, console_view
from console.forms import EntityFilterForm
from console.pages import by_key
from console.responses import INVALID, page
from memories import keyset
from memories.errors import NotFound
from memories.models import Entity
from memories.use_cases import lifecycle

PAGE_SIZE = 50
FACTS_SHOWN = 50
TIMELINE_SHOWN = 100
MOST_MENTIONED = keyset.Order(("mention_count", "id"))  # ties page too (docs/adr/0046)


@require_GET
@console_view(VIEWER)
def entity_list(request):
    form = EntityFilterForm(request.GET)
    entities = Entity.objects.none()
    if form.is_valid():
        data = form.cleaned_data
        entities = lifecycle.entity_list(request.caller, namespace=data["namespace"] or None,
                                         kind=data["kind"] or None, query=data["q"].strip() or None)
    return page(request, "console/entity_list.html",
                {"form": form, "page": by_key(entities, order=MOST_MENTIONED, limit=PAGE_SIZE, query=request.GET)},
                partial="results", status=200 if form.is_valid() else INVALID)


@require_GET
@console_view(VIEWER)
def entity_detail(request, entity_id):
    try:  # one more than shown: whether there are more, to say so
        entity = lifecycle.entity_detail(request.caller, entity_id=entity_id, facts=FACTS_SHOWN + 1,
                                         timeline=TIMELINE_SHOWN + 1)
    except NotFound:
        raise Http404("no such entity") from None
    facts, timeline = entity.facts, entity.timeline
    return page(request, "console/entity_detail.html", {
        "entity": entity,
        "attributes": json.dumps(entity.attributes, indent=2, sort_keys=True, ensure_ascii=False) if entity.attributes
        else "",
        "facts": facts[:FACTS_SHOWN], "more_facts": len(facts) > FACTS_SHOWN,
        "timeline": timeline[:TIMELINE_SHOWN], "more_timeline": len(timeline) > TIMELINE_SHOWN})
