"""Erasure at scale: `manage.py erase` on the scale benchmark's database, as an operator runs it.

    .venv/bin/python benchmarks/scale/erasure.py --namespace users/dana --all

Destructive: it erases from the database benchmarks/scale/run.py loaded (default
.data/bench-scale), which a later run must load again (run.py without --reuse). For each scope
asked, in this order: a namespace prefix (`--namespace`), then the organisation's whole memory
(`--all`), it times the count an operator sees first (the command without --yes), then the
erasure itself in a process of its own (its peak resident memory, VmHWM, as it exits), and then
checks the tallies against a count of the rows (`memory_tallies --verify`: the counts the stats
read stay exact through an erasure). Writes results-erasure-<label>.json beside this file.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import machine  # noqa: E402
from benchmarks.scale.run import MARKER, SLUG, product_env  # noqa: E402

# Run in the command's process as it exits: its peak resident memory.
PEAK = "import atexit, sys; atexit.register(lambda: print('VmHWM', [l for l in open('/proc/self/status') " \
       "if l.startswith('VmHWM')][0].split()[1], file=sys.stderr))"


def command(data_dir: Path, *arguments: str, check: bool = True) -> tuple[float, str, int]:
    """manage.py `arguments` in a process of its own: seconds, its output, its peak memory (kB)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", f"{PEAK}; import runpy; sys.argv = ['manage.py', *sys.argv[1:]]; "
                                                 "runpy.run_path('manage.py', run_name='__main__')", *arguments],
                          cwd=ROOT, env=product_env(data_dir), capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode and check:
        raise SystemExit(f"manage.py {' '.join(arguments)} failed:\n{done.stdout}\n{done.stderr}")
    peak = re.search(r"VmHWM (\d+)", done.stderr)
    return seconds, done.stdout.strip(), int(peak.group(1)) if peak else 0


def erased(output: str) -> dict:
    """What the command said it erased (or would): kind -> rows ("... erased memories: 10000,
    versions: 12581 (erasure ...)." or "... would erase memories: 10000, ...")."""
    return counts_listed(r"(?:would erase|erased) (.+?)(?: \(erasure [^)]*\))?\.(?:\n|$)", output)


def counts_listed(pattern: str, output: str) -> dict:
    """The rows by kind a command's output lists where `pattern`'s group is ("memories: 10000,
    versions: 12581"), as kind -> rows."""
    listed = re.search(pattern, output).group(1)
    return {kind.replace(" ", "_"): int(n) for kind, n in re.findall(r"([a-z][a-z ]*): (\d+)", listed)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT / ".data" / "bench-scale")
    parser.add_argument("--namespace", help="a namespace prefix to erase first (users/dana: 10,000 memories)")
    parser.add_argument("--all", action="store_true", dest="everything", help="then the organisation's whole memory")
    parser.add_argument("--org", default=SLUG, help="the organisation (default the one run.py loaded; "
                                                    "portability.py imports a copy into scale-imported)")
    parser.add_argument("--label", default="1000000")
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    data_dir = args.data_dir.resolve()
    if not (data_dir / MARKER).exists():
        raise SystemExit(f"{data_dir} holds no database of benchmarks/scale/run.py")
    scopes = ([("namespace", ["--namespace", args.namespace])] if args.namespace else []) + (
        [("all", ["--all"])] if args.everything else [])
    if not scopes:
        raise SystemExit("say what to erase: --namespace, --all or both")
    report = {"recorded_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "note": args.note,
              "machine": machine(), "scopes": {}}
    for name, scope in scopes:
        counted_seconds, counted, _ = command(data_dir, "erase", args.org, *scope)
        seconds, output, peak_kb = command(data_dir, "erase", args.org, *scope, "--yes")
        rows = erased(output)
        verify_seconds, verified, _ = command(data_dir, "memory_tallies", "--verify", check=False)
        report["scopes"][name] = {
            "scope": " ".join(scope), "count_seconds": round(counted_seconds, 1), "erase_seconds": round(seconds, 1),
            "memories_per_second": round(rows.get("memories", 0) / seconds), "peak_rss_mb": round(peak_kb / 1024),
            "erased": rows, "would_erase_matched": erased(counted) == rows,
            "tallies_exact": "match their memories" in verified, "verify_seconds": round(verify_seconds, 1)}
        print(name, json.dumps(report["scopes"][name]), flush=True)
    path = Path(__file__).with_name(f"results-erasure-{args.label}.json")
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"results in {path}")


if __name__ == "__main__":
    main()
