"""docs/langgraph.md's examples, run as written against a live server: what a reader copies works."""

import contextlib
import io
import re
from pathlib import Path

import pytest

from tests.markers import committing

pytestmark = [committing, pytest.mark.slow]

LANGGRAPH_DOC = Path(__file__).resolve().parents[2] / "docs" / "langgraph.md"


def langgraph_examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", LANGGRAPH_DOC.read_text(), flags=re.S)


def test_the_page_shows_both_doors():
    sdk, graph = langgraph_examples()
    assert "get_sync_client" in sdk and "compile(store=store)" in graph and "PlatformStore" in graph


def test_the_page_s_langgraph_examples_run_as_written(api_a, live_server, monkeypatch):
    monkeypatch.setenv("MEMORY_PLATFORM_URL", live_server.url)
    monkeypatch.setenv("MEMORY_PLATFORM_API_KEY", api_a.key)
    printed = io.StringIO()
    for example in langgraph_examples():
        with contextlib.redirect_stdout(printed):
            exec(compile(example, str(LANGGRAPH_DOC), "exec"), {"__name__": "readme_example"})
    lines = printed.getvalue().splitlines()
    assert lines[0] == "{'text': 'vegetarian', 'since': 2019}"
    assert lines[1] == "diet 0.39" and lines[2] == "diet" and lines[3] == "[['users', 'alice']]"
    assert lines[4] == "I remember: I am allergic to peanuts"
