"""The console in a real browser: Debian's Chromium, headless, driven by Playwright, against a
live server on the test database. Each flow asserts what the page shows, and that HTMX changed
the page in place (a marker set on window survives) where the flow should not reload it.

Screenshots go to $MEMORY_PLATFORM_SCREENSHOTS (default: <tmp>/memory-platform-screenshots),
outside the repository.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from memories.writes import change, kernel, tagging
from tenants import services as tenant_services
from tenants.context import service_account, tenant_context
from tests import factories
from tests.console.conftest import operator, remember
from tests.markers import committing

pytestmark = [committing, pytest.mark.slow]

SCREENSHOTS = Path(os.environ.get("MEMORY_PLATFORM_SCREENSHOTS",
                                  Path(tempfile.gettempdir()) / "memory-platform-screenshots"))
PASSWORD = "a-long-password"


def chromium_path() -> str:
    path = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("Chromium is not installed: scripts/test installs Debian's `chromium` package "
                    "(or set CHROMIUM_PATH)", pytrace=False)
    return path


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    # Playwright's sync API runs an event loop in this thread; the tests' own ORM calls are
    # still plain synchronous code, which Django would otherwise refuse next to a running loop.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True,
                                             args=["--no-sandbox", "--disable-dev-shm-usage"])
        yield browser
        browser.close()
    if previous is None:
        del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    dialogs, errors, refused = [], [], []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))
    page.on("pageerror", lambda error: errors.append(str(error)))
    # Chromium reports what the Content-Security-Policy refused on the console: every flow
    # below also checks that the console's pages need nothing the policy forbids.
    page.on("console", lambda message: refused.append(message.text)
            if "Content Security Policy" in message.text else None)
    page.dialogs = dialogs
    yield page
    context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"
    assert refused == [], f"refused by the Content-Security-Policy: {refused}"


@pytest.fixture
def world():
    """One organisation, its agent, and an operator who can sign in."""
    with service_account():
        org = tenant_services.organization_create(name="Acme Robotics", slug="acme")
    agent = factories.agent(org=org, name="support-bot")
    user = operator(org, "operator")
    user.set_password(PASSWORD)
    user.save()

    world = type("World", (), {"org": org, "agent": agent, "user": user})
    world.remember = staticmethod(lambda content, **fields: remember(world, content, **fields))
    return world


def shot(page, name: str) -> None:
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def sign_in(page, world) -> None:
    page.goto("/console/")
    assert page.url.endswith("/console/sign-in/?next=/console/")
    page.get_by_label("Username").fill(world.user.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/console/acme/$"))


def mark_page(page) -> None:
    """Set a marker that a full page load would wipe out. (Waits below are written as functions:
    an expression would be eval()ed in the page, which its Content-Security-Policy forbids.)"""
    page.evaluate("window.__stillHere = true")


def assert_not_reloaded(page) -> None:
    assert page.evaluate("window.__stillHere === true"), "the page was reloaded"


def test_sign_in_and_dashboard(page, world):
    world.remember("The warehouse opens at six", status="pending_review")
    response = page.goto("/console/sign-in/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy and "unsafe" not in policy
    sign_in(page, world)
    assert page.get_by_role("heading", name="Acme Robotics").is_visible()
    assert page.locator("#pending-review-tile").inner_text().startswith("1")
    assert page.locator("figure.chart svg").count() == 1
    assert "Memories added per day" in page.locator("figure.chart").inner_text()
    shot(page, "dashboard")


def test_search_and_filter_without_reloading(page, world):
    world.remember("The customer's favourite colour is green", category="preference")
    world.remember("Invoices go out on the first of the month", category="procedural")
    world.remember("The customer prefers email to phone calls", category="preference")
    sign_in(page, world)
    page.get_by_role("link", name="Memories", exact=True).click()
    page.wait_for_url("**/memories/")
    mark_page(page)

    page.get_by_label("Search").fill("which colour does the client like")
    page.get_by_label("Search").press("Enter")
    page.wait_for_url(re.compile(r"\?q=which(%20|\+)colour[^&]*$"))
    first = page.locator("#results tbody tr").first
    assert "favourite colour is green" in first.inner_text()

    page.get_by_label("Search").fill("")
    page.get_by_label("Category").select_option("procedural")
    page.wait_for_url(re.compile(r"category=procedural"))
    page.wait_for_function("() => document.querySelectorAll('#results tbody tr').length === 1")
    assert "Invoices go out" in page.locator("#results tbody").inner_text()
    assert_not_reloaded(page)
    shot(page, "memory-browser")

    page.go_back()  # the back button returns to the search, and shows it
    page.wait_for_url(re.compile(r"\?q=which(%20|\+)colour[^&]*$"))
    page.wait_for_function("() => document.querySelector('#results tbody').innerText.includes('favourite colour')")


def test_tag_a_memory_inline_and_open_a_version_diff(page, world):
    memory = world.remember("The office is in Porto near the river")
    with tenant_context(world.org.id):
        change.memory_update(org_id=world.org.id, memory_id=memory.pk, expected_version=1,
                             changes={"content": "The office is in Lisbon near the river"},
                             actor=kernel.Actor(reason="the team moved"))
    sign_in(page, world)
    page.goto(f"/console/acme/memories/{memory.pk}/")
    mark_page(page)

    page.get_by_label("Add tags").fill("offices, 2026")
    page.get_by_role("button", name="Add", exact=True).click()
    page.wait_for_function("() => document.querySelector('#tags').innerText.includes('offices')")
    assert "Tags now: 2026, offices." in page.locator("#messages").inner_text()
    assert "tags added: 2026, offices" in page.locator(".timeline").inner_text()
    assert_not_reloaded(page)

    page.get_by_label("Compare version").select_option("1")
    page.get_by_label("with").select_option("2")
    page.get_by_role("button", name="Show diff").click()
    page.locator("#diff del").first.wait_for()
    assert page.locator("#diff del").first.inner_text() == "Porto"
    assert page.locator("#diff ins").first.inner_text() == "Lisbon"
    assert_not_reloaded(page)
    shot(page, "memory-detail-diff")


def test_approve_from_the_review_queue_with_the_keyboard(page, world):
    first = world.remember("The warehouse opens at six", status="pending_review")
    world.remember("The warehouse closes at ten", status="pending_review")
    sign_in(page, world)
    page.goto("/console/acme/review/")
    assert page.locator("#pending-count").inner_text() == "2 waiting"
    mark_page(page)
    page.locator(f"#review-{first.pk}").focus()
    page.keyboard.press("a")
    page.wait_for_function("() => document.querySelector('#pending-count').innerText === '1 waiting'")
    assert page.locator(".review-item").count() == 1
    assert "opens at six" not in page.locator("#queue").inner_text()
    assert "Approved" in page.locator("#messages").inner_text()
    assert_not_reloaded(page)

    page.keyboard.press("r")  # the next item has the focus: r goes to its reason
    page.keyboard.type("duplicate of the opening hours")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelector('#pending-count').innerText === '0 waiting'")
    assert "Nothing waits for review" in page.locator("#queue").inner_text()
    shot(page, "review-queue")


def test_a_viewer_sees_the_queue_and_the_keys_do_nothing(page, world):
    world.remember("The warehouse opens at six", status="pending_review")
    viewer = operator(world.org, "viewer")
    viewer.set_password(PASSWORD)
    viewer.save()
    page.goto("/console/sign-in/")
    page.get_by_label("Username").fill(viewer.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.goto("/console/acme/review/")
    page.keyboard.press("j")
    page.keyboard.press("a")
    page.keyboard.press("r")
    page.wait_for_timeout(300)
    assert page.locator("#pending-count").inner_text() == "1 waiting"
    assert page.get_by_role("button", name="Approve").count() == 0


def test_resolve_a_conflict_by_merging(page, world):
    left = world.remember("The meeting is on Monday")
    right = world.remember("The meeting is on Tuesday")
    with tenant_context(world.org.id):
        tagging.relationship_create(org_id=world.org.id, source_id=left.pk, target_id=right.pk,
                                    relation_type="contradicts")
    sign_in(page, world)
    page.goto("/console/acme/conflicts/")
    # The two are near-duplicates too (the embedder finds them so): both conflicts are listed.
    assert page.locator("tbody tr, table tr:has(td)").filter(has_text="The meeting is on").count() == 2
    page.locator("tr", has_text="contradiction").get_by_role("link", name="Resolve").click()
    box = page.get_by_label("Merge both into one memory")
    assert box.input_value() == "The meeting is on Monday\nThe meeting is on Tuesday"
    shot(page, "conflict")
    box.fill("The meeting moved from Monday to Tuesday")
    page.get_by_role("button", name="Merge").click()
    page.wait_for_url(re.compile(r"/memories/[0-9a-f-]+/$"))
    assert page.locator("#memory-content").inner_text() == "The meeting moved from Monday to Tuesday"
    assert "Merged into this new memory" in page.locator("#messages").inner_text()
    assert page.locator(".relationships").inner_text().count("derived_from") == 2
    page.goto("/console/acme/conflicts/")
    assert "No open conflicts" in page.locator("table").inner_text()


def test_hostile_content_renders_as_text(page, world):
    hostile = '<script>alert("owned")</script><img src=x onerror="alert(1)">'
    memory = world.remember(f"note {hostile}", status="pending_review")
    sign_in(page, world)
    for url in ["/console/acme/memories/?status=any", f"/console/acme/memories/{memory.pk}/", "/console/acme/review/"]:
        page.goto(url)
        assert hostile in page.locator("main").inner_text(), url
    page.wait_for_timeout(200)
    assert page.dialogs == []


def test_deleting_a_memory_asks_first(page, world):
    """The confirmation is console.js's (data-confirm), not an inline handler the policy refuses."""
    memory = world.remember("A memory to delete")
    sign_in(page, world)
    page.goto(f"/console/acme/memories/{memory.pk}/")
    page.get_by_role("button", name="Delete").click()
    page.wait_for_url(re.compile(rf"/memories/{memory.pk}/$"))
    assert page.dialogs == ["Delete this memory? It can be restored."]
    assert page.get_by_role("button", name="Restore").is_visible()


def test_the_api_docs_load_under_their_own_policy(page, world):
    response = page.goto("/api/docs/")
    assert "style-src 'self' 'unsafe-inline'" in response.headers["content-security-policy"]
    page.locator(".swagger-ui .info .title").wait_for()
    assert "Memory Platform API" in page.locator(".swagger-ui .info .title").inner_text()
    page.locator(".opblock").first.wait_for()


def test_every_page_fits_a_phone_screen(page, world):
    """On a 375 px wide screen no page scrolls sideways: wide tables scroll inside themselves."""
    world.remember("The user prefers green tea in the morning, " + "and a very long unbroken word " * 8,
                   namespace="users/someone-with-a-rather-long-identifier", tags=["drinks", "mornings"])
    memory = world.remember("Waiting for a reviewer", status="pending_review")
    for i in range(30):  # more than a page: the Previous / Next links show (docs/adr/0046)
        world.remember(f"Filler memory number {i}")
    page.set_viewport_size({"width": 375, "height": 740})
    sign_in(page, world)
    page.goto("/console/acme/memories/")
    page.get_by_role("link", name="Next ›").click()
    page.get_by_role("link", name="‹ Previous").wait_for()
    assert "cursor=" in page.url
    for path in ("", "memories/", f"memories/{memory.pk}/", page.url.split("/console/acme/")[1], "review/",
                 "conflicts/", "events/"):
        page.goto(f"/console/acme/{path}")
        page.screenshot(path=str(SCREENSHOTS / f"phone-{path.strip('/').replace('/', '-') or 'dashboard'}.png"),
                        full_page=True)
        assert "{#" not in page.inner_text("body") and "{%" not in page.inner_text("body")
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"/console/acme/{path} is {overflow} px wider than the screen"


# --------------------------------------------------------------------------- issue 33: layout at two widths

WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 375, "height": 740}}


def checked_shot(page, name: str) -> None:
    """A whole-page screenshot, kept outside the repository, that must have been written."""
    path = SCREENSHOTS / f"{name}.png"
    path.unlink(missing_ok=True)
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0, f"the screenshot {path} is empty"


def assert_fits(page, what: str) -> None:
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{what} is {overflow} px wider than the screen"


def admin_world(world):
    admin = operator(world.org, "admin")
    admin.set_password(PASSWORD)
    admin.save()
    world.user = admin
    return world


@pytest.mark.parametrize("size", WIDTHS)
def test_console_pages_fit_the_screen_and_show_namespaces(page, world, size):
    """Every page touched by issue 33 fits the screen (its tables scroll inside a wrapper), and
    two users' identical store items are told apart by their namespace and key."""
    from tenants.models import Session

    admin_world(world)
    with tenant_context(world.org.id):
        session = Session.objects.create(org=world.org, agent=world.agent, namespace="users/42",
                                         external_id="a-thread-with-a-rather-long-external-identifier")
    item = world.remember('{"theme": "dark", "language": "en"}', namespace="users/42/prefs", key="ui-settings",
                          session_id=session.pk)
    world.remember('{"theme": "dark", "language": "en"}', namespace="users/43/prefs", key="ui-settings")
    world.remember("Waiting for a reviewer", namespace="users/42", status="pending_review")
    page.set_viewport_size(WIDTHS[size])
    sign_in(page, world)
    for path in ("", "memories/", "memories/?namespace=users/42", f"memories/{item.pk}/", "review/",
                 "review/?namespace=users/42", "conflicts/?namespace=users/42", "sessions/",
                 f"sessions/{session.pk}/", "erase/", f"erase/?session={session.pk}", "entities/", "events/",
                 "agents/", f"agents/{world.agent.pk}/", "export/", "embeddings/"):
        page.goto(f"/console/acme/{path}")
        name = re.sub(r"[^a-z0-9]+", "-", path.lower().replace(str(item.pk), "item").replace(str(session.pk), "session")
                      .replace(str(world.agent.pk), "agent"))
        name = name.strip("-") or "dashboard"
        checked_shot(page, f"issue33-{size}-{name}")
        assert_fits(page, f"/console/acme/{path} at {size}")
    page.goto("/console/acme/memories/")
    rows = page.locator("tr.memory-row").all_inner_texts()
    assert any("users/42/prefs" in row and "ui-settings" in row for row in rows)
    assert any("users/43/prefs" in row and "ui-settings" in row for row in rows)
    # Every column is on the screen (at 375 px the rows collapse into blocks): the last one too.
    width = page.evaluate("() => window.innerWidth")
    for cell in page.locator("tr.memory-row td.created").all():
        box = cell.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= width, f"a Created cell is off screen: {box}"
    page.goto("/console/acme/memories/?namespace=users/42")
    rows = page.locator("tr.memory-row").all_inner_texts()
    assert rows and all("users/42" in row for row in rows) and not any("users/43" in row for row in rows)
    page.get_by_role("link", name="Sessions").first.click()
    page.wait_for_url(re.compile(r"/console/acme/sessions/$"))
    page.get_by_role("link", name=session.external_id).click()
    assert "users/42/prefs" in page.inner_text("body")


def _beside(page, radio, text) -> None:
    """The radio and its text on one line, side by side, a few pixels apart, not overlapping."""
    r, t = radio.bounding_box(), text.bounding_box()
    assert r and t, "the radio or its label is not shown"
    assert r["x"] + r["width"] <= t["x"] + 1, f"the radio overlaps its label: {r} {t}"
    assert t["x"] - (r["x"] + r["width"]) < 24, f"the radio is {t['x'] - r['x'] - r['width']:.0f} px from its label"
    middle = r["y"] + r["height"] / 2
    assert t["y"] - 2 <= middle <= t["y"] + t["height"] + 2, f"the radio is not on its label's line: {r} {t}"


@pytest.mark.parametrize("size", WIDTHS)
def test_the_erasure_form_shows_labels_beside_radios_and_one_scope_field(page, world, size):
    admin_world(world)
    page.set_viewport_size(WIDTHS[size])
    sign_in(page, world)
    page.goto("/console/acme/erase/")
    radios = page.locator("#erase input[name=scope]")
    assert radios.count() == 4
    for i in range(4):
        _beside(page, radios.nth(i), page.locator("#erase label.choice span").nth(i))
    fields = {"namespace": page.locator("#id_namespace"), "agent": page.locator("#id_agent"),
              "session": page.locator("#id_session")}
    assert fields["namespace"].is_visible() and not fields["agent"].is_visible() and not fields["session"].is_visible()
    checked_shot(page, f"issue33-{size}-erase-namespace")
    for scope in ("agent", "session", "all", "namespace"):
        page.locator(f"#erase input[name=scope][value={scope}]").check()
        shown = [name for name, field in fields.items() if field.is_visible()]
        assert shown == ([scope] if scope != "all" else []), f"with {scope} chosen, shown: {shown}"
        assert_fits(page, f"the erasure form with {scope} chosen at {size}")
    checked_shot(page, f"issue33-{size}-erase-chosen")
    # Counting asks for the slug: its label stays on one line at desktop width, beside nothing odd.
    page.locator("#id_namespace").fill("users/42")
    page.get_by_role("button", name="Count what it holds").click()
    confirm = page.locator("label[for=id_confirm]")
    confirm.wait_for()
    box = confirm.bounding_box()
    line = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('label[for=id_confirm]')).lineHeight)")
    lines = round(box["height"] / line)
    assert lines <= (1 if size == "desktop" else 2), f"the confirmation label takes {lines} lines"
    assert page.locator("#id_confirm").bounding_box()["y"] >= box["y"]
    assert_fits(page, f"the counted erasure form at {size}")
    checked_shot(page, f"issue33-{size}-erase-counted")


def test_the_erasure_form_works_without_javascript(browser, live_server, world):
    """Progressive enhancement: with scripts off the scope is still chosen by its radio and
    only its field shows (CSS :has), and a session picked from the list comes chosen."""
    admin_world(world)
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False,
                                  viewport=WIDTHS["phone"])
    try:
        page = context.new_page()
        page.goto("/console/sign-in/")
        page.get_by_label("Username").fill(world.user.username)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(re.compile(r"/console/acme/$"))
        page.goto("/console/acme/erase/?session=7d4b2a86-5e1f-4d3c-9a0b-1c2d3e4f5a6b")
        assert page.locator("#erase input[name=scope][value=session]").is_checked()
        assert page.locator("#id_session").is_visible() and not page.locator("#id_namespace").is_visible()
        page.locator("#erase input[name=scope][value=namespace]").check()
        assert page.locator("#id_namespace").is_visible() and not page.locator("#id_session").is_visible()
        assert_fits(page, "the erasure form without scripts")
        checked_shot(page, "issue33-phone-erase-no-js")
    finally:
        context.close()
