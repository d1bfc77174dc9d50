"""Redaction time against input length, on ordinary and on adversarial text.

    .venv/bin/python benchmarks/redaction/run.py      # writes benchmarks/redaction/results.json

Every stored string goes through memories.intake.redaction, and a request body may hold 2 MB of
metadata. A pattern whose repetition can start anywhere and read to the end of a run takes
time in the square of the length: before the bounds, 32 kB of "a." took 47 s. Here each text
is redacted at 16, 64 and 256 kB; the growth from one size to four times it is ~4 when the
time is linear, ~16 when it is quadratic.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine  # noqa: E402
from memories.intake import redaction  # noqa: E402

SIZES = (16_384, 65_536, 262_144)
# Units repeated to the size: runs of word characters and separators, the prefixes of the
# token shapes the rules look for, and an ordinary sentence.
UNITS = ("a.", "a-", "1-", "abcdefgh", "a1B2", "eyJ", "http://a:", "a:b@", "a=", "ghp_", "xoxb-", "pypi-",
         "password=", "Bearer ", "+1 ", "1234 ", "'", "The user prefers green tea in the morning. ")


def seconds(text: str, *, personal: bool) -> float:
    started = time.perf_counter()
    redaction.redact_text(text, personal=personal)
    return time.perf_counter() - started


def main() -> None:
    redaction._detect_secrets_rules()  # loaded once per process, not part of any text's time
    rows = []
    for unit in UNITS:
        times = [seconds(unit * (size // len(unit)), personal=True) for size in SIZES]
        growth = [round(later / max(earlier, 1e-9), 1) for earlier, later in zip(times, times[1:])]
        rows.append({"unit": unit, "ms": [round(t * 1000, 1) for t in times], "growth_per_4x": growth})
        print(f"{unit!r:48} " + "  ".join(f"{t * 1000:9.1f} ms" for t in times) + f"   growth {growth}")
    worst = max(rows, key=lambda row: row["ms"][-1])
    results = {"machine": machine(), "recorded_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               "sizes_bytes": list(SIZES), "personal_data_rules": True, "texts": rows,
               "worst_at_256k": {"unit": worst["unit"], "ms": worst["ms"][-1]},
               "max_growth_per_4x": max(g for row in rows for g in row["growth_per_4x"])}
    (Path(__file__).parent / "results.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
