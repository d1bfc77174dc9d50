"""What the benchmarks share: percentiles, the machine's speed, and waiting for a product
started with `manage.py run`."""

from __future__ import annotations

import json
import os
import platform
import time
import urllib.request


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
