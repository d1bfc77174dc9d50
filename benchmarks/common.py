"""What the benchmarks share: percentiles, the machine's speed, and waiting for a product
started with `manage.py run`."""

from __future__ import annotations

import calendar
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def percentile(values, q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def wait_until_healthy(port: int, seconds: float) -> None:
    """Until /health says ok: the web workers have loaded the model and a worker is registered."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                if json.loads(response.read())["status"] == "ok":
                    return
        except Exception:
            if time.monotonic() > deadline:
                raise
        time.sleep(1)


def wait_until_idle(since: float, seconds: float) -> None:
    """Until the cron scheduler started after `since` (a time.time()) has enqueued what was due
    at its start, and the worker has run it all: the product measured in its steady state, not
    beside the jobs a start enqueues (on a first start, every periodic job; memory_platform's
    rqcron). Needs Django set up, with the product's Redis."""
    import django_rq
    from django.conf import settings
    from rq.cron import CronScheduler
    from rq.registry import StartedJobRegistry

    queues = [django_rq.get_queue(name) for name in settings.RQ_QUEUES]
    connection = queues[0].connection
    deadline, quiet = time.monotonic() + seconds, 0
    while not any(calendar.timegm(s.created_at.utctimetuple()) >= since - 1 for s in CronScheduler.all(connection)):
        if time.monotonic() > deadline:
            raise TimeoutError("no cron scheduler started")
        time.sleep(0.5)
    while quiet < 3:  # idle at three checks in a row, half a second apart
        if time.monotonic() > deadline:
            raise TimeoutError("the worker is still busy")
        busy = sum(len(q) + StartedJobRegistry(queue=q).count for q in queues)
        quiet = quiet + 1 if busy == 0 else 0
        time.sleep(0.5)


def machine() -> dict:
    """The machine a result was measured on, with a reference speed (the best of three runs of
    a plain Python loop): machines of the same 2-core kind differ, and the same code's search
    took 42 ms p50 on one and 63 on another. Results of different machines compare only
    through this figure."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            cpu = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    timings = []
    for _ in range(3):
        started, total = time.perf_counter(), 0
        for i in range(10_000_000):
            total += i
        timings.append(time.perf_counter() - started)
    return {"cpu": cpu, "cores": os.cpu_count(), "python_loop_10m_s": round(min(timings), 3)}


@contextmanager
def product(data_dir: Path, port: int, env: dict):
    """The product as `scripts/run` starts it (`manage.py run`) on embedded servers in data_dir,
    until healthy; yields the demo API key. Its output goes on to data_dir/server.log (the
    worker's own account of its time is there). Stopped with Ctrl-C's signal on leaving."""
    server = subprocess.Popen([sys.executable, "manage.py", "run", "--bind", f"127.0.0.1:{port}"], cwd=ROOT,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    drain = None
    try:
        key = None
        for line in server.stdout:
            if match := re.search(r"API key\s+(mp_\S+)", line):
                key = match.group(1)
            if "Ctrl-C stops it" in line:
                break
        wait_until_healthy(port, 120)
        # Keep reading the server's output so it never blocks on a full pipe.
        drain = subprocess.Popen(["cat"], stdin=server.stdout, stdout=(data_dir / "server.log").open("w"))
        yield key
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.wait(timeout=60)
        if drain is not None:
            drain.wait(timeout=10)


def api(port: int, method: str, path: str, key: str, body=None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.status, json.loads(response.read() or b"{}")


@contextmanager
def service_connection():
    """A connection to the running embedded PostgreSQL as the owner, in a transaction with the
    service-account flag set: it reads and writes across the benchmark's organisations."""
    import psycopg

    from memory_platform import local_services

    with psycopg.connect(local_services.postgres_running().url(user=local_services.OWNER_ROLE)) as conn:
        conn.execute("SET LOCAL app.service_account = 'on'")
        yield conn


def pending_count() -> int:
    """Memories still waiting for the worker, read straight from PostgreSQL."""
    with service_connection() as conn:
        return conn.execute("SELECT count(*) FROM memories WHERE embedding IS NULL").fetchone()[0]


def django_env(data_dir: Path) -> dict:
    """The environment of a benchmark that runs the product's code in its own process (and in
    the commands it starts), on embedded servers in data_dir, configured as `scripts/run` does."""
    return {"MEMORY_PLATFORM_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "memory_platform.settings.base",
            "DJANGO_DEBUG": "false", "LOG_LEVEL": "WARNING"}


def fresh_django(data_dir: Path) -> None:
    """Django set up in this process on new embedded servers in data_dir (emptied first),
    migrated: what a benchmark loads its rows into."""
    import shutil

    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    os.environ.update(django_env(data_dir))
    import django

    django.setup()
    from django.core.management import call_command

    from memory_platform import local_services

    local_services.start_for_settings()
    call_command("migrate", verbosity=0)
