"""WER/CER speed and parity: evalab against jiwer 4 on every WMT22 pair in ../shared/wmt22.

Workload per pair: every system (6-13 systems x 1448-2037 segments) against the pair's
first reference, jiwer's default transforms, WER and CER together. Warm-up: one call of
each tool on the first 50 segments. Then ``--repeats`` alternating rounds (jiwer, evalab,
jiwer, ...), each with new metric objects; the corpus WER and CER of every system must be
identical, or the run fails.

    .venv/bin/python benchmarks/bench_wer.py [--quick] [--repeats N] [--pairs de-en ...]

``--quick`` uses the first 300 segments of each system.
"""

from __future__ import annotations

import argparse
import sys

from bench_ter import alternate, load, pairs, ref_ids


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


def bench_pair(pair: str, limit: int | None, repeats: int) -> bool:
    (ref,), systems = load(pair, ref_ids(pair)[:1], limit)
    run_jiwer(ref[:50], {k: v[:50] for k, v in systems.items()})
    run_evalab(ref[:50], {k: v[:50] for k, v in systems.items()})
    med, out = alternate(
        {"jiwer": lambda: run_jiwer(ref, systems), "evalab": lambda: run_evalab(ref, systems)},
        repeats,
    )
    label = f"{pair} {len(systems)}x{len(ref)}"
    if out["jiwer"] != out["evalab"]:
        print(f"MISMATCH {label}: {out}", file=sys.stderr)
        return False
    ratio = med["jiwer"] / med["evalab"]
    print(f"{label:<16} {med['evalab']:9.3f} {med['jiwer']:9.3f} {ratio:7.1f}x", flush=True)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="first 300 segments only")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pairs", nargs="+", default=None, help="WMT22 pairs (default: all)")
    args = parser.parse_args()
    from evalab import _kernel

    kernel = "C kernel" if _kernel.ed is not None else "pure-Python fallback"
    print(f"WER + CER, evalab ({kernel}) against jiwer; medians of {args.repeats} alternating runs")
    print(f"{'workload':<16} {'evalab s':>9} {'jiwer s':>9} {'ratio':>8}")
    ok = all(
        [bench_pair(p, 300 if args.quick else None, args.repeats) for p in args.pairs or pairs()]
    )
    print("outputs identical (WER and CER) for every system" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
