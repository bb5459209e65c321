"""WER/CER speed and parity: evalab against jiwer 4 on WMT22 English outputs.

Workload: every de-en system (9 x 1984 segments) against reference A, jiwer's default
transforms. Warm-up: one call of each tool on the first 50 segments. Then ``--repeats``
alternating rounds (jiwer, evalab, jiwer, ...), each with new metric objects; the corpus
WER and CER of every system must be identical, or the run fails.

    .venv/bin/python benchmarks/bench_wer.py [--quick] [--repeats N]

``--quick`` uses the first 300 segments of each system.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from bench_ter import load


def run_jiwer(ref, systems):
    import jiwer

    return {name: (jiwer.wer(ref, hyps), jiwer.cer(ref, hyps)) for name, hyps in systems.items()}


def run_evalab(ref, systems):
    from evalab.metrics.wer import CER, WER

    wer, cer = WER(), CER()
    rows = {m.name: m.stats_many(list(systems.values()), [ref]) for m in (wer, cer)}
    return {
        name: (wer.aggregate(rows["wer"][i]).score, cer.aggregate(rows["cer"][i]).score)
        for i, name in enumerate(systems)
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="first 300 segments only")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    (ref,), systems = load("de-en", ["A"], 300 if args.quick else None)
    from evalab.metrics import _editdistance

    kernel = "C kernel" if _editdistance.edkernel is not None else "pure-Python fallback"
    print(
        f"WMT22 de-en: {len(systems)} systems, {sum(len(h) for h in systems.values())} segments; evalab {kernel}"
    )
    run_jiwer(ref[:50], {k: v[:50] for k, v in systems.items()})
    run_evalab(ref[:50], {k: v[:50] for k, v in systems.items()})
    times: dict[str, list[float]] = {"jiwer": [], "evalab": []}
    results = {}
    for _ in range(args.repeats):
        for tool, fn in (("jiwer", run_jiwer), ("evalab", run_evalab)):
            t0 = time.perf_counter()
            results[tool] = fn(ref, systems)
            times[tool].append(time.perf_counter() - t0)
    if results["jiwer"] != results["evalab"]:
        print(f"MISMATCH: {results}", file=sys.stderr)
        return 1
    print(f"outputs identical (WER and CER) for all {len(systems)} systems")
    print(f"{'tool':<7} {'median s':>9}  runs")
    for tool in ("jiwer", "evalab"):
        print(
            f"{tool:<7} {statistics.median(times[tool]):>9.3f}  {', '.join(f'{t:.3f}' for t in times[tool])}"
        )
    ratio = statistics.median(times["jiwer"]) / statistics.median(times["evalab"])
    print(
        f"speed-up evalab vs jiwer (WER + CER): {ratio:.1f}x (median of {args.repeats} alternating runs)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
