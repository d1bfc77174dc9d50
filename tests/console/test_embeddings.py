"""The console's Embeddings page: an admin who is one of the deployment's staff builds another
model's vectors in the worker while the page follows its progress, switches to it and rolls
back; an admin who is not staff sees where things stand and may change nothing; viewers and
operators reach nothing; another organisation's page is missing."""

import pytest
from django.test import Client

from memories.lifecycle import reembed
from memories.models import EmbeddingModel, Memory
from memories.vectors import embeddings
from tenants.context import service_account
from tests.console.conftest import emptied_queue, remember

pytestmark = pytest.mark.django_db

FLOAT32, INT8 = embeddings.MODEL_NAME, embeddings.INT8_MODEL_NAME


@pytest.fixture
def queue():
    with emptied_queue(reembed.QUEUE) as queue:
        yield queue


@pytest.fixture
def staff_admin(tenant_a, console_as):
    client = console_as(tenant_a.org, "admin")
    client.user.is_staff = True
    client.user.save()
    for content in ("The user drinks green tea every morning", "The user moved to Lisbon last spring"):
        remember(tenant_a, content)
    return client


def models_used() -> set[str]:
    with service_account():
        return set(Memory.objects.without_usage().values_list("embedding_model", flat=True))


def test_staff_build_switch_and_roll_back_while_the_page_follows(staff_admin, htmx, queue):
    page = staff_admin.get(staff_admin.base + "embeddings/")
    text = page.content.decode()
    assert page.status_code == 200 and f"<strong>{FLOAT32}</strong>" in text and f"<strong>{INT8}</strong>" in text
    assert "not built" in text and 'hx-trigger' not in text  # nothing under way: no polling
    assert f'href="{staff_admin.base}embeddings/"' in text  # the section's link, for admins

    started = staff_admin.post(staff_admin.base + "embeddings/build", {"model": INT8}, **htmx("embeddings-status"))
    text = started.content.decode()
    assert started.status_code == 200 and "Build: waiting for the worker" in text
    assert 'hx-trigger="load delay:2s"' in text and "<html" not in text  # the partial, polling
    assert queue.count == 1 and EmbeddingModel.objects.get(name=INT8).task == "build"

    queue.run()
    done = staff_admin.get(staff_admin.base + "embeddings/", **htmx("embeddings-status")).content.decode()
    assert "hx-trigger" not in done and "ready to switch to" in done and "Switch to it" in done
    row = EmbeddingModel.objects.get(name=INT8)
    assert (row.state, row.memories_done, row.memories_total, row.task) == ("ready", 4, 4, "")  # the fixture's too
    assert models_used() == {FLOAT32}  # searches still use the active model's vectors

    switching = staff_admin.post(staff_admin.base + "embeddings/activate", {"model": INT8}, **htmx("embeddings-status"))
    assert switching.status_code == 200 and "Switch: waiting for the worker" in switching.content.decode()
    queue.run()
    assert embeddings.active_model() == INT8 and models_used() == {INT8}
    text = staff_admin.get(staff_admin.base + "embeddings/").content.decode()
    assert f"Roll back to {FLOAT32}" in text and "kept to roll back to" in text

    staff_admin.post(staff_admin.base + "embeddings/rollback", **htmx("embeddings-status"))
    queue.run()
    assert embeddings.active_model() == FLOAT32 and models_used() == {FLOAT32}


def test_a_page_shows_a_build_under_way_with_its_progress(staff_admin, htmx, queue):
    reembed.reembed_enqueue(model=INT8)
    with reembed.exclusive():  # as a worker running the build holds it
        with service_account():
            EmbeddingModel.objects.filter(name=INT8).update(memories_done=2, memories_total=6)
        text = staff_admin.get(staff_admin.base + "embeddings/", **htmx("embeddings-status")).content.decode()
    assert "Building: 2 of 6 memories." in text and '<progress value="2" max="6"' in text
    assert 'hx-trigger="load delay:2s"' in text and "Switch to it" not in text and "Build again" not in text


def test_a_build_that_stopped_says_so_and_starts_again(staff_admin, queue):
    reembed.reembed_enqueue(model=INT8)
    queue.empty()  # the job is lost: the worker's Redis was flushed, say
    text = staff_admin.get(staff_admin.base + "embeddings/").content.decode()
    assert "The build stopped at 0 of 0 memories" in text and "Build again" in text


def test_bad_requests_are_refused_and_start_nothing(staff_admin, htmx, queue):
    unknown = staff_admin.post(staff_admin.base + "embeddings/build", {"model": "nope"}, **htmx("embeddings-status"))
    assert unknown.status_code == 400
    assert f"Refused: unknown embedding model &#x27;nope&#x27;; known: {FLOAT32}, {INT8}." in unknown.content.decode()
    never = staff_admin.post(staff_admin.base + "embeddings/activate", {"model": INT8}, **htmx("embeddings-status"))
    assert never.status_code == 409 and f"{INT8} was never built here" in never.content.decode()
    active = staff_admin.post(staff_admin.base + "embeddings/build", {"model": FLOAT32})
    assert active.status_code == 302  # a plain form: the message waits on the page
    assert "is the active model: memories hold its vectors already" in staff_admin.get(
        staff_admin.base + "embeddings/").content.decode()
    assert staff_admin.post(staff_admin.base + "embeddings/rollback", **htmx()).status_code == 409
    assert staff_admin.post(staff_admin.base + "embeddings/explode", {"model": INT8}).status_code == 404
    assert staff_admin.get(staff_admin.base + "embeddings/build").status_code == 405
    assert queue.count == 0 and not EmbeddingModel.objects.exclude(name=FLOAT32).exists()


def test_a_post_without_its_csrf_token_is_refused(staff_admin, queue):
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff_admin.user)
    assert client.post(staff_admin.base + "embeddings/build", {"model": INT8}).status_code == 403
    assert queue.count == 0


def test_an_admin_who_is_not_staff_sees_but_changes_nothing(tenant_a, console_as, htmx, queue):
    admin = console_as(tenant_a.org, "admin")
    text = admin.get(admin.base + "embeddings/").content.decode()
    assert f"<strong>{INT8}</strong>" in text and "<form method=\"post\" action=\"/console" not in text
    assert "Only the deployment's staff" in text
    plain = admin.post(admin.base + "embeddings/build", {"model": INT8})
    assert plain.status_code == 403 and "staff (deployment-wide)" in plain.content.decode()
    inline = admin.post(admin.base + "embeddings/build", {"model": INT8}, **htmx("embeddings-status"))
    assert inline.status_code == 403 and "serves every organisation" in inline.content.decode()
    assert queue.count == 0


def test_viewers_and_operators_reach_nothing(tenant_a, console_as, queue):
    for role in ("viewer", "operator"):
        client = console_as(tenant_a.org, role)
        client.user.is_staff = True  # staff or not: the page is for admins
        client.user.save()
        assert client.get(client.base + "embeddings/").status_code == 403
        assert client.post(client.base + "embeddings/build", {"model": INT8}).status_code == 403
        assert b"/embeddings/" not in client.get(client.base).content  # no link to the section
    assert queue.count == 0


def test_another_organisations_page_is_missing(staff_admin, tenant_b, queue):
    assert staff_admin.get(f"/console/{tenant_b.org.slug}/embeddings/").status_code == 404
    assert staff_admin.post(f"/console/{tenant_b.org.slug}/embeddings/build", {"model": INT8}).status_code == 404
    assert queue.count == 0
