"""Shared fixtures: the CLI runner and the WMT22 data beside the repository."""

from __future__ import annotations

import io
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: scripts that run inside the COMET oracle's own virtual environment (they import comet and
#: pytorch_lightning, which evalab's environment does not have): not collected here, where
#: --doctest-modules would import every module under tests/
collect_ignore = ["metrics/comet_oracle/make_checkpoint.py", "metrics/comet_oracle/predict.py"]
WMT22 = Path(os.environ.get("EVALAB_WMT22", REPO.parent / "shared" / "wmt22"))


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(capsys, monkeypatch):
    """Run ``evalab ARGS...`` in-process; returns exit code, stdout and stderr."""
    from evalab.cli import main

    def run(*args: str, stdin: str | None = None) -> CliResult:
        if stdin is not None:
            raw = stdin.encode("utf-8")
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"))
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture(scope="session")
def wmt22() -> Path:
    """The WMT22 folder (``../shared/wmt22`` beside the repo, or $EVALAB_WMT22)."""
    if not (WMT22 / "official-scores.tsv").exists():
        pytest.skip(f"WMT22 data not found at {WMT22}")
    return WMT22


def wmt_file(kind: str, pair: str, name: str) -> Path:
    """Path of a WMT22 file: kind is 'src', 'ref' or 'hyp'; name the ref ID or system."""
    tgt = pair.split("-")[1]
    if kind == "src":
        return WMT22 / "sources" / f"generaltest2022.{pair}.src.{pair.split('-')[0]}"
    folder = "references" if kind == "ref" else "system-outputs"
    return WMT22 / folder / f"generaltest2022.{pair}.{kind}.{name}.{tgt}"


def wmt_systems(pair: str) -> list[str]:
    """System names of a pair, sorted."""
    tgt = pair.split("-")[1]
    prefix = f"generaltest2022.{pair}.hyp."
    return sorted(
        p.name[len(prefix) : -len(tgt) - 1]
        for p in (WMT22 / "system-outputs").glob(f"{prefix}*.{tgt}")
    )


def read_lines(path: Path) -> list[str]:
    """Lines of a UTF-8 file split on \\n only (as evalab reads them)."""
    from evalab.io import read_segments

    return read_segments(path)


def write_wmt_subset(
    folder: Path, pair: str, systems: list[str], n: int, ref: str = "A"
) -> tuple[str, list[str]]:
    """The first ``n`` segments of a WMT22 reference and systems, written into ``folder``:
    ``(reference path, system paths)`` in the order given."""
    tgt = pair.split("-")[1]

    def write(name: str, kind: str, which: str) -> str:
        path = folder / f"{name}.{tgt}"
        path.write_text(
            "\n".join(read_lines(wmt_file(kind, pair, which))[:n]) + "\n", encoding="utf-8"
        )
        return str(path)

    return write("ref", "ref", ref), [write(s, "hyp", s) for s in systems]


ALPACA = Path(os.environ.get("EVALAB_ALPACA_EVAL", REPO.parent / "shared" / "alpaca-eval"))


@pytest.fixture(scope="session")
def alpaca_annotations(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """AlpacaEval 2.0's annotation files (``../shared/alpaca-eval``), unpacked once a session."""
    import tarfile

    archive = ALPACA / "annotations.tar.xz"
    if not archive.exists():
        pytest.skip(f"AlpacaEval data not found at {ALPACA}")
    folder = tmp_path_factory.mktemp("alpaca-eval")
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    return folder / "annotations"
