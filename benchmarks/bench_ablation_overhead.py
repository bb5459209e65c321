"""The ablation runner's own overhead per run (process spawn, result file, SQLite commit).

Runs N no-op runs and M runs that sleep 1 s through ``run_study`` (local executor, one job),
and compares the wall time per run with (a) the bare cost of starting a Python process
(``subprocess.run([python, "-c", "pass"])``, the floor for per-run process isolation) and
(b) the 1-second run. Prints a table; the overhead is what the runner adds.

    .venv/bin/python benchmarks/bench_ablation_overhead.py [--quick]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENTRY = """
import time


def run(config, seed):
    if config["sleep"]:
        time.sleep(config["sleep"])
    return {"acc": 1.0 + seed}
"""


def study_file(folder: Path, name: str, sleep: float, n: int) -> Path:
    (folder / "bench_entry.py").write_text(ENTRY)
    path = folder / f"{name}.toml"
    path.write_text(
        f'[study]\nname = "{name}"\nentry = "bench_entry:run"\nseeds = {list(range(n))}\n'
        f'metrics = ["acc"]\n\n[base]\nsleep = {sleep}\n'
    )
    return path


def time_study(path: Path, db: Path) -> tuple[float, int]:
    from evalab.ablation import load_study, run_study

    study = load_study(path)
    t0 = time.perf_counter()
    summary = run_study(study, db, jobs=1, progress=False)
    elapsed = time.perf_counter() - t0
    assert summary.ok == len(study.seeds), summary
    return elapsed, summary.ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer runs (5 no-op, 2 sleeping)")
    args = ap.parse_args()
    n_noop, n_sleep = (5, 2) if args.quick else (30, 5)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        for _ in range(n_noop):
            subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare = (time.perf_counter() - t0) / n_noop
        noop, k = time_study(study_file(folder, "noop", 0.0, n_noop), folder / "noop.db")
        per_noop = noop / k
        sleep, k2 = time_study(study_file(folder, "sleep", 1.0, n_sleep), folder / "sleep.db")
        per_sleep = sleep / k2
        t0 = time.perf_counter()
        from evalab.ablation import load_study, run_study

        again = run_study(load_study(folder / "noop.toml"), folder / "noop.db", progress=False)
        skip_all = time.perf_counter() - t0
        assert again.skipped == n_noop
    rows = [
        ("bare `python -c pass` (floor)", bare, ""),
        (f"no-op run via evalab ({n_noop} runs)", per_noop, f"{per_noop / bare:.2f}x the floor"),
        (
            f"1-second run via evalab ({n_sleep} runs)",
            per_sleep,
            f"overhead {per_sleep - 1.0:+.3f} s = {100 * (per_sleep - 1.0):.1f}% of 1 s",
        ),
        (f"rerun, all {n_noop} finished (skip)", skip_all, "load plan + query store"),
    ]
    print(f"{'what':<42} {'s/run':>8}  note")
    for name, val, note in rows:
        print(f"{name:<42} {val:>8.3f}  {note}")
    print(
        f"\nrunner overhead per run (no-op run): {per_noop:.3f} s = {100 * per_noop:.1f}% of a 1-second run"
    )


if __name__ == "__main__":
    main()
