"""What the benchmarks share: percentiles and waiting for a product started with `manage.py run`."""

from __future__ import annotations

import json
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
