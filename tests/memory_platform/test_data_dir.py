"""Choosing the data folder: `--data-dir` on every manage.py command, the folder a running
`scripts/run` serves found by commands in other shells, and a command that needs the database,
given a folder holding none, says so instead of starting an empty PostgreSQL there."""

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from django.conf import settings

from memory_platform import local_services


def environment(**extra) -> dict:
    """A shell with no server URL and no data folder chosen."""
    handed_over = {"DATABASE_URL", "DATABASE_OWNER_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE",
                   "MEMORY_PLATFORM_EMBEDDED_POSTGRES", "MEMORY_PLATFORM_EMBEDDED_REDIS", "MEMORY_PLATFORM_DATA_DIR"}
    return {**{key: value for key, value in os.environ.items() if key not in handed_over},
            "DJANGO_SECRET_KEY": "a-test-key-" + "k" * 50, **extra}


def manage(*arguments: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *arguments], cwd=settings.BASE_DIR, env=env,
                          capture_output=True, text=True, timeout=120)


def processes_naming(folder: Path) -> list[psutil.Process]:
    return [process for process in psutil.process_iter(["cmdline"])
            if any(str(folder) in argument for argument in process.info["cmdline"] or ())]


@pytest.fixture
def pointer():
    """The project's record of the served folder, put back as it was after the test."""
    path = local_services.SERVED_POINTER
    before = path.read_bytes() if path.exists() else None
    yield path
    if before is None:
        path.unlink(missing_ok=True)
    else:
        path.write_bytes(before)


@pytest.fixture
def a_running_manage_py():
    """A process whose command line is a manage.py's, as `scripts/run`'s is."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "manage.py", "run"])
    yield process
    process.kill()
    process.wait()


@pytest.mark.parametrize("where", ["after", "before", "equals"])
def test_a_command_given_a_folder_without_a_database_says_so_and_starts_nothing(tmp_path, where):
    empty = tmp_path / "elsewhere"
    arguments = {"after": ["createsuperuser", "--data-dir", str(empty)],
                 "before": ["--data-dir", str(empty), "createsuperuser"],
                 "equals": ["createsuperuser", f"--data-dir={empty}"]}[where]
    result = manage(*arguments, env=environment())
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and "does not exist" not in result.stderr
    assert f"no database in the data folder {empty}" in result.stderr
    assert "--data-dir PATH" in result.stderr and "MEMORY_PLATFORM_DATA_DIR" in result.stderr
    assert not (empty / "postgres").exists() and not (empty / "redis").exists()
    assert processes_naming(empty) == []


def test_the_environment_variable_is_read_the_same_way(tmp_path):
    empty = tmp_path / "exported"
    result = manage("shell", "-c", "print(1)", env=environment(MEMORY_PLATFORM_DATA_DIR=str(empty)))
    assert result.returncode != 0 and f"no database in the data folder {empty}" in result.stderr
    assert not (empty / "postgres").exists()


@pytest.mark.django_db
def test_data_dir_chooses_the_folder_of_a_command_that_has_a_database():
    """The suite's own folder holds a database: a command pointed there runs, and sees it."""
    folder = local_services.data_dir()
    assert local_services.has_database(folder)
    script = "from memory_platform import local_services; print(local_services.data_dir())"
    result = manage("shell", "--data-dir", str(folder), "-c", script, env=environment())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == str(folder)


def test_data_dir_without_a_path_is_refused():
    result = manage("check", "--data-dir", env=environment())
    assert result.returncode != 0 and "needs a PATH" in result.stderr


def test_commands_given_no_folder_use_the_one_a_running_scripts_run_serves(tmp_path, monkeypatch, pointer,
                                                                           a_running_manage_py):
    served = tmp_path / "served"
    monkeypatch.delenv("MEMORY_PLATFORM_DATA_DIR")
    pointer.parent.mkdir(parents=True, exist_ok=True)
    pointer.write_text(f"{served}\n{a_running_manage_py.pid}\n")
    assert local_services.data_dir() == served
    # Another shell, no option, no variable: the command is about the served folder.
    result = manage("createsuperuser", env=environment())
    assert f"no database in the data folder {served}" in result.stderr
    # An explicit choice wins over it.
    chosen = tmp_path / "chosen"
    monkeypatch.setenv("MEMORY_PLATFORM_DATA_DIR", str(chosen))
    assert local_services.data_dir() == chosen
    monkeypatch.delenv("MEMORY_PLATFORM_DATA_DIR")
    # Once that process is gone the record is no longer followed, but the message names it.
    a_running_manage_py.kill()
    a_running_manage_py.wait()
    assert local_services.data_dir() == local_services.DEFAULT_DATA_DIR.resolve()
    empty = tmp_path / "empty"
    result = manage("createsuperuser", "--data-dir", str(empty), env=environment())
    assert f"The last `scripts/run` served {served}." in result.stderr


def test_record_served_names_this_process(tmp_path, monkeypatch, pointer):
    """What `manage.py run` writes: the folder, and its own pid (this process is pytest, not a
    manage.py: the record is not followed)."""
    local_services.record_served(tmp_path)
    folder, pid = pointer.read_text().splitlines()
    assert (Path(folder), int(pid)) == (tmp_path.resolve(), os.getpid())
    assert local_services.last_served_data_dir() == tmp_path.resolve()
    assert local_services.served_data_dir() is None


def test_the_pointer_is_not_in_the_repository():
    ignored = subprocess.run(["git", "check-ignore", "-q", str(local_services.SERVED_POINTER)],
                             cwd=settings.BASE_DIR)
    assert ignored.returncode == 0


def test_a_second_run_of_the_served_folder_is_refused_before_starting_anything(tmp_path, monkeypatch, pointer,
                                                                               a_running_manage_py):
    served = tmp_path / "served"
    pointer.parent.mkdir(parents=True, exist_ok=True)
    pointer.write_text(f"{served}\n{a_running_manage_py.pid}\n")
    for arguments in (["run"], ["run", "--data-dir", str(served)]):
        result = manage(*arguments, "--bind", "127.0.0.1:1", env=environment())
        assert result.returncode != 0
        assert f"{served} is already served (process {a_running_manage_py.pid})" in result.stderr
        assert "--data-dir PATH" in result.stderr
    assert not served.exists() and processes_naming(served) == []
