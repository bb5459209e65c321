"""Per-item comparisons at scale: ``evalab compare --scores`` statistics against statsmodels.

Workload: 20 models x 100 000 items (0/1 scores, 20 000 clusters of 5), every model against
the first. Timed in this process, best of ``--repeat`` alternating runs:

* evalab: reading the 20 CSV files and aligning them (``read_scores`` + ``align``);
* evalab: every model's naive and clustered SE and every pair's paired and clustered
  SE, correlation and test (``compare_items``), checked equal to
* statsmodels: ``OLS(x, 1).fit(cov_type="cluster")`` for each model and pair (the peer);
* evalab: the same with a 10 000-resample percentile bootstrap over items, and over clusters.

    .venv/bin/python benchmarks/bench_items.py [--quick] [--repeat N]

``--quick``: 10 000 items and 1 000 resamples.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import statsmodels.api as sm

from evalab.items import Columns, align, read_scores
from evalab.stats.items import cluster_codes, compare_items, item_means


def make_files(folder: Path, models: int, items: int, size: int) -> list[Path]:
    rng = np.random.default_rng(0)
    difficulty = np.repeat(rng.normal(0, 1, items // size), size) + rng.normal(0, 0.7, items)
    paths = []
    for m in range(models):
        correct = (0.4 + 0.01 * m - difficulty + rng.normal(0, 1, items) > 0).astype(int)
        path = folder / f"model{m:02d}.csv"
        lines = ["id,passage,correct"] + [f"q{i},p{i // size},{c}" for i, c in enumerate(correct)]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def best(fn, repeat: int) -> tuple[float, object]:
    """Best wall time of ``repeat`` runs (and the last result); CPU time in ``CPU``."""
    times, cpu, out = [], [], None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    CPU[fn] = min(cpu)
    return min(times), out


#: CPU seconds (this process, all threads) of the last :func:`best` call per function
CPU: dict[object, float] = {}


def cpu_of(label: str, wall: float, fn: object) -> str:
    return f"{label} {wall:.2f} s wall, {CPU[fn]:.2f} s CPU"


def statsmodels_all(matrix: np.ndarray, groups: np.ndarray) -> list[float]:
    ones = np.ones(matrix.shape[0])
    ses = []
    for y in [*matrix.T, *(matrix[:, 1:] - matrix[:, :1]).T]:
        ses.append(
            float(sm.OLS(y, ones).fit(cov_type="cluster", cov_kwds={"groups": groups}).bse[0])
        )
    return ses


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    models, items, size = 20, 10_000 if args.quick else 100_000, 5
    resamples = 1_000 if args.quick else 10_000
    print(
        f"load average: {os.getloadavg()[0]:.2f}; {models} models x {items} items, clusters of {size}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        paths = make_files(Path(tmp), models, items, size)
        cols = Columns(scores=("correct",), cluster="passage")

        def read() -> object:
            return align([s for p in paths for s in read_scores(str(p), cols)])

        t_read, groups = best(read, 1)
    (group,) = groups
    names = [s.model for s in group.sets]
    means = [item_means(s.values, s.item, len(group.ids)) for s in group.sets]
    codes = cluster_codes(group.clusters)
    matrix = np.column_stack([m.means for m in means])
    t_ev = t_sm = 0.0
    for _ in range(args.repeat):  # alternating, best of each
        t, res = best(lambda: compare_items(names, means, codes), 1)
        t_ev = t if not t_ev else min(t_ev, t)
        t, ses = best(lambda: statsmodels_all(matrix, codes), 1)
        t_sm = t if not t_sm else min(t_sm, t)
    ours = [m.clustered.se for m in res.models] + [p.clustered.se for p in res.pairs]
    assert np.allclose(ours, ses, rtol=1e-10), "clustered standard errors differ from statsmodels"
    print(cpu_of("read + align 20 CSV files:", t_read, read))
    print(
        f"analytic SEs: evalab {t_ev:.3f} s, statsmodels {t_sm:.3f} s ({t_sm / t_ev:.1f}x); "
        f"{len(ses)} clustered SEs equal to rtol 1e-10"
    )

    def over_items() -> object:
        return compare_items(names, means, None, n_samples=resamples)

    def over_clusters() -> object:
        return compare_items(names, means, codes, n_samples=resamples)

    t_items, _ = best(over_items, 1)
    t_clusters, _ = best(over_clusters, 1)
    print(
        f"{resamples} bootstrap resamples: "
        + cpu_of("over items", t_items, over_items)
        + "; "
        + cpu_of("over clusters", t_clusters, over_clusters)
    )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
