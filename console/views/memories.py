"""The memory browser, a memory's detail page, and every change an operator makes to one."""

from __future__ import annotations

import json

from django.db.models import Prefetch
from django.http import Http404, QueryDict
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from console.access import OPERATOR, VIEWER, console_view, may
from console.diff import version_diff
from console.pages import ListPage, by_key, by_number
from console.forms import (
    SORTS,
    ActionForm,
    BulkForm,
    MemoryEditForm,
    MemoryFilterForm,
    SupersedeForm,
    TagRemoveForm,
    TagsForm,
)
from console.responses import INVALID, done, failed, page
from memories import keyset
from memories.errors import MemoryServiceError, NotFound, StaleVersion
from memories.models import Memory, MemoryRelationship, MemoryTag, MemoryUsage
from memories.use_cases import records, retrieval, review
from tenants.models import Agent

PAGE_SIZE = 25
SEARCH_LIMIT = 100  # a search ranks at most this many memories; the pages walk through them


def _url(request, name: str, *args) -> str:
    return reverse(f"console:{name}", args=[request.org.slug, *args])


def _memory(request, memory_id) -> Memory:
    try:
        return records.memory_get(request.caller, memory_id)
    except NotFound:
        raise Http404("no such memory") from None


# --------------------------------------------------------------------------- browser


# Each sort of the browser as the key its pages follow (the id last): newest and oldest read the
# index memories_org_recent; the others sort the organisation's rows that pass the filters.
MOST_RETRIEVED = "retrieved"
BY_KEY = {name: keyset.Order(tuple(field.lstrip("-") for field in fields), descending=fields[0].startswith("-"))
          for name, (_, fields) in SORTS.items() if name != MOST_RETRIEVED}
# "Most retrieved" pages by key over memory_usage (the index memory_usage_most_retrieved), each
# usage row joined to its memory, which must pass the filters: the memories never retrieved are
# not in it (docs/adr/0051).
BY_USAGE = keyset.Order(("retrieval_count", "memory_id"))


def _most_retrieved(request, query: QueryDict, where: str, params: list, memories) -> ListPage:
    """A page of the memories that pass the filters, the most retrieved first."""
    usage = (MemoryUsage.objects.filter(org_id=request.org.id, retrieval_count__gt=0)
             .extra(tables=["memories"], where=["memories.id = memory_usage.memory_id",
                                                "memories.org_id = memory_usage.org_id", where], params=params))
    found = by_key(usage, order=BY_USAGE, limit=PAGE_SIZE, query=query)
    by_id = {memory.pk: memory for memory in memories.filter(pk__in=[row.memory_id for row in found.object_list])}
    found.object_list = [by_id[row.memory_id] for row in found.object_list if row.memory_id in by_id]
    return found


def _browse(request, query: QueryDict) -> dict:
    agents = list(Agent.objects.filter(org_id=request.org.id))
    form = MemoryFilterForm(query, agents=agents)
    rows, scores, error = [], {}, ""
    current = by_number([], limit=PAGE_SIZE, query=query)
    if form.is_valid():
        filters, sort, text = form.search_filters(), form.cleaned_data["sort"], form.cleaned_data["q"].strip()
        if text:
            outcome = retrieval.memory_browse(request.caller, query=text, filters=filters, limit=SEARCH_LIMIT)
            rows = [result.memory for result in outcome.results]
            scores = {result.memory.pk: result.score for result in outcome.results}
            if outcome.degraded:
                error = "Semantic search is unavailable right now: these results come from keyword search only."
            if sort:
                field, reverse_order = SORTS[sort][1][0].lstrip("-"), SORTS[sort][1][0].startswith("-")
                rows.sort(key=lambda memory: getattr(memory, field), reverse=reverse_order)
            current = by_number(rows, limit=PAGE_SIZE, query=query)  # at most SEARCH_LIMIT
        else:
            where, params = filters.where(request.org.id, alias="memories")
            rows = (Memory.objects.filter(org_id=request.org.id).extra(where=[where], params=params)
                    .defer("embedding", "search_vector")
                    .prefetch_related(Prefetch("tags", queryset=MemoryTag.objects.filter(org_id=request.org.id)
                                                                  .order_by("tag"))))
            if sort == MOST_RETRIEVED:
                current = _most_retrieved(request, query, where, params, rows)
            else:
                current = by_key(rows, order=BY_KEY[sort or "newest"], limit=PAGE_SIZE, query=query)
    agent_names = {agent.pk: agent.name for agent in agents}
    for memory in current.object_list:
        memory.agent_name = agent_names.get(memory.agent_id, "")
        memory.score = scores.get(memory.pk)
    state = query.copy()
    state.pop("page", None)
    state.pop("cursor", None)
    return {"form": form, "page": current, "state": state.urlencode(), "notice": error,
            "searching": form.is_valid() and bool(form.cleaned_data["q"].strip()),
            "can_change": may(request.membership, OPERATOR), "bulk": BulkForm(QueryDict())}


@require_GET
@console_view(VIEWER)
def memory_list(request):
    return page(request, "console/memory_list.html", _browse(request, request.GET), partial="results")


@require_POST
@console_view(OPERATOR)
def memory_bulk(request):
    """Tag, archive or approve the selected memories; each one that cannot be changed is
    named, and the others are changed."""
    state = QueryDict(request.POST.get("state", ""))
    back = f"{_url(request, 'memories')}?{state.urlencode()}"
    form = BulkForm(request.POST)
    if not form.is_valid():
        first = next(iter(form.errors.values()))[0]
        return failed(request, f"Nothing changed: {first}", back, status=INVALID)
    action, ids = form.cleaned_data["action"], form.cleaned_data["ids"]
    changed, refused = 0, []
    for memory_id in ids:
        try:
            if action == "tag":
                records.memory_tags_add(request.caller, memory_id, tags=form.cleaned_data["tags"])
            elif action == "archive":
                records.memory_archive(request.caller, memory_id)
            else:
                review.memory_approve(request.caller, memory_id)
            changed += 1
        except MemoryServiceError as error:
            refused.append(error.message)
    verb = {"tag": "tagged", "archive": "archived", "approve": "approved"}[action]
    message = f"{changed} {'memory' if changed == 1 else 'memories'} {verb}."
    if refused:
        message += f" {len(refused)} left as they were: " + "; ".join(refused[:5])
    context = _browse(request, state)
    return done(request, message, back, template="console/memory_list.html#results", context=context)


# --------------------------------------------------------------------------- detail


def _detail_context(request, memory: Memory, **extra) -> dict:
    versions = list(records.memory_versions(request.caller, memory.pk).select_related("changed_by_agent",
                                                                                      "changed_by_user"))
    relationships = (MemoryRelationship.objects.filter(org_id=request.org.id)
                     .select_related("source", "target").order_by("created_at"))
    return {
        "memory": memory,
        "tags": records.memory_tags(request.caller, memory.pk),
        "entities": records.memory_entities(request.caller, memory.pk),
        "versions": versions,
        "outgoing": relationships.filter(source_id=memory.pk),
        "incoming": relationships.filter(target_id=memory.pk),
        "provenance": json.dumps(memory.provenance, indent=2, sort_keys=True, ensure_ascii=False),
        "metadata": json.dumps(memory.metadata, indent=2, sort_keys=True, ensure_ascii=False),
        "can_change": may(request.membership, OPERATOR),
        "tag_form": TagsForm(),
        **extra,
    }


@require_GET
@console_view(VIEWER)
def memory_detail(request, memory_id):
    memory = _memory(request, memory_id)
    return page(request, "console/memory_detail.html", _detail_context(request, memory))


@require_GET
@console_view(VIEWER)
def memory_diff(request, memory_id):
    memory = _memory(request, memory_id)
    versions = {v.version_num: v for v in records.memory_versions(request.caller, memory.pk)}
    try:
        older, newer = int(request.GET.get("from", 0)), int(request.GET.get("to", 0))
    except ValueError:
        older = newer = 0
    if older not in versions or newer not in versions:
        nums = ", ".join(map(str, sorted(versions)))
        return page(request, "console/memory_diff.html",
                    {"memory": memory, "error": f"choose two of this memory's versions ({nums})"},
                    partial="diff", status=INVALID)
    return page(request, "console/memory_diff.html",
                {"memory": memory, "diff": version_diff(versions[older], versions[newer])}, partial="diff")


def _tags_fragment(request, memory_id, message: str):
    memory = _memory(request, memory_id)
    return done(request, message, _url(request, "memory", memory_id),
                template="console/memory_detail.html#tags-and-history", context=_detail_context(request, memory))


def _tags_refused(request, memory_id, form: TagsForm):
    memory = _memory(request, memory_id)
    return page(request, "console/memory_detail.html", _detail_context(request, memory, tag_form=form),
                partial="tags-and-history", status=INVALID)


@require_POST
@console_view(OPERATOR)
def memory_tags_add(request, memory_id):
    form = TagsForm(request.POST)
    if not form.is_valid():
        return _tags_refused(request, memory_id, form)
    try:
        tags = records.memory_tags_add(request.caller, memory_id, tags=form.cleaned_data["tags"])
    except NotFound:
        raise Http404("no such memory") from None
    except MemoryServiceError as error:  # a tag the organisation's policy refuses (personal data)
        form.add_error("tags", error.message)
        return _tags_refused(request, memory_id, form)
    return _tags_fragment(request, memory_id, f"Tags now: {', '.join(tags)}.")


@require_POST
@console_view(OPERATOR)
def memory_tag_remove(request, memory_id):
    form = TagRemoveForm(request.POST)
    if not form.is_valid():
        return failed(request, "Not done: that is not one of this memory's tags.", _url(request, "memory", memory_id),
                      status=INVALID)
    tag = form.cleaned_data["tag"]
    try:
        records.memory_tag_remove(request.caller, memory_id, tag=tag)
    except NotFound as error:
        if error.field != "tag":
            raise Http404("no such memory") from None
        return failed(request, error.message, _url(request, "memory", memory_id))
    return _tags_fragment(request, memory_id, f"Tag {tag!r} removed.")


ACTIONS = {
    "archive": (records.memory_archive, "Archived."),
    "confirm": (records.memory_confirm, "Confirmed: protected from decay, confidence 1.0."),
    "delete": (records.memory_delete, "Deleted (it can be restored)."),
}


@require_POST
@console_view(OPERATOR)
def memory_action(request, memory_id, action):
    memory = _memory(request, memory_id)
    here = _url(request, "memory", memory_id)
    if action == "restore":
        service, message = ((records.memory_restore, "Restored.") if memory.deleted_at
                            else (records.memory_unarchive, "Restored: now {status}."))
    elif action in ACTIONS:
        service, message = ACTIONS[action]
    else:
        raise Http404("no such action")
    form = ActionForm(request.POST)
    if not form.is_valid():
        field, errors = next(iter(form.errors.items()))
        return failed(request, f"Not done: {field}: {errors[0]}", here, status=INVALID)
    try:
        changed = service(request.caller, memory_id, reason=form.cleaned_data["reason"],
                          expected_version=form.cleaned_data["version"])
    except StaleVersion as error:
        return failed(request, f"Not done: someone changed this memory meanwhile (now version "
                               f"{error.current_version}). Here it is as it is now.", here)
    except MemoryServiceError as error:
        return failed(request, error.message, here)
    return done(request, message.format(status=changed.status.replace("_", " ")), here)


@console_view(OPERATOR)
def memory_edit(request, memory_id):
    memory = _memory(request, memory_id)
    if memory.deleted_at:
        return failed(request, "A deleted memory cannot be edited; restore it first.", _url(request, "memory", memory_id))
    form = MemoryEditForm(request.POST or None, initial={
        "content": memory.content, "category": memory.category, "memory_type": memory.memory_type,
        "confidence": memory.confidence, "importance": memory.importance, "sensitivity": memory.sensitivity,
        "version": memory.version})
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        version, reason = data.pop("version"), data.pop("reason")
        changes = {name: value for name, value in data.items() if value != getattr(memory, name)}
        if not changes:
            return done(request, "Nothing to change.", _url(request, "memory", memory_id))
        try:
            records.memory_update(request.caller, memory_id, changes=changes, expected_version=version,
                                  reason=reason)
        except StaleVersion as error:
            form = _rebased(MemoryEditForm, request, error)
        except MemoryServiceError as error:
            form.add_error(error.field if error.field in form.fields else None, error.message)
        else:
            return done(request, f"Saved as version {version + 1}.", _url(request, "memory", memory_id))
    status = INVALID if request.method == "POST" else 200
    return page(request, "console/memory_form.html", {"memory": memory, "form": form, "title": "Edit"}, status=status)


def _rebased(form_class, request, error: StaleVersion):
    """The operator's form again, now based on the memory's current version (shown beside it),
    so saving once more is a deliberate overwrite rather than a dead end."""
    data = request.POST.copy()
    data["version"] = str(error.current_version)
    form = form_class(data)
    form.is_valid()
    form.add_error(None, f"Someone changed this memory meanwhile (it is now at version {error.current_version}). "
                         "Its current text is shown above; your changes are kept below. Save again to apply them.")
    return form


@console_view(OPERATOR)
def memory_supersede(request, memory_id):
    memory = _memory(request, memory_id)
    form = SupersedeForm(request.POST or None, initial={"content": memory.content, "version": memory.version})
    if request.method == "POST" and form.is_valid():
        try:
            _, result = records.memory_supersede(
                request.caller, memory_id, content=form.cleaned_data["content"],
                expected_version=form.cleaned_data["version"], reason=form.cleaned_data["reason"])
        except StaleVersion as error:
            form = _rebased(SupersedeForm, request, error)
        except MemoryServiceError as error:
            form.add_error(error.field if error.field in form.fields else None, error.message)
        else:
            return done(request, "Superseded: this is the memory that replaces it.",
                        _url(request, "memory", result.memory.pk))
    status = INVALID if request.method == "POST" else 200
    return page(request, "console/memory_form.html", {"memory": memory, "form": form, "title": "Supersede"},
                status=status)
