"""The review queue: memories waiting in pending_review, approved or rejected one by one."""

from django.http import Http404
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from console.access import OPERATOR, VIEWER, console_view, may
from console.forms import NamespaceForm, ReasonForm
from console.pages import ListPage, by_key
from console.responses import INVALID, done, failed, page
from memories import keyset
from memories.access import namespace_prefix_filter
from memories.errors import MemoryServiceError, NotFound
from memories.models import Memory
from memories.use_cases import review

PAGE_SIZE = 50


def _queue(request) -> dict:
    pending = (Memory.objects.filter(org_id=request.org.id, status=Memory.Status.PENDING_REVIEW, deleted_at__isnull=True)
               .defer("embedding", "search_vector").select_related("agent"))
    # The namespace filter (a prefix) rides on the same key order: memories_scope_prefix
    # narrows the rows, the page follows (created_at, id).
    form = NamespaceForm(request.GET)
    if not form.is_valid():
        return {"page": ListPage([]), "pending_count": 0, "filter": form, "can_change": False}
    if form.cleaned_data["namespace"]:
        pending = pending.filter(namespace_prefix_filter(form.cleaned_data["namespace"]))
    # The queue's count stays: a queue is bounded (what waits for review), and
    # memories_org_status_created counts it from the index.
    return {"page": by_key(pending, order=keyset.OLDEST_FIRST, limit=PAGE_SIZE, query=request.GET),
            "pending_count": pending.count(), "filter": form, "can_change": may(request.membership, OPERATOR)}


@require_GET
@console_view(VIEWER)
def review_queue(request):
    context = _queue(request)
    return page(request, "console/review.html", context, partial="queue",
                status=INVALID if context["filter"].errors else 200)


@require_POST
@console_view(OPERATOR)
def review_decide(request, memory_id, decision):
    back = reverse("console:review", args=[request.org.slug])
    try:
        if decision == "approve":
            review.memory_approve(request.caller, memory_id)
            message = "Approved: the memory is live."
        elif decision == "reject":
            form = ReasonForm(request.POST)
            if not form.is_valid():
                return failed(request, "Say why the memory is rejected (the reason is kept in its history).", back,
                              status=INVALID)
            review.memory_reject(request.caller, memory_id, reason=form.cleaned_data["reason"])
            message = "Rejected and archived."
        else:
            raise Http404("no such decision")
    except NotFound:
        raise Http404("no such memory") from None
    except MemoryServiceError as error:
        return failed(request, error.message, back)
    # With HTMX the decided item leaves the list (an empty swap) and the counter updates out of band.
    return done(request, message, back, template="console/review.html#decided", context=_queue(request))
