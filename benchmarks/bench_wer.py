"""WER/CER speed and parity: evalab against jiwer 4 on every WMT22 pair in ../shared/wmt22.

Workload per pair: every system (6-13 systems x 1448-2037 segments) against the pair's
first reference, jiwer's default transforms, WER and CER together. Warm-up: one call of
each tool on the first 50 segments. Then ``--repeats`` alternating rounds (jiwer, evalab,
jiwer, ...), each with new metric objects; the corpus WER and CER of every system must be
identical, or the run fails.

Then MER, WIL and WIP, each on its own against jiwer's function of the same name
(``jiwer.mer`` ...), with WER timed the same way beside them: evalab computes all four from
the one alignment pass (the same per-segment counts), so each should take WER's time; the
``vs wer`` column is evalab's time of the measure over its time of WER in the same run.
Every system's score must be identical to jiwer's.

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


MEASURES = ("wer", "mer", "wil", "wip")


def run_jiwer_measure(measure: str, ref, systems):
    import jiwer

    fn = getattr(jiwer, measure)
    return {name: fn(ref, hyps) for name, hyps in systems.items()}


def run_evalab_measure(measure: str, ref, systems):
    import evalab

    metric = evalab.metric(measure)
    rows = metric.stats_many(list(systems.values()), [ref])
    return {name: metric.aggregate(rows[i]).score for i, name in enumerate(systems)}


def bench_measures(pair: str, limit: int | None, repeats: int) -> bool:
    """WER, MER, WIL and WIP one by one against jiwer; True when every score is identical."""
    (ref,), systems = load(pair, ref_ids(pair)[:1], limit)
    fns = {}
    for m in MEASURES:
        run_jiwer_measure(m, ref[:50], {k: v[:50] for k, v in systems.items()})
        run_evalab_measure(m, ref[:50], {k: v[:50] for k, v in systems.items()})
        fns[f"jiwer {m}"] = lambda m=m: run_jiwer_measure(m, ref, systems)
        fns[f"evalab {m}"] = lambda m=m: run_evalab_measure(m, ref, systems)
    med, out = alternate(fns, repeats)
    ok = True
    for m in MEASURES:
        label = f"{pair} {m} {len(systems)}x{len(ref)}"
        if out[f"jiwer {m}"] != out[f"evalab {m}"]:
            print(f"MISMATCH {label}", file=sys.stderr)
            ok = False
            continue
        ours, theirs = med[f"evalab {m}"], med[f"jiwer {m}"]
        print(
            f"{label:<20} {ours:9.3f} {theirs:9.3f} {theirs / ours:7.1f}x"
            f" {ours / med['evalab wer']:7.2f}",
            flush=True,
        )
    return ok


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
    print(f"\nWER, MER, WIL, WIP one at a time; medians of {args.repeats} alternating runs")
    print(f"{'workload':<20} {'evalab s':>9} {'jiwer s':>9} {'ratio':>8} {'vs wer':>7}")
    same = all(
        [
            bench_measures(p, 300 if args.quick else None, args.repeats)
            for p in args.pairs or pairs()
        ]
    )
    print("outputs identical (WER, MER, WIL, WIP) for every system" if same else "MISMATCH")
    return 0 if ok and same else 1


if __name__ == "__main__":
    sys.exit(main())
