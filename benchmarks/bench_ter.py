"""TER speed and parity: evalab against sacrebleu 2.6 on WMT22 en-de.

Workload: every en-de system (9 x 2037 segments) against reference A, default settings
(and, with ``--refs 2``, references A and B). Warm-up: one call of each tool on the
first 50 segments. Then ``--repeats`` alternating rounds (sacrebleu, evalab, sacrebleu,
...), each with a new metric object so no cache is carried over; the score, number of
edits and reference length of every system must be identical, or the run fails.

    .venv/bin/python benchmarks/bench_ter.py [--quick] [--repeats N] [--refs 1|2]

``--quick`` uses the first 300 segments of each system.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WMT22 = ROOT.parent / "shared" / "wmt22"


def load(pair: str, ref_ids: list[str], limit: int | None):
    from evalab.io import read_segments

    tgt = pair.split("-")[1]
    refs = [
        read_segments(WMT22 / "references" / f"generaltest2022.{pair}.ref.{r}.{tgt}")[:limit]
        for r in ref_ids
    ]
    systems = {}
    for p in sorted((WMT22 / "system-outputs").glob(f"generaltest2022.{pair}.hyp.*.{tgt}")):
        systems[p.name.split(".hyp.")[1][: -len(tgt) - 1]] = read_segments(p)[:limit]
    return refs, systems


def run_sacrebleu(refs, systems):
    from sacrebleu.metrics import TER

    out = {}
    for name, hyps in systems.items():
        s = TER().corpus_score(hyps, refs)
        out[name] = (s.score, s.num_edits, s.ref_length)
    return out


def run_evalab(refs, systems):
    from evalab.metrics.ter import TER

    metric = TER()
    out = {}
    for name, rows in zip(systems, metric.stats_many(list(systems.values()), refs), strict=True):
        s = metric.aggregate(rows)
        out[name] = (s.score, s.num_edits, s.ref_length)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="first 300 segments only")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--refs", type=int, choices=(1, 2), default=1)
    args = parser.parse_args()
    refs, systems = load("en-de", ["A", "B"][: args.refs], 300 if args.quick else None)
    from evalab.metrics import _editdistance

    kernel = "C kernel" if _editdistance.edkernel is not None else "pure-Python fallback"
    n = sum(len(h) for h in systems.values())
    print(
        f"WMT22 en-de: {len(systems)} systems, {n} segments, {args.refs} reference(s); evalab {kernel}"
    )
    warm_refs = [r[:50] for r in refs]
    warm_sys = {k: v[:50] for k, v in systems.items()}
    run_sacrebleu(warm_refs, warm_sys)
    run_evalab(warm_refs, warm_sys)
    times: dict[str, list[float]] = {"sacrebleu": [], "evalab": []}
    results = {}
    for _ in range(args.repeats):
        for tool, fn in (("sacrebleu", run_sacrebleu), ("evalab", run_evalab)):
            t0 = time.perf_counter()
            results[tool] = fn(refs, systems)
            times[tool].append(time.perf_counter() - t0)
    if results["sacrebleu"] != results["evalab"]:
        bad = [k for k in systems if results["sacrebleu"][k] != results["evalab"][k]]
        print(
            f"MISMATCH on {bad}: {[(results['sacrebleu'][k], results['evalab'][k]) for k in bad]}",
            file=sys.stderr,
        )
        return 1
    print(f"outputs identical (score, num_edits, ref_length) for all {len(systems)} systems")
    t_peer, t_ours = statistics.median(times["sacrebleu"]), statistics.median(times["evalab"])
    print(f"{'tool':<10} {'median s':>9}  runs")
    for tool in ("sacrebleu", "evalab"):
        print(
            f"{tool:<10} {statistics.median(times[tool]):>9.3f}  {', '.join(f'{t:.3f}' for t in times[tool])}"
        )
    print(
        f"speed-up evalab vs sacrebleu: {t_peer / t_ours:.1f}x (median of {args.repeats} alternating runs)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
