"""Paired significance tests: ``evalab compare`` against ``sacrebleu --paired-bs`` (and AR).

Workload (issue 4): WMT22 en-de, the 9 systems (sorted names, the first is the baseline)
against reference A, BLEU and chrF, paired bootstrap with 1000 resamples, seed 12345. Both
command lines run end to end (start-up, reading, statistics, resampling, output) in this
one run; evalab runs with ``--p-value sacrebleu`` so that the same statistic is computed,
and every score, bootstrap mean, half-width and p-value printed by sacrebleu (``-w 6``,
p-values at its 4 decimals) is checked against evalab's JSON.

    .venv/bin/python benchmarks/bench_significance.py [--quick] [--ar]

``--quick`` uses the first 500 segments; ``--ar`` adds approximate randomization with
sacrebleu's default 10000 trials (sacrebleu needs about a minute for it).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
WMT22 = ROOT.parent / "shared" / "wmt22"
BIN = Path(sys.executable).parent
PAIR = "en-de"
WIDTH = 6
CELL = re.compile(r"^([-\d.]+)(?: \(([-\d.]+) ± ([-\d.]+)\))?$")
PVAL = re.compile(r"^\(p = ([\d.]+)\)\*?$")


def prepare(folder: Path, limit: int | None) -> tuple[Path, list[Path]]:
    """Reference A and the systems (sorted), cut to ``limit`` segments, in ``folder``."""
    from evalab.io import read_segments

    def cut(src: Path) -> Path:
        dst = folder / src.name
        dst.write_text("\n".join(read_segments(src)[:limit]) + "\n", encoding="utf-8")
        return dst

    ref = cut(WMT22 / "references" / f"generaltest2022.{PAIR}.ref.A.de")
    systems = [
        cut(p) for p in sorted((WMT22 / "system-outputs").glob(f"generaltest2022.{PAIR}.hyp.*.de"))
    ]
    return ref, systems


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """Wall time, CPU time (user + system of the child) and stdout of ``cmd``.

    On a shared machine the wall time depends on the load; the CPU time much less.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("SACREBLEU_")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return elapsed, cpu, proc.stdout


def parse_sacrebleu(text: str, metrics: list[str]) -> dict[tuple[str, str], dict[str, float]]:
    """(metric, system file name) -> score/mean/ci/p from sacrebleu's text table."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    system = None
    for line in text.splitlines():
        if not line.startswith("│"):
            continue
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if cells[0] == "System":
            continue
        if cells[0]:
            system = Path(cells[0].removeprefix("Baseline: ")).name
            for metric, cell in zip(metrics, cells[1:], strict=True):
                m = CELL.match(cell)
                if m is None:
                    raise SystemExit(f"cannot parse sacrebleu cell {cell!r}")
                row = {"score": float(m[1])}
                if m[2] is not None:
                    row.update(mean=float(m[2]), ci=float(m[3]))
                out[(metric, system)] = row
        else:
            for metric, cell in zip(metrics, cells[1:], strict=True):
                m = PVAL.match(cell)
                if m is None:
                    raise SystemExit(f"cannot parse sacrebleu p-value {cell!r}")
                out[(metric, system)]["p"] = float(m[1])
    return out


def compare(ours: list[dict], theirs: dict) -> tuple[int, float, float, int]:
    """(values checked, max |score diff|, max |mean/half-width diff|, p-values differing)."""
    checked, worst_score, worst_ci, p_diff = 0, 0.0, 0.0, 0
    name = {"bleu": "BLEU", "chrf": "chrF2"}
    for row in ours:
        ref = theirs[(name[row["metric"]], row["system"])]
        worst_score = max(worst_score, abs(round(row["score"], WIDTH) - ref["score"]))
        checked += 1
        if "mean" in ref:
            worst_ci = max(
                worst_ci,
                abs(round(row["mean"], WIDTH) - ref["mean"]),
                abs(round(row["half_width"], WIDTH) - ref["ci"]),
            )
            checked += 2
        if row["p_value"] is not None:
            p_diff += f"{row['p_value']:.4f}" != f"{ref['p']:.4f}"
            checked += 1
    return checked, worst_score, worst_ci, p_diff


def run(test: str, ref: Path, systems: list[Path], repeats: int) -> tuple[tuple, tuple, tuple]:
    n = {"bs": 1000, "ar": 10000}[test]
    sacre = [
        str(BIN / "sacrebleu"),
        str(ref),
        "-i",
        *map(str, systems),
        "-m",
        "bleu",
        "chrf",
        f"--paired-{test}",
        f"--paired-{test}-n",
        str(n),
        "-f",
        "text",
        "-w",
        str(WIDTH),
        "-nc",
        "-q",
    ]
    ev = [
        str(BIN / "evalab"),
        "compare",
        "-r",
        str(ref),
        "-i",
        *map(str, systems),
        "-m",
        "bleu",
        "chrf",
        "--test",
        test,
        "--n",
        str(n),
        "--seed",
        "12345",
        "--p-value",
        "sacrebleu",
        "-f",
        "json",
        "-q",
    ]
    if test == "ar":
        ev += ["--ci-n", "0"]  # sacrebleu's CLI reports no interval with --paired-ar
    # alternating runs, so that both command lines see the same machine load; medians
    ours, theirs = [], []
    for _ in range(repeats):
        ours.append(timed(ev))
        theirs.append(timed(sacre))
    t_ev, c_ev = median(t for t, _, _ in ours), median(c for _, c, _ in ours)
    t_sb, c_sb = median(t for t, _, _ in theirs), median(c for _, c, _ in theirs)
    outputs_ev, outputs_sb = {o for _, _, o in ours}, {o for _, _, o in theirs}
    if len(outputs_ev) != 1 or len(outputs_sb) != 1:
        raise SystemExit("a command line printed different results in repeated runs")
    agreement = compare(json.loads(ours[0][2]), parse_sacrebleu(theirs[0][2], ["BLEU", "chrF2"]))
    return (t_ev, c_ev), (t_sb, c_sb), agreement


def phases(ref: Path, systems: list[Path]) -> tuple[float, float, float]:
    """evalab in-process: statistics (as ``evalab compare`` computes them), paired
    bootstrap (1000), AR (10000 trials)."""
    from evalab.io import read_segments
    from evalab.metrics.bleu import BLEU
    from evalab.metrics.chrf import CHRF
    from evalab.metrics.parallel import stats_table
    from evalab.stats import paired_test

    refs = [read_segments(ref)]
    hyps = {p.name: read_segments(p) for p in systems}
    metrics = {"bleu": BLEU(), "chrf": CHRF()}
    t0 = time.perf_counter()
    stats = stats_table(metrics, hyps, refs)
    t1 = time.perf_counter()
    paired_test("bs", metrics, stats, n_samples=1000)
    t2 = time.perf_counter()
    paired_test("ar", metrics, stats, n_samples=10000, ci_samples=0)
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2


def peer_phases(ref: Path, systems: list[Path]) -> tuple[float, float]:
    """sacrebleu in-process: statistics of every system, then PairedTest (bs, 1000) in total."""
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.significance import PairedTest

    from evalab.io import read_segments

    refs = [read_segments(ref)]
    named = [(p.name, read_segments(p)) for p in systems]
    metrics = {"BLEU": BLEU(references=refs), "chrF2": CHRF(references=refs)}
    t0 = time.perf_counter()
    for metric in metrics.values():
        for _, hyps in named:
            metric._extract_corpus_statistics(hyps, None)
    t1 = time.perf_counter()
    # PairedTest extracts each system's statistics once more, then resamples
    PairedTest(named, metrics, None, test_type="bs", n_samples=1000)()
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="first 500 segments only")
    parser.add_argument(
        "--ar", action="store_true", help="also approximate randomization (10000 trials)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="alternating runs of each command line (bootstrap); medians are shown",
    )
    args = parser.parse_args()
    if not WMT22.exists():
        print(f"WMT22 data not found at {WMT22}", file=sys.stderr)
        return 1
    # as an installed package runs: bytecode compiled (pip does this at install time; an
    # editable checkout under PYTHONDONTWRITEBYTECODE=1 would recompile on every start)
    compileall.compile_dir(ROOT / "src" / "evalab", quiet=1)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        ref, systems = prepare(Path(tmp), 500 if args.quick else None)
        print(
            f"WMT22 {PAIR}: {len(systems)} systems x {len(ref.read_text().splitlines())} segments, "
            f"BLEU + chrF, baseline {systems[0].name.split('.hyp.')[1][:-3]}, seed 12345"
        )
        print(
            f"command lines, wall time (CPU time: user + system), medians of {args.repeats} alternating runs"
        )
        print(f"{'test':<25}{'evalab CLI':>17}{'sacrebleu CLI':>19}{'ratio':>14}")
        agreements = []
        for test in ("bs", "ar") if args.ar else ("bs",):
            repeats = args.repeats if test == "bs" else 1
            (t_ev, c_ev), (t_sb, c_sb), (checked, d_score, d_ci, p_diff) = run(
                test, ref, systems, repeats
            )
            label = "paired bootstrap (1000)" if test == "bs" else "approx. rand. (10000)"
            agreements.append(
                f"{label}: {checked} values, max|Δscore| {d_score:.1e}, "
                f"max|Δmean,hw| {d_ci:.1e}, p-values differing {p_diff}"
            )
            print(
                f"{label:<25}{t_ev:>6.2f}s ({c_ev:5.2f}s){t_sb:>8.2f}s ({c_sb:6.2f}s)"
                f"{t_sb / t_ev:>5.1f}x ({c_sb / c_ev:4.1f}x)"
            )
            ok &= d_score <= 1.5 * 10**-WIDTH and d_ci <= 1e-4 and p_diff == 0
        stats_t, bs_t, ar_t = phases(ref, systems)
        peer_stats, peer_total = peer_phases(ref, systems)
        peer_bs = peer_total - peer_stats
        print("\nin-process phases (9 systems x 2 metrics)")
        print(f"{'phase':<26}{'evalab':>12}{'sacrebleu':>15}{'ratio':>8}")
        print(
            f"{'statistics':<26}{stats_t:>11.2f}s{peer_stats:>14.2f}s{peer_stats / stats_t:>7.1f}x"
        )
        print(
            f"{'paired bootstrap (1000)':<26}{bs_t:>11.2f}s{peer_bs:>14.2f}s{peer_bs / bs_t:>7.1f}x"
            "  (sacrebleu: PairedTest minus its statistics)"
        )
        print(f"{'approx. rand. (10000)':<26}{ar_t:>11.2f}s")
        print("\nagreement with sacrebleu (evalab --p-value sacrebleu)")
        for line in agreements:
            print(f"  {line}")
    print("agreement: OK" if ok else "agreement: MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
