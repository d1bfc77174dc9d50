"""The review queue and conflict resolution: what an operator decides is written as versions
(changed_by_type conflict_resolution for conflicts) and leaves the queue."""

import re

import pytest
from django.utils import timezone

from memories.models import DuplicateCandidate, Memory, MemoryRelationship, MemoryTag, MemoryVersion
from memories.writes import tagging
from tenants.context import tenant_context
from tests.console.conftest import reload, remember

pytestmark = pytest.mark.django_db


def _last_version(memory):
    with tenant_context(memory.org_id):
        return MemoryVersion.objects.filter(memory_id=memory.pk).order_by("-version_num").first()


@pytest.fixture
def operator_a(console_as, tenant_a):
    return console_as(tenant_a.org, "operator")


def test_the_queue_lists_pending_memories_oldest_first(operator_a, tenant_a):
    first = remember(tenant_a, "first pending", status="pending_review")
    remember(tenant_a, "second pending", status="pending_review")
    page = operator_a.get(operator_a.base + "review/").content.decode()
    assert page.index("first pending") < page.index("second pending")
    assert "2 waiting" in page and tenant_a.memory.content not in page
    assert f'id="review-{first.pk}"' in page and "data-key=\"approve\"" in page


def test_approve_removes_the_item_and_updates_the_counter(operator_a, tenant_a, htmx):
    pending = remember(tenant_a, "pending fact", status="pending_review")
    remember(tenant_a, "still pending", status="pending_review")
    response = operator_a.post(operator_a.base + f"review/{pending.pk}/approve", **htmx())
    body = response.content.decode()
    assert response.status_code == 200
    assert '<span id="pending-count" hx-swap-oob="true">1 waiting</span>' in body and "pending fact" not in body
    approved = reload(pending)
    assert (approved.status, approved.validation_status) == ("active", "verified")
    assert (_last_version(pending).operation, _last_version(pending).changed_by_user) == ("review", operator_a.user)
    again = operator_a.post(operator_a.base + f"review/{pending.pk}/approve", **htmx())
    assert again.status_code == 409 and "not waiting for review" in again.content.decode()


def test_an_approved_memory_is_linked_to_what_it_mentions(operator_a, tenant_a, htmx):
    """Waiting for review, a memory names nobody yet (it may be wrong); approved, it does."""
    from memories.models import MemoryEntity

    def mentioned(memory):
        with tenant_context(memory.org_id):
            return set(MemoryEntity.objects.filter(memory_id=memory.pk).values_list("entity__name", "role"))

    pending = remember(tenant_a, "Caroline: I moved here from Sweden", status="pending_review")
    assert mentioned(pending) == set()
    assert operator_a.post(operator_a.base + f"review/{pending.pk}/approve", **htmx()).status_code == 200
    assert mentioned(pending) == {("Caroline", "speaker"), ("Sweden", "mentioned")}


def test_reject_needs_a_reason_and_keeps_it(operator_a, tenant_a, htmx):
    pending = remember(tenant_a, "dubious fact", status="pending_review")
    refused = operator_a.post(operator_a.base + f"review/{pending.pk}/reject", {"reason": " "}, **htmx())
    assert refused.status_code == 422 and "Say why" in refused.content.decode()
    assert reload(pending).status == "pending_review"
    assert operator_a.post(operator_a.base + f"review/{pending.pk}/reject", {"reason": "hallucinated"}).status_code == 302
    rejected = reload(pending)
    assert (rejected.status, rejected.validation_status) == ("archived", "rejected")
    assert _last_version(pending).change_reason == "hallucinated"


@pytest.fixture
def contradiction(tenant_a):
    left = remember(tenant_a, "The meeting is on Monday", tags=["calendar"])
    right = remember(tenant_a, "The meeting is on Tuesday", tags=["meetings"], confidence=0.9)
    with tenant_context(tenant_a.org.id):
        relationship = tagging.relationship_create(org_id=tenant_a.org.id, source_id=left.pk, target_id=right.pk,
                                                   relation_type="contradicts")
    return left, right, relationship


def test_conflicts_list_contradictions_and_near_duplicates(operator_a, tenant_a, contradiction):
    page = operator_a.get(operator_a.base + "conflicts/").content.decode()
    assert "The meeting is on Monday" in page and "The meeting is on Tuesday" in page
    assert "similarity 0.950" in page  # the tenant's near-duplicate candidate
    detail = operator_a.get(operator_a.base + f"conflicts/contradiction/{contradiction[2].pk}/").content.decode()
    assert "The meeting is on Monday\nThe meeting is on Tuesday</textarea>" in detail


def test_keep_one_supersedes_the_other(operator_a, tenant_a, contradiction):
    left, right, relationship = contradiction
    response = operator_a.post(operator_a.base + f"conflicts/contradiction/{relationship.pk}/resolve",
                               {"resolution": "keep", "keep": right.pk, "reason": "calendar says so"})
    assert response.status_code == 302 and response["Location"].endswith(f"memories/{right.pk}/")
    dropped = reload(left)
    assert (dropped.status, dropped.superseded_by_id) == ("superseded", right.pk)
    for memory in (left, right):
        version = _last_version(memory)
        assert version.changed_by_type == "conflict_resolution" and "calendar says so" in version.change_reason
    assert "The meeting is on Monday" not in operator_a.get(operator_a.base + "conflicts/").content.decode()
    again = operator_a.post(operator_a.base + f"conflicts/contradiction/{relationship.pk}/resolve",
                            {"resolution": "both_valid"})
    assert again.status_code == 404


def test_merge_makes_one_memory_from_both(operator_a, tenant_a, contradiction):
    left, right, relationship = contradiction
    response = operator_a.post(operator_a.base + f"conflicts/contradiction/{relationship.pk}/resolve",
                               {"resolution": "merge", "content": "The meeting moved from Monday to Tuesday"})
    assert response.status_code == 302
    with tenant_context(tenant_a.org.id):
        merged = Memory.objects.get(content="The meeting moved from Monday to Tuesday")
        assert sorted(MemoryTag.objects.filter(memory_id=merged.pk).values_list("tag", flat=True)) == ["calendar", "meetings"]
        assert set(MemoryRelationship.objects.filter(source=merged, relation_type="derived_from")
                   .values_list("target_id", flat=True)) == {left.pk, right.pk}
        assert MemoryVersion.objects.get(memory=merged).changed_by_type == "conflict_resolution"
    assert str(merged.confidence) == "0.900" and merged.provenance["merged_from"] == [str(left.pk), str(right.pk)]
    for memory in (left, right):
        assert (reload(memory).status, reload(memory).merged_into_id) == ("merged", merged.pk)
        assert (_last_version(memory).operation, _last_version(memory).changed_by_type) == ("merge", "conflict_resolution")


def test_a_merge_identical_to_one_side_is_refused(operator_a, tenant_a, contradiction, htmx):
    left, _, relationship = contradiction
    response = operator_a.post(operator_a.base + f"conflicts/contradiction/{relationship.pk}/resolve",
                               {"resolution": "merge", "content": "the meeting is on  monday"}, **htmx("resolve"))
    assert response.status_code == 422 and "keep that one instead" in response.content.decode()
    assert reload(left).status == "active" and reload(left).version == 1


def test_both_valid_keeps_both_and_closes_the_near_duplicate(operator_a, tenant_a):
    candidate = tenant_a.duplicate_candidate
    response = operator_a.post(operator_a.base + f"conflicts/duplicate/{candidate.pk}/resolve",
                               {"resolution": "both_valid"})
    assert response.status_code == 302
    with tenant_context(tenant_a.org.id):
        closed = DuplicateCandidate.objects.get(pk=candidate.pk)
    assert closed.resolution == "both_valid" and closed.resolved_at is not None
    for memory in (tenant_a.memory, tenant_a.other_memory):
        assert reload(memory).status == "active"
        assert _last_version(memory).changed_by_type == "conflict_resolution"


def test_resolution_input_errors_change_nothing(operator_a, tenant_a, contradiction, htmx):
    left, right, relationship = contradiction
    url = operator_a.base + f"conflicts/contradiction/{relationship.pk}/resolve"
    assert operator_a.post(url, {"resolution": "flip-a-coin"}, **htmx("resolve")).status_code == 422
    no_choice = operator_a.post(url, {"resolution": "keep", "keep": tenant_a.memory.pk}, **htmx("resolve"))
    assert no_choice.status_code == 422 and "choose which of the two memories to keep" in no_choice.content.decode()
    assert reload(left).version == reload(right).version == 1


def test_the_queue_pages_by_key_while_it_is_worked(operator_a, tenant_a):
    """Memories approved and others arriving between two pages skip and repeat none that waited
    throughout (docs/adr/0046); the queue keeps its count."""
    from tests.console.test_memories import link

    rows = [remember(tenant_a, f"waiting {i:02d}", status="pending_review") for i in range(60)]
    approved = rows[::9]
    stable = {row.content for row in rows if row not in approved}
    first = operator_a.get(operator_a.base + "review/")
    assert "60 waiting" in first.content.decode()
    seen, response, n = [], first, 0
    while True:
        seen += re.findall(r"waiting \d\d", response.content.decode())
        n += 1
        remember(tenant_a, f"arrived {n}", status="pending_review")
        if approved:
            with tenant_context(tenant_a.org.id):
                Memory.objects.filter(pk=approved.pop().pk).update(status="active")
        following = link(response, "next")
        if not following:
            break
        response = operator_a.get(operator_a.base + "review/?" + following)
    assert len(seen) == len(set(seen)) and stable <= set(seen)


def test_conflicts_page_by_key_past_the_first_hundred_while_resolved(operator_a, tenant_a):
    """Both kinds in one order (when found, then id), a hundred a page; conflicts resolved or
    found between two pages skip and repeat none of the others (docs/adr/0046)."""
    from tests.console.test_memories import link

    rows = [remember(tenant_a, f"clash {i:03d}") for i in range(2 * 131)]
    with tenant_context(tenant_a.org.id):
        made = [DuplicateCandidate.objects.create(org=tenant_a.org, memory=rows[2 * i], candidate=rows[2 * i + 1],
                                                  similarity=0.9) for i in range(131)]
    resolved = made[::20]
    stable = {str(row.pk) for row in made if row not in resolved}
    seen, response = [], operator_a.get(operator_a.base + "conflicts/")
    assert "clash" in response.content.decode() and "open" not in response.content.decode().split("</h1>")[0][-40:]
    while True:
        seen += re.findall(r"/conflicts/duplicate/([0-9a-f-]{36})/", response.content.decode())
        with tenant_context(tenant_a.org.id):
            if resolved:
                DuplicateCandidate.objects.filter(pk=resolved.pop().pk).update(resolved_at=timezone.now())
        following = link(response, "next")
        if not following:
            break
        response = operator_a.get(operator_a.base + "conflicts/?" + following)
    assert len(seen) == len(set(seen)) and stable <= set(seen)
    assert operator_a.get(operator_a.base + "conflicts/?cursor=nonsense").status_code == 200
