"""The JavaScript doors, each run by node's own test runner (`node --test`) against the product
served for real (the `served` fixture): LangGraph.js's SDK (@langchain/langgraph-sdk) on the store
API, used unchanged (tests/integrations/langgraph_js), and the TypeScript client
(clients/typescript), built as it is published; the examples of docs/javascript.md and of the
client's README, as written. And the client's generated files checked against the server: its
openapi.json is what `manage.py spectacular` exports now, and its src/schema.ts what
openapi-typescript makes of that file (docs/javascript.md, "How the tests run").

scripts/install-node installs their packages (npm ci, again only when a lock file changes);
scripts/test runs it first, and so does this module. Without node and npm the tests that need
them are skipped."""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command

from memories.models import Memory
from tenants.context import tenant_context
from tests import factories
from tests.markers import committing

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "clients" / "typescript"
LANGGRAPH_JS = Path(__file__).resolve().parent / "langgraph_js"
REGENERATE = "run `npm run generate` in clients/typescript (clients/typescript/README.md, \"Generated files\")"
BATCH_RATE = "1/5s"  # the client's 429 test: a second batch create in a window is refused

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


def differences(expected: str, actual: str, *, names: tuple[str, str], lines: int = 40) -> str:
    diff = list(difflib.unified_diff(expected.splitlines(), actual.splitlines(), *names, lineterm="", n=1))
    return "\n".join(diff[:lines]) + (f"\n... ({len(diff) - lines} more lines)" if len(diff) > lines else "")


@pytest.fixture(scope="module")
def node_packages():
    run([str(ROOT / "scripts" / "install-node")], cwd=ROOT, timeout=900)


@pytest.fixture(scope="module")
def built_client(node_packages):
    run(["npm", "run", "build"], cwd=CLIENT)


def key_of(org, *, agent_name: str = "js-agent", **reach) -> str:
    agent = factories.agent(org=org, name=agent_name)
    return factories.api_key(agent=agent, **reach)[1]


def test_the_clients_schema_file_is_the_one_the_server_exports(tmp_path):
    exported = tmp_path / "openapi.json"
    call_command("spectacular", "--format", "openapi-json", "--file", str(exported))
    checked_in = (CLIENT / "openapi.json").read_text()
    if exported.read_text() != checked_in:
        pytest.fail(f"clients/typescript/openapi.json is not the server's schema: {REGENERATE}.\n"
                    + differences(checked_in, exported.read_text(), names=("checked in", "the server's")))


@needs_node
@pytest.mark.slow
def test_the_clients_generated_types_are_those_of_its_schema_file(node_packages):
    """openapi-typescript --check: src/schema.ts is what it makes of openapi.json now."""
    done = subprocess.run(["npm", "run", "check:types"], cwd=CLIENT, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        pytest.fail(f"clients/typescript/src/schema.ts is not generated from openapi.json: {REGENERATE}.\n"
                    f"{done.stdout}\n{done.stderr}", pytrace=False)


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


@needs_node
@pytest.mark.slow
@committing
def test_the_langgraph_js_example_of_the_docs_runs_as_written(served, node_packages):
    """docs/javascript.md's block, run where the SDK is installed (an ES module read from -e)."""
    example = re.search(r"```js\n(.*?)```", (ROOT / "docs" / "javascript.md").read_text(), re.S).group(1)
    org = factories.organization("Docs JS Corp")
    output = run(["node", "--input-type=module", "-e", example], cwd=LANGGRAPH_JS,
                 env={"MEMORY_PLATFORM_URL": served.base, "MEMORY_PLATFORM_API_KEY": key_of(org)})
    assert output.splitlines() == ["{ text: 'vegetarian', since: 2019 }", "diet", "diet", "[ [ 'users', 'alice' ] ]"]


@needs_node
@pytest.mark.slow
@committing
def test_the_typescript_client_against_a_live_server(served, built_client, rate_limits):
    rate_limits(BATCH=BATCH_RATE)
    org = factories.organization("TS Corp")
    env = {"MEMORY_PLATFORM_URL": served.base, "MEMORY_PLATFORM_API_KEY": key_of(org),
           "MEMORY_PLATFORM_READ_ONLY_API_KEY": key_of(org, agent_name="ts-reader", read_only=True),
           "MEMORY_PLATFORM_BATCH_RATE": BATCH_RATE}
    output = run(["npm", "test"], cwd=CLIENT, env=env)
    assert " is not set" not in output, output  # no test skipped for want of the server's settings


def readme_program(readme: str) -> str:
    """The README's TypeScript blocks as one program: the first as it is, each one after it in a
    block of its own (reading the first's names), their imports first."""
    blocks = re.findall(r"```ts\n(.*?)```", readme, re.S)
    imports = [line for block in blocks[1:] for line in block.splitlines() if line.startswith("import ")]
    later = ["{\n" + "\n".join(line for line in block.splitlines() if not line.startswith("import ")) + "\n}"
             for block in blocks[1:]]
    return "\n".join([*imports, blocks[0], *later])


@needs_node
@pytest.mark.slow
@committing
def test_the_readme_runs_as_written_from_the_packed_client(served, built_client, tmp_path):
    """What `npm publish` would ship (npm pack), installed into a project of its own: the README's
    code type-checks against it (tsc, strict) and runs against a live server."""
    run(["npm", "pack", "--ignore-scripts", "--pack-destination", str(tmp_path)], cwd=CLIENT)  # built already
    consumer = tmp_path / "consumer"
    consumer.mkdir()
    (consumer / "package.json").write_text('{"name": "consumer", "private": true, "type": "module"}\n')
    tarball = next(tmp_path.glob("memory-platform-client-*.tgz"))
    run(["npm", "install", "--prefer-offline", "--no-audit", "--no-fund", str(tarball)], cwd=consumer)
    (consumer / "readme.ts").write_text(readme_program((CLIENT / "README.md").read_text()))
    tsc = CLIENT / "node_modules" / "typescript" / "bin" / "tsc"
    run(["node", str(tsc), "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022",
         "--lib", "es2022,dom", "--typeRoots", str(CLIENT / "node_modules" / "@types"), "--types", "node",
         "readme.ts"], cwd=consumer)
    org = factories.organization("README Corp")
    output = run(["node", "readme.js"], cwd=consumer,
                 env={"MEMORY_PLATFORM_URL": served.base, "MEMORY_PLATFORM_API_KEY": key_of(org)})
    assert output.splitlines() == [
        "The user prefers green tea",
        "true 1",
        "{ text: 'vegetarian' }",
        "400 invalid { content: [ 'This field may not be blank.' ] }",
        "2 The user prefers oolong",
        '"2" 2',
    ], output
