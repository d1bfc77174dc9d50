"""The README's five-minute walkthrough, followed in order as written against a live server,
from a fresh start: each shell block marked `<!-- walkthrough -->` runs in one bash session
(only the `BASE=` and `KEY=` lines are given the reader's address and demo key), and what each
prints must equal the output block marked `<!-- walkthrough-output -->` after it, but for ids,
timestamps and the last digit of a score. A README whose shown output drifts from what the
product answers fails here."""

import json
import re
import shutil
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from tests.markers import committing

pytestmark = [committing, pytest.mark.slow]

README = Path(__file__).resolve().parents[1] / "README.md"
RUN_MARK, OUTPUT_MARK = "<!-- walkthrough -->", "<!-- walkthrough-output -->"
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
SCORE_TOLERANCE = 0.002  # a score is rounded to 3 decimals; the embedding's float noise may move the last


def walkthrough_steps(text: str) -> list[tuple[str, str | None]]:
    """[(shell block, the output shown after it or None)], in the README's order."""
    marks = re.finditer(rf"({re.escape(RUN_MARK)}|{re.escape(OUTPUT_MARK)})\n```(\w+)\n(.*?)```", text, re.S)
    steps: list[tuple[str, str | None]] = []
    for mark, language, body in (match.groups() for match in marks):
        if mark == RUN_MARK:
            assert language == "sh", f"a walkthrough block is a shell block, not {language}"
            steps.append((body, None))
        else:
            assert steps and steps[-1][1] is None, "an output block follows the block that prints it"
            steps[-1] = (steps[-1][0], body)
    return steps


def normalised(value):
    """Ids and timestamps as placeholders: they differ on every run."""
    if isinstance(value, dict):
        return {key: normalised(item) for key, item in value.items()}
    if isinstance(value, list):
        return [normalised(item) for item in value]
    if isinstance(value, str) and UUID.match(value):
        return "<id>"
    if isinstance(value, str) and TIMESTAMP.match(value):
        return "<timestamp>"
    return value


def assert_same(shown, answered, where="output"):
    if isinstance(shown, float) or isinstance(answered, float):
        assert isinstance(answered, (int, float)) and abs(shown - answered) <= SCORE_TOLERANCE, (where, shown, answered)
    elif isinstance(shown, dict):
        assert isinstance(answered, dict) and list(shown) == list(answered), (where, list(shown), answered)
        for key in shown:
            assert_same(shown[key], answered[key], f"{where}.{key}")
    elif isinstance(shown, list):
        assert isinstance(answered, list) and len(shown) == len(answered), (where, shown, answered)
        for index, (one, other) in enumerate(zip(shown, answered)):
            assert_same(one, other, f"{where}[{index}]")
    else:
        assert shown == answered, (where, shown, answered)


def test_the_walkthrough_is_marked_and_shows_what_it_says():
    steps = walkthrough_steps(README.read_text())
    setup, *calls = steps
    assert re.search(r"^BASE=http://127\.0\.0\.1:8000$", setup[0], re.M) and re.search(r"^KEY=mp_\.\.\.", setup[0], re.M)
    assert len(calls) >= 2 and all(output is not None for _, output in calls)
    assert "/api/v1/memories" in calls[0][0] and "/api/v1/search" in calls[1][0]


def test_normalising_keeps_a_drift_visible():
    shown = {"created": True, "id": "5f0c1b1e-8d7a-4c1e-9c57-2b7f4f5a9d10", "score": 0.914}
    answered = {"created": True, "id": "0a0c1b1e-8d7a-4c1e-9c57-2b7f4f5a9d10", "score": 0.915}
    assert_same(normalised(shown), normalised(answered))
    for drifted in ({**answered, "created": False}, {**answered, "score": 0.95}, {**answered, "extra": 1}):
        with pytest.raises(AssertionError):
            assert_same(normalised(shown), normalised(drifted))


def test_the_readme_walkthrough_prints_what_the_readme_shows(live_server):
    assert shutil.which("jq"), "the README's walkthrough pipes curl into jq: install jq (apt-get install jq)"
    # What scripts/run does on a fresh start: the demo organisation, agent and key, printed.
    banner = StringIO()
    call_command("bootstrap_demo", url=live_server.url, stdout=banner)
    key = re.search(r"\bmp_[A-Za-z0-9_-]+", banner.getvalue())[0]

    steps = walkthrough_steps(README.read_text())
    script = []
    for number, (block, _) in enumerate(steps):
        block = re.sub(r"^BASE=.*$", f"BASE={live_server.url}", block, flags=re.M)
        block = re.sub(r"^KEY=.*$", f"KEY={key}", block, flags=re.M)
        script.append(f"{block}\necho '@@ step {number} @@'\n")
    ran = subprocess.run(["bash", "-euo", "pipefail", "-c", "".join(script)],
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    printed = re.split(r"^@@ step \d+ @@$\n?", ran.stdout, flags=re.M)[:-1]
    assert len(printed) == len(steps)

    for number, ((block, shown), answered) in enumerate(zip(steps, printed)):
        if shown is None:
            assert answered.strip() == "", f"step {number} prints what the README does not show: {answered}"
        else:
            assert_same(normalised(json.loads(shown)), normalised(json.loads(answered)), f"step {number}")

    # Step 5: the console, signed in as the banner's account, lists the memory and the search.
    console = Client()
    console.force_login(get_user_model().objects.get(username="demo"))
    remembered = re.search(r'"content": "([^"]+)"', steps[1][0])[1]
    asked = re.search(r'"query": "([^"]+)"', steps[2][0])[1]
    memories = console.get("/console/demo/memories/")
    assert memories.status_code == 200 and remembered in memories.content.decode()
    events = console.get("/console/demo/events/")
    assert events.status_code == 200 and asked in events.content.decode()
