"""Who reaches which console page: sign-in, the organisation switch, roles, and other
organisations' objects (always a 404, never a glimpse)."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from tenants.context import activate_member_orgs, activate_user, tenant_context
from tenants.models import Membership, Organization
from tests import factories
from tests.console.conftest import operator

pytestmark = pytest.mark.django_db

PAGES = ["", "memories/", "entities/", "review/", "conflicts/", "events/"]


def object_pages(tenant) -> list[str]:
    """Every console URL that names one of tenant's objects."""
    memory, event = tenant.memory.pk, tenant.retrieval_event.pk
    return [f"memories/{memory}/", f"memories/{memory}/diff?from=1&to=1", f"memories/{memory}/edit",
            f"memories/{memory}/supersede", f"conflicts/duplicate/{tenant.duplicate_candidate.pk}/",
            f"events/{event}/", f"agents/{tenant.agent.pk}/", f"entities/{tenant.entity.pk}/"]


def object_actions(tenant) -> list[tuple[str, dict]]:
    memory = tenant.memory.pk
    return [(f"memories/{memory}/tags", {"tags": "x"}), (f"memories/{memory}/tags/remove", {"tag": "drinks"}),
            (f"memories/{memory}/archive", {}), (f"memories/{memory}/confirm", {}), (f"memories/{memory}/delete", {}),
            (f"memories/{memory}/restore", {}), (f"memories/{memory}/edit", {"content": "x"}),
            (f"memories/{memory}/supersede", {"content": "x", "version": 1}),
            (f"review/{memory}/approve", {}), (f"review/{memory}/reject", {"reason": "no"}),
            (f"conflicts/duplicate/{tenant.duplicate_candidate.pk}/resolve", {"resolution": "both_valid"}),
            (f"events/{tenant.retrieval_event.pk}/replay", {}),
            (f"agents/{tenant.agent.pk}/keys", {"name": "stolen"}),
            (f"agents/{tenant.agent.pk}/keys/{tenant.api_key.pk}/revoke", {})]


def test_signed_out_visitors_are_sent_to_sign_in(client, org_a):
    for url in ["/console/", f"/console/{org_a.slug}/", f"/console/{org_a.slug}/memories/?q=tea"]:
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/console/sign-in/?next=")


def test_sign_in_with_a_password_lands_on_the_first_organisation(client, org_a):
    user = operator(org_a, "viewer")
    page = client.get("/console/sign-in/")
    assert page.status_code == 200 and b'name="csrfmiddlewaretoken"' in page.content
    wrong = client.post("/console/sign-in/", {"username": user.username, "password": "wrong"})
    assert wrong.status_code == 200 and "Please enter a correct username and password" in wrong.content.decode()
    response = client.post("/console/sign-in/", {"username": user.username, "password": "a-long-password"}, follow=True)
    assert response.redirect_chain[-1][0] == f"/console/{org_a.slug}/"
    assert org_a.name in response.content.decode()


def test_sign_out_needs_a_post_and_ends_the_session(console_as, org_a):
    client = console_as(org_a, "viewer")
    assert client.post("/console/sign-out/").status_code == 302
    assert client.get(client.base).status_code == 302


def test_a_user_without_membership_is_told_so(client, org_a):
    user = get_user_model().objects.create_user("lonely", password="a-long-password")
    client.force_login(user)
    response = client.get("/console/")
    assert response.status_code == 403 and "not a member of any organisation" in response.content.decode()


def test_the_switch_lists_only_the_operators_organisations(console_as, org_a, org_b):
    org_c = factories.organization("Gamma Corp")
    client = console_as(org_a, "viewer")
    operator(org_c, "admin", user=client.user)
    page = client.get(client.base).content.decode()
    assert org_a.name in page and org_c.name in page and org_b.name not in page
    switched = client.get(f"/console/{org_c.slug}/")
    assert switched.status_code == 200 and "(admin)" in switched.content.decode()


def test_another_organisations_console_is_a_404(console_as, tenant_a, tenant_b):
    client = console_as(tenant_a.org, "admin")
    for page in PAGES + ["agents/"]:
        assert client.get(f"/console/{tenant_b.org.slug}/{page}").status_code == 404, page


def test_another_organisations_objects_are_404_under_ones_own_organisation(console_as, tenant_a, tenant_b):
    client = console_as(tenant_a.org, "admin")
    for url in object_pages(tenant_b):
        assert client.get(client.base + url).status_code == 404, url
    for url, data in object_actions(tenant_b):
        assert client.post(client.base + url, data).status_code == 404, url
    with tenant_context(tenant_b.org.id):
        tenant_b.memory.refresh_from_db()
        tenant_b.api_key.refresh_from_db()
    assert tenant_b.memory.status == "active" and tenant_b.memory.deleted_at is None and tenant_b.memory.version == 1
    assert tenant_b.api_key.revoked_at is None


def test_viewers_read_but_change_nothing(console_as, tenant_a):
    client = console_as(tenant_a.org, "viewer")
    for url in PAGES + object_pages(tenant_a)[:2] + [object_pages(tenant_a)[4], object_pages(tenant_a)[5]]:
        assert client.get(client.base + url).status_code == 200, url
    for url, data in object_actions(tenant_a):
        assert client.post(client.base + url, data).status_code == 403, url
    assert client.get(client.base + f"memories/{tenant_a.memory.pk}/edit").status_code == 403
    page = client.get(client.base + f"memories/{tenant_a.memory.pk}/").content.decode()
    assert "Archive</button>" not in page and "Add tags" not in page
    with tenant_context(tenant_a.org.id):
        tenant_a.memory.refresh_from_db()
    assert tenant_a.memory.version == 1 and tenant_a.memory.status == "active"


def test_operators_change_memories_but_not_agents_and_keys(console_as, tenant_a):
    client = console_as(tenant_a.org, "operator")
    assert client.post(client.base + f"memories/{tenant_a.memory.pk}/confirm").status_code == 302
    assert client.get(client.base + "agents/").status_code == 403
    assert client.post(client.base + f"agents/{tenant_a.agent.pk}/keys", {"name": "k"}).status_code == 403
    assert "Agents &amp; keys" not in client.get(client.base).content.decode()


def test_an_htmx_request_after_the_session_ended_loads_the_sign_in_page_whole(client, tenant_a, htmx):
    response = client.post(f"/console/{tenant_a.org.slug}/memories/{tenant_a.memory.pk}/tags", {"tags": "x"},
                           HTTP_HX_CURRENT_URL=f"http://testserver/console/{tenant_a.org.slug}/memories/", **htmx("tags"))
    assert response.status_code == 204
    assert response["HX-Redirect"] == f"/console/sign-in/?next=%2Fconsole%2F{tenant_a.org.slug}%2Fmemories%2F"


def test_an_htmx_action_on_something_gone_says_so_in_place(console_as, tenant_a, htmx):
    client = console_as(tenant_a.org, "operator")
    response = client.post(client.base + "review/00000000-0000-0000-0000-000000000000/approve", **htmx())
    assert response.status_code == 404 and response["HX-Reswap"] == "none"
    assert 'hx-swap-oob="true"' in response.content.decode() and "<html" not in response.content.decode()
    viewer = console_as(tenant_a.org, "viewer")
    refused = viewer.post(viewer.base + f"review/{tenant_a.memory.pk}/approve", **htmx())
    assert refused.status_code == 403 and "needs the operator role" in refused.content.decode()


def test_admins_reach_agents_and_keys(console_as, tenant_a):
    client = console_as(tenant_a.org, "admin")
    assert client.get(client.base + "agents/").status_code == 200
    assert "Agents &amp; keys" in client.get(client.base).content.decode()


def test_an_inactive_organisation_is_closed(console_as, org_a):
    client = console_as(org_a, "admin")
    with tenant_context(org_a.id):
        Organization.objects.filter(pk=org_a.pk).update(is_active=False)
    assert client.get(client.base).status_code == 404


def test_the_operator_setting_opens_only_the_operators_own_rows(org_a, org_b):
    """Row-level security, by raw SQL as the runtime role: with app.current_user_id set and no
    tenant, a user sees their own memberships, nothing of anyone else's, and no organisation."""
    mine = operator(org_a, "viewer")
    other = operator(org_b, "admin")
    with connection.cursor() as cursor:
        activate_user(mine.pk)
        cursor.execute("SELECT user_id, org_id FROM memberships")
        seen = cursor.fetchall()
        cursor.execute("SELECT id FROM organizations")
        assert cursor.fetchall() == []  # opened only by the next setting
        cursor.execute("UPDATE memberships SET role = 'admin'")
        assert cursor.rowcount == 0  # the widening is for reads only
    assert seen == [(mine.pk, org_a.pk)]
    with tenant_context(org_b.id):
        assert Membership.objects.get(user=other).role == "admin"


def test_the_member_organisations_setting_opens_only_those_organisations(org_a, org_b):
    """app.member_org_ids opens the organisations named, for reads, and nothing else of them."""
    tenant = factories.populated_tenant(org_a)
    with connection.cursor() as cursor:
        activate_member_orgs([org_a.pk])
        cursor.execute("SELECT id FROM organizations")
        assert cursor.fetchall() == [(org_a.pk,)]
        cursor.execute("SELECT count(*) FROM memories")
        assert cursor.fetchone()[0] == 0
        cursor.execute("SELECT count(*) FROM memberships")
        assert cursor.fetchone()[0] == 0
        cursor.execute("UPDATE organizations SET name = 'taken'")
        assert cursor.rowcount == 0
    assert tenant.memory.org_id == org_a.pk

