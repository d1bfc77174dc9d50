"""docs/api.md's REST example (the first block of "The agent API"), run as written with curl against a live server:
what a reader copies works."""

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.markers import committing

pytestmark = [committing, pytest.mark.slow]

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def rest_example() -> str:
    return re.search(r"```sh\n(.*?)```", API_DOC.read_text(), flags=re.S).group(1)


def test_the_api_page_s_rest_example_runs_as_written(api_a, live_server):
    script = rest_example()
    assert re.search(r"^KEY=mp_\.\.\. ", script, flags=re.M) and re.search(r"^BASE=", script, flags=re.M)
    # The reader's key and address, in place of the placeholders; every other line as written.
    script = re.sub(r"^KEY=.*$", f"KEY={api_a.key}", script, flags=re.M)
    script = re.sub(r"^BASE=.*$", f"BASE={live_server.url}", script, flags=re.M)
    ran = subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    decoder, answers, text, at = json.JSONDecoder(), [], ran.stdout, 0
    while at < len(text.strip()):
        answer, at = decoder.raw_decode(text, at)
        answers.append(answer)
        while at < len(text) and text[at].isspace():
            at += 1
    created, searched, context = answers  # the store's PUT answers 204, without a body
    assert created["memory"]["namespace"] == ["users", "user-42"] and created["created"] is True
    assert searched["results"][0]["memory"]["id"] == created["memory"]["id"]
    assert "The user prefers green tea" in context["context"] and context["tokens"] <= 200
    item = api_a.get("/api/v1/store/items", {"namespace": "users.user-42", "key": "diet"})
    assert item.status_code == 200 and item.json()["value"] == {"text": "vegetarian"}
