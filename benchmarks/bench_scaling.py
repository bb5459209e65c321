"""Cost that grows linearly: time and peak memory of whole CLI runs at 2k, 20k, 200k (2M) items.

Workloads (segments cycled from WMT22 en-de, reference A and two systems, ../shared/wmt22;
runs of a synthetic ablation study as in bench_ablation_report.py):

* ``bleu+chrf``: ``evalab score -m bleu chrf`` on one system
* ``ter``, ``rouge``: ``evalab score -m ter`` / ``-m rouge1 rouge2 rougeL``
* ``rouge-unicode``: the same ROUGE types with ``-s tokenize=unicode`` (tokenised in Python)
* ``bootstrap``: ``evalab compare -t bs -m bleu`` (two systems, 1000 paired resamples)
* ``bertscore``: ``evalab score -m bertscore`` (the shipped MiniLM model; CPU-bound, so
  only up to ``--model-max`` segments unless raised)
* ``bertscore-tiny``: the same with ``--model`` a 2-layer encoder of width 32 (random
  weights, the shipped vocabulary; built once in the temporary folder), so the model
  path's memory can be followed up to ``--tiny-max`` segments
* ``ablate-report``: ``evalab ablate report -f json`` on a study of N stored runs (N / 10
  rows x 10 seeds, two metrics; the runs are stored before timing), only up to
  ``--runs-max`` runs (200k: about 2 CPU minutes; 2M would be about 20, plus as many to
  store the runs)

Every point runs in its own process, so its peak RSS (``os.wait4``'s ``ru_maxrss``) is its
own; CPU is user + system of that process. Printed per point: wall, CPU, peak MB, the peak
per item, and the *increment* per item from the previous size ((peak_N - peak_prev) /
(N - prev)), which is what must stay flat for memory to grow linearly (the first sizes are
dominated by the interpreter and imports, ~100 MB).

    python benchmarks/bench_scaling.py [--big] [--tasks bleu+chrf ter ...] [--model-max 20000]
        [--tiny-max 20000] [--runs-max 200000]

``--big`` adds the 2M point (about 1 GB of text files in a temporary folder, and several
minutes per task on a loaded machine). Report the load average (printed) beside the figures.
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WMT22 = ROOT.parent / "shared" / "wmt22"
PAIR = "en-de"
SYSTEMS = ("Online-B", "Online-A")
SIZES = (2_000, 20_000, 200_000)
BIG = 2_000_000
SEEDS = 10

Command = Callable[[Path, int], list[str]]


def evalab(*args: str) -> list[str]:
    return [sys.executable, "-m", "evalab", *args]


def cycled(source: Path, target: Path, n: int) -> Path:
    """``target``: the lines of ``source`` repeated until there are ``n``."""
    if not target.exists():
        lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
        with target.open("w", encoding="utf-8") as out:
            out.writelines(itertools.islice(itertools.cycle(lines), n))
    return target


def texts(folder: Path, n: int) -> tuple[Path, list[Path]]:
    """The reference and the system files of ``n`` segments (written once per size)."""
    base = f"generaltest2022.{PAIR}"
    ref = cycled(WMT22 / "references" / f"{base}.ref.A.de", folder / f"ref.{n}.de", n)
    hyps = [
        cycled(WMT22 / "system-outputs" / f"{base}.hyp.{s}.de", folder / f"{s}.{n}.de", n)
        for s in SYSTEMS
    ]
    return ref, hyps


def score(*metrics: str, options: tuple[str, ...] = ()) -> Command:
    def command(folder: Path, n: int) -> list[str]:
        ref, hyps = texts(folder, n)
        return evalab(
            "score",
            "-r",
            str(ref),
            "-i",
            str(hyps[0]),
            "-m",
            *metrics,
            *options,
            "-q",
            "-f",
            "json",
        )

    return command


def bootstrap(folder: Path, n: int) -> list[str]:
    ref, hyps = texts(folder, n)
    return evalab(
        "compare",
        "-r",
        str(ref),
        "-i",
        *map(str, hyps),
        "-m",
        "bleu",
        "-t",
        "bs",
        "-q",
        "-f",
        "json",
    )


def ablate_report(folder: Path, n: int) -> list[str]:
    """A study of ``n`` runs stored in ``folder`` (once), and the command reporting it."""
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_ablation_report import store_runs, write_study
    from evalab.ablation import load_study

    where = folder / f"study{n}"
    db = where / "runs.db"
    if not db.exists():
        where.mkdir()
        study = load_study(write_study(where, n // SEEDS - 1, SEEDS), check_entry=False)
        store_runs(study, db)
    return evalab("ablate", "report", str(where / "study.toml"), "--db", str(db), "-f", "json")


#: the tiny encoder of ``bertscore-tiny``: the shipped model's tokenizer, 2 layers of width 32
TINY_ENCODER = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2}


def tiny_encoder(folder: Path) -> Path:
    """A BERT encoder with random weights (seed 0) and the shipped model's vocabulary, saved
    in ``folder`` once: BERTScore's whole machinery at a fraction of MiniLM's cost."""
    where = folder / "tiny-encoder"
    if not where.exists():
        import shutil

        import torch
        import transformers

        from evalab.models.hf_encoder import default_model_path

        shipped = default_model_path()
        base = transformers.AutoConfig.from_pretrained(shipped)
        config = transformers.BertConfig(
            vocab_size=base.vocab_size, intermediate_size=64, **TINY_ENCODER
        )
        torch.manual_seed(0)
        transformers.BertModel(config).save_pretrained(where)
        for name in (
            "tokenizer.json",
            "tokenizer_config.json",
            "vocab.txt",
            "special_tokens_map.json",
        ):
            shutil.copy(Path(shipped) / name, where / name)
    return where


def bertscore_tiny(folder: Path, n: int) -> list[str]:
    return [*score("bertscore")(folder, n), "--model", str(tiny_encoder(folder))]


TASKS: dict[str, Command] = {
    "bleu+chrf": score("bleu", "chrf"),
    "ter": score("ter"),
    "rouge": score("rouge1", "rouge2", "rougeL"),
    "rouge-unicode": score("rouge1", "rouge2", "rougeL", options=("-s", "tokenize=unicode")),
    "bootstrap": bootstrap,
    "bertscore": score("bertscore"),
    "bertscore-tiny": bertscore_tiny,
    "ablate-report": ablate_report,
}


def measured(cmd: list[str], cwd: Path) -> tuple[float, float, float]:
    """Wall s, CPU s and peak RSS (MB) of ``cmd``, run as a child of its own."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.strip()[-400:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def run_task(name: str, sizes: list[int], folder: Path) -> None:
    previous: tuple[int, float] | None = None
    for n in sizes:
        cmd = TASKS[name](folder, n)
        wall, cpu, peak = measured(cmd, folder)
        growth = ""
        if previous is not None:
            growth = f"{(peak - previous[1]) * 2**20 / (n - previous[0]):8.0f} B/item more"
        print(
            f"{name:<14} {n:>9,} {wall:8.1f} s {cpu:8.1f} s CPU {peak:8.0f} MB "
            f"{peak * 2**20 / n:9.0f} B/item {growth}  load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        previous = (n, peak)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", action="store_true", help=f"add the {BIG:,} point")
    parser.add_argument("--tasks", nargs="*", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--sizes", nargs="*", type=int, default=list(SIZES))
    parser.add_argument(
        "--model-max", type=int, default=20_000, help="largest size bertscore is run at"
    )
    parser.add_argument(
        "--tiny-max", type=int, default=20_000, help="largest size bertscore-tiny is run at"
    )
    parser.add_argument(
        "--runs-max", type=int, default=200_000, help="largest size ablate-report is run at"
    )
    args = parser.parse_args()
    sizes = sorted({*args.sizes, *([BIG] if args.big else [])})
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (wall times vary)")
    print(f"{'task':<14} {'items':>9} {'wall':>10} {'CPU':>14} {'peak':>11} {'per item':>14}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.tasks:
            limit = {
                "bertscore": args.model_max,
                "bertscore-tiny": args.tiny_max,
                "ablate-report": args.runs_max,
            }.get(name)
            run_task(name, [n for n in sizes if limit is None or n <= limit], Path(tmp))


if __name__ == "__main__":
    main()
