"""docs/mcp.md's example, run as a reader would run it (its own process, the official client)
against the served app."""

import json
import os
import re
import subprocess
import sys

import pytest
from django.conf import settings

from tests import factories
from tests.markers import committing

pytestmark = pytest.mark.slow


def readme_example() -> str:
    page = (settings.BASE_DIR / "docs" / "mcp.md").read_text()
    return re.search(r"<!-- mcp-example -->\n```python\n(.*?)```", page, re.S)[1]


@committing
def test_the_readme_s_python_example_runs(tenant_a, served):
    _, key = factories.api_key(agent=tenant_a.agent)
    done = subprocess.run([sys.executable, "-c", readme_example()], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MEMORY_PLATFORM_MCP_URL": served.url, "MEMORY_PLATFORM_API_KEY": key})
    assert done.returncode == 0, done.stderr[-2000:]
    tools_line, found = done.stdout.splitlines()[:2]
    assert "search_memory" in tools_line and "remember_fact" in tools_line
    assert json.loads(found)["results"][0]["content"] == "Alice is vegetarian"


def test_the_readme_s_client_configuration_is_json_with_the_url_and_the_key_header():
    page = (settings.BASE_DIR / "docs" / "mcp.md").read_text()
    configuration = json.loads(re.search(r"```json\n(.*?)```", page, re.S)[1])
    server = configuration["mcpServers"]["memory-platform"]
    assert server["url"].endswith("/mcp") and server["headers"]["Authorization"].startswith("Bearer ")
