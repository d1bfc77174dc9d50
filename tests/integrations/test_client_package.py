"""The Python client (clients/python) is a package of its own: installed with pip from its folder,
it needs httpx (and LangGraph for PlatformStore), never the server's code or Django."""

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from memory_platform_client import MemoryPlatform

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_client_package_installs_from_its_folder_without_django(tmp_path):
    """pip installs clients/python on its own; what it installs imports httpx (and, for
    PlatformStore, LangGraph), never the server's code or Django."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(tmp_path / "site"), str(ROOT / "clients" / "python")], check=True, timeout=300)
    requires = next((tmp_path / "site").glob("memory_platform_client-*.dist-info")).joinpath("METADATA").read_text()
    needs = [line for line in requires.splitlines() if line.startswith("Requires-Dist:")]
    assert needs[0].startswith("Requires-Dist: httpx") and not [line for line in needs if "django" in line.lower()]
    probe = ("import sys, memory_platform_client as c; from memory_platform_client import PlatformStore; "
             "assert c.__file__.startswith(sys.argv[1]), c.__file__; "
             "assert not [m for m in sys.modules if m.split('.')[0] in ('django', 'memories', 'tenants')]")
    subprocess.run([sys.executable, "-c", probe, str(tmp_path / "site")], check=True, timeout=60, cwd=tmp_path,
                   env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"})


def test_the_client_speaks_http_only(tmp_path):
    """Nothing of the client module reaches for the server's packages."""
    source = "\n".join(path.read_text() for path in (ROOT / "clients" / "python" / "src").rglob("*.py"))
    for package in ("django", "memories", "tenants", "memory_platform.", "rest_framework"):
        assert f"import {package}" not in source and f"from {package}" not in source
    assert isinstance(MemoryPlatform("http://127.0.0.1:1", "k").http, httpx.Client)
