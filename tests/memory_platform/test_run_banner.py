"""`manage.py run` prints "up" only once the web app answers GET /health
(memory_platform.management.commands.run.wait_until_serving), against a real server."""

import subprocess
import sys

from memory_platform.management.commands.run import wait_until_serving
from tests.markers import committing
from tests.ports import free_port


@committing
def test_waits_for_an_answer_of_health(live_server):
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        report = wait_until_serving(live_server.url, running, seconds=60)
    finally:
        running.kill()
        running.wait()
    assert report is not None and report["status"] in {"ok", "degraded"}


def test_nothing_answers_and_the_supervisor_exits_no_banner():
    exited = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)"])
    try:
        assert wait_until_serving(f"http://127.0.0.1:{free_port()}", exited, seconds=60) is None
        assert exited.poll() is not None  # it waited for the exit, not the 60 s
    finally:
        exited.kill()
        exited.wait()


def test_a_unix_socket_bind_is_not_polled():
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert wait_until_serving("http+unix:run/web.sock", running, seconds=60) is None
        assert running.poll() is None
    finally:
        running.kill()
        running.wait()


def job_log_level(**extra) -> str:
    import os

    from django.conf import settings

    script = ("import django, logging; django.setup(); "
              "print(logging.getLevelName(logging.getLogger('rq.cron').getEffectiveLevel()), "
              "logging.getLevelName(logging.getLogger('rq.scheduler').getEffectiveLevel()))")
    env = {key: value for key, value in os.environ.items() if key != "MEMORY_PLATFORM_VERBOSE"}
    result = subprocess.run([sys.executable, "-c", script], cwd=settings.BASE_DIR, capture_output=True, text=True,
                            timeout=120, env={**env, "DJANGO_SETTINGS_MODULE": "memory_platform.settings.production",
                                              "DJANGO_SECRET_KEY": "a-test-key-" + "k" * 50, **extra})
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_job_logs_are_quiet_unless_verbose():
    """What the served processes log of their jobs: warnings and errors only; every job with
    MEMORY_PLATFORM_VERBOSE (the cron and the scheduler; the worker's level is its --verbosity),
    both of which `manage.py run --verbose` hands them."""
    from memory_platform.management.commands.run import Command

    assert job_log_level() == "WARNING WARNING"
    assert job_log_level(MEMORY_PLATFORM_VERBOSE="1") == "INFO INFO"

    def commands(verbose: bool) -> dict[str, list[str]]:
        return {program.name: program.command for program in Command().programs("127.0.0.1:1", 1, verbose=verbose)}

    quiet, verbose = commands(False), commands(True)
    assert quiet["worker"][-2:] == ["--verbosity", "0"] and quiet["cron"][-2:] == ["--logging-level", "WARNING"]
    assert verbose["worker"][-2:] == ["--verbosity", "1"] and verbose["cron"][-2:] == ["--logging-level", "INFO"]


def test_a_verbose_worker_names_a_job_without_its_arguments():
    """`--verbose` brings the worker's job lines back; a job's arguments (a namespace, a subject
    to erase...) stay out of them: the function and the job's id only."""
    import os

    import django_rq
    from django.conf import settings

    queue = django_rq.get_queue("maintenance")
    job = queue.enqueue("builtins.len", "users/jane-doe-marker")
    try:
        worker = subprocess.run(
            [sys.executable, "manage.py", "rqworker", "maintenance", "--burst", "--verbosity", "1"],
            cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=300,
            env={**os.environ, "DJANGO_SETTINGS_MODULE": "memory_platform.settings.test",
                 "DATABASE_URL": settings.DATABASE_URL, "DATABASE_OWNER_URL": settings.DATABASE_OWNER_URL,
                 "REDIS_URL": settings.REDIS_URL, "MEMORY_PLATFORM_VERBOSE": "1"})
        output = worker.stdout + worker.stderr
        assert worker.returncode == 0, output[-2000:]
        assert job.id in output and "builtins.len(…)" in output
        assert "jane-doe" not in output
    finally:
        job.delete()
