"""Settings for the test suite: the same servers and roles as production, faster hashing."""

import os
from pathlib import Path

# The suite runs its embedded servers in a data folder of its own, away from the one the
# product's run command uses, unless the caller chose another (or set DATABASE_URL).
os.environ.setdefault("MEMORY_PLATFORM_DATA_DIR", str(Path(__file__).resolve().parents[2] / ".data" / "test"))

from memory_platform.settings.base import *  # noqa: E402,F403
from memory_platform.settings.base import MEMORY_PLATFORM  # noqa: E402

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
MEMORY_PLATFORM = {**MEMORY_PLATFORM}
# Tests make many requests with one key, from one address: limits far above that. The tests of
# the limits themselves set low ones (the `rate_limits` fixture, tests/conftest.py).
MEMORY_PLATFORM["RATE_LIMITS"] = {
    **MEMORY_PLATFORM["RATE_LIMITS"],
    "API_KEY": "100000/min", "API_KEY_BURST": "100000/s", "SEARCH": "100000/min", "BATCH": "100000/min",
    "UNAUTHENTICATED": "100000/min", "SIGN_IN_FAILURES_PER_USERNAME": 100000, "SIGN_IN_FAILURES_PER_ADDRESS": 100000,
}
