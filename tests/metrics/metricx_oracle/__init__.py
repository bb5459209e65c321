"""Google's MetricX code (``../shared/oracles/metricx``) as an oracle in a venv of its own.

Its ``models.py`` uses names that transformers 5 removed, so it runs under transformers
4.49 (with huggingface-hub < 1.0, which 4.49 needs) in a virtual environment built and
cached by the COMET oracle's machinery (:mod:`metrics.comet_oracle`: the venv, the cache
folder, the lock files and ``builds.log`` are the same code). The scripts beside this file
run inside it: ``make_checkpoint.py`` builds tiny random checkpoints with the oracle's own
``MT5ForRegression`` and a small sentencepiece tokenizer trained locally (no download),
``oracle_predict.py`` scores with its ``predict.get_dataset`` and ``MT5ForRegression`` as its
``predict.main`` does, and returns the input texts and token ids too.

Cached in :data:`~metrics.comet_oracle.CACHE`: each checkpoint under a key of its spec,
the venv's key and ``make_checkpoint.py``; each prediction under a key of the venv,
``oracle_predict.py``, the oracle's code and the jobs with the checkpoints' digests.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import make_tiny_metricx
from metrics.comet_oracle import (
    CACHE,
    OracleUnavailable,
    _digest,
    build_once,
    cached_result,
    folder_digest,
    oracle_python,
    run_script,
)

__all__ = ["OracleUnavailable", "make_checkpoints", "predict", "tiny_spec"]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
ORACLE = REPO.parent / "shared" / "oracles" / "metricx"
if not ORACLE.is_dir():  # a worktree beside the main checkout: the shared folder is /work/shared
    ORACLE = Path(os.environ.get("EVALAB_SHARED", "/work/shared")) / "oracles" / "metricx"
#: installed in this order: torch exactly as evalab pins it (else pip pulls a CUDA build);
#: transformers 4.x (the oracle's models.py needs it), its Trainer's accelerate, the
#: oracle's datasets, sentencepiece + protobuf for the mT5 tokenizer
PINS = (
    "torch==2.13.0",
    "transformers==4.49.0",
    "huggingface-hub<1.0",
    "accelerate==1.5.2",
    "datasets==3.6.0",
    "sentencepiece==0.2.1",
    "protobuf<6",
)
VENV_KEY = _digest(" ".join(PINS), sys.version, platform.machine())
VENV = CACHE / f"metricx-oracle-venv-{VENV_KEY}"


def python() -> Path:
    """The MetricX oracle venv's python (built on first use)."""
    return oracle_python(VENV, PINS)


def _oracle_digest() -> str:
    files = sorted(ORACLE.glob("metricx2?/*.py"))
    return _digest(*(f.read_bytes() for f in files))


def _run(script: str, *args: str, threads: int | None = 1) -> None:
    run_script(python(), HERE / script, *args, threads=threads, pythonpath=str(ORACLE))


def tiny_spec(version: int, *, seed: int, d_model: int = 32, layers: int = 1) -> dict[str, Any]:
    """A tiny mT5 regression checkpoint of MetricX-``version`` (23 or 24)."""
    return {"version": version, **make_tiny_metricx.spec(seed, d_model, layers)}


def make_checkpoints(specs: list[dict[str, Any]]) -> list[Path]:
    """Checkpoint folders (model + tokenizer files) for ``specs``, built once per key."""
    script = _digest(
        (HERE / "make_checkpoint.py").read_bytes(),
        (REPO / "benchmarks" / "make_tiny_metricx.py").read_bytes(),
    )
    folders = [
        CACHE / "metricx-ckpt" / _digest(json.dumps(s, sort_keys=True), VENV_KEY, script)
        for s in specs
    ]
    build_once(
        "metricx-ckpt",
        list(zip(specs, folders, strict=True)),
        ready=lambda folder: (folder / "config.json").is_file(),
        build=lambda spec_file: _run("make_checkpoint.py", str(spec_file)),
        event="metricx-checkpoints",
    )
    return folders


def predict(jobs: list[dict[str, Any]], threads: int | None = 1) -> list[dict[str, Any]]:
    """The oracle's predictions per job (``checkpoint``, ``version``, ``qe``,
    ``max_input_length``, ``batch_size``, ``samples``: ``{"source", "hypothesis",
    "reference"}`` dicts, or ``systems``: lists of them): ``predictions``, ``inputs``,
    ``input_ids`` per system and ``seconds``; cached, except with ``threads=None`` (the
    benchmark times the oracle: its ``seconds`` must be this run's)."""
    if threads is None:
        return _predict(jobs, threads)
    keyed = [{**job, "checkpoint": folder_digest(Path(job["checkpoint"]))} for job in jobs]
    key = _digest(
        VENV_KEY,
        _digest((HERE / "oracle_predict.py").read_bytes()),
        _oracle_digest(),
        json.dumps(keyed, sort_keys=True),
    )
    result: list[dict[str, Any]] = cached_result(
        "metricx-predict", key, lambda: _predict(jobs, threads)
    )
    return result


def _predict(jobs: list[dict[str, Any]], threads: int | None) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        jobs_file, out_file = Path(tmp) / "jobs.json", Path(tmp) / "out.json"
        jobs_file.write_text(json.dumps(jobs))
        _run("oracle_predict.py", str(jobs_file), str(out_file), threads=threads)
        result: list[dict[str, Any]] = json.loads(out_file.read_text())
        return result


def tiny_checkpoint(seed: int = 0, d_model: int = 32, layers: int = 1) -> Path:
    """A tiny checkpoint built by ``benchmarks/make_tiny_metricx.py`` in evalab's own
    environment (no oracle venv, no network), cached by its sizes, the script and the
    transformers and torch versions that build it (the contract test, docs, benchmark)."""
    import torch
    import transformers

    key = _digest(
        json.dumps(make_tiny_metricx.spec(seed, d_model, layers), sort_keys=True),
        (REPO / "benchmarks" / "make_tiny_metricx.py").read_bytes(),
        transformers.__version__,
        torch.__version__,
    )
    folder = CACHE / "metricx-tiny" / key
    build_once(
        "metricx-tiny",
        [(make_tiny_metricx.spec(seed, d_model, layers), folder)],
        ready=lambda folder: (folder / "model.safetensors").is_file(),
        build=_build_tiny,
        event="metricx-tiny",
    )
    return folder


def _build_tiny(spec_file: Path) -> None:
    for spec in json.loads(spec_file.read_text()):
        make_tiny_metricx.build(Path(spec.pop("out")), spec)
