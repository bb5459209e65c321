"""Scoring on Ray workers: ``evalab score -j 2 --executor ray`` vs ``-j 2`` vs one process.

Workloads (whole CLI processes; the text is WMT22 en-de, ../shared/wmt22: the outputs of
every system concatenated and cycled to N segments, reference A cycled alongside):

* ``bleu+chrf+ter``: ``evalab score -m bleu chrf ter`` on 200 000 segments
* ``perplexity``: ``evalab score -m perplexity`` with a tiny random GPT-2 built here from a
  config (benchmarks/make_tiny_lm.py, seed 0; no download) on ``--lm-n`` segments

Each workload runs in three ways: one process, ``-j 2`` (two local processes) and ``-j 2
--executor ray`` (two Ray workers of a Ray instance the command starts on this machine, so
its start-up is in the figure; ``--ray-address`` joins a running cluster instead). After
one warm-up of each way on a small input, the repeats alternate the ways (the order turns
each repeat), every run's JSON output must equal the one-process output, and the medians
are printed with their ratio to one process. Every process runs torch on one thread
(``OMP_NUM_THREADS=1``, as Ray gives its workers). The load average is printed before and
after: on a loaded machine the ratios say more than the seconds.

    python benchmarks/bench_ray.py [--n 200000] [--lm-n 2000] [--repeats 3] [--skip-lm]
                                   [--ray-address HOST:PORT]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WMT22 = ROOT.parent / "shared" / "wmt22"
PAIR = "en-de"
WARM_N = 2_000


@dataclass(frozen=True)
class Way:
    """One way of running the same command: its label and its extra arguments."""

    label: str
    args: tuple[str, ...]


def ways(address: str | None) -> list[Way]:
    ray = ("-j", "2", "--executor", "ray", *(("--ray-address", address) if address else ()))
    return [Way("one process", ()), Way("-j 2 (processes)", ("-j", "2")), Way("-j 2 Ray", ray)]


def corpus(folder: Path, n: int) -> tuple[Path, Path]:
    """Every en-de system's outputs end to end, and the reference beside each, cycled to n."""
    outputs = sorted((WMT22 / "system-outputs").glob(f"generaltest2022.{PAIR}.hyp.*"))
    ref = (WMT22 / "references" / f"generaltest2022.{PAIR}.ref.A.de").read_text(encoding="utf-8")
    ref_lines = ref.split("\n")[:-1] if ref.endswith("\n") else ref.split("\n")
    hyps: list[str] = []
    for path in outputs:
        lines = path.read_text(encoding="utf-8").split("\n")[: len(ref_lines)]
        hyps.extend(lines)
    refs = ref_lines * len(outputs)
    pairs = list(itertools.islice(itertools.cycle(zip(hyps, refs, strict=True)), n))
    hyp_file, ref_file = folder / f"hyp.{n}.de", folder / f"ref.{n}.de"
    hyp_file.write_text("\n".join(h for h, _ in pairs) + "\n", encoding="utf-8")
    ref_file.write_text("\n".join(r for _, r in pairs) + "\n", encoding="utf-8")
    return hyp_file, ref_file


def command(files: tuple[Path, Path], metrics: list[str], way: Way) -> list[str]:
    hyp, ref = files
    base = ["score", "-r", str(ref), "-i", str(hyp), "-m", *metrics, "-f", "json", "-q"]
    return [sys.executable, "-m", "evalab", *base, *way.args]


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, object]:
    """Wall seconds of the whole process and its JSON output (an error stops the benchmark)."""
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {out.returncode}: {out.stderr.strip()}")
    return wall, json.loads(out.stdout)


def workload(
    name: str,
    files: tuple[Path, Path],
    warm: tuple[Path, Path],
    metrics: list[str],
    args: argparse.Namespace,
) -> None:
    # one torch thread per process in every way (Ray gives its workers one): the ways differ
    # in the number of workers only, and no thread pool spins against another on 2 cores
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    env["OMP_NUM_THREADS"] = "1"
    all_ways = ways(args.ray_address)
    for way in all_ways:  # warm-up: imports, page cache, Ray's first start
        run(command(warm, metrics, way), env)
    walls: dict[str, list[float]] = {w.label: [] for w in all_ways}
    want: object = None
    for r in range(args.repeats):
        for way in all_ways[r % 3 :] + all_ways[: r % 3]:
            wall, got = run(command(files, metrics, way), env)
            if want is None:
                want = got
            if got != want:
                raise SystemExit(f"{name}: {way.label} printed other numbers than the first run")
            walls[way.label].append(wall)
    base = statistics.median(walls[all_ways[0].label])
    print(f"\n{name}  (outputs equal in all {3 * args.repeats} runs)")
    for way in all_ways:
        med = statistics.median(walls[way.label])
        runs = " ".join(f"{w:.1f}" for w in walls[way.label])
        print(f"  {way.label:<18} median {med:6.1f} s  ({runs})  {base / med:4.2f}x one process")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=200_000, help="segments of bleu+chrf+ter")
    parser.add_argument("--lm-n", type=int, default=2_000, help="segments of perplexity")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-lm", action="store_true", help="only bleu+chrf+ter")
    parser.add_argument("--ray-address", help="join this Ray cluster instead of starting one")
    args = parser.parse_args()
    print(
        f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs"
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        warm = corpus(folder, WARM_N)
        workload(
            f"bleu+chrf+ter, {args.n} segments",
            corpus(folder, args.n),
            warm,
            ["bleu", "chrf", "ter"],
            args,
        )
        if not args.skip_lm:
            sys.path.insert(0, str(ROOT / "benchmarks"))
            from make_tiny_lm import build_tiny_lm

            lm = build_tiny_lm(folder / "tiny-lm", seed=0)
            metrics = ["perplexity", "--set", f"perplexity.model={lm}"]
            small = corpus(folder, 200)
            workload(
                f"perplexity (tiny GPT-2), {args.lm_n} segments",
                corpus(folder, args.lm_n),
                small,
                metrics,
                args,
            )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
