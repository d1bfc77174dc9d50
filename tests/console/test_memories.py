"""The memory browser and a memory's page: search, filters, sorting, pagination, bulk
actions, tags inline, the version diff, and every change an operator makes."""

import re

import pytest

from memories.models import Memory, MemoryTag, MemoryVersion
from memories.writes import change, kernel, review, tagging
from tenants.context import tenant_context
from tests import factories
from tests.console.conftest import reload, remember

pytestmark = pytest.mark.django_db


def _versions(memory):
    with tenant_context(memory.org_id):
        return list(MemoryVersion.objects.filter(memory_id=memory.pk).order_by("version_num"))


def _rows(response) -> list[str]:
    return re.findall(r'<td class="content"><a href="[^"]+">([^<]*)</a>', response.content.decode())


@pytest.fixture
def operator_a(console_as, tenant_a):
    return console_as(tenant_a.org, "operator")


def test_search_finds_memories_by_meaning(operator_a, tenant_a, tenant_b):
    remember(tenant_a, "The customer's favourite colour is green")
    remember(tenant_a, "Invoices are sent on the first of the month")
    remember(tenant_b, "Beta's favourite colour is green too")
    rows = _rows(operator_a.get(operator_a.base + "memories/", {"q": "which colour does the client like?"}))
    assert rows[0] == "The customer&#x27;s favourite colour is green"
    assert not any("Beta" in row for row in rows)


def test_filters_combine_and_the_url_keeps_them(operator_a, tenant_a):
    remember(tenant_a, "a preference", category="preference", tags=["vip"])
    remember(tenant_a, "another preference", category="preference")
    remember(tenant_a, "an episode", category="episodic", tags=["vip"])
    response = operator_a.get(operator_a.base + "memories/", {"category": "preference", "tags": "vip"})
    assert _rows(response) == ["a preference"]
    page = response.content.decode()
    assert '<option value="preference" selected>' in page and 'value="vip"' in page


@pytest.mark.parametrize("status, expected", [("", {"live"}), ("archived", {"archived"}),
                                              ("pending_review", {"pending"}), ("any", {"live", "archived", "pending"})])
def test_the_status_filter(operator_a, tenant_a, status, expected):
    with tenant_context(tenant_a.org.id):
        Memory.objects.all().delete()
    remember(tenant_a, "live")
    with tenant_context(tenant_a.org.id):
        change.memory_archive(org_id=tenant_a.org.id, memory_id=remember(tenant_a, "archived").pk,
                              actor=kernel.Actor())
    remember(tenant_a, "pending", status="pending_review")
    assert set(_rows(operator_a.get(operator_a.base + "memories/", {"status": status}))) == expected


def test_validation_status_and_time_range_filters(operator_a, tenant_a):
    with tenant_context(tenant_a.org.id):
        Memory.objects.all().delete()
    old = remember(tenant_a, "old and verified", status="pending_review")
    with tenant_context(tenant_a.org.id):
        review.memory_approve(org_id=tenant_a.org.id, memory_id=old.pk, actor=kernel.Actor())
        Memory.objects.filter(pk=old.pk).update(created_at="2020-01-01T00:00:00Z")
    remember(tenant_a, "new and unverified")
    get = lambda **q: set(_rows(operator_a.get(operator_a.base + "memories/", q)))  # noqa: E731
    assert get(validation_status="verified") == {"old and verified"}
    assert get(period="last_week") == {"new and unverified"}
    assert get(created_after="2019-12-31", created_before="2020-01-01") == {"old and verified"}
    bad = operator_a.get(operator_a.base + "memories/", {"created_after": "2020-02-01", "created_before": "2020-01-01"})
    assert "must be on or after the start date" in bad.content.decode()


def test_sorting_and_pagination_keep_the_filters(operator_a, tenant_a):
    with tenant_context(tenant_a.org.id):
        Memory.objects.all().delete()
    for i in range(30):
        remember(tenant_a, f"note {i:02d}", confidence=i / 100, tags=["batch"])
    first = operator_a.get(operator_a.base + "memories/", {"tags": "batch", "sort": "confidence"})
    assert _rows(first)[:2] == ["note 29", "note 28"] and len(_rows(first)) == 25
    assert "in all" not in first.content.decode() and 'rel="prev"' not in first.content.decode()  # no count
    following = link(first, "next")
    assert following.startswith("tags=batch&sort=confidence&cursor=")
    second = operator_a.get(operator_a.base + "memories/?" + following)
    assert _rows(second) == [f"note {i:02d}" for i in range(4, -1, -1)] and not link(second, "next")
    back = operator_a.get(operator_a.base + "memories/?" + link(second, "prev"))
    assert _rows(back) == _rows(first)


def link(response, rel) -> str:
    """The query string of the page's Next or Previous link ("" when it has none)."""
    found = re.search(rf'<a href="\?([^"]*)"[^>]*rel="{rel}"', response.content.decode())
    return found.group(1).replace("&amp;", "&") if found else ""


@pytest.mark.parametrize("query", [{}, {"sort": "oldest", "tags": "walk", "status": "any"},
                                   {"sort": "importance", "namespace": "users/alice"}])
def test_the_pages_skip_and_repeat_nothing_while_memories_are_written(operator_a, tenant_a, query):
    with tenant_context(tenant_a.org.id):
        Memory.objects.all().delete()
    rows = [remember(tenant_a, f"walk {i:02d}", importance=(i % 4) / 4, namespace="users/alice", tags=["walk"])
            for i in range(70)]
    volatile = rows[::7]
    stable = {row.content for row in rows if row not in volatile}
    seen, url, n = [], "?" + "&".join(f"{k}={v}" for k, v in query.items()), 0
    while url is not None:
        response = operator_a.get(operator_a.base + "memories/" + url)
        seen += _rows(response)
        n += 1
        remember(tenant_a, f"written {n}", importance=0.5, namespace="users/alice", tags=["walk"])
        if volatile:
            with tenant_context(tenant_a.org.id):
                Memory.objects.filter(pk=volatile.pop().pk).delete()
        url = ("?" + link(response, "next")) if link(response, "next") else None
    assert len(seen) == len(set(seen)) and stable <= set(seen)


def test_htmx_gets_only_the_results_fragment(operator_a, tenant_a, htmx):
    response = operator_a.get(operator_a.base + "memories/", {"q": "tea"}, **htmx("results"))
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="results"') and "<html" not in body
    assert "<html" in operator_a.get(operator_a.base + "memories/", {"q": "tea"}).content.decode()


def test_bulk_tag_archive_and_approve(operator_a, tenant_a, htmx):
    one, two = remember(tenant_a, "bulk one"), remember(tenant_a, "bulk two", status="pending_review")
    url = operator_a.base + "memories/bulk"
    tagged = operator_a.post(url, {"action": "tag", "tags": "reviewed, q3", "ids": [one.pk, two.pk],
                                   "state": "status=any"}, **htmx("results"))
    assert tagged.status_code == 200 and "2 memories tagged." in tagged.content.decode()
    with tenant_context(tenant_a.org.id):
        assert set(MemoryTag.objects.filter(memory_id=two.pk).values_list("tag", flat=True)) == {"reviewed", "q3"}
    approved = operator_a.post(url, {"action": "approve", "ids": [one.pk, two.pk]})
    assert approved.status_code == 302
    assert reload(two).status == "active" and reload(two).validation_status == "verified"
    messages = operator_a.get(approved["Location"]).content.decode()
    assert "1 memory approved. 1 left as they were" in messages and "not waiting for review" in messages
    operator_a.post(url, {"action": "archive", "ids": [one.pk, two.pk]})
    assert reload(one).status == reload(two).status == "archived"
    assert [v.operation for v in _versions(two)] == ["create", "update", "review", "archive"]


def test_bulk_input_errors_change_nothing(operator_a, tenant_a, htmx):
    one = remember(tenant_a, "bulk one")
    url = operator_a.base + "memories/bulk"
    assert operator_a.post(url, {"action": "archive"}, **htmx("results")).status_code == 422
    bad_tag = operator_a.post(url, {"action": "tag", "tags": "<b>", "ids": [one.pk]}, **htmx("results"))
    assert bad_tag.status_code == 422 and "not a tag" in bad_tag.content.decode()
    assert operator_a.post(url, {"action": "melt", "ids": [one.pk]}, **htmx("results")).status_code == 422
    assert reload(one).version == 1 and reload(one).status == "active"


def test_the_detail_page_shows_every_part(operator_a, tenant_a):
    page = operator_a.get(operator_a.base + f"memories/{tenant_a.memory.pk}/").content.decode()
    for part in [tenant_a.memory.content, "drinks", "v1 create", tenant_a.other_memory.content[:40], "supports",
                 "Provenance", "memories/user-1", tenant_a.agent.name]:
        assert part in page, part


def test_the_detail_page_shows_when_it_happened_apart_from_when_it_was_recorded(operator_a, tenant_a):
    from datetime import datetime, timezone

    happened = datetime(2023, 5, 7, 18, 30, tzinfo=timezone.utc)
    memory = remember(tenant_a, "Went to a charity race", event_time=happened)
    page = operator_a.get(operator_a.base + f"memories/{memory.pk}/").content.decode()
    assert re.search(r"<dt>Happened</dt><dd><time datetime=\"2023-05-07T18:30:00\+00:00\">2023-05-07 18:30</time>",
                     page)
    listed = operator_a.get(operator_a.base + "memories/").content.decode()
    assert re.search(r"happened <time datetime=\"2023-05-07T18:30:00\+00:00\">2023-05-07 18:30</time>", listed)


def test_tags_are_added_and_removed_inline(operator_a, tenant_a, htmx):
    memory = tenant_a.memory
    added = operator_a.post(operator_a.base + f"memories/{memory.pk}/tags", {"tags": "tea, morning"},
                            **htmx("tags-and-history"))
    body = added.content.decode()
    assert added.status_code == 200 and body.lstrip().startswith('<div id="tags-and-history"')
    assert "morning" in body and "tags added: morning, tea" in body and 'hx-swap-oob="true"' in body
    removed = operator_a.post(operator_a.base + f"memories/{memory.pk}/tags/remove", {"tag": "drinks"},
                              **htmx("tags-and-history"))
    assert "tag removed: drinks" in removed.content.decode()
    with tenant_context(tenant_a.org.id):
        assert sorted(MemoryTag.objects.filter(memory_id=memory.pk).values_list("tag", flat=True)) == ["morning", "tea"]
    invalid = operator_a.post(operator_a.base + f"memories/{memory.pk}/tags", {"tags": "no spaces<>"},
                              **htmx("tags-and-history"))
    assert invalid.status_code == 422 and "not a tag" in invalid.content.decode()
    missing = operator_a.post(operator_a.base + f"memories/{memory.pk}/tags/remove", {"tag": "absent"}, **htmx())
    assert missing.status_code == 409 and missing["HX-Reswap"] == "none" and "has no tag" in missing.content.decode()


def test_a_tag_the_organisations_policy_refuses_is_shown_as_the_forms_error(operator_a, tenant_a, htmx):
    """A card number passes the tag form's own checks; the write refuses it for an organisation
    that redacts personal data, and the form says so (it used to escape as a 500)."""
    with tenant_context(tenant_a.org.id):
        type(tenant_a.org).objects.filter(pk=tenant_a.org.pk).update(redact_personal_data=True)
    url = operator_a.base + f"memories/{tenant_a.memory.pk}/tags"
    for headers in (htmx("tags-and-history"), {}):
        refused = operator_a.post(url, {"tags": "4111111111111111"}, **headers)
        body = refused.content.decode()
        assert refused.status_code == 422 and "looks like it holds a secret or personal data" in body, body
    with tenant_context(tenant_a.org.id):
        assert list(MemoryTag.objects.filter(memory_id=tenant_a.memory.pk).values_list("tag", flat=True)) == ["drinks"]


def test_edit_writes_a_version_and_refuses_a_stale_form(operator_a, tenant_a):
    memory = remember(tenant_a, "The office is in Porto")
    url = operator_a.base + f"memories/{memory.pk}/edit"
    form = {"content": "The office is in Lisbon", "category": "factual", "memory_type": "semantic",
            "confidence": "0.9", "importance": "0.5", "sensitivity": "internal", "version": 1, "reason": "moved"}
    assert operator_a.post(url, form).status_code == 302
    saved = reload(memory)
    assert (saved.content, saved.version, str(saved.confidence)) == ("The office is in Lisbon", 2, "0.900")
    assert _versions(memory)[-1].change_reason == "moved" and _versions(memory)[-1].changed_by_type == "user"
    stale = operator_a.post(url, {**form, "content": "The office is in Braga"})
    assert stale.status_code == 422 and "Someone changed this memory meanwhile" in stale.content.decode()
    assert reload(memory).content == "The office is in Lisbon"
    empty = operator_a.post(url, {**form, "content": "  ", "version": 2})
    assert empty.status_code == 422 and "This field is required" in empty.content.decode()


def test_archive_restore_confirm_delete_and_supersede(operator_a, tenant_a):
    memory = remember(tenant_a, "The launch is in May")
    act = lambda action: operator_a.post(operator_a.base + f"memories/{memory.pk}/{action}")  # noqa: E731
    assert act("archive").status_code == 302 and reload(memory).status == "archived"
    assert act("restore").status_code == 302 and reload(memory).status == "active"
    assert act("confirm").status_code == 302 and reload(memory).is_protected
    assert act("delete").status_code == 302 and reload(memory).deleted_at is not None
    refused = act("archive")
    assert refused.status_code == 302 and "is deleted" in operator_a.get(refused["Location"]).content.decode()
    assert act("restore").status_code == 302 and reload(memory).deleted_at is None
    assert act("melt").status_code == 404
    response = operator_a.post(operator_a.base + f"memories/{memory.pk}/supersede",
                               {"content": "The launch moved to June", "reason": "new plan", "version": reload(memory).version})
    assert response.status_code == 302
    old = reload(memory)
    assert old.status == "superseded" and response["Location"].endswith(f"memories/{old.superseded_by_id}/")
    assert [v.operation for v in _versions(memory)] == ["create", "archive", "restore", "confirm", "delete", "restore",
                                                       "supersede"]


def test_the_version_diff_shows_words_and_fields(operator_a, tenant_a, htmx):
    memory = remember(tenant_a, "The office is in Porto near the river")
    with tenant_context(tenant_a.org.id):
        change.memory_update(org_id=tenant_a.org.id, memory_id=memory.pk, expected_version=1,
                             changes={"content": "The office is in Lisbon near the river", "category": "episodic"},
                             actor=kernel.Actor(reason="moved"))
    response = operator_a.get(operator_a.base + f"memories/{memory.pk}/diff", {"from": 1, "to": 2}, **htmx("diff"))
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="diff"')
    assert "<del>Porto</del><ins>Lisbon</ins>" in body
    assert re.search(r"<th>category</th><td><del>factual</del></td><td><ins>episodic</ins></td>", body)
    whole = operator_a.get(operator_a.base + f"memories/{memory.pk}/diff", {"from": 2, "to": 1})
    assert "<del>Porto</del><ins>Lisbon</ins>" in whole.content.decode() and "<html" in whole.content.decode()
    wrong = operator_a.get(operator_a.base + f"memories/{memory.pk}/diff", {"from": 1, "to": 9})
    assert wrong.status_code == 422 and "choose two of this memory&#x27;s versions (1, 2)" in wrong.content.decode()


SCRIPT = '<script>alert("owned")</script><img src=x onerror=alert(1)>'


def test_memory_content_is_always_text(console_as, tenant_a):
    """A memory holding HTML renders as text in every page that shows content."""
    client = console_as(tenant_a.org, "operator")
    hostile = remember(tenant_a, f"note {SCRIPT}", tags=["x"], status="pending_review")
    with tenant_context(tenant_a.org.id):
        other = factories.memory(org=tenant_a.org, agent=tenant_a.agent, content=f"other {SCRIPT}")
        change.memory_update(org_id=tenant_a.org.id, memory_id=hostile.pk, expected_version=1,
                             changes={"content": f"edited {SCRIPT}"}, actor=kernel.Actor(reason=SCRIPT))
        relationship = tagging.relationship_create(org_id=tenant_a.org.id, source_id=hostile.pk, target_id=other.pk,
                                                   relation_type="contradicts", predicate=SCRIPT)
    from memories.models import RetrievalEvent
    with tenant_context(tenant_a.org.id):
        event = RetrievalEvent.objects.create(org=tenant_a.org, kind="search", agent=tenant_a.agent, query=SCRIPT,
                                              returned_memory_ids=[hostile.pk], returned_scores=[0.5])
    pages = ["memories/?status=any", f"memories/?status=any&q={SCRIPT}", f"memories/{hostile.pk}/",
             f"memories/{hostile.pk}/diff?from=1&to=2", f"memories/{hostile.pk}/edit", "review/", "conflicts/",
             f"conflicts/contradiction/{relationship.pk}/", "events/", f"events/{event.pk}/"]
    for url in pages:
        body = client.get(client.base + url).content.decode()
        assert "<script>alert" not in body and "<img src=x" not in body, url
        assert "&lt;script&gt;alert(&quot;owned&quot;)&lt;/script&gt;" in body or "&lt;script&gt;alert(" in body, url


def test_the_diff_shows_no_change_where_a_number_is_only_spelled_differently(operator_a, tenant_a):
    memory = remember(tenant_a, "A memory with default numbers")
    with tenant_context(tenant_a.org.id):
        tagging.memory_tags_add(org_id=tenant_a.org.id, memory_id=memory.pk, tags=["x"], actor=kernel.Actor())
    body = operator_a.get(operator_a.base + f"memories/{memory.pk}/diff", {"from": 1, "to": 2}).content.decode()
    changed = re.findall(r"<tr><th>(\w+)</th><td><del>", body)
    assert changed == ["tags"]


def test_any_tag_an_agent_can_write_can_be_shown_and_removed(operator_a, tenant_a, api_a):
    memory = remember(tenant_a, "tagged by an agent")
    odd = ["a/b", "..", "x?y=1#z"]
    assert api_a.post(f"/api/v1/memories/{memory.pk}/tags", {"tags": odd}).status_code in (200, 201)
    page = operator_a.get(operator_a.base + f"memories/{memory.pk}/")
    assert page.status_code == 200 and all(tag in page.content.decode() for tag in ["a/b", "x?y=1#z"])
    for tag in odd:
        assert operator_a.post(operator_a.base + f"memories/{memory.pk}/tags/remove", {"tag": tag}).status_code == 302
    with tenant_context(tenant_a.org.id):
        assert not MemoryTag.objects.filter(memory_id=memory.pk).exists()


def test_inline_changes_keep_the_action_buttons_on_the_current_version(operator_a, tenant_a, htmx):
    memory = remember(tenant_a, "version checked")
    added = operator_a.post(operator_a.base + f"memories/{memory.pk}/tags", {"tags": "x"}, **htmx("tags-and-history"))
    assert '<div class="actions" id="actions" hx-swap-oob="true">' in added.content.decode()
    assert 'name="version" value="2"' in added.content.decode()
    stale = operator_a.post(operator_a.base + f"memories/{memory.pk}/delete", {"version": 1})
    assert "someone changed this memory meanwhile (now version 2)" in operator_a.get(stale["Location"]).content.decode()
    assert reload(memory).deleted_at is None
    assert operator_a.post(operator_a.base + f"memories/{memory.pk}/delete", {"version": 2}).status_code == 302
    assert reload(memory).deleted_at is not None


def test_a_stale_edit_keeps_the_operators_text_and_can_be_saved_deliberately(operator_a, tenant_a):
    memory = remember(tenant_a, "The office is in Porto")
    with tenant_context(tenant_a.org.id):
        change.memory_update(org_id=tenant_a.org.id, memory_id=memory.pk, expected_version=1,
                             changes={"content": "The office is in Faro"}, actor=kernel.Actor())
    url = operator_a.base + f"memories/{memory.pk}/edit"
    form = {"content": "The office is in Lisbon", "category": "factual", "memory_type": "semantic",
            "confidence": "0.8", "importance": "0", "sensitivity": "internal", "version": 1, "reason": ""}
    stale = operator_a.post(url, form)
    body = stale.content.decode()
    assert stale.status_code == 422 and "Someone changed this memory meanwhile" in body
    assert "The office is in Faro" in body and re.search(r">\s*The office is in Lisbon</textarea>", body)
    assert 'name="version" value="2"' in body
    assert operator_a.post(url, {**form, "version": 2}).status_code == 302
    assert reload(memory).content == "The office is in Lisbon"


def test_without_javascript_a_form_error_comes_back_as_a_whole_page(operator_a, tenant_a):
    response = operator_a.post(operator_a.base + f"memories/{tenant_a.memory.pk}/tags", {"tags": "<bad>"})
    assert response.status_code == 422 and "<html" in response.content.decode() and "not a tag" in response.content.decode()


def test_a_wrong_diff_request_with_htmx_answers_with_the_fragment(operator_a, tenant_a, htmx):
    response = operator_a.get(operator_a.base + f"memories/{tenant_a.memory.pk}/diff", {"from": 1, "to": 7},
                              **htmx("diff"))
    assert response.status_code == 422 and response.content.decode().lstrip().startswith('<div id="diff"')
    assert "HX-Request" in response["Vary"]


def test_restoring_a_rejected_memory_sends_it_back_to_review(operator_a, tenant_a):
    memory = remember(tenant_a, "rejected once", status="pending_review")
    with tenant_context(tenant_a.org.id):
        review.memory_reject(org_id=tenant_a.org.id, memory_id=memory.pk, actor=kernel.Actor(reason="unsure"))
    operator_a.post(operator_a.base + f"memories/{memory.pk}/restore")
    assert (reload(memory).status, reload(memory).validation_status) == ("pending_review", "unverified")
    archived_pending = remember(tenant_a, "archived before review", status="pending_review")
    with tenant_context(tenant_a.org.id):
        change.memory_archive(org_id=tenant_a.org.id, memory_id=archived_pending.pk, actor=kernel.Actor())
    operator_a.post(operator_a.base + f"memories/{archived_pending.pk}/restore")
    assert reload(archived_pending).status == "pending_review"
    live = remember(tenant_a, "archived while live")
    with tenant_context(tenant_a.org.id):
        change.memory_archive(org_id=tenant_a.org.id, memory_id=live.pk, actor=kernel.Actor())
    response = operator_a.post(operator_a.base + f"memories/{live.pk}/restore")
    assert reload(live).status == "active" and "Restored: now active." in operator_a.get(response["Location"]).content.decode()
