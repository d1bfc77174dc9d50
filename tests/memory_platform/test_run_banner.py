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
        assert wait_until_serving("http+unix:/tmp/socket", running, seconds=60) is None
        assert running.poll() is None
    finally:
        running.kill()
        running.wait()
