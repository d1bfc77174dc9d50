"""The code itself: what a reader could miss and Python would not say until it ran."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_no_name_is_defined_twice_or_used_undefined():
    """pyflakes' checks through ruff: a method defined twice in a class (the second silently
    replaces the first, as a merge once did with a view's access checks), an undefined name,
    an unused import."""
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--select", "F,E9",
                             "--exclude", ".venv,.data", "."], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
