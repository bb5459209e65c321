"""Bradley–Terry with bootstrap rounds: evalab against FastChat's ``compute_bootstrap_bt``.

Workload: ``--battles`` battles (default 1 000 000) among ``--models`` models (default 100)
of normal strengths (sd 1 natural unit), 10% ties, ``--rounds`` bootstrap rounds (default
1000). FastChat's function compresses the battles to distinct outcomes, draws each round's
counts from a multinomial and fits the rounds with L-BFGS in a process pool of ``--cpus``
workers (default 2, this machine's cores); evalab fits every round with Newton's method in
one process. Both take the same pandas DataFrame / the same battles, timed whole (from the
battles to the ratings), alternating after a warm-up on 10 000 battles. Checked equal: the
point ratings (FastChat's ``compute_bt`` at a tight ``tol``, shifted to evalab's mean-1000
anchor) within 0.01 points; FastChat's point fit at that tolerance is part of its time.

FastChat's ``rating_systems.py`` is not on PyPI (fschat 0.2.36 predates it): point
``--fastchat`` at a FastChat checkout (or at the file itself).

    .venv/bin/python benchmarks/bench_bradley_terry.py --fastchat ~/FastChat [--battles 1000000] [--models 100] [--rounds 1000] [--repeats 2]
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path
from types import ModuleType

import numpy as np

from evalab.stats.bradley_terry import Battles, bradley_terry


def load_fastchat(path: str) -> ModuleType:
    file = Path(path)
    if file.is_dir():
        file = file / "fastchat" / "serve" / "monitor" / "rating_systems.py"
    if not file.exists():
        sys.exit(f"no FastChat rating_systems.py at {file}")
    # imported by name from its folder: its process pool pickles functions by module name
    sys.path.insert(0, str(file.parent))
    return importlib.import_module(file.stem)


def battles(n: int, models: int, seed: int = 0) -> tuple[list[str], list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, models)
    a = rng.integers(0, models, n)
    b = (a + rng.integers(1, models, n)) % models
    p = 1.0 / (1.0 + np.exp(strength[b] - strength[a]))
    u = rng.random(n)
    out = np.where(u < 0.1, 0.5, np.where(rng.random(n) < p, 1.0, 0.0))
    names = np.array([f"model-{i:03d}" for i in range(models)])
    return names[a].tolist(), names[b].tolist(), out


def run_evalab(a: list[str], b: list[str], out: np.ndarray, rounds: int) -> dict[str, float]:
    result = bradley_terry(Battles.from_names(a, b, out), n_samples=rounds, seed=0)
    return dict(zip(result.models, result.ratings, strict=True))


def run_fastchat(
    fc: ModuleType, a: list[str], b: list[str], out: np.ndarray, rounds: int, cpus: int
) -> tuple[dict[str, float], object]:
    import pandas as pd

    winner = np.where(out == 1.0, "model_a", np.where(out == 0.0, "model_b", "tie"))
    df = pd.DataFrame({"model_a": a, "model_b": b, "winner": winner})
    point = fc.compute_bt(df, tol=1e-10)
    boot = fc.compute_bootstrap_bt(df, num_round=rounds, num_cpu=cpus)
    return dict(point), boot


def scaling(n: int, models: int, rounds: int, repeats: int) -> None:
    """evalab's time (battles to ratings) at 1/4, 1/2, 1 and 2 times ``n`` battles, and its
    time per million battles: flat when the cost is linear in battles."""
    for size in (n // 4, n // 2, n, 2 * n):
        a, b, out = battles(size, models, seed=2)
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            run_evalab(a, b, out, rounds)
            best = min(best, time.perf_counter() - t)
        print(
            f"evalab, {size} battles, {rounds} rounds: {best:.2f} s, {best / size * 1e6:.2f} s per "
            f"million battles (load average {os.getloadavg()[0]:.1f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fastchat", required=True, help="FastChat checkout or rating_systems.py")
    parser.add_argument("--battles", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--scaling", action="store_true", help="also time evalab alone on 1/4, 1/2, 1, 2x battles"
    )
    args = parser.parse_args()
    if args.scaling:
        scaling(args.battles, args.models, args.rounds, args.repeats)
    fc = load_fastchat(args.fastchat)
    a, b, out = battles(args.battles, args.models)
    print(f"load average {os.getloadavg()[0]:.1f}; {args.battles} battles, {args.models} models")
    wa, wb, wo = battles(10_000, 10, seed=1)
    run_evalab(wa, wb, wo, 10)
    run_fastchat(fc, wa, wb, wo, 10, args.cpus)
    times: dict[str, list[float]] = {"fastchat": [], "evalab": []}
    for _ in range(args.repeats):
        t = time.perf_counter()
        point, _boot = run_fastchat(fc, a, b, out, args.rounds, args.cpus)
        times["fastchat"].append(time.perf_counter() - t)
        t = time.perf_counter()
        ours = run_evalab(a, b, out, args.rounds)
        times["evalab"].append(time.perf_counter() - t)
    shift = np.mean([point[m] for m in ours]) - 1000.0
    worst = max(abs(ours[m] - (point[m] - shift)) for m in ours)
    print(
        f"point ratings: largest difference {worst:.2e} points (FastChat's compute_bt, tol 1e-10)"
    )
    if worst > 0.01:
        sys.exit("the ratings differ: not timed as equal work")
    fastchat, evalab = min(times["fastchat"]), min(times["evalab"])
    print(
        f"{args.rounds} rounds: FastChat {fastchat:.1f} s ({args.cpus} processes), "
        f"evalab {evalab:.1f} s (one process, {os.cpu_count()} threads): {fastchat / evalab:.1f}x "
        f"(load average {os.getloadavg()[0]:.1f}; all: {times})"
    )


if __name__ == "__main__":
    main()
