"""Time of `ablate report` on a large stored study, in every format.

A synthetic study of ``--rows`` variants x ``--seeds`` seeds (default 199 + base x 10 = 2000
runs, two metrics) is stored directly in a fresh SQLite database (nothing is trained), then
``analyze`` runs once and every renderer (table, markdown, latex, json, html) renders it.
The exact permutation test is timed side by side: with the relabelings built once per
(n1, n2) as two halves whose sums are counted by binary search (the report's way now), and with every relabeling's index list built and gathered
for each row x metric (as the report did before), alternating repeats; both give the same
p-values (checked).

    python benchmarks/bench_ablation_report.py [--rows 199] [--seeds 10] [--repeats 3]

Report the load average (printed) beside the figures: the machine may be shared.
"""

from __future__ import annotations

import argparse
import io
import itertools
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from evalab.ablation import analyze, load_study
from evalab.ablation.plan.runs import plan_runs
from evalab.ablation.store.run_store import Outcome, RunResult, RunStore
from evalab.stats import seed_stats

ENTRY = "def run(config, seed):\n    return {'acc': 0.0, 'loss': 0.0}\n"


def write_study(folder: Path, rows: int, seeds: int) -> Path:
    (folder / "bench_entry.py").write_text(ENTRY, encoding="utf-8")
    lines = [
        "[study]",
        'name = "bench"',
        'entry = "bench_entry:run"',
        f"seeds = {list(range(seeds))}",
        'metrics = ["acc", "loss"]',
        "higher_is_better = { acc = true, loss = false }",
        "bounds = { acc = [0, 100] }",
        "",
        "[base]",
        "shift = 0.0",
    ]
    for i in range(1, rows + 1):
        lines += ["", "[[variant]]", f'label = "(V{i})"', f"set = {{ shift = {-i / 50:.3f} }}"]
    path = folder / "study.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def store_runs(study, db: Path) -> int:
    rng = np.random.default_rng(0)
    runs = plan_runs(study)
    with RunStore(db) as store:
        for run in runs:
            acc = float(np.clip(80 + run.config["shift"] + rng.normal(0, 0.5), 0, 100))
            store.record(
                Outcome(
                    study.name,
                    run.rows,
                    run.config,
                    run.seed,
                    study.code_version,
                    None,
                    None,
                    RunResult(run.key, "ok", metrics={"acc": acc, "loss": 1 - acc / 100}),
                )
            )
    return len(runs)


def render_all(analysis) -> dict[str, float]:
    from rich.console import Console

    from evalab.report import render_html, render_json, render_latex, render_markdown
    from evalab.report.tables import render_table

    out = {}
    for name, fn in (
        ("markdown", render_markdown),
        ("latex", render_latex),
        ("json", render_json),
        ("html", render_html),
    ):
        t0 = time.perf_counter()
        fn(analysis)
        out[name] = time.perf_counter() - t0
    t0 = time.perf_counter()
    render_table(analysis, Console(file=io.StringIO(), width=200))
    out["table"] = time.perf_counter() - t0
    return out


def enumerated_p(x: np.ndarray, y: np.ndarray) -> float:
    """The exact permutation p as the report computed it before: every relabeling's index
    list built for each test, then gathered and summed (the baseline of the side by side)."""
    pooled = np.concatenate([x, y])
    n, na = pooled.size, x.size
    idx = np.array(list(itertools.combinations(range(n), na)), dtype=np.int64)
    sums = pooled[idx].sum(axis=1)
    stats = np.abs(sums / na - (pooled.sum() - sums) / (n - na))
    tol = 1e-9 * max(1.0, float(np.abs(pooled).max()))
    return float(np.mean(stats >= abs(x.mean() - y.mean()) - tol))


def permutation_side_by_side(seeds: int, calls: int, repeats: int) -> tuple[float, float]:
    rng = np.random.default_rng(1)
    pairs = [(rng.normal(0, 1, seeds), rng.normal(0.3, 1, seeds)) for _ in range(calls)]
    now = before = 0.0
    for _ in range(repeats):
        seed_stats.relabelings.cache_clear()
        t0 = time.perf_counter()
        a = [seed_stats.permutation_test(x, y)[0] for x, y in pairs]
        now += time.perf_counter() - t0
        t0 = time.perf_counter()
        b = [enumerated_p(x, y) for x, y in pairs]
        before += time.perf_counter() - t0
        assert np.allclose(a, b, rtol=0, atol=1e-12), "the two enumerations gave different p-values"
    return now / repeats, before / repeats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=199)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(
        f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1, 5 min), {os.cpu_count()} CPUs"
    )
    with tempfile.TemporaryDirectory() as tmp:
        study = load_study(write_study(Path(tmp), args.rows, args.seeds), check_entry=False)
        n = store_runs(study, Path(tmp) / "s.db")
        t0, c0 = time.perf_counter(), time.process_time()
        analysis = analyze(study, Path(tmp) / "s.db")
        t_analyze, cpu = time.perf_counter() - t0, time.process_time() - c0
        times = render_all(analysis)
    print(
        f"{n} runs ({args.rows + 1} rows x {args.seeds} seeds, 2 metrics): analyze {t_analyze:.2f} s wall, "
        f"{cpu:.2f} s CPU"
    )
    for name, t in times.items():
        print(f"  analyze + render {name:<8} {t_analyze + t:6.2f} s (render {t:.2f} s)")
    calls = 2 * args.rows
    now, before = permutation_side_by_side(args.seeds, min(calls, 40), args.repeats)
    print(
        f"exact permutation test, {args.seeds} vs {args.seeds} seeds, {min(calls, 40)} tests: relabelings built once "
        f"per (n1, n2), half sums counted by binary search {now:.2f} s; index list built and gathered per test {before:.2f} s "
        f"(ratio {before / now:.1f}x; same p-values)"
    )


if __name__ == "__main__":
    main()
