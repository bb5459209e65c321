"""ROUGE (and EM/F1) speed and parity: evalab against rouge-score (and the SQuAD v1.1 logic).

Workload: every WMT22 pair in ../shared/wmt22 (the eleven, CJK target en-zh included: at
rouge-score's defaults its ASCII tokenizer keeps only the Latin letters and digits there),
every system against the pair's first reference, rouge1/rouge2/rougeL/rougeLsum, at
rouge-score's default (no stemmer) and with the Porter stemmer (English targets only), on
all systems and on the first system alone. The two tools alternate
(peer first on even repeats, evalab first on odd ones) after one untimed warm-up run of
each; each timed run starts from cold caches (evalab's token and id caches, the stemmer's
cache) and the medians are compared. Every per-segment precision, recall and F of every
run must agree with rouge-score to 1e-9 (in practice they are equal).

    .venv/bin/python benchmarks/bench_rouge.py [--quick] [--repeats N] [--pairs de-en ...]
        [--rows all|one-system]

``--quick`` uses the first 300 segments of each system; ``--rows one-system`` times only the
first system at rouge-score's default (the stemmer rows take most of a full run).
"""

from __future__ import annotations

import argparse
import collections
import re
import statistics
import string
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WMT22 = ROOT.parent / "shared" / "wmt22"
TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
PAIRS = (
    "cs-en",
    "de-en",
    "de-fr",
    "en-cs",
    "en-de",
    "en-ru",
    "en-uk",
    "en-zh",
    "fr-de",
    "ru-en",
    "uk-en",
)


def load(pair: str, ref_id: str | None, limit: int | None):
    """The reference (``ref_id``, or the pair's first one) and every system of ``pair``."""
    from evalab.io import read_segments

    tgt = pair.split("-")[1]
    refs = sorted((WMT22 / "references").glob(f"generaltest2022.{pair}.ref.{ref_id or '*'}.{tgt}"))
    ref = read_segments(refs[0])
    systems = {}
    for p in sorted((WMT22 / "system-outputs").glob(f"generaltest2022.{pair}.hyp.*.{tgt}")):
        systems[p.name.split(".hyp.")[1][: -len(tgt) - 1]] = read_segments(p)[:limit]
    return ref[:limit], systems


def alternate(ours: Callable, peer: Callable, repeats: int, check: Callable) -> dict:
    """Median wall and CPU seconds of ``ours`` and ``peer`` over alternating repeats after
    a warm-up of each, and the worst difference ``check`` finds between their outputs of
    every run. CPU seconds (this process) are the steadier measure on a loaded machine."""
    ours(), peer()
    wall: dict[str, list[float]] = {"ours": [], "peer": []}
    cpu: dict[str, list[float]] = {"ours": [], "peer": []}
    worst = 0.0
    for k in range(repeats):
        order = (("peer", peer), ("ours", ours)) if k % 2 == 0 else (("ours", ours), ("peer", peer))
        out = {}
        for name, fn in order:
            w, c = time.perf_counter(), time.process_time()
            out[name] = fn()
            wall[name].append(time.perf_counter() - w)
            cpu[name].append(time.process_time() - c)
        worst = max(worst, check(out["ours"], out["peer"]))
    med = statistics.median
    return {
        "wall": (med(wall["ours"]), med(wall["peer"])),
        "cpu": (med(cpu["ours"]), med(cpu["peer"])),
        "worst": worst,
    }


def _clear_evalab_caches() -> None:
    from evalab.metrics import rouge as ev_rouge
    from evalab.text.porter import porter_stem

    for fn in (
        ev_rouge._tokens,
        ev_rouge._sentences,
        ev_rouge._text_side,
        ev_rouge._sentence_side,
        ev_rouge._stem_token,
        porter_stem,
    ):
        fn.cache_clear()


def bench_rouge(ref, systems, stem: bool, repeats: int):
    from rouge_score import rouge_scorer

    import evalab

    def peer():  # the usual loop, one RougeScorer for the four types
        scorer = rouge_scorer.RougeScorer(list(TYPES), use_stemmer=stem)
        return {
            name: [scorer.score(r, h) for r, h in zip(ref, hyps, strict=True)]
            for name, hyps in systems.items()
        }

    def ours():
        _clear_evalab_caches()
        metrics = {t: evalab.metric(t, use_stemmer=stem) for t in TYPES}
        return {
            name: {t: m.stats(hyps, [ref]).rows for t, m in metrics.items()}
            for name, hyps in systems.items()
        }

    def check(ours_out, peer_out) -> float:
        worst = 0.0
        for name, scores in peer_out.items():
            for t in TYPES:
                rows = ours_out[name][t]
                for i, s in enumerate(scores):
                    exp = s[t]
                    worst = max(
                        worst,
                        abs(rows[i, 0] - exp.precision),
                        abs(rows[i, 1] - exp.recall),
                        abs(rows[i, 2] - exp.fmeasure),
                    )
        return worst

    return alternate(ours, peer, repeats, check), len(systems) * len(ref) * len(TYPES) * 3


# -- the official SQuAD v1.1 evaluation logic (evaluate-v1.1.py), as the oracle -------------
def _squad_normalize(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def _squad_f1(prediction, ground_truth):
    prediction_tokens = _squad_normalize(prediction).split()
    ground_truth_tokens = _squad_normalize(ground_truth).split()
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def _squad_em(prediction, ground_truth):
    return _squad_normalize(prediction) == _squad_normalize(ground_truth)


def bench_squad(refs_a, refs_b, hyps, repeats: int):
    import evalab

    def peer():
        f1 = [
            max(_squad_f1(h, a), _squad_f1(h, b))
            for h, a, b in zip(hyps, refs_a, refs_b, strict=True)
        ]
        em = [
            max(_squad_em(h, a), _squad_em(h, b))
            for h, a, b in zip(hyps, refs_a, refs_b, strict=True)
        ]
        return f1, em

    def ours():
        f1 = evalab.metric("f1", tokenize="squad").stats(hyps, [refs_a, refs_b]).rows[:, 0]
        em = evalab.metric("exact_match", tokenize="squad").stats(hyps, [refs_a, refs_b]).rows[:, 0]
        return f1, em

    # the conventions differ only when both token lists are empty (v1.1: 0, evalab: 1)
    both_empty = [
        not _squad_normalize(h).split() and not _squad_normalize(a).split()
        for h, a in zip(hyps, refs_a, strict=True)
    ]

    def check(ours_out, peer_out) -> float:
        (f1, em), (peer_f1, peer_em) = ours_out, peer_out
        return max(
            max(abs(x - y) for x, y, e in zip(f1, peer_f1, both_empty, strict=True) if not e),
            max(abs(x - y) for x, y in zip(em, peer_em, strict=True)),
        )

    return alternate(ours, peer, repeats, check), 2 * len(hyps)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 segments per system")
    parser.add_argument(
        "--repeats", type=int, default=3, help="timed runs of each tool (default 3)"
    )
    parser.add_argument(
        "--pairs", nargs="+", default=list(PAIRS), choices=PAIRS, help="WMT22 pairs"
    )
    parser.add_argument(
        "--rows",
        choices=("all", "one-system"),
        default="all",
        help="every setting, or the first system at the default only",
    )
    args = parser.parse_args()
    if not WMT22.exists():
        print(f"WMT22 data not found at {WMT22}", file=sys.stderr)
        return 1
    limit = 300 if args.quick else None
    rows = []
    for pair in args.pairs:
        ref, systems = load(pair, None, limit)
        first = dict([next(iter(systems.items()))])
        settings = ((False, systems), (False, first), (True, systems))
        for stem, some in settings if args.rows == "all" else settings[1:2]:
            if stem and not pair.endswith("-en"):
                continue  # the Porter stemmer is English only
            res, n = bench_rouge(ref, some, stem, args.repeats)
            setting = "default (no stemmer)" if not stem else "use_stemmer=True"
            rows.append((f"rouge1/2/L/Lsum {pair} {len(some)}x{len(ref)} {setting}", res, n))
            print(
                f"  {rows[-1][0]}: {res['wall'][1] / res['wall'][0]:.1f}x",
                file=sys.stderr,
                flush=True,
            )
    if args.rows == "all":
        refs_a, _ = load("de-en", "A", limit)
        refs_b, de_en = load("de-en", "B", limit)
        hyps = next(iter(de_en.values()))
        res, n = bench_squad(refs_a, refs_b, hyps, args.repeats)
        rows.append((f"EM+F1 (squad) de-en {len(hyps)} segs, 2 refs", res, n))

    print(
        f"{'workload':<56} {'evalab s':>9} {'peer s':>9} {'ratio':>7} {'CPU s ev/peer':>15} {'CPU ratio':>9}"
        f" {'max|delta|':>11} {'values':>8}"
    )
    ok = True
    for label, res, n in rows:
        (w_ours, w_peer), (c_ours, c_peer) = res["wall"], res["cpu"]
        print(
            f"{label:<56} {w_ours:9.3f} {w_peer:9.3f} {w_peer / w_ours:6.1f}x {c_ours:7.3f}/{c_peer:<7.3f}"
            f" {c_peer / c_ours:8.1f}x {res['worst']:11.2e} {n:8d}"
        )
        ok &= res["worst"] < 1e-9
    print(
        f"medians of {args.repeats} alternating runs after a warm-up; peers: rouge-score "
        "RougeScorer.score per segment; SQuAD v1.1 evaluate functions inline"
    )
    if not ok:
        print("MISMATCH: numbers differ by more than 1e-9", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
