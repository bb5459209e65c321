"""unbabel-comet 2.2.7 as an oracle in a virtual environment of its own.

unbabel-comet pins numpy 1.x and torchmetrics 0.10, so it cannot live in evalab's
environment. :func:`oracle_python` builds the venv once per machine (about 2 minutes from
PyPI; torch first, exactly the 2.13.0 evalab uses, so pip does not pull a CUDA build) and
reuses it while its key matches. The scripts beside this file run inside it:
``make_checkpoint.py`` builds tiny checkpoints with unbabel-comet's own classes,
``predict.py`` scores with its ``predict``.

Everything the oracle builds or computes is cached OUTSIDE the checkout, in
:data:`CACHE` (``$EVALAB_TEST_CACHE``, else ``~/.cache/evalab-tests``), so that a fresh
clone (as CI has) reuses it: the venv under a key of :data:`PINS` and the interpreter,
each checkpoint under a key of its spec, the venv's key, ``make_checkpoint.py`` and the
encoder's digest, and each ``predict`` result under a key of the venv's key,
``predict.py``, the jobs and the digest of every checkpoint they read. A result is a pure
function of what its key names, so a cached one is the oracle's answer. Builds take turns
(a lock file per cache entry) and are built aside and renamed: an interrupted build never
leaves an entry that looks ready. ``builds.log`` in the cache records every build and
oracle run with its key and time; :data:`BUILDS` counts this process's, and the run's ledger
(``tests/budget_ledger.py``) every worker's (the budget test).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import budget_ledger

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CACHE = Path(os.environ.get("EVALAB_TEST_CACHE") or Path.home() / ".cache" / "evalab-tests")
#: installed in this order; torchmetrics 0.10 imports pkg_resources (gone in setuptools 81)
PINS = ("torch==2.13.0", "unbabel-comet==2.2.7", "setuptools<81")


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()[:16]


#: the venv's key: the pins and the interpreter that builds it
VENV_KEY = _digest(" ".join(PINS), sys.version, platform.machine())
VENV = CACHE / f"comet-oracle-venv-{VENV_KEY}"
LOG = CACHE / "builds.log"
#: what this process built or ran, by ``(event, key)`` (tests/test_budget.py reads it)
BUILDS: Counter[tuple[str, str]] = Counter()


class OracleUnavailable(RuntimeError):
    """The oracle environment could not be built (no package index reachable)."""


@contextlib.contextmanager
def _locked(name: str) -> Iterator[None]:
    """Hold ``CACHE/NAME.lock``: test sessions (and xdist workers) building the same entry
    take turns, the second finding it ready."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _log(event: str, key: str) -> None:
    BUILDS[event, key] += 1
    budget_ledger.record(event, key)
    with open(LOG, "a", encoding="utf-8") as log:
        log.write(json.dumps({"event": event, "key": key, "time": time.time()}) + "\n")


def oracle_python(venv: Path = VENV, pins: tuple[str, ...] = PINS) -> Path:
    """The python of the oracle venv ``venv`` (``pins`` installed in order), building the
    venv first if it is not ready (the MetricX oracle builds its own through this too)."""
    stamp = venv / "evalab-stamp.txt"
    python = venv / "bin" / "python"
    if _ready(stamp, python, pins):
        return python
    with _locked(venv.name):
        if not _ready(stamp, python, pins):
            _build(venv, pins)
    return python


def _ready(stamp: Path, python: Path, pins: tuple[str, ...]) -> bool:
    return stamp.is_file() and stamp.read_text() == " ".join(pins) and python.exists()


def _build(venv: Path, pins: tuple[str, ...]) -> None:
    # built aside and renamed: an interrupted build never leaves a venv that looks ready
    tmp = Path(tempfile.mkdtemp(prefix=f"{venv.name}-", dir=CACHE))
    try:
        subprocess.run([sys.executable, "-m", "venv", str(tmp)], check=True, capture_output=True)
        for pin in pins:
            proc = subprocess.run(
                [str(tmp / "bin" / "python"), "-m", "pip", "install", "-q", pin],
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
                raise OracleUnavailable(f"pip install {pin} failed: {tail}")
        (tmp / "evalab-stamp.txt").write_text(" ".join(pins))
        # pip runs as `python -m pip`, so the scripts' shebangs naming tmp do not matter
        shutil.rmtree(venv, ignore_errors=True)
        tmp.rename(venv)
        _log("venv", venv.name.rsplit("-", 1)[-1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run(script: str, *args: str, threads: int | None = 1) -> None:
    run_script(oracle_python(), HERE / script, *args, threads=threads)


def run_script(
    python: Path, script: Path, *args: str, threads: int | None = 1, pythonpath: str = ""
) -> None:
    """Run ``script`` with an oracle venv's ``python``; its standard error on failure."""
    # one thread by default: on a loaded machine, OpenMP threads waiting on each other
    # cost the oracle 5x (measured); the benchmark passes threads=None for torch's default
    env = {**os.environ, "PYTHONPATH": pythonpath, "TOKENIZERS_PARALLELISM": "false"}
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    proc = subprocess.run(
        [str(python), str(script), *args], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        raise RuntimeError(f"oracle {script.name} failed:\n{proc.stderr[-3000:]}")


@functools.cache
def _folder_digest(folder: Path, stat: tuple[tuple[str, int, int], ...]) -> str:
    del stat  # part of the key only: a changed file is read again
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(folder)).encode() + b"\0")
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def folder_digest(folder: Path) -> str:
    """The digest of every file's name and bytes under ``folder`` (read once per session
    while no file's size or time changes)."""
    folder = Path(folder).resolve()
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    stat = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    return _folder_digest(folder, stat)


def _script_digest(script: str) -> str:
    return _digest((HERE / script).read_bytes())


def make_checkpoints(specs: list[dict[str, Any]]) -> list[Path]:
    """Checkpoint folders for ``specs`` (class, seed, hparams), built once per key."""
    script = _script_digest("make_checkpoint.py")
    folders = []
    for spec in specs:
        encoder = spec["hparams"].get("pretrained_model", "")
        encoder_key = folder_digest(Path(encoder)) if Path(encoder).is_dir() else encoder
        key = _digest(json.dumps(spec, sort_keys=True), VENV_KEY, script, encoder_key)
        folders.append(CACHE / "comet-ckpt" / key)
    build_once(
        "comet-ckpt",
        list(zip(specs, folders, strict=True)),
        ready=lambda folder: (folder / "checkpoints" / "model.ckpt").is_file(),
        build=lambda spec_file: _run("make_checkpoint.py", str(spec_file)),
        event="checkpoints",
    )
    return folders


def build_once(
    kind: str,
    todo: list[tuple[dict[str, Any], Path]],
    *,
    ready: Callable[[Path], bool],
    build: Callable[[Path], None],
    event: str,
) -> None:
    """Build each ``(spec, folder)`` whose folder is not ``ready``, under one lock per
    ``kind``: ``build(spec_file)`` builds the specs (each with its ``out`` folder) aside, in
    a temporary folder of ``CACHE/kind``, and each is renamed into place (an interrupted
    build never leaves a folder that looks ready); logged as ``event``."""
    todo = [(spec, folder) for spec, folder in todo if not ready(folder)]
    if not todo:
        return
    with _locked(kind):
        todo = [(spec, folder) for spec, folder in todo if not ready(folder)]
        if not todo:
            return
        (CACHE / kind).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CACHE / kind) as tmp:
            aside = [Path(tmp) / folder.name for _, folder in todo]
            spec_file = Path(tmp) / "spec.json"
            specs = [{**spec, "out": str(a)} for (spec, _), a in zip(todo, aside, strict=True)]
            spec_file.write_text(json.dumps(specs))
            build(spec_file)
            for (_, folder), built in zip(todo, aside, strict=True):
                shutil.rmtree(folder, ignore_errors=True)
                built.rename(folder)
                _log(event, folder.name)


def _predict_key(jobs: list[dict[str, Any]], threads: int | None) -> str:
    keyed = [
        {**job, "checkpoint": folder_digest(Path(job["checkpoint"]).parents[1])} for job in jobs
    ]
    return _digest(
        VENV_KEY, _script_digest("predict.py"), json.dumps(keyed, sort_keys=True), str(threads)
    )


def predict(jobs: list[dict[str, Any]], threads: int | None = 1) -> list[dict[str, Any]]:
    """unbabel-comet's ``predict`` for each job (checkpoint, batch_size, samples); cached
    by the checkpoints' digests and the jobs, except with ``threads=None`` (the benchmark
    times the oracle: its ``seconds`` must be this run's)."""
    if threads is None:
        return _predict(jobs, threads)
    key = _predict_key(jobs, threads)
    return cached_result("comet-predict", key, lambda: _predict(jobs, threads))


def cached_result(folder: str, key: str, compute: Callable[[], Any]) -> Any:
    """``compute()``'s JSON result, cached as ``CACHE/folder/key.json`` (computed once per
    key, under a lock, written aside and renamed; logged as ``folder``)."""
    cached = CACHE / folder / f"{key}.json"
    if not cached.is_file():
        # one lock per key: two workers (or sessions) asking different questions run at once
        with _locked(f"{folder}-{key}"):
            if not cached.is_file():
                result = compute()
                cached.parent.mkdir(parents=True, exist_ok=True)
                aside = cached.with_suffix(f".{os.getpid()}.tmp")
                aside.write_text(json.dumps(result))
                aside.rename(cached)
                _log(folder.removeprefix("comet-"), key)
    return json.loads(cached.read_text())


def _predict(jobs: list[dict[str, Any]], threads: int | None) -> list[dict[str, Any]]:
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
