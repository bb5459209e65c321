"""BERTScore: evalab vs bert-score's BERTScorer on CPU, same model, same layer, same numbers.

Scenarios (WMT22 en-de, reference A, all-MiniLM-L6-v2 layer 6, no IDF):

(a) shared task: the 9 en-de systems against one reference, one scoring call per system,
    as a shared task is scored. bert-score embeds the reference again for every system;
    evalab embeds each distinct string (the reference, segments repeated across systems)
    once.
(b) single system: one system against the reference (nothing to share).

Both tools have their model loaded before timing. Time is split into tokenization,
forward pass and matching (bert-score's functions are wrapped with timers).

    .venv/bin/python benchmarks/bench_semantic.py [--quick] [--segments N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
WMT22 = REPO.parent / "shared" / "wmt22"
PAIR = "en-de"


def read(path: Path) -> list[str]:
    from evalab.io import read_segments

    return read_segments(path)


def load_data(n: int | None) -> tuple[list[str], dict[str, list[str]]]:
    ref = read(WMT22 / "references" / f"generaltest2022.{PAIR}.ref.A.de")
    prefix = f"generaltest2022.{PAIR}.hyp."
    systems = {
        p.name[len(prefix) : -3]: read(p)
        for p in sorted((WMT22 / "system-outputs").glob(f"{prefix}*.de"))
    }
    # bert-score's tokenizer call fails on empty lines with transformers 5 (no
    # build_inputs_with_special_tokens); keep segments where every side is non-empty
    keep = [i for i in range(len(ref)) if ref[i].strip() and all(s[i].strip() for s in systems.values())]
    if n is not None:
        keep = keep[:n]
    return [ref[i] for i in keep], {k: [v[i] for i in keep] for k, v in systems.items()}


class Timers:
    """Wrap bert-score's internals with timers (tokenize / forward / matching)."""

    def __init__(self) -> None:
        self.t = {"tokenize": 0.0, "forward": 0.0, "matching": 0.0}

    def wrap(self, module, name: str, key: str) -> None:
        fn = getattr(module, name)

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.t[key] += time.perf_counter() - t0

        setattr(module, name, timed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="first 300 segments only")
    ap.add_argument("--segments", type=int, default=None, help="use the first N segments")
    ap.add_argument("--only", choices=("single", "shared"), default=None, help="run one scenario only")
    args = ap.parse_args(argv)
    n = args.segments if args.segments is not None else (300 if args.quick else None)
    if not (WMT22 / "references").exists():
        print(f"WMT22 data not found at {WMT22}", file=sys.stderr)
        return 1

    import bert_score
    import bert_score.utils as bsu
    import torch

    from evalab.metrics.semantic import BERTScore
    from evalab.models.embedders import default_model_path

    ref, systems = load_data(n)
    path = str(default_model_path())
    print(f"data: WMT22 {PAIR}, {len(ref)} segments, {len(systems)} systems; model {path}; torch threads {torch.get_num_threads()}")

    t0 = time.perf_counter()
    scorer = bert_score.BERTScorer(model_type=path, num_layers=6, idf=False)
    t_load_bs = time.perf_counter() - t0
    timers = Timers()
    timers.wrap(bsu, "sent_encode", "tokenize")
    timers.wrap(bsu, "bert_encode", "forward")
    timers.wrap(bsu, "greedy_cos_idf", "matching")
    t0 = time.perf_counter()
    metric = BERTScore(layer=6)
    emb = metric.embedder
    t_load_ev = time.perf_counter() - t0

    def reset_ours() -> None:
        emb.clear_cache()
        emb.profile.clear()
        emb.profile.update({"tokenize": 0.0, "forward": 0.0, "matching": 0.0})
        emb.computed = 0
        for k in timers.t:
            timers.t[k] = 0.0

    def scenario(names: list[str]) -> dict:
        """Score ``names`` with both tools, interleaved system by system so that a change
        in machine load during the run hits both alike; wall and CPU seconds are summed."""
        reset_ours()
        res = {"wall": {"bs": 0.0, "ev": 0.0}, "cpu": {"bs": 0.0, "ev": 0.0}, "delta": 0.0}
        for name in names:
            w, c = time.perf_counter(), time.process_time()
            ours = metric.stats(systems[name], [ref])[:, :3]
            res["wall"]["ev"] += time.perf_counter() - w
            res["cpu"]["ev"] += time.process_time() - c
            w, c = time.perf_counter(), time.process_time()
            p, r, f = scorer.score(systems[name], ref, batch_size=64)
            res["wall"]["bs"] += time.perf_counter() - w
            res["cpu"]["bs"] += time.process_time() - c
            theirs = np.stack([p.numpy(), r.numpy(), f.numpy()], axis=1)
            res["delta"] = max(res["delta"], float(np.abs(ours - theirs).max()))
        res["prof_bs"] = dict(timers.t)
        res["prof_ev"] = dict(emb.profile)
        res["embedded"] = emb.computed
        return res

    # one small call each first: torch's first forward pays one-off set-up costs
    metric.stats(["Guten Abend."], [["Guten Abend!"]])
    scorer.score(["Guten Abend."], ["Guten Abend!"])
    rows = []
    for label, names in (("(b) single system", ["Online-B"]), ("(a) 9 systems, 1 ref", list(systems))):
        if args.only and (args.only == "single") != label.startswith("(b)"):
            continue
        rows.append((label, len(names) * len(ref), scenario(names)))

    print(f"model load: bert-score {t_load_bs:.1f} s, evalab {t_load_ev:.1f} s (not in the timings below)")
    print()
    header = (f"{'scenario':22} {'pairs':>6} {'bert-score s':>12} {'evalab s':>9} {'speed-up':>8}"
              f" {'CPU s bs/ev':>15} {'CPU speed-up':>12} {'max|dP,dR,dF|':>14}")
    print(header)
    print("-" * len(header))
    for label, n_pairs, res in rows:
        wall, cpu = res["wall"], res["cpu"]
        print(
            f"{label:22} {n_pairs:>6} {wall['bs']:>12.1f} {wall['ev']:>9.1f} {wall['bs'] / wall['ev']:>7.2f}x"
            f" {cpu['bs']:>7.1f}/{cpu['ev']:<7.1f} {cpu['bs'] / cpu['ev']:>11.2f}x {res['delta']:>14.2e}"
        )
    print()
    print("where the wall time goes (seconds): tokenize / forward / matching / other")
    for label, n_pairs, res in rows:
        for tool, key in (("bert-score", "bs"), ("evalab", "ev")):
            prof = res[f"prof_{key}"]
            other = res["wall"][key] - sum(prof.values())
            print(
                f"  {label:22} {tool:10} {prof['tokenize']:7.2f} / {prof['forward']:7.2f} / "
                f"{prof['matching']:6.2f} / {other:6.2f}"
            )
        print(f"  {label:22} evalab embedded {res['embedded']} distinct strings for {n_pairs} pairs")
    ok = all(r[2]["delta"] < 1e-5 for r in rows)
    print("numbers agree (max |delta| < 1e-5):", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
