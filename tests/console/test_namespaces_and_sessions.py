"""Namespaces in the console (issue 33): the memories list, the review queue and the conflicts
show each memory's namespace and a store item's key, and filter by a namespace prefix that
never reaches past the operator's organisation; the sessions list and a session's page."""

import pytest
from django.utils import timezone

from memories.models import DuplicateCandidate
from memories.writes import change
from memories.writes.kernel import Actor
from tenants.context import tenant_context
from tenants.models import Session
from tests.console.conftest import remember

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_a(console_as, tenant_a):
    return console_as(tenant_a.org, "operator")


def _page(client, path, **query):
    response = client.get(client.base + path, query)
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()


def test_two_users_identical_store_items_show_their_namespace_and_key(operator_a, tenant_a):
    remember(tenant_a, '{"theme": "dark"}', namespace="users/42/prefs", key="ui")
    remember(tenant_a, '{"theme": "dark"}', namespace="users/43/prefs", key="ui")
    page = _page(operator_a, "memories/")
    assert "users/42/prefs" in page and "users/43/prefs" in page
    assert page.count("key <span") >= 2


def test_the_namespace_filter_is_a_prefix_of_whole_labels(operator_a, tenant_a):
    remember(tenant_a, "under users/42", namespace="users/42")
    remember(tenant_a, "under users/42/prefs", namespace="users/42/prefs")
    remember(tenant_a, "under users/420", namespace="users/420")
    remember(tenant_a, "under users/43", namespace="users/43")
    page = _page(operator_a, "memories/", namespace="users/42")
    assert "under users/42/prefs" in page
    assert "under users/420" not in page and "under users/43" not in page
    # The filter survives paging: the next page's link carries it.
    for i in range(30):
        remember(tenant_a, f"filler {i}", namespace="users/42/log")
    page = _page(operator_a, "memories/", namespace="users/42")
    assert "namespace=users%2F42" in page and "cursor=" in page


def test_the_namespace_filter_never_reaches_another_organisation(operator_a, tenant_a, tenant_b):
    remember(tenant_b, "the other organisation's secret plan", namespace="users/42")
    remember(tenant_a, "our own memory", namespace="users/42")
    for view in ("memories/", "review/", "conflicts/", "sessions/"):
        page = _page(operator_a, view, namespace="users/42")
        assert "the other organisation's secret plan" not in page
    assert "our own memory" in _page(operator_a, "memories/", namespace="users/42")


@pytest.mark.parametrize("namespace", ["%", "_", "users/%", "users\\", "a'b\"c", "users/*", "ünï/cödé", "../..", "x" * 300,
                                       "users//42", "users/\x00"])
@pytest.mark.parametrize("view", ["memories/", "review/", "conflicts/", "sessions/", "entities/"])
def test_odd_namespaces_give_an_error_or_nothing_never_a_500(operator_a, tenant_a, view, namespace):
    remember(tenant_a, "a plain memory", namespace="users/42", status="pending_review")
    response = operator_a.get(operator_a.base + view, {"namespace": namespace})
    assert response.status_code in (200, 422), response.status_code  # 422: the form names the field
    body = response.content.decode()
    assert "a plain memory" not in body
    if response.status_code == 422:
        assert "namespace" in body.lower()


def test_the_entity_list_and_the_export_read_a_namespace_as_the_other_filters_do(console_as, tenant_a):
    admin = console_as(tenant_a.org, "admin")
    remember(tenant_a, "Dana Whitfield moved to Lyon", namespace="users/42")
    remember(tenant_a, "Omar Haddad moved to Porto", namespace="users/420")
    listed = admin.get(admin.base + "entities/", {"namespace": "users/42/"})  # a trailing slash is no label
    assert listed.status_code == 200 and "Lyon" in listed.content.decode() and "Porto" not in listed.content.decode()
    for path in ("entities/", "export/download"):
        refused = admin.get(admin.base + path, {"namespace": "users//42"})
        assert refused.status_code == 422 and "none of them empty" in refused.content.decode(), path
    exported = admin.get(admin.base + "export/download", {"namespace": "/users/42/", "without_embeddings": "on"})
    lines = b"".join(exported.streaming_content).decode()
    assert exported.status_code == 200 and "Lyon" in lines and "Porto" not in lines


def test_the_review_queue_filters_by_namespace(operator_a, tenant_a):
    remember(tenant_a, "pending for user 42", namespace="users/42", status="pending_review")
    remember(tenant_a, "pending for user 43", namespace="users/43", status="pending_review")
    page = _page(operator_a, "review/", namespace="users/42")
    assert "pending for user 42" in page and "pending for user 43" not in page
    assert "1 waiting" in page and "users/42" in page


def test_the_conflicts_filter_by_namespace(operator_a, tenant_a):
    pairs = {}
    for user in ("42", "43"):
        first = remember(tenant_a, f"user {user} likes tea", namespace=f"users/{user}")
        second = remember(tenant_a, f"user {user} likes tea a lot", namespace=f"users/{user}")
        with tenant_context(tenant_a.org.id):
            DuplicateCandidate.objects.create(org=tenant_a.org, memory=first, candidate=second, similarity=0.97,
                                              detected_at=timezone.now())
        pairs[user] = first
    page = _page(operator_a, "conflicts/", namespace="users/42")
    assert "user 42 likes tea" in page and "user 43 likes tea" not in page
    assert "users/42" in page
    everything = _page(operator_a, "conflicts/")
    assert "user 42 likes tea" in everything and "user 43 likes tea" in everything


def _session(owner, *, namespace="", external_id="", ended=False):
    with tenant_context(owner.org.id):
        session = Session.objects.create(org=owner.org, agent=owner.agent, namespace=namespace,
                                         external_id=external_id)
        if ended:
            Session.objects.filter(org_id=owner.org.id, pk=session.pk).update(ended_at=timezone.now())
        return session


def test_sessions_are_listed_filtered_and_show_their_memories(operator_a, tenant_a):
    open_one = _session(tenant_a, namespace="users/42", external_id="thread-open")
    closed = _session(tenant_a, namespace="users/43", external_id="thread-closed", ended=True)
    remember(tenant_a, "said in the open thread", namespace="users/42", session_id=open_one.pk)
    page = _page(operator_a, "sessions/")
    assert "thread-open" in page and "thread-closed" in page
    assert 'href="/console/%s/sessions/"' % tenant_a.org.slug in page  # linked from the navigation
    page = _page(operator_a, "sessions/", state="open")
    assert "thread-open" in page and "thread-closed" not in page
    page = _page(operator_a, "sessions/", state="closed")
    assert "thread-closed" in page and "thread-open" not in page
    page = _page(operator_a, "sessions/", namespace="users/43")
    assert "thread-closed" in page and "thread-open" not in page
    page = _page(operator_a, "sessions/", agent=str(tenant_a.agent.pk))
    assert "thread-open" in page
    detail = _page(operator_a, f"sessions/{open_one.pk}/")
    assert "said in the open thread" in detail and "thread-open" in detail
    assert "said in the open thread" not in _page(operator_a, f"sessions/{closed.pk}/")


def test_sessions_are_paged_by_key(operator_a, tenant_a):
    for i in range(55):
        _session(tenant_a, external_id=f"run-{i:02d}")
    first = _page(operator_a, "sessions/")
    assert "cursor=" in first and "Next" in first
    import re
    cursor = re.search(r'href="\?([^"]*cursor=[^"]+)"', first).group(1).replace("&amp;", "&")
    second = operator_a.get(operator_a.base + "sessions/?" + cursor).content.decode()
    shown = lambda page: set(re.findall(r"run-\d\d", page))  # noqa: E731
    assert shown(first) and shown(second) and not shown(first) & shown(second)


def test_another_organisations_session_is_missing(operator_a, tenant_a, tenant_b):
    theirs = _session(tenant_b, namespace="users/42", external_id="their-thread")
    assert operator_a.get(operator_a.base + f"sessions/{theirs.pk}/").status_code == 404
    assert "their-thread" not in _page(operator_a, "sessions/")
    assert operator_a.get(operator_a.base + "sessions/not-a-uuid/").status_code == 404


def test_the_erasure_form_picks_a_session_from_the_list(console_as, tenant_a):
    admin = console_as(tenant_a.org, "admin")
    session = _session(tenant_a, external_id="to-forget")
    page = _page(admin, "sessions/")
    assert f"erase/?session={session.pk}" in page
    form = _page(admin, "erase/", session=str(session.pk))
    assert f'value="{session.pk}"' in form
    assert 'value="session" checked' in form.replace('checked=""', "checked") or 'value="session"' in form
    assert f"/console/{tenant_a.org.slug}/sessions/" in form


def test_one_version_offers_no_comparison(operator_a, tenant_a):
    memory = remember(tenant_a, "a memory never changed")
    assert "Compare version" not in _page(operator_a, f"memories/{memory.pk}/")
    with tenant_context(tenant_a.org.id):
        change.memory_update(org_id=tenant_a.org.id, memory_id=memory.pk, changes={"content": "a memory changed once"},
                             expected_version=memory.version, actor=Actor(agent_id=tenant_a.agent.pk))
    assert "Compare version" in _page(operator_a, f"memories/{memory.pk}/")


def test_admin_shows_a_deleted_store_item_as_deleted(client, tenant_a):
    from django.contrib.auth import get_user_model

    item = remember(tenant_a, '{"theme": "dark"}', namespace="users/42/prefs", key="ui")
    with tenant_context(tenant_a.org.id):
        change.memory_delete(org_id=tenant_a.org.id, memory_id=item.pk, actor=Actor(agent_id=tenant_a.agent.pk))
    client.force_login(get_user_model().objects.create_superuser("root-admin", "admin@example.com", "a-long-password"))
    page = client.get("/admin/memories/memory/", {"q": "users/42/prefs"}).content.decode()
    assert "deleted (active)" in page
    detail = client.get(f"/admin/memories/memory/{item.pk}/change/").content.decode()
    assert "deleted (active)" in detail
