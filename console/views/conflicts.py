"""Conflicting memories side by side, and their resolution."""

from django.http import Http404, QueryDict
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from console.access import OPERATOR, VIEWER, console_view, may
from console.forms import NamespaceForm, ResolveForm
from console.pages import ListPage
from console.responses import INVALID, done, failed, page
from memories.errors import InvalidInput, MemoryServiceError, NotFound
from memories.models import MemoryTag
from memories.use_cases import review

PAGE_SIZE = 100


@require_GET
@console_view(VIEWER)
def conflict_list(request):
    form = NamespaceForm(request.GET)
    if not form.is_valid():
        return page(request, "console/conflict_list.html", {"conflicts": [], "filter": form,
                                                             "page": ListPage([])}, status=INVALID)
    namespace = form.cleaned_data["namespace"] or None
    try:
        found = review.conflict_list(request.caller, limit=PAGE_SIZE, cursor=request.GET.get("cursor") or None,
                                     namespace=namespace)
    except InvalidInput:  # a cursor edited by hand: the first page
        found = review.conflict_list(request.caller, limit=PAGE_SIZE, namespace=namespace)
    following = QueryDict(mutable=True)
    if namespace:
        following["namespace"] = namespace
    first = following.urlencode()
    following["cursor"] = found.next or ""
    return page(request, "console/conflict_list.html", {
        "conflicts": found.items, "filter": form,
        "page": ListPage(found.items, following.urlencode() if found.next else None,
                         (first or "cursor=") if request.GET.get("cursor") else None)})


def _conflict(request, kind, conflict_id):
    try:
        return review.conflict_get(request.caller, kind=kind, conflict_id=conflict_id)
    except NotFound:
        raise Http404("no such open conflict") from None


def _context(request, conflict, form) -> dict:
    tags = {}
    for memory_id, tag in MemoryTag.objects.filter(
            org_id=request.org.id, memory_id__in=[conflict.first.pk, conflict.second.pk]).values_list("memory_id", "tag"):
        tags.setdefault(memory_id, []).append(tag)
    return {"conflict": conflict, "form": form, "can_change": may(request.membership, OPERATOR),
            "sides": [(conflict.first, sorted(tags.get(conflict.first.pk, []))),
                      (conflict.second, sorted(tags.get(conflict.second.pk, [])))],
            "resolve_url": reverse("console:conflict-resolve", args=[request.org.slug, conflict.kind, conflict.id])}


@require_GET
@console_view(VIEWER)
def conflict_detail(request, kind, conflict_id):
    conflict = _conflict(request, kind, conflict_id)
    form = ResolveForm(initial={"content": f"{conflict.first.content}\n{conflict.second.content}"})
    return page(request, "console/conflict_detail.html", _context(request, conflict, form))


@require_POST
@console_view(OPERATOR)
def conflict_resolve(request, kind, conflict_id):
    conflict = _conflict(request, kind, conflict_id)
    form = ResolveForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            standing = review.conflict_resolve(
                request.caller, kind=kind, conflict_id=conflict.id, resolution=data["resolution"],
                keep_id=data["keep"], content=data["content"], reason=data["reason"])
        except MemoryServiceError as error:
            form.add_error(error.field if error.field in form.fields else None, error.message)
        else:
            if standing is None:
                return done(request, "Resolved: both memories stand.", reverse("console:conflicts", args=[request.org.slug]))
            what = "Merged into this new memory." if data["resolution"] == "merge" else "Kept; the other is superseded."
            return done(request, f"Resolved. {what}", reverse("console:memory", args=[request.org.slug, standing.pk]))
    if request.htmx:
        return page(request, "console/conflict_detail.html#resolve", _context(request, conflict, form), status=INVALID)
    return failed(request, "; ".join(e for errors in form.errors.values() for e in errors),
                  reverse("console:conflict", args=[request.org.slug, kind, conflict.id]), status=INVALID)
