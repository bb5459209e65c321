"""TER speed and parity: evalab against sacrebleu 2.6 on every WMT22 pair in ../shared/wmt22.

Workload per pair: every system (6-13 systems x 1448-2037 segments) against the pair's
first reference (``--refs 2``: its first two, where it has two), default settings. Warm-up:
one call of each tool on the first 50 segments. Then ``--repeats`` alternating rounds
(sacrebleu, evalab, sacrebleu, ...), each with a new metric object so no cache is carried
over; the score, number of edits and reference length of every system must be identical,
or the run fails. ``--cli`` also times one system per pair as whole processes
(``evalab score -m ter`` against ``sacrebleu -m ter``, alternating, the modules compiled
first) and checks the two scores printed are equal.

    .venv/bin/python benchmarks/bench_ter.py [--quick] [--repeats N] [--refs 1|2] [--pairs en-zh ...] [--cli]
        [--settings normalized no_punct asian_support case_sensitive]

``--settings`` switches sacrebleu's TER options on, for both tools. $EVALAB_WMT22 names
another folder of the same layout (e.g. the en-ja pair of wmt-conference/wmt22-news-systems,
``txt/``: 13 systems, no second reference), as for the tests.

``--quick`` uses the first 300 segments of each system, ``--limit N`` the first N.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the WMT22 folder (the layout of ../shared/wmt22); $EVALAB_WMT22 names another, as for the tests
WMT22 = Path(os.environ.get("EVALAB_WMT22", ROOT.parent / "shared" / "wmt22"))


def pairs() -> list[str]:
    """Every language pair with references in the WMT22 folder."""
    names = {p.name.split(".")[1] for p in (WMT22 / "references").glob("generaltest2022.*")}
    return sorted(names)


def ref_ids(pair: str) -> list[str]:
    """The pair's reference ids (A, B, ... in file order)."""
    tgt = pair.split("-")[1]
    found = (WMT22 / "references").glob(f"generaltest2022.{pair}.ref.*.{tgt}")
    return sorted(p.name.split(".ref.")[1].split(".")[0] for p in found)


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


#: sacrebleu's TER options, set by --settings (evalab's TER accepts the same names)
SETTINGS: dict[str, bool] = {}


def run_sacrebleu(refs, systems):
    from sacrebleu.metrics import TER

    out = {}
    for name, hyps in systems.items():
        s = TER(**SETTINGS).corpus_score(hyps, refs)
        out[name] = (s.score, s.num_edits, s.ref_length)
    return out


def run_evalab(refs, systems):
    from evalab.metrics.ter import TER

    metric = TER(**SETTINGS)
    out = {}
    for name, rows in zip(systems, metric.stats_many(list(systems.values()), refs), strict=True):
        s = metric.aggregate(rows)
        out[name] = (s.score, s.num_edits, s.ref_length)
    return out


def alternate(fns: dict, repeats: int) -> tuple[dict, dict]:
    """Median seconds of each function over alternating repeats, and the last outputs."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    results = {}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}, results


def bench_pair(pair: str, nrefs: int, limit: int | None, repeats: int) -> tuple[str, float] | None:
    refs, systems = load(pair, ref_ids(pair)[:nrefs], limit)
    run_sacrebleu([r[:50] for r in refs], {k: v[:50] for k, v in systems.items()})
    run_evalab([r[:50] for r in refs], {k: v[:50] for k, v in systems.items()})
    med, results = alternate(
        {
            "sacrebleu": lambda: run_sacrebleu(refs, systems),
            "evalab": lambda: run_evalab(refs, systems),
        },
        repeats,
    )
    label = f"{pair} {len(systems)}x{len(refs[0])} {len(refs)} ref"
    if results["sacrebleu"] != results["evalab"]:
        bad = [k for k in systems if results["sacrebleu"][k] != results["evalab"][k]]
        print(f"MISMATCH {label} on {bad}", file=sys.stderr)
        return None
    ratio = med["sacrebleu"] / med["evalab"]
    print(f"{label:<28} {med['evalab']:9.3f} {med['sacrebleu']:9.3f} {ratio:7.1f}x", flush=True)
    return label, ratio


def bench_cli(pair: str, repeats: int) -> float | None:
    """One system of ``pair`` as whole processes: evalab's CLI against sacrebleu's."""
    tgt = pair.split("-")[1]
    ref = WMT22 / "references" / f"generaltest2022.{pair}.ref.{ref_ids(pair)[0]}.{tgt}"
    hyp = sorted((WMT22 / "system-outputs").glob(f"generaltest2022.{pair}.hyp.*.{tgt}"))[0]
    venv_bin = Path(sys.executable).parent
    ours = [
        sys.executable,
        "-m",
        "evalab",
        "score",
        "-i",
        str(hyp),
        "-r",
        str(ref),
        "-m",
        "ter",
        "--format",
        "json",
    ]
    peer = [str(venv_bin / "sacrebleu"), str(ref), "-i", str(hyp), "-m", "ter", "-b"]

    def run(cmd: list[str]) -> str:
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout

    run(ours), run(peer)
    med, out = alternate({"sacrebleu": lambda: run(peer), "evalab": lambda: run(ours)}, repeats)
    ours_score = _json_score(out["evalab"])
    if f"{ours_score:.1f}" != out["sacrebleu"].strip():  # sacrebleu -b prints one decimal
        print(f"MISMATCH CLI {pair}: {ours_score} vs {out['sacrebleu']}", file=sys.stderr)
        return None
    ratio = med["sacrebleu"] / med["evalab"]
    label = f"CLI {pair} 1 system"
    print(f"{label:<28} {med['evalab']:9.3f} {med['sacrebleu']:9.3f} {ratio:7.1f}x", flush=True)
    return ratio


def _json_score(text: str) -> float:
    data = json.loads(text)
    rows = data if isinstance(data, list) else data.get("results", data.get("rows", [data]))
    return float(rows[0]["score"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="first 300 segments only")
    parser.add_argument("--limit", type=int, default=None, help="first N segments only")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--refs", type=int, choices=(1, 2), default=1)
    parser.add_argument("--pairs", nargs="+", default=None, help="WMT22 pairs (default: all)")
    parser.add_argument("--cli", action="store_true", help="also one system per pair as processes")
    parser.add_argument(
        "--settings",
        nargs="*",
        default=[],
        choices=("normalized", "no_punct", "asian_support", "case_sensitive"),
        help="sacrebleu TER options switched on (default: none)",
    )
    args = parser.parse_args()
    SETTINGS.update(dict.fromkeys(args.settings, True))
    from evalab import _kernel

    kernel = "C kernel" if _kernel.ed is not None else "pure-Python fallback"
    print(
        f"TER ({' '.join(args.settings) or 'default settings'}), evalab ({kernel}) against "
        f"sacrebleu; medians of {args.repeats} alternating runs; load average "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    print(f"{'workload':<28} {'evalab s':>9} {'peer s':>9} {'ratio':>8}")
    ok = True
    for pair in args.pairs or pairs():
        limit = 300 if args.quick else args.limit
        ok &= bench_pair(pair, args.refs, limit, args.repeats) is not None
    if args.cli:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "src")], check=False)
        for pair in args.pairs or pairs():
            ok &= bench_cli(pair, args.repeats) is not None
    print("outputs identical (score, num_edits, ref_length) for every system" if ok else "MISMATCH")
    print("load average at the end " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
