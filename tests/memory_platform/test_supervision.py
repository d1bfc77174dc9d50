"""A child of a supervised program dies with it (memory_platform.supervision.die_with_parent):
killed with SIGKILL, which supervisord's stopasgroup does not cover, a parent leaves no orphan."""

import os
import signal
import subprocess
import sys

import psutil
import pytest
from django.conf import settings

PARENT = """
import os, sys, time
from memory_platform import supervision

parent = os.getpid()
child = os.fork()
if child == 0:
    supervision.die_with_parent(parent)
    time.sleep(300)
    os._exit(0)
print(child, flush=True)
time.sleep(300)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_a_forked_child_dies_with_its_killed_parent():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], cwd=settings.BASE_DIR, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(settings.BASE_DIR)})
    try:
        child = psutil.Process(int(parent.stdout.readline()))
        assert child.ppid() == parent.pid
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
        child.wait(timeout=30)  # psutil.TimeoutExpired if it outlived its parent
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.stdout.close()
