"""Test-set statistics of an ablation study: vectorised example counts vs an index loop.

A study of 10 rows x 5 seeds x 2000 test examples (accuracy per example), 1000 bootstrap
resamples: evalab scores every run on the resamples as count matrices (one matrix product
per chunk for all runs' stats rows side by side, ``stats.two_level.resample_runs``) and then computes each row's value and
Δ intervals (test examples, two-level). The peer is the textbook loop: per resample, draw the
example indices and average each run's values at them. Both use the same index stream
(``default_rng(seed).choice(n, (B, n))``), so the resampled values are checked equal.
Alternating repeats after a warm-up; medians and the ratio are printed.

    .venv/bin/python benchmarks/bench_two_level.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from evalab.ablation.store.per_example import ExampleStats, mean_of_rows, mean_rows
from evalab.stats.two_level import (
    ResampledRuns,
    example_delta,
    example_value,
    resample_runs,
    two_level_delta,
)


def study(rows: int, seeds: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [100.0 * (rng.random(n) < 0.7 + 0.01 * r) for r in range(rows) for _ in range(seeds)]


def summarise(rr: ResampledRuns, rows: int, seeds: int) -> list[tuple[float, ...]]:
    base = rr.take(range(seeds))
    out = []
    for r in range(rows):
        row = rr.take(range(r * seeds, (r + 1) * seeds))
        v = example_value(row, 0.95)
        if r == 0:
            out.append((v.low, v.high))
            continue
        d = example_delta(row, base, 0.95)
        both = two_level_delta(row, base, paired=False, confidence=0.95)
        assert both is not None
        out.append((v.low, v.high, d.low, d.high, both.ci.low, both.ci.high, both.p_value))
    return out


def evalab_way(
    runs: list[np.ndarray], resamples: int, rows: int, seeds: int
) -> tuple[ResampledRuns, list]:
    rr = resample_runs(
        [ExampleStats("acc", mean_rows(v), mean_of_rows) for v in runs], resamples, seed=1
    )
    return rr, summarise(rr, rows, seeds)


def loop_way(
    runs: list[np.ndarray], resamples: int, rows: int, seeds: int
) -> tuple[ResampledRuns, list]:
    n = runs[0].size
    idx = np.random.default_rng(1).choice(n, size=(resamples, n))
    values = np.empty((len(runs), resamples))
    for b in range(resamples):
        for j, v in enumerate(runs):
            values[j, b] = v[idx[b]].mean()
    rr = ResampledRuns(np.array([v.mean() for v in runs]), values)
    return rr, summarise(rr, rows, seeds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows, seeds, n, resamples = 10, 5, 2000, 1000
    repeats = 2 if args.quick else args.repeats
    runs = study(rows, seeds, n)
    a, b = (
        evalab_way(runs, resamples, rows, seeds),
        loop_way(runs, resamples, rows, seeds),
    )  # warm-up
    np.testing.assert_allclose(a[0].values, b[0].values, rtol=1e-9)
    np.testing.assert_allclose(np.array(a[1][1:]), np.array(b[1][1:]), rtol=1e-9)
    times: dict[str, list[float]] = {"evalab": [], "loop": []}
    for _ in range(repeats):
        for name, fn in (("evalab", evalab_way), ("loop", loop_way)):
            t = time.perf_counter()
            fn(runs, resamples, rows, seeds)
            times[name].append(time.perf_counter() - t)
    ev, lp = statistics.median(times["evalab"]), statistics.median(times["loop"])
    print(
        f"{rows} rows x {seeds} seeds x {n} examples, {resamples} resamples (median of {repeats}, wall):"
    )
    print(f"  evalab (count matrices)  {ev:8.3f} s")
    print(f"  index loop               {lp:8.3f} s")
    print(f"  ratio                    {lp / ev:8.1f}x   (resampled values equal to 1e-9)")


if __name__ == "__main__":
    main()
