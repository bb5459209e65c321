"""ROUGE (and EM/F1) speed and parity: evalab against rouge-score (and the SQuAD v1.1 logic).

Workload (issue 2): WMT22 en-de, every system (9 x 2037 segments) against reference A,
rouge1/rouge2/rougeL/rougeLsum with the Porter stemmer. Both tools score the same data in
this one run; every per-segment precision, recall and F must agree to 1e-9.

    .venv/bin/python benchmarks/bench_rouge.py [--quick]

``--quick`` uses the first 300 segments of each system.
"""

from __future__ import annotations

import argparse
import collections
import re
import string
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WMT22 = ROOT.parent / "shared" / "wmt22"
TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")


def load(pair: str, ref_id: str, limit: int | None):
    from evalab.io import read_segments

    tgt = pair.split("-")[1]
    ref = read_segments(WMT22 / "references" / f"generaltest2022.{pair}.ref.{ref_id}.{tgt}")
    systems = {}
    for p in sorted((WMT22 / "system-outputs").glob(f"generaltest2022.{pair}.hyp.*.{tgt}")):
        systems[p.name.split(".hyp.")[1][: -len(tgt) - 1]] = read_segments(p)[:limit]
    return ref[:limit], systems


def bench_rouge(ref, systems, stem: bool):
    from rouge_score import rouge_scorer

    import evalab
    from evalab.metrics import rouge as ev_rouge

    # peer: the usual loop, one RougeScorer for the four types
    t0 = time.perf_counter()
    scorer = rouge_scorer.RougeScorer(list(TYPES), use_stemmer=stem)
    peer = {name: [scorer.score(r, h) for r, h in zip(ref, hyps, strict=True)] for name, hyps in systems.items()}
    t_peer = time.perf_counter() - t0

    # evalab, cold caches (tokens, n-grams, stems) so nothing is carried over
    for fn in (ev_rouge._tokens, ev_rouge._ngrams, ev_rouge._masks, ev_rouge._sentences, ev_rouge._stem_token):
        fn.cache_clear()
    from evalab.text.porter import porter_stem

    porter_stem.cache_clear()
    t0 = time.perf_counter()
    metrics = {t: evalab.metric(t, use_stemmer=stem) for t in TYPES}
    ours = {name: {t: m.stats(hyps, [ref]) for t, m in metrics.items()} for name, hyps in systems.items()}
    t_ours = time.perf_counter() - t0

    worst, n = 0.0, 0
    for name in systems:
        for t in TYPES:
            rows = ours[name][t]
            for i, s in enumerate(peer[name]):
                exp = s[t]
                worst = max(worst, abs(rows[i, 0] - exp.precision), abs(rows[i, 1] - exp.recall),
                            abs(rows[i, 2] - exp.fmeasure))
                n += 1
    return t_ours, t_peer, worst, n


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


def bench_squad(refs_a, refs_b, hyps):
    import evalab

    t0 = time.perf_counter()
    peer_f1 = [max(_squad_f1(h, a), _squad_f1(h, b)) for h, a, b in zip(hyps, refs_a, refs_b, strict=True)]
    peer_em = [max(_squad_em(h, a), _squad_em(h, b)) for h, a, b in zip(hyps, refs_a, refs_b, strict=True)]
    t_peer = time.perf_counter() - t0
    t0 = time.perf_counter()
    f1 = evalab.metric("f1", tokenizer="squad").stats(hyps, [refs_a, refs_b])[:, 0]
    em = evalab.metric("exact_match", normalize="squad").stats(hyps, [refs_a, refs_b])[:, 0]
    t_ours = time.perf_counter() - t0
    # the conventions differ only when both token lists are empty (v1.1: 0, evalab: 1)
    both_empty = [not _squad_normalize(h).split() and not _squad_normalize(a).split()
                  for h, a in zip(hyps, refs_a, strict=True)]
    worst = max(
        max(abs(x - y) for x, y, e in zip(f1, peer_f1, both_empty, strict=True) if not e),
        max(abs(x - y) for x, y in zip(em, peer_em, strict=True)),
    )
    return t_ours, t_peer, worst, 2 * len(hyps)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 segments per system")
    args = parser.parse_args()
    if not WMT22.exists():
        print(f"WMT22 data not found at {WMT22}", file=sys.stderr)
        return 1
    limit = 300 if args.quick else None
    ref, systems = load("en-de", "A", limit)
    rows = []
    for stem in (True, False):
        t_ours, t_peer, worst, n = bench_rouge(ref, systems, stem)
        label = f"rouge1/2/L/Lsum stem={'on' if stem else 'off'} en-de {len(systems)}x{len(ref)}"
        rows.append((label, t_ours, t_peer, worst, n))
    refs_a, _ = load("de-en", "A", limit)
    refs_b, de_en = load("de-en", "B", limit)
    hyps = next(iter(de_en.values()))
    t_ours, t_peer, worst, n = bench_squad(refs_a, refs_b, hyps)
    rows.append((f"EM+F1 (squad) de-en {len(hyps)} segs, 2 refs", t_ours, t_peer, worst, n))

    print(f"{'workload':<44} {'evalab s':>9} {'peer s':>9} {'ratio':>7} {'max|delta|':>11} {'values':>8}")
    ok = True
    for label, t_ours, t_peer, worst, n in rows:
        print(f"{label:<44} {t_ours:9.3f} {t_peer:9.3f} {t_peer / t_ours:6.1f}x {worst:11.2e} {n:8d}")
        ok &= worst < 1e-9
    print("peers: rouge-score RougeScorer.score per segment; SQuAD v1.1 evaluate functions inline")
    if not ok:
        print("MISMATCH: numbers differ by more than 1e-9", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
