"""The JavaScript doors, each run by node's own test runner (`node --test`) against the product
served for real (the `served` fixture): LangGraph.js's SDK (@langchain/langgraph-sdk) on the store
API, used unchanged (tests/integrations/langgraph_js).

scripts/install-node installs their packages (npm ci, again only when a lock file changes);
scripts/test runs it first, and so does this module. Without node and npm the tests that need
them are skipped."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from memories.models import Memory
from tenants.context import tenant_context
from tests import factories
from tests.markers import committing

ROOT = Path(__file__).resolve().parents[2]
LANGGRAPH_JS = Path(__file__).resolve().parent / "langgraph_js"

needs_node = pytest.mark.skipif(shutil.which("node") is None or shutil.which("npm") is None,
                                reason="node and npm are not installed: the JavaScript clients are not tested")


def run(command: list[str], *, cwd: Path, env: dict | None = None, timeout: float = 300) -> str:
    """Run a command; its output, or a failure showing all of it."""
    done = subprocess.run(command, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        pytest.fail(f"`{' '.join(command)}` in {cwd.relative_to(ROOT)} failed ({done.returncode}):\n"
                    f"{done.stdout}\n{done.stderr}", pytrace=False)
    return done.stdout


@pytest.fixture(scope="module")
def node_packages():
    run([str(ROOT / "scripts" / "install-node")], cwd=ROOT, timeout=900)


def key_of(org, *, agent_name: str = "js-agent", **reach) -> str:
    agent = factories.agent(org=org, name=agent_name)
    return factories.api_key(agent=agent, **reach)[1]


@needs_node
@pytest.mark.slow
@committing
def test_langgraph_js_sdk_works_unchanged_against_the_store_api(served, node_packages):
    org, other = factories.organization("JS Corp"), factories.organization("Other JS Corp")
    env = {"MEMORY_PLATFORM_URL": served.base, "MEMORY_PLATFORM_API_KEY": key_of(org),
           "MEMORY_PLATFORM_OTHER_API_KEY": key_of(other)}
    run(["npm", "test"], cwd=LANGGRAPH_JS, env=env)
    with tenant_context(org.id):  # what the SDK sent, as the platform keeps it
        city = Memory.objects.get(namespace="users/alice", key="city")
        role = Memory.objects.get(namespace="users/alice/work", key="role")
    assert city.ttl_seconds == 3600 and city.expires_at is not None
    assert (role.indexed, role.embedding) == (False, None)
