"""MetricX: evalab vs Google's ``metricx24/predict.py``, and evalab above a bare forward pass.

Workload: generated segments (the tiny checkpoints' own words; ``--segments`` of them, up
to 60 words each), 1 system and ``--systems`` systems sharing sources and references,
MetricX-24 hybrid (source + candidate + reference), the oracle-built tiny checkpoint of
tests/metrics/test_metricx.py (mT5, d_model 64, 2 layers; ``--d-model``/``--layers`` for
another, built once and cached).

(1) Google's ``predict.main`` (in its own venv, tests/metrics/metricx_oracle: its command
    line, ``datasets``, its Trainer at batch size 1, as its README runs it; one ``predict``
    per system) against evalab's ``MetricX.stats_many`` on a fresh metric (the model loaded
    in the timed part too, as ``predict`` loads it). The oracle's ``seconds`` time its
    ``main`` calls inside its process; the tools alternate after one untimed run of each;
    every segment's score is checked equal (1e-5).
(2) The floor: the same batches of token ids evalab runs (one length a batch) through the
    encoder and one decoder step, bare, against evalab's whole scoring with the model
    loaded (texts, tokenizing, deduplication, batching), alternating in one process.

One torch thread on both sides (``--threads``): on a shared machine OpenMP threads
spinning on each other inflate both sides' times.

    .venv/bin/python benchmarks/bench_metricx.py [--segments 200] [--systems 8] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))


def workload(n: int, systems: int) -> tuple[list[str], list[str], list[list[str]]]:
    from make_tiny_metricx import words

    rng = random.Random(0)
    src = [words(rng, rng.randint(3, 60)) for _ in range(n)]
    ref = [words(rng, rng.randint(3, 60)) for _ in range(n)]
    hyps = [[words(rng, rng.randint(3, 60)) for _ in range(n)] for _ in range(systems)]
    return src, ref, hyps


def oracle_run(
    ckpt: Path, src: list[str], ref: list[str], hyps: list[list[str]]
) -> tuple[float, list[list[float]]]:
    from metrics import metricx_oracle

    job = {
        "checkpoint": str(ckpt),
        "version": 24,
        "qe": False,
        "max_input_length": 1536,
        "batch_size": 1,
        "texts": False,
        "systems": [
            [
                {"source": s, "hypothesis": h, "reference": r}
                for s, h, r in zip(src, hs, ref, strict=True)
            ]
            for hs in hyps
        ],
    }
    (result,) = metricx_oracle.predict([job], threads=None)
    return result["seconds"], [s["predictions"] for s in result["systems"]]


def ours_run(
    ckpt: Path, src: list[str], ref: list[str], hyps: list[list[str]]
) -> tuple[float, list[np.ndarray]]:
    from evalab.metrics.metricx import MetricX

    start = time.perf_counter()
    metric = MetricX(model=str(ckpt), version=24, progress=False).with_sources(src)
    stats = metric.stats_many(hyps, [ref])
    return time.perf_counter() - start, [s.rows[:, 0] for s in stats]


def floor(ckpt: Path, src: list[str], ref: list[str], hyps: list[list[str]], repeats: int) -> None:
    import torch

    from evalab.metrics.metricx import MetricX
    from evalab.models.metricx_model import length_batches

    metric = MetricX(model=str(ckpt), version=24, progress=False).with_sources(src)
    model = metric.model()
    texts = list(dict.fromkeys(t for h in hyps for t in metric.input_texts(h, [ref])))
    ids = model.token_ids(texts, metric.max_input_length)
    batches = [[ids[i] for i in chunk] for chunk in length_batches([len(x) for x in ids], 16)]

    def bare() -> None:
        start = torch.zeros((1, 1), dtype=torch.long)
        with torch.inference_mode():
            for batch in batches:
                hidden = model.encoder(input_ids=torch.tensor(batch)).last_hidden_state
                for i in range(len(batch)):
                    model.decoder(input_ids=start, encoder_hidden_states=hidden[i : i + 1])

    times: dict[str, list[float]] = {"bare": [], "evalab": []}
    for k in range(repeats + 1):
        for name, fn in [("bare", bare), ("evalab", lambda: metric.stats_many(hyps, [ref]))][
            :: 1 if k % 2 else -1
        ]:
            t = time.perf_counter()
            fn()
            if k:
                times[name].append(time.perf_counter() - t)
    b, e = statistics.median(times["bare"]), statistics.median(times["evalab"])
    print(
        f"  floor ({len(hyps)} systems): bare forward {b:.2f} s, evalab {e:.2f} s: overhead x{e / b:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=200)
    parser.add_argument("--systems", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import torch

    torch.set_num_threads(args.threads)
    from metrics import metricx_oracle

    (ckpt,) = metricx_oracle.make_checkpoints(
        [metricx_oracle.tiny_spec(24, seed=2, d_model=args.d_model, layers=args.layers)]
    )
    print(
        f"load average {os.getloadavg()[0]:.2f}; {args.segments} segments; threads {args.threads}"
    )
    for n_sys in (1, args.systems):
        src, ref, hyps = workload(args.segments, n_sys)
        times: dict[str, list[float]] = {"google": [], "evalab": []}
        for k in range(args.repeats + 1):  # round 0: warm-up, untimed
            order = [("google", oracle_run), ("evalab", ours_run)][:: 1 if k % 2 else -1]
            for name, fn in order:
                seconds, scores = fn(ckpt, src, ref, hyps)
                if k:
                    times[name].append(seconds)
                if name == "google":
                    theirs = scores
                else:
                    mine = scores
            worst = max(
                float(np.abs(np.asarray(t) - m).max()) for t, m in zip(theirs, mine, strict=True)
            )
            assert worst <= 1e-5, worst
        g, e = statistics.median(times["google"]), statistics.median(times["evalab"])
        print(
            f"  {n_sys} system(s): google predict {g:.2f} s, evalab {e:.2f} s: x{g / e:.1f} "
            f"(max |diff| {worst:.1e}; load {os.getloadavg()[0]:.2f})"
        )
        floor(ckpt, src, ref, hyps, args.repeats)


if __name__ == "__main__":
    main()
