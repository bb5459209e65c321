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
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def statsmodels_all(matrix: np.ndarray, groups: np.ndarray) -> list[float]:
    import statsmodels.api as sm

    ones = np.ones(matrix.shape[0])
    ses = []
    for y in [*matrix.T, *(matrix[:, 1:] - matrix[:, :1]).T]:
        ses.append(float(sm.OLS(y, ones).fit(cov_type="cluster", cov_kwds={"groups": groups}).bse[0]))
    return ses


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    models, items, size = 20, 10_000 if args.quick else 100_000, 5
    resamples = 1_000 if args.quick else 10_000
    print(f"load average: {os.getloadavg()[0]:.2f}; {models} models x {items} items, clusters of {size}")
    with tempfile.TemporaryDirectory() as tmp:
        paths = make_files(Path(tmp), models, items, size)
        cols = Columns(scores=("correct",), cluster="passage")
        t_read, groups = best(lambda: align([s for p in paths for s in read_scores(str(p), cols)]), 1)
    (group,) = groups
    names = [s.model for s in group.sets]
    means = [item_means(s.values, s.item, len(group.ids)) for s in group.sets]
    codes = cluster_codes(group.clusters)
    t_ev, res = best(lambda: compare_items(names, means, codes), args.repeat)
    matrix = np.column_stack([m.means for m in means])
    t_sm, ses = best(lambda: statsmodels_all(matrix, codes), args.repeat)
    ours = [m.clustered.se for m in res.models] + [p.clustered.se for p in res.pairs]
    assert np.allclose(ours, ses, rtol=1e-10), "clustered standard errors differ from statsmodels"
    print(f"read + align 20 CSV files: {t_read:.2f} s")
    print(f"analytic SEs: evalab {t_ev:.3f} s, statsmodels {t_sm:.3f} s ({t_sm / t_ev:.1f}x); "
          f"{len(ses)} clustered SEs equal to rtol 1e-10")
    t_items, _ = best(lambda: compare_items(names, means, None, n_samples=resamples), 1)
    t_clusters, _ = best(lambda: compare_items(names, means, codes, n_samples=resamples), 1)
    print(f"{resamples} bootstrap resamples: over items {t_items:.2f} s, over clusters {t_clusters:.2f} s")


if __name__ == "__main__":
    main()
