"""Run every benchmark in this folder, one after another, in one process tree.

Usage: ``python benchmarks/run.py [--quick] [NAME ...]`` where NAME filters by substring
(e.g. ``rouge``). Each benchmark prints its own table of evalab's time, the peer's time
and their ratio, after checking that both produce the same numbers.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller workloads")
    parser.add_argument(
        "names", nargs="*", help="only benchmarks whose file name contains one of these"
    )
    args = parser.parse_args()
    scripts = sorted(HERE.glob("bench_*.py"))
    if args.names:
        scripts = [s for s in scripts if any(n in s.name for n in args.names)]
    failed = []
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        cmd = [sys.executable, str(script), *(["--quick"] if args.quick else [])]
        if subprocess.run(cmd, check=False).returncode != 0:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
