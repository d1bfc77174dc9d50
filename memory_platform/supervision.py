"""The served processes under supervisord (docs/adr/0036): `manage.py run` writes the
configuration into the data folder and runs supervisord in the foreground.

Every program is restarted when it exits, whatever its status; one that keeps failing at start
is retried with supervisord's growing delay (1 s, 2 s, 3 s...) instead of stopping the rest.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# A program failing at start waits one second longer before each new try; this many tries
# add up to more than a day of waiting, so an outage of a dependency never ends in FATAL.
START_RETRIES = 1000


@dataclass(frozen=True)
class Program:
    name: str
    command: list[str]
    # Started in ascending order, stopped in descending order.
    priority: int
    # Running this long counts as started; an exit before that is a failed start (backoff).
    start_seconds: int = 5
    stop_seconds: int = 20


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent_pid: int, signal_number: int = signal.SIGTERM) -> bool:
    """Have Linux send this process `signal_number` when its parent dies (prctl
    PR_SET_PDEATHSIG), so that a child forked by a supervised program (RQ's scheduler, gunicorn's
    workers) never outlives it: supervisord's stopasgroup covers the stops it makes, not a
    SIGKILL from elsewhere, after which an orphan would keep the port or the scheduler's locks.
    `parent_pid` is the parent at the fork: if it is already gone this process exits at once.
    False where prctl does not exist (not Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return False
    if prctl(_PR_SET_PDEATHSIG, signal_number, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:  # the parent died before the request was made
        os._exit(1)
    return True


def run_directory(data_dir: Path) -> Path:
    return data_dir / "run"


def config_path(data_dir: Path) -> Path:
    return run_directory(data_dir) / "supervisord.conf"


def _value(text: str) -> str:
    return text.replace("%", "%%")  # supervisord expands %(name)s in values


def _quoted(argument: str) -> str:
    if argument and not any(c in argument for c in " \t\"'\\"):
        return argument
    return '"' + argument.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_config(*, data_dir: Path, programs: list[Program], working_directory: Path) -> Path:
    """supervisord.conf for these programs. Their output goes to supervisord's stdout (the
    terminal of `manage.py run`); supervisord's own log is also kept in the run folder. The
    environment is supervisord's own, which `manage.py run` sets for them."""
    directory = run_directory(data_dir)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    lines = [
        "; Written by `manage.py run` at every start; edits are lost.",
        "[supervisord]",
        "nodaemon=true",
        f"logfile={_value(str(directory / 'supervisord.log'))}",
        "logfile_maxbytes=5MB",
        "logfile_backups=2",
        f"pidfile={_value(str(directory / 'supervisord.pid'))}",
        f"directory={_value(str(working_directory))}",
        # As root, say so (supervisord warns otherwise); the programs run as the caller either way.
        *(["user=root"] if os.geteuid() == 0 else []),
        "",
        "[unix_http_server]",
        f"file={_value(str(directory / 'supervisor.sock'))}",
        "chmod=0700",
        "",
        "[rpcinterface:supervisor]",
        "supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface",
        "",
        "[supervisorctl]",
        f"serverurl=unix://{_value(str(directory / 'supervisor.sock'))}",
    ]
    for program in programs:
        lines += [
            "",
            f"[program:{program.name}]",
            f"command={_value(' '.join(_quoted(argument) for argument in program.command))}",
            f"directory={_value(str(working_directory))}",
            f"priority={program.priority}",
            "autostart=true",
            "autorestart=true",
            f"startsecs={program.start_seconds}",
            f"startretries={START_RETRIES}",
            "stopsignal=TERM",
            f"stopwaitsecs={program.stop_seconds}",
            # gunicorn's workers, the worker's job processes: stopped and killed with their parent.
            "stopasgroup=true",
            "killasgroup=true",
            "redirect_stderr=true",
            "stdout_logfile=/dev/stdout",
            "stdout_logfile_maxbytes=0",
        ]
    path = config_path(data_dir)
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o600)
    return path


def supervisord_command(config: Path) -> list[str]:
    return [sys.executable, "-m", "supervisor.supervisord", "--nodaemon", "--configuration", str(config)]


def supervisorctl(config: Path, *arguments: str, timeout: float = 30) -> subprocess.CompletedProcess:
    """supervisorctl against a running `manage.py run` (status, pid <name>, restart <name>...)."""
    return subprocess.run(
        [sys.executable, "-m", "supervisor.supervisorctl", "--configuration", str(config), *arguments],
        capture_output=True, text=True, timeout=timeout,
    )
