"""Export and import at scale: `manage.py export_memories` and `import_memories` on the scale
benchmark's database, as an operator runs them.

    .venv/bin/python benchmarks/scale/portability.py

On the database benchmarks/scale/run.py loaded (default .data/bench-scale): the organisation's
whole memory exported to a file, then that file imported into a new, empty organisation of the
same database, each command in a process of its own (its peak resident memory, VmHWM, as it
exits); then `memory_tallies --verify` (the imported organisation's tallies are exact). It
adds an organisation of as many memories to the database: a later run.py must load it again
(without --reuse). Writes results-portability-<label>.json beside this file; the exported file
is removed after the import unless --keep-file. `--only export` leaves it for a later
`--only import` (say, with erasure.py between them: the import does not read the source).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine  # noqa: E402
from benchmarks.scale.erasure import command, counts_listed  # noqa: E402
from benchmarks.scale.run import MARKER, SLUG  # noqa: E402

IMPORTED = "scale-imported"


def created(output: str) -> dict:
    """What the import said it created: kind -> rows ("...: created memories: 10000, versions: ...")."""
    return counts_listed(r"created (.+?)\.(?:\n|$)", output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".data" / "bench-scale")
    parser.add_argument("--label", default="1000000")
    parser.add_argument("--note", default="")
    parser.add_argument("--keep-file", action="store_true", help="keep the exported file (data-dir/export.jsonl)")
    parser.add_argument("--only", choices=["export", "import"], help="one step (the results file gathers both)")
    args = parser.parse_args()
    data_dir = args.data_dir.resolve()
    if not (data_dir / MARKER).exists():
        raise SystemExit(f"{data_dir} holds no database of benchmarks/scale/run.py")
    exported = data_dir / "export.jsonl"
    path = Path(__file__).with_name(f"results-portability-{args.label}.json")
    report = json.loads(path.read_text()) if args.only == "import" and path.exists() else {}
    report.update({"recorded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "note": args.note,
                   "machine": machine()})
    if args.only != "import":
        export_file(data_dir, exported, report)
    if args.only != "export":
        import_file(data_dir, exported, report)
        if not args.keep_file:
            exported.unlink()
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"results in {path}")


def export_file(data_dir: Path, exported: Path, report: dict) -> None:
    seconds, output, peak_kb = command(data_dir, "export_memories", SLUG, "--output", str(exported))
    memories = int(re.search(r"exported (\d+) memories", output).group(1))
    report["export"] = {"memories": memories, "seconds": round(seconds, 1),
                        "memories_per_second": round(memories / seconds), "peak_rss_mb": round(peak_kb / 1024),
                        "file_mb": round(exported.stat().st_size / 2**20)}
    print("export", json.dumps(report["export"]), flush=True)


def import_file(data_dir: Path, exported: Path, report: dict) -> None:
    if not exported.exists():
        raise SystemExit(f"{exported} is not there: export first (--only export)")
    command(data_dir, "create_organization", "Scale imported", "--slug", IMPORTED, check=False)  # or there already
    seconds, output, peak_kb = command(data_dir, "import_memories", IMPORTED, str(exported))
    rows = created(output)
    report["import"] = {"memories": rows.get("memories", 0), "seconds": round(seconds, 1),
                        "memories_per_second": round(rows.get("memories", 0) / seconds),
                        "peak_rss_mb": round(peak_kb / 1024), "created": rows,
                        "duplicates": int(m.group(1)) if (m := re.search(r"Duplicates skipped: (\d+)", output)) else 0}
    print("import", json.dumps(report["import"]), flush=True)

    verify_seconds, verified, _ = command(data_dir, "memory_tallies", "--verify", check=False)
    report["tallies_exact"] = "match their memories" in verified
    report["verify_seconds"] = round(verify_seconds, 1)


if __name__ == "__main__":
    main()
