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
