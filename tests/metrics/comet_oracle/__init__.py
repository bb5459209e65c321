"""unbabel-comet 2.2.7 as an oracle in a virtual environment of its own.

unbabel-comet pins numpy 1.x and torchmetrics 0.10, so it cannot live in evalab's
environment. :func:`oracle_python` builds ``<repo>/.cache/comet-oracle-venv`` once (about
2 minutes from PyPI; torch first, exactly the 2.13.0 evalab uses, so pip does not pull a
CUDA build) and reuses it while its stamp matches :data:`PINS`. The scripts beside this
file run inside it: ``make_checkpoint.py`` builds tiny checkpoints with unbabel-comet's
own classes, ``predict.py`` scores with its ``predict``.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CACHE = REPO / ".cache"
VENV = CACHE / "comet-oracle-venv"
#: installed in this order; torchmetrics 0.10 imports pkg_resources (gone in setuptools 81)
PINS = ("torch==2.13.0", "unbabel-comet==2.2.7", "setuptools<81")


class OracleUnavailable(RuntimeError):
    """The oracle environment could not be built (no package index reachable)."""


def oracle_python() -> Path:
    """The oracle venv's python, building the venv first if its stamp does not match.

    Two test sessions in one checkout take turns (a lock file beside the venv): the second
    waits for the first's build and then finds it ready."""
    stamp = VENV / "evalab-stamp.txt"
    python = VENV / "bin" / "python"
    if _ready(stamp, python):
        return python
    CACHE.mkdir(exist_ok=True)
    with open(CACHE / "comet-oracle-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _ready(stamp, python):
            _build()
    return python


def _ready(stamp: Path, python: Path) -> bool:
    return stamp.is_file() and stamp.read_text() == " ".join(PINS) and python.exists()


def _build() -> None:
    # built aside and renamed: an interrupted build never leaves a venv that looks ready
    tmp = Path(tempfile.mkdtemp(prefix="comet-oracle-", dir=CACHE))
    try:
        subprocess.run([sys.executable, "-m", "venv", str(tmp)], check=True, capture_output=True)
        for pin in PINS:
            proc = subprocess.run(
                [str(tmp / "bin" / "python"), "-m", "pip", "install", "-q", pin],
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
                raise OracleUnavailable(f"pip install {pin} failed: {tail}")
        (tmp / "evalab-stamp.txt").write_text(" ".join(PINS))
        # pip runs as `python -m pip`, so the scripts' shebangs naming tmp do not matter
        shutil.rmtree(VENV, ignore_errors=True)
        tmp.rename(VENV)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run(script: str, *args: str, threads: int | None = 1) -> None:
    # one thread by default: on a loaded machine, OpenMP threads waiting on each other
    # cost the oracle 5x (measured); the benchmark passes threads=None for torch's default
    env = {**os.environ, "PYTHONPATH": "", "TOKENIZERS_PARALLELISM": "false"}
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    proc = subprocess.run(
        [str(oracle_python()), str(HERE / script), *args], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        raise RuntimeError(f"oracle {script} failed:\n{proc.stderr[-3000:]}")


def make_checkpoints(specs: list[dict[str, Any]]) -> list[Path]:
    """Checkpoint folders for ``specs`` (class, seed, hparams), built once per spec."""
    out: list[Path] = []
    todo = []
    for spec in specs:
        key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
        folder = CACHE / "comet-ckpt" / key
        out.append(folder)
        if not (folder / "checkpoints" / "model.ckpt").is_file():
            todo.append({**spec, "out": str(folder)})
    if todo:
        with tempfile.TemporaryDirectory() as tmp:
            spec_file = Path(tmp) / "spec.json"
            spec_file.write_text(json.dumps(todo))
            _run("make_checkpoint.py", str(spec_file))
    return out


def predict(jobs: list[dict[str, Any]], threads: int | None = 1) -> list[dict[str, Any]]:
    """unbabel-comet's ``predict`` for each job (checkpoint, batch_size, samples)."""
    with tempfile.TemporaryDirectory() as tmp:
        jobs_file, out_file = Path(tmp) / "jobs.json", Path(tmp) / "out.json"
        jobs_file.write_text(json.dumps(jobs))
        _run("predict.py", str(jobs_file), str(out_file), threads=threads)
        return json.loads(out_file.read_text())


def tiny_specs(encoder: str | Path) -> list[dict[str, Any]]:
    """The tiny models of the tests: unbabel-comet's layer mixing with and without layer
    norm, a fixed layer, the three poolings, a final activation and the reference-free
    class, over the local ``encoder`` folder (a BERT)."""
    base = {"encoder_model": "BERT", "pretrained_model": str(encoder)}
    return [
        {
            "class": "regression_metric",
            "seed": 1,
            "hparams": {
                **base,
                "hidden_sizes": [64, 32],
                "layer": "mix",
                "pool": "avg",
                "layer_norm": True,
            },
        },
        {
            "class": "regression_metric",
            "seed": 2,
            "hparams": {
                **base,
                "hidden_sizes": [48],
                "layer": 4,
                "pool": "cls",
                "activations": "sigmoid",
                "final_activation": "Tanh",
            },
        },
        {
            "class": "referenceless_regression_metric",
            "seed": 3,
            "hparams": {
                **base,
                "hidden_sizes": [64, 32],
                "layer": "mix",
                "pool": "max",
                "layer_norm": False,
            },
        },
        {
            "class": "referenceless_regression_metric",
            "seed": 4,
            "hparams": {
                **base,
                "hidden_sizes": [32],
                "layer": "mix",
                "pool": "avg",
                "layer_norm": True,
            },
        },
    ]


def make_tiny_checkpoint(out: Path, *args: str) -> Path:
    """The checkpoint ``benchmarks/make_tiny_comet.py`` builds into ``out``: no oracle venv,
    no unbabel-comet, no network (the shipped MiniLM and a random estimator)."""
    spec = importlib.util.spec_from_file_location(
        "make_tiny_comet", REPO / "benchmarks" / "make_tiny_comet.py"
    )
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    module.main([str(out), *args])
    return out
