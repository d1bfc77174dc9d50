"""Erasure in the console: an admin counts what a scope holds, types the organisation's slug,
and the worker erases it while the page follows; a wrong slug or bad input erases nothing;
viewers and operators may not, and another organisation's page and erasures are missing."""

import re

import pytest

from memories.lifecycle import erasure
from memories.models import Erasure, Memory
from tenants.context import tenant_context
from tests import factories
from tests.console.conftest import emptied_queue
from tests.memories.test_portability import remembered

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue():
    with emptied_queue(erasure.ERASE_QUEUE) as queue:
        yield queue


def namespaces(org) -> dict[str, int]:
    with tenant_context(org.id):
        memories = Memory.objects.filter(org_id=org.id)
        return {namespace: memories.filter(namespace=namespace).count()
                for namespace in memories.values_list("namespace", flat=True)}


def test_an_admin_counts_a_namespace_confirms_and_the_worker_erases_it(org_a, console_as, htmx, queue):
    remembered(org_a)
    before = namespaces(org_a)
    alices = before["users/alice"] + before["users/alice/work"]
    admin = console_as(org_a, "admin")
    shown = admin.get(admin.base + "erase/")
    assert shown.status_code == 200 and f'href="/console/{org_a.slug}/erase/"'.encode() in shown.content

    counted = admin.post(admin.base + "erase/", {"scope": "namespace", "namespace": "users/alice/"})
    text = counted.content.decode()
    assert counted.status_code == 200 and f"holds <strong>{alices}</strong> memories" in text
    assert "Erase for good" in text and "type the organisation&#x27;s slug" in text
    wrong = admin.post(admin.base + "erase/", {"scope": "namespace", "namespace": "users/alice", "confirm": "yes"})
    assert wrong.status_code == 422 and f"Type {org_a.slug} to erase; nothing was erased." in wrong.content.decode()
    assert queue.count == 0 and namespaces(org_a) == before

    started = admin.post(admin.base + "erase/", {"scope": "namespace", "namespace": "users/alice",
                                                 "confirm": org_a.slug})
    [job_id] = queue.job_ids
    assert started.status_code == 302 and started["Location"] == f"{admin.base}erase/{job_id}/"
    waiting = admin.get(started["Location"]).content.decode()
    assert "Erasure of namespace users/alice" in waiting and "Waiting for the worker" in waiting
    assert 'hx-trigger="load delay:1s"' in waiting and namespaces(org_a) == before

    queue.run()
    done = admin.get(started["Location"], **htmx("erase-status"))
    text = done.content.decode()
    assert done.status_code == 200 and "hx-trigger" not in text and "<html" not in text  # the fragment, done
    assert f"<td>memories</td><td>{alices}</td>" in text and "Erased for good" in text
    after = namespaces(org_a)
    assert "users/alice" not in after and "users/alice/work" not in after
    assert after["users/alice2"] == before["users/alice2"] and after["users/bob"] == before["users/bob"]
    with tenant_context(org_a.id):
        [record] = Erasure.objects.all()
    assert (record.via, record.requested_by_user_id, record.scope) == ("console", admin.user.pk,
                                                                       {"namespace": "users/alice"})
    listed = admin.get(admin.base + "erase/").content.decode()
    assert re.search(rf"console: {admin.user.get_username()}</td>\s*<td>namespace users/alice</td>", listed)


def test_an_agents_memories_are_counted_and_a_scope_with_nothing_says_so(org_a, console_as, queue):
    made = remembered(org_a)
    admin = console_as(org_a, "admin")
    with tenant_context(org_a.id):
        helpers = Memory.objects.filter(agent=made["helper"]).count()
    counted = admin.post(admin.base + "erase/", {"scope": "agent", "agent": str(made["helper"].pk)})
    assert f"holds <strong>{helpers}</strong> memor" in counted.content.decode()

    nothing = admin.post(admin.base + "erase/", {"scope": "namespace", "namespace": "users/nobody"})
    assert "This scope holds no memory" in nothing.content.decode()
    started = admin.post(admin.base + "erase/", {"scope": "namespace", "namespace": "users/nobody",
                                                 "confirm": org_a.slug})
    queue.run()
    text = admin.get(started["Location"]).content.decode()
    assert "Nothing was erased: nothing to erase in namespace users/nobody." in text


@pytest.mark.parametrize("form, field, message", [
    ({"scope": "namespace", "namespace": " / "}, "namespace", "Give the namespace to erase."),
    ({"scope": "agent"}, "agent", "Choose the agent whose memories to erase."),
    ({"scope": "session", "session": "not-an-id"}, "session", "Enter a valid UUID."),
    ({"scope": "everything"}, "scope", "Select a valid choice."),
])
def test_bad_input_is_named_and_erases_nothing(org_a, console_as, queue, form, field, message):
    remembered(org_a)
    before = namespaces(org_a)
    admin = console_as(org_a, "admin")
    refused = admin.post(admin.base + "erase/", {**form, "confirm": org_a.slug})
    assert refused.status_code == 422 and message in refused.content.decode()
    assert queue.count == 0 and namespaces(org_a) == before


def test_another_organisations_agent_is_not_a_choice(org_a, org_b, console_as, queue):
    theirs = factories.agent(org=org_b, name="theirs")
    admin = console_as(org_a, "admin")
    refused = admin.post(admin.base + "erase/", {"scope": "agent", "agent": str(theirs.pk), "confirm": org_a.slug})
    assert refused.status_code == 422 and "Select a valid choice" in refused.content.decode() and queue.count == 0


def test_viewers_and_operators_may_not_erase(org_a, console_as, queue):
    remembered(org_a)
    before = namespaces(org_a)
    for role in ("viewer", "operator"):
        member = console_as(org_a, role)
        assert member.get(member.base + "erase/").status_code == 403
        assert member.post(member.base + "erase/", {"scope": "all", "confirm": org_a.slug}).status_code == 403
        assert b"/erase/" not in member.get(member.base).content  # no link to it either
    assert queue.count == 0 and namespaces(org_a) == before


def test_another_organisations_page_and_erasures_are_missing(org_a, org_b, console_as, queue):
    remembered(org_a)
    theirs = console_as(org_a, "admin")
    started = theirs.post(theirs.base + "erase/", {"scope": "all", "confirm": org_a.slug})
    mine = console_as(org_b, "admin")
    assert mine.get(f"/console/{org_a.slug}/erase/").status_code == 404
    assert mine.post(f"/console/{org_a.slug}/erase/", {"scope": "all", "confirm": org_a.slug}).status_code == 404
    job_id = started["Location"].rstrip("/").rsplit("/", 1)[1]
    assert mine.get(f"{mine.base}erase/{job_id}/").status_code == 404  # their job, seen from my organisation
    queue.empty()
    with tenant_context(org_a.id):
        assert Memory.objects.filter(org_id=org_a.id).exists()
