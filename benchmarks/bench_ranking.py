"""All pairs of 20 systems: ``evalab compare --all-pairs`` beside ``sacrebleu --paired-bs``.

Workload: 20 systems x 2000 segments of WMT22 en-de (reference A), BLEU and chrF, paired
bootstrap with 1000 resamples, seed 12345. WMT22 en-de has 9 system outputs here; the
other 11 systems are seeded per-segment mixtures of them (every segment taken from one of
the 9, drawn with ``default_rng(k)``), so that all 20 have real translations.

``evalab compare --all-pairs`` tests all 190 pairs on one resampling stream.
``sacrebleu --paired-bs`` tests the 19 pairs of its baseline (the first system) against the
others; covering all 190 pairs takes it 19 such runs (one per baseline, each re-reading and
re-scoring every system), so its time for all pairs is estimated as 19 times one run
(stated as such). evalab runs with ``--p-value sacrebleu`` so that the same statistic is
computed, and its p-values of the 19 pairs sacrebleu reports are checked equal at
sacrebleu's 4 decimals.

    .venv/bin/python benchmarks/bench_ranking.py [--quick] [--repeats N]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import sys
import tempfile
from pathlib import Path
from statistics import median

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_significance import BIN, ROOT, WMT22, parse_sacrebleu, timed

N_SYSTEMS = 20


def prepare(folder: Path, n_segments: int) -> tuple[Path, list[Path]]:
    """Reference A and 20 systems of ``n_segments`` lines in ``folder``."""
    from evalab.io import read_segments

    ref = read_segments(WMT22 / "references" / "generaltest2022.en-de.ref.A.de")[:n_segments]
    real = [
        read_segments(p)[:n_segments]
        for p in sorted((WMT22 / "system-outputs").glob("generaltest2022.en-de.hyp.*.de"))
    ]
    systems = list(real)
    for k in range(N_SYSTEMS - len(real)):
        pick = np.random.default_rng(k).integers(len(real), size=n_segments)
        systems.append([real[s][i] for i, s in enumerate(pick)])

    def write(name: str, lines: list[str]) -> Path:
        path = folder / name
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    return write("ref.de", ref), [write(f"sys{k:02d}.de", s) for k, s in enumerate(systems)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="500 segments, 1 repeat")
    parser.add_argument(
        "--repeats", type=int, default=3, help="alternating runs of each command line; medians"
    )
    args = parser.parse_args()
    if not WMT22.exists():
        print(f"WMT22 data not found at {WMT22}", file=sys.stderr)
        return 1
    compileall.compile_dir(ROOT / "src" / "evalab", quiet=1)
    n_segments, repeats = (500, 1) if args.quick else (2000, args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        ref, systems = prepare(Path(tmp), n_segments)
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
            "--all-pairs",
            "-n",
            "1000",
            "--seed",
            "12345",
            "--p-value",
            "sacrebleu",
            "-f",
            "json",
            "-q",
        ]
        sacre = [
            str(BIN / "sacrebleu"),
            str(ref),
            "-i",
            *map(str, systems),
            "-m",
            "bleu",
            "chrf",
            "--paired-bs",
            "--paired-bs-n",
            "1000",
            "-f",
            "text",
            "-w",
            "6",
            "-nc",
            "-q",
        ]
        ours, theirs = [], []
        for _ in range(repeats):  # alternating, so that both see the same load
            ours.append(timed(ev))
            theirs.append(timed(sacre))
        t_ev, c_ev = median(t for t, _, _ in ours), median(c for _, c, _ in ours)
        t_sb, c_sb = median(t for t, _, _ in theirs), median(c for _, c, _ in theirs)
        pairs = json.loads(ours[0][2])["pairs"]
        reported = parse_sacrebleu(theirs[0][2], ["BLEU", "chrF2"])
        base = systems[0].name
        checked = differing = 0
        for row in pairs:
            if base not in (row["system"], row["other"]):
                continue
            other = row["other"] if row["system"] == base else row["system"]
            theirs_p = reported[({"bleu": "BLEU", "chrf": "chrF2"}[row["metric"]], other)]["p"]
            checked += 1
            differing += f"{row['p_value']:.4f}" != f"{theirs_p:.4f}"
    load = os.getloadavg()
    print(
        f"{N_SYSTEMS} systems x {n_segments} segments (WMT22 en-de, 9 real + 11 mixtures), BLEU + chrF, "
        f"paired bootstrap 1000, seed 12345; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(f"command lines, wall time (CPU: user + system), medians of {repeats} alternating runs")
    print(f"{'':<44}{'wall':>8}{'CPU':>9}")
    print(f"{'evalab compare --all-pairs (190 pairs)':<44}{t_ev:>7.2f}s{c_ev:>8.2f}s")
    print(f"{'sacrebleu --paired-bs (19 pairs, 1 baseline)':<44}{t_sb:>7.2f}s{c_sb:>8.2f}s")
    print(
        f"{'sacrebleu, 19 runs for all 190 pairs (est.)':<44}{19 * t_sb:>7.2f}s{19 * c_sb:>8.2f}s"
    )
    print(
        f"ratio per run: sacrebleu (19 pairs) / evalab (190 pairs): wall {t_sb / t_ev:.1f}x, CPU {c_sb / c_ev:.1f}x"
    )
    print(
        f"ratio for all pairs (sacrebleu estimated): wall {19 * t_sb / t_ev:.1f}x, CPU {19 * c_sb / c_ev:.1f}x"
    )
    ok = checked == 2 * (N_SYSTEMS - 1) and differing == 0
    print(
        f"agreement: {checked} p-values of the baseline's pairs checked at 4 decimals, {differing} differing: "
        f"{'OK' if ok else 'MISMATCH'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
