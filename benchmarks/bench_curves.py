"""Curves at scale: store size and report time for many runs of many logged steps.

Runs a study of ROWS rows x SEEDS seeds (default 20 x 10 = 200 runs) whose entry point logs
``loss`` and ``val_loss`` at every one of STEPS steps (default 10 000) through
``evalab.ablation.log`` (noisy values, as a training loss is: noise defeats compression more
than a smooth curve does), then measures

- the store: the database file's size after a checkpoint, beside the raw size of the values
  (16 bytes a step: an int64 step and a float64 value) and of the runs' ``metrics.jsonl``;
- the report: ``evalab ablate report STUDY -f html`` as a user runs it (a fresh process,
  wall time, best of REPEATS), and the part spent reading and banding the curves.

It checks that the stored curves decode to exactly what the runs logged (one run read back
from its ``metrics.jsonl``) and prints the load average, since timings on a shared machine
vary. Goals: report <= 5 s, store <= 50 MB.

    .venv/bin/python benchmarks/bench_curves.py [--rows 20] [--seeds 10] [--steps 10000] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENTRY = """
import math
import random

from evalab.ablation import log


def run(config, seed):
    rng = random.Random(seed * 7919 + config["lr_index"])
    rate = 1.0 / (200.0 * (1 + config["lr_index"]))
    for step in range(config["steps"]):
        loss = 2.5 * math.exp(-step * rate) + 0.2 + rng.gauss(0.0, 0.02)
        log(step=step, loss=loss, val_loss=loss + 0.05 + rng.gauss(0.0, 0.01))
    return {"acc": 1.0 - loss / 3.0}
"""


def write_study(folder: Path, rows: int, seeds: int, steps: int) -> Path:
    (folder / "bench_curve_entry.py").write_text(ENTRY, encoding="utf-8")
    variants = "".join(
        f'\n[[variant]]\nlabel = "(L{i})"\nset = {{ lr_index = {i} }}\n' for i in range(1, rows)
    )
    path = folder / "study.toml"
    path.write_text(
        f'[study]\nname = "bench-curves"\nentry = "bench_curve_entry:run"\nseeds = {list(range(seeds))}\n'
        f'metrics = ["acc"]\n\n[curves]\nselect = "last"\n\n[base]\nlr_index = 0\nsteps = {steps}\n{variants}',
        encoding="utf-8",
    )
    return path


def report_seconds(study: Path, db: Path, out: Path, repeats: int) -> tuple[float, float]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).resolve().parents[1] / "src"), os.environ.get("PYTHONPATH", "")]
        ),
    }
    best, cpu = float("inf"), float("inf")
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "evalab",
                "ablate",
                "report",
                str(study),
                "--db",
                str(db),
                "-f",
                "html",
                "-o",
                str(out),
            ],
            check=True,
            env=env,
        )
        best = min(best, time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = min(cpu, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best, cpu


def check_one_run(study_obj, db: Path) -> int:
    """A stored curve equals its run's metrics.jsonl, value for value; returns its steps."""
    from evalab.ablation.contract.curves import load_curves
    from evalab.ablation.store.run_store import RunStore

    with RunStore(db, create=False) as store:
        runs = store.runs(study_obj.name)
        key, run = next(iter(runs.items()))
        stored = load_curves(store.conn, study_obj.name, [key])[key]
    lines = [
        json.loads(x)
        for x in (Path(run.artifacts["dir"]) / "metrics.jsonl").read_text().splitlines()
    ]
    assert stored["loss"].values.tolist() == [x["loss"] for x in lines]
    assert stored["val_loss"].steps.tolist() == [x["step"] for x in lines]
    return len(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from evalab.ablation import load_study, run_study
    from evalab.ablation.analysis.curve_bands import study_curves

    with tempfile.TemporaryDirectory(prefix="bench-curves-") as tmp:
        folder = Path(tmp)
        study = write_study(folder, args.rows, args.seeds, args.steps)
        db = folder / "curves.db"
        s = load_study(study)
        t0 = time.perf_counter()
        summary = run_study(s, db, jobs=args.jobs, progress=False)
        run_s = time.perf_counter() - t0
        assert summary.ok == args.rows * args.seeds, summary
        steps = check_one_run(s, db)
        con = sqlite3.connect(db)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        blob_bytes, values = con.execute(
            "SELECT SUM(LENGTH(data)), SUM(steps) FROM curves"
        ).fetchone()
        con.close()
        store_mb = db.stat().st_size / 1e6
        logs_mb = sum(p.stat().st_size for p in folder.rglob("metrics.jsonl")) / 1e6
        t0 = time.process_time()
        sc = study_curves(s, db)
        band_s = time.process_time() - t0
        report_s, report_cpu = report_seconds(study, db, folder / "report.html", args.repeats)
        html_mb = (folder / "report.html").stat().st_size / 1e6
    runs = args.rows * args.seeds
    print(
        f"{runs} runs x {steps} steps x 2 metrics = {values} logged values; ran in {run_s:.1f} s with {args.jobs} jobs"
    )
    print(
        f"store: {store_mb:.1f} MB database ({blob_bytes / 1e6:.1f} MB curve blobs, "
        f"{blob_bytes / values:.2f} bytes a value; raw int64 step + float64 value: {16 * values / 1e6:.1f} MB, "
        f"ratio {16 * values / blob_bytes:.2f}); the runs' metrics.jsonl logs: {logs_mb:.1f} MB   goal <= 50 MB"
    )
    print(
        f"report: `ablate report -f html` {report_s:.2f} s wall, {report_cpu:.2f} s CPU (best of {args.repeats}, "
        "a fresh process), "
        f"of which reading and banding the curves {band_s:.2f} s CPU ({len(sc.rows)} rows); page {html_mb:.2f} MB   "
        "goal <= 5 s"
    )
    print(
        f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
