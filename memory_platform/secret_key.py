"""The served app's SECRET_KEY when DJANGO_SECRET_KEY is not set: generated once, kept in the
data folder (mode 0600) and reused, so sessions and signed values survive a restart."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

FILE_NAME = "secret_key"


def secret_key(directory: Path) -> str:
    """The key stored in `directory`, created first if there is none.

    Several processes start at once (gunicorn's workers, the RQ worker, the cron): the key is
    written whole to a private temporary file and linked into place, so a reader never sees a
    partial key and exactly one writer wins.
    """
    path = directory / FILE_NAME
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    directory.mkdir(parents=True, exist_ok=True)
    temporary = directory / f".{FILE_NAME}.{os.getpid()}.{secrets.token_hex(4)}"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(secrets.token_urlsafe(50) + "\n")
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process got there first: its key is the one
    finally:
        temporary.unlink(missing_ok=True)
    return _read(path)


def _read(path: Path) -> str:
    key = path.read_text().strip()
    if len(key) < 50:
        raise ValueError(f"{path} holds no usable secret key (delete it to have a new one made)")
    return key
