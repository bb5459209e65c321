"""Start-up cost: evalab's entry points against a bare interpreter and sacrebleu's CLI.

Workload, each a fresh process (what a shell loop pays per call): a bare ``python -c
pass``; ``python -c "import evalab"``; ``python -c "import numpy, typer"`` (the floor
under ``evalab score``: two dependencies that sacrebleu does not load); ``evalab
--version`` against ``sacrebleu --version``; BLEU of a one-line file, ``evalab score -i HYP -r REF -b`` against
``sacrebleu REF -i HYP -b`` (the two printed scores must be equal, or the run fails), and
the same with each tool's default output (evalab's table, sacrebleu's JSON; the score
must appear in both). The console scripts are the ones beside this interpreter, with this
checkout's ``src/`` first on ``PYTHONPATH``, its bytecode compiled first, as an installed
package's is (pip compiles it at install time; a checkout under PYTHONDONTWRITEBYTECODE=1
would otherwise recompile every module on every start). One warm-up call of each, then
``--repeats`` alternating rounds (every command once per round, in order); medians of the
wall time and of the CPU time (user + system of the process) and their ratios are printed
with the load average before and after, since a loaded machine moves the absolute times
(the ratios less, the CPU times least).

    .venv/bin/python benchmarks/bench_startup.py [--repeats N] [--src DIR]

``--src`` puts another checkout's ``src/`` first instead (before/after a change).
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
HYP = "The cat sat on the mat."
REF = "The cat sat on a mat."


def commands(folder: Path) -> dict[str, list[str]]:
    hyp, ref = folder / "hyp.txt", folder / "ref.txt"
    hyp.write_text(HYP + "\n", encoding="utf-8")
    ref.write_text(REF + "\n", encoding="utf-8")
    py = sys.executable
    return {
        "python -c pass": [py, "-c", "pass"],
        "import evalab": [py, "-c", "import evalab"],
        "import numpy, typer": [py, "-c", "import numpy, typer"],
        "evalab --version": [str(BIN / "evalab"), "--version"],
        "sacrebleu --version": [str(BIN / "sacrebleu"), "--version"],
        "evalab score -b": [str(BIN / "evalab"), "score", "-i", str(hyp), "-r", str(ref), "-b"],
        "sacrebleu -b": [str(BIN / "sacrebleu"), str(ref), "-i", str(hyp), "-b"],
        "evalab score (table)": [str(BIN / "evalab"), "score", "-i", str(hyp), "-r", str(ref)],
        "sacrebleu (json)": [str(BIN / "sacrebleu"), str(ref), "-i", str(hyp)],
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system) and standard output of one run of ``cmd``."""
    cpu, start = _children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return wall, _children_cpu() - cpu, proc.stdout


def check_outputs(out: dict[str, str]) -> None:
    """The same BLEU from both tools, bare and in their default formats."""
    if out["evalab score -b"].strip() != out["sacrebleu -b"].strip():
        raise SystemExit(f"scores differ: {out['evalab score -b']!r} vs {out['sacrebleu -b']!r}")
    score = out["sacrebleu -b"].strip()
    for name in ("evalab score (table)", "sacrebleu (json)"):
        if score not in out[name]:
            raise SystemExit(f"{name}: the score {score} is not in its output")
    if not out["evalab --version"].startswith("evalab "):
        raise SystemExit(f"evalab --version printed {out['evalab --version']!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="the evalab sources to time")
    args = ap.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(args.src), *filter(None, [env.get("PYTHONPATH")])])
    compileall.compile_dir(args.src / "evalab", quiet=1)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="evalab-startup-") as tmp:
        cmds = commands(Path(tmp))
        outputs = {name: timed(cmd, env)[2] for name, cmd in cmds.items()}  # warm-up
        check_outputs(outputs)
        walls: dict[str, list[float]] = {name: [] for name in cmds}
        cpus: dict[str, list[float]] = {name: [] for name in cmds}
        for _ in range(args.repeats):
            for name, cmd in cmds.items():
                wall, cpu, _ = timed(cmd, env)
                walls[name].append(wall)
                cpus[name].append(cpu)
    load_after = os.getloadavg()
    med = {name: statistics.median(w) for name, w in walls.items()}
    med_cpu = {name: statistics.median(c) for name, c in cpus.items()}
    print(f"evalab from {args.src}")
    print(
        f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} ({os.cpu_count()} CPUs)"
    )
    print(
        f"{args.repeats} alternating rounds; BLEU of one line = {outputs['sacrebleu -b'].strip()} from both"
    )
    print(f"{'command':<24}{'median s':>10}{'min s':>9}{'CPU s':>9}")
    for name, w in walls.items():
        print(f"{name:<24}{med[name]:>10.3f}{min(w):>9.3f}{med_cpu[name]:>9.3f}")
    for ours, theirs in (
        ("import evalab", "python -c pass"),
        ("evalab --version", "sacrebleu --version"),
        ("evalab score -b", "sacrebleu -b"),
        ("evalab score -b", "import numpy, typer"),
        ("evalab score (table)", "sacrebleu (json)"),
    ):
        print(
            f"{ours} / {theirs}: {med[ours] / med[theirs]:.2f}x the time"
            f" (CPU {med_cpu[ours] / med_cpu[theirs]:.2f}x)"
        )


if __name__ == "__main__":
    main()
