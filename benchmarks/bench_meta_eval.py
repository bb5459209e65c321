"""Meta-evaluation speed and peak memory: ``evalab meta-eval`` end to end, and its
bootstrapped Kendall τ_b side by side with scipy.

Workloads: WMT21 en-de MQM (../shared/wmt21-mqm), the 8 rated systems against reference A,
BLEU and chrF, 1000 bootstrap resamples at both levels, 1000 permutation trials:

* ``ende``: the data as it is, 8 systems x 1002 segments (4 216 rated cells);
* ``ende-x2`` (issue 34's size): every file concatenated with itself, 8 systems x 2004
  segments, the MQM scores of segment s copied to s + 1002 (8 432 rated cells, 35.5
  million pairs of cells for acc_eq with no grouping). Real MQM score distribution and
  rated share, twice the cells.

The end-to-end command is timed in a child process of its own: wall, CPU (user + system)
and peak RSS (``os.wait4``). Then the segment-level Kendall τ_b (no grouping) of BLEU on
``--kendall-resamples`` bootstrap resamples is computed by evalab (one batched call) and
by ``scipy.stats.kendalltau`` on each expanded resample (the way a per-resample loop
computes it), alternating with a warm-up, outputs checked equal to 1e-12, and printed as
a ratio.

    .venv/bin/python benchmarks/bench_meta_eval.py [--workload ende-x2] [--repeats 3] [--kendall-resamples 100]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MQM = ROOT.parent / "shared" / "wmt21-mqm"
SYSTEMS = [
    "Facebook-AI",
    "HuaweiTSC",
    "NVIDIA-NeMo",
    "Online-W",
    "UEdin",
    "VolcTrans-AT",
    "VolcTrans-GLAT",
    "eTranslation",
]


def workload(name: str, folder: Path) -> tuple[Path, Path, list[Path]]:
    """The human scores, the reference and the system outputs of workload ``name``."""
    human = MQM / "human" / "mqm_newstest2021_ende.avg_seg_scores.tsv"
    ref = MQM / "references" / "newstest2021.en-de.ref.A.de"
    hyps = [MQM / "system-outputs" / f"newstest2021.en-de.hyp.{s}.de" for s in SYSTEMS]
    if name == "ende":
        return human, ref, hyps
    for path in [ref, *hyps]:
        text = path.read_text(encoding="utf-8")
        (folder / path.name).write_text(text + text, encoding="utf-8")
    lines = human.read_text(encoding="utf-8").splitlines()
    copied = [lines[0]]
    for offset in (0, 1002):
        for line in lines[1:]:
            system, score, seg = line.split()
            copied.append(f"{system}\t{score} {int(seg) + offset}")
    (folder / human.name).write_text("\n".join(copied) + "\n", encoding="utf-8")
    return folder / human.name, folder / ref.name, [folder / h.name for h in hyps]


def command(human: Path, ref: Path, hyps: list[Path]) -> list[str]:
    return [
        str(Path(sys.executable).parent / "evalab"),
        "meta-eval",
        "--human",
        str(human),
        "-r",
        str(ref),
        "-i",
        *map(str, hyps),
        "--name-map",
        "Nemo=NVIDIA-NeMo",
        "-m",
        "bleu",
        "chrf",
        "-n",
        "1000",
        "--permutations",
        "1000",
        "-q",
        "-f",
        "json",
    ]


def timed(cmd: list[str]) -> tuple[float, float, float]:
    """Wall and CPU (user + system) seconds and peak RSS (MB) of ``cmd``, a child of its own."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=os.environ.copy())
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[1]} failed with exit status {os.waitstatus_to_exitcode(status)}")
    wall = time.perf_counter() - start
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def rated_cells(n_resamples: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """BLEU sentence scores, MQM scores and segments of the rated cells; resample counts of segments."""
    from evalab.io import read_segments
    from evalab.metaeval.human import read_human_scores
    from evalab.metrics.registry import metric_class
    from evalab.stats.resampling import bootstrap_counts

    human = read_human_scores(
        str(MQM / "human" / "mqm_newstest2021_ende.avg_seg_scores.tsv"), 1002
    ).scores
    ref = read_segments(MQM / "references" / "newstest2021.en-de.ref.A.de")
    bleu = metric_class("bleu")()
    seg = np.array(
        [
            [
                s.score
                for s in bleu.segment_scores(
                    read_segments(MQM / "system-outputs" / f"newstest2021.en-de.hyp.{name}.de"),
                    [ref],
                )
            ]
            for name in SYSTEMS
        ]
    )
    h = np.stack([human["Nemo" if s == "NVIDIA-NeMo" else s] for s in SYSTEMS])
    mask = np.isfinite(h)
    counts = next(bootstrap_counts(1002, n_resamples, 12345))[:n_resamples].astype(np.float64)
    return seg[mask], h[mask], np.nonzero(mask)[1], counts


def kendall_inputs(n_resamples: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BLEU sentence scores and MQM scores of the rated cells, and resample weights of the cells."""
    x, y, segment, counts = rated_cells(n_resamples)
    return x, y, counts[:, segment]


def kendall_side_by_side(n_resamples: int, repeats: int) -> None:
    from scipy.stats import kendalltau

    from evalab.metaeval.correlation import kendall_tau_b

    x, y, weights = kendall_inputs(n_resamples)

    def ours() -> np.ndarray:
        return np.asarray(kendall_tau_b(x, y, weights))

    def scipy_loop() -> np.ndarray:
        out = []
        for row in weights:
            idx = np.repeat(np.arange(len(x)), row.astype(int))
            out.append(kendalltau(x[idx], y[idx]).statistic)
        return np.array(out)

    secs, out = alternate({"evalab": ours, "scipy": scipy_loop}, repeats)
    assert np.allclose(out["evalab"], out["scipy"], atol=1e-12, rtol=0), "Kendall values differ"
    a, b = secs["evalab"], secs["scipy"]
    print(
        f"Kendall τ_b, {len(x)} rated cells x {n_resamples} resamples: evalab {a:.2f} s, "
        f"scipy loop {b:.2f} s, ratio {b / a:.1f}x (values equal to 1e-12)"
    )


def alternate(
    fns: dict[str, Callable[[], np.ndarray]], repeats: int
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """Median seconds of each function, run alternately after one warm-up, and its output."""
    out = {name: fn() for name, fn in fns.items()}  # warm-up
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            out[name] = fn()
            times[name].append(time.perf_counter() - start)
    return {name: median(t) for name, t in times.items()}, out


def acc_eq_side_by_side(n_resamples: int, repeats: int) -> None:
    from evalab import _kernel
    from evalab.metaeval.flat_ties import acc_eq_flat_resampled, flat_pairs

    if _kernel.ties is None:
        print("acc_eq resamples: evalab._tieskernel is not built, nothing to compare")
        return
    x, y, segment, counts = rated_cells(n_resamples)
    start = time.perf_counter()
    pairs = flat_pairs(x, y, segment)
    build = time.perf_counter() - start
    kernel = _kernel.ties

    def with_kernel() -> np.ndarray:
        _kernel.ties = kernel
        return acc_eq_flat_resampled(pairs, counts)

    def with_numpy() -> np.ndarray:
        _kernel.ties = None
        try:
            return acc_eq_flat_resampled(pairs, counts)
        finally:
            _kernel.ties = kernel

    secs, out = alternate({"kernel": with_kernel, "numpy": with_numpy}, repeats)
    assert np.array_equal(out["kernel"], out["numpy"]), "acc_eq values differ"
    print(
        f"acc_eq (no grouping, ε re-calibrated), {len(pairs.change)} entries of moving pairs "
        f"(sorted and merged once in {build:.2f} s) x "
        f"{n_resamples} resamples: kernel {secs['kernel']:.2f} s, numpy {secs['numpy']:.2f} s, "
        f"ratio {secs['numpy'] / secs['kernel']:.0f}x (values equal)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=("ende", "ende-x2"), default="ende-x2")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kendall-resamples", type=int, default=100)
    parser.add_argument("--acc-eq-resamples", type=int, default=20)
    args = parser.parse_args()
    print(
        f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (shared: wall times vary)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        files = workload(args.workload, Path(tmp))
        timed(command(*files))  # warm-up (file cache, imports)
        runs = [timed(command(*files)) for _ in range(args.repeats)]
    segments = 1002 * (2 if args.workload == "ende-x2" else 1)
    print(
        f"evalab meta-eval ({args.workload}), BLEU + chrF, 8 systems x {segments} segments, "
        f"1000 bootstrap + 1000 permutations: median wall {median(r[0] for r in runs):.1f} s, "
        f"CPU {median(r[1] for r in runs):.1f} s, peak RSS {max(r[2] for r in runs):.0f} MB "
        f"over {args.repeats} runs"
    )
    kendall_side_by_side(args.kendall_resamples, args.repeats)
    acc_eq_side_by_side(args.acc_eq_resamples, args.repeats)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
