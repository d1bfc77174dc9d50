"""Export & import in the console: an admin downloads an organisation's memories (or a
namespace's) and uploads a file, which the worker imports while the page follows it; viewers
and operators may do neither, another organisation's page and imports are missing."""

import io
import json

import pytest
from django.core.management import call_command

from memories.lifecycle import importing
from memories.models import Memory
from tenants.context import tenant_context
from tests import factories
from tests.console.conftest import emptied_queue, operator

# The browser tests' fixtures (a headless Chromium page, an organisation to sign in to).
from tests.console.test_browser import PASSWORD, browser, page, shot, sign_in, world  # noqa: F401
from tests.markers import committing
from tests.memories.test_portability import remembered

pytestmark = pytest.mark.django_db


def lines(response) -> list[dict]:
    return [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]


@pytest.fixture
def queue():
    with emptied_queue(importing.IMPORT_QUEUE) as queue:
        yield queue


def test_an_admin_downloads_the_organisation_or_a_namespace(org_a, console_as):
    remembered(org_a)
    admin = console_as(org_a, "admin")
    shown = admin.get(admin.base + "export/")
    assert shown.status_code == 200 and b"11 in all" in shown.content
    assert f'href="/console/{org_a.slug}/export/"'.encode() in shown.content  # the section's link, for admins

    whole = admin.get(admin.base + "export/download")
    assert whole.status_code == 200 and whole["Content-Type"] == "application/x-ndjson"
    assert whole["Content-Disposition"].startswith(f'attachment; filename="{org_a.slug}-memories-')
    records = lines(whole)
    assert records[0]["format"] == "memory-platform-export" and records[-1]["records"]["memory"] == 11

    alice = lines(admin.get(admin.base + "export/download", {"namespace": "users/alice/", "without_embeddings": "on"}))
    scopes = {record["scope"] for record in alice if record["type"] == "memory"}
    assert scopes == {"users/alice", "users/alice/work"} and alice[0]["embedding"] is None


def test_an_uploaded_file_is_imported_by_the_worker_and_the_page_follows_it(org_a, org_b, console_as, htmx, queue):
    remembered(org_a)
    source = console_as(org_a, "admin")
    body = b"".join(source.get(source.base + "export/download").streaming_content)
    admin = console_as(org_b, "admin")

    upload = io.BytesIO(body)
    upload.name = "alpha.jsonl"
    answer = admin.post(admin.base + "export/import", {"file": upload}, **htmx("import"))
    assert answer.status_code == 200
    text = answer.content.decode()
    assert 'id="import-status"' in text and "waiting for the worker" in text and 'hx-trigger="load delay:1s"' in text
    job_id = queue.job_ids[0]
    assert f"/export/imports/{job_id}/" in text
    with tenant_context(org_b.id):
        assert not Memory.objects.filter(org_id=org_b.id).exists()

    queue.run()
    done = admin.get(admin.base + f"export/imports/{job_id}/", **htmx("import-status"))
    text = done.content.decode()
    assert done.status_code == 200 and "hx-trigger" not in text  # done: no more polling
    assert "alpha.jsonl imported (from " in text and "<td>memories</td><td>11</td>" in text
    with tenant_context(org_b.id):
        assert Memory.objects.filter(org_id=org_b.id).count() == 11
    assert not importing.upload_path(job_id).exists()  # the upload is removed once read

    whole_page = admin.get(admin.base + f"export/imports/{job_id}/")
    assert b"Import of alpha.jsonl" in whole_page.content and b"<html" in whole_page.content


def test_a_bad_file_is_refused_with_its_line_and_nothing_imported(org_b, console_as, htmx, queue):
    admin = console_as(org_b, "admin")
    upload = io.BytesIO(b'{"type": "header", "format": "memory-platform-export", "version": 1, '
                        b'"organisation": {}, "scope": {}}\n{"type": "agent", "id": 7}\n')
    upload.name = "broken.jsonl"
    admin.post(admin.base + "export/import", {"file": upload}, **htmx("import"))
    job_id = queue.job_ids[0]
    queue.run()
    text = admin.get(admin.base + f"export/imports/{job_id}/").content.decode()
    assert "broken.jsonl was not imported: line 2: id must be an id" in text and "Nothing was imported" in text


def test_viewers_and_operators_may_neither_export_nor_import(org_a, console_as, queue):
    for role in ("viewer", "operator"):
        client = console_as(org_a, role)
        assert client.get(client.base + "export/").status_code == 403
        assert client.get(client.base + "export/download").status_code == 403
        upload = io.BytesIO(b"{}\n")
        upload.name = "x.jsonl"
        assert client.post(client.base + "export/import", {"file": upload}).status_code == 403
        assert b'/export/"' not in client.get(client.base).content  # no link to the section
    assert queue.count == 0


def test_another_organisations_page_download_and_imports_are_missing(org_a, org_b, console_as, htmx, queue):
    admin_a, admin_b = console_as(org_a, "admin"), console_as(org_b, "admin")
    upload = io.BytesIO(b"{}\n")
    upload.name = "b.jsonl"
    admin_b.post(admin_b.base + "export/import", {"file": upload}, **htmx("import"))
    job_id = queue.job_ids[0]
    for path in ("export/", "export/download", f"export/imports/{job_id}/"):
        assert admin_a.get(f"/console/{org_b.slug}/{path}").status_code == 404, path
    # Its own organisation's address with the other's import: still missing.
    assert admin_a.get(admin_a.base + f"export/imports/{job_id}/").status_code == 404


@committing
@pytest.mark.slow
def test_in_a_browser_the_upload_and_the_import_show_their_progress(page, world, tmp_path, queue):  # noqa: F811
    source = factories.organization("Source Corp")
    remembered(source)
    exported = tmp_path / "source.jsonl"
    call_command("export_memories", source.slug, "--output", str(exported), stdout=io.StringIO(),
                 stderr=io.StringIO())
    world.user = operator(world.org, "admin")
    world.user.set_password(PASSWORD)
    world.user.save()
    sign_in(page, world)
    page.get_by_role("link", name="Export & import").click()
    page.wait_for_url("**/export/")
    page.evaluate("window.__stillHere = true")

    # What the upload's bar showed as the file went (the answer then replaces the form).
    page.evaluate("""() => { window.__uploadBar = [];
        document.addEventListener("htmx:xhr:progress", (event) => {
            const bar = event.target.querySelector("progress[data-upload-progress]");
            if (bar) window.__uploadBar.push([bar.hidden, bar.value, bar.max]); }); }""")
    page.get_by_label("JSONL file").set_input_files(str(exported))
    page.get_by_role("button", name="Import").click()
    page.get_by_text("waiting for the worker").wait_for()
    shown = page.evaluate("() => window.__uploadBar")
    sent = shown[0][2]  # the request's size: the file and the form around it
    assert sent > exported.stat().st_size and shown[-1] == [False, sent, sent] and all(s[2] == sent for s in shown)
    queue.run()  # the worker's turn
    page.get_by_text("source.jsonl imported").wait_for()  # the page polled until the report came
    assert "memories" in page.locator("#import-status table").inner_text()
    assert page.evaluate("window.__stillHere === true"), "the page was reloaded"
    shot(page, "import-done")
    with tenant_context(world.org.id):
        assert Memory.objects.filter(org_id=world.org.id).count() == 11


def test_with_the_queue_unreachable_the_upload_is_refused_and_nothing_kept(org_b, console_as, htmx, monkeypatch):
    import django_rq.settings

    from tests.ports import free_port

    unreachable = {**django_rq.settings.QUEUES[importing.IMPORT_QUEUE], "URL": f"redis://127.0.0.1:{free_port()}/0"}
    monkeypatch.setitem(django_rq.settings.QUEUES, importing.IMPORT_QUEUE, unreachable)
    kept_before = set(importing.upload_path("x").parent.glob("*.jsonl"))
    admin = console_as(org_b, "admin")
    upload = io.BytesIO(b"{}\n")
    upload.name = "b.jsonl"
    answer = admin.post(admin.base + "export/import", {"file": upload}, **htmx("import"))
    assert answer.status_code == 409 and b"could not be queued" in answer.content
    assert set(importing.upload_path("x").parent.glob("*.jsonl")) == kept_before
