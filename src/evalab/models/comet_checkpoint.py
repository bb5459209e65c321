"""Reading a COMET checkpoint folder as unbabel-comet lays it out.

A folder holds ``hparams.yaml`` (whose ``class_identifier`` names the model class) and
``checkpoints/model.ckpt`` (a PyTorch Lightning checkpoint: ``state_dict`` plus the
``hyper_parameters`` the model was built with). As in unbabel-comet 2.2.7's
``load_from_checkpoint``, the class comes from ``hparams.yaml`` and every other
hyper-parameter from the checkpoint itself. Nothing here fetches anything: the encoder
the checkpoint names is loaded from a local folder by :mod:`evalab.models.comet_model`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalab.errors import InputError, first_line, require

__all__ = [
    "SUPPORTED_CLASSES",
    "UNIFIED_CLASSES",
    "CheckpointInfo",
    "checkpoint_file",
    "hparams_file",
    "input_sides",
    "read_checkpoint",
    "read_class",
    "read_hparams_yaml",
]

#: unbabel-comet ``class_identifier`` -> whether the model can read references (the
#: unified ones read them when they are given and their ``input_segments`` name them)
SUPPORTED_CLASSES: dict[str, bool] = {
    "regression_metric": True,
    "referenceless_regression_metric": False,
    "unified_metric": True,
    "xcomet_metric": True,
}
#: the classes that encode hypothesis, source and reference as one sequence
UNIFIED_CLASSES = ("unified_metric", "xcomet_metric")
#: classes unbabel-comet knows that evalab does not compute (refused by name)
KNOWN_UNSUPPORTED = ("ranking_metric",)


@dataclass(frozen=True)
class CheckpointInfo:
    """What evalab needs from a checkpoint: its class, hyper-parameters and weights."""

    path: Path
    class_identifier: str
    hparams: dict[str, Any]
    state_dict: dict[str, Any]
    sha256: str

    @property
    def uses_references(self) -> bool:
        return SUPPORTED_CLASSES[self.class_identifier]


def checkpoint_file(model: str | Path) -> Path:
    """``model.ckpt`` of a checkpoint folder (or the ``.ckpt`` path itself), absolute (a
    relative ``model.ckpt`` still has its folder two levels up)."""
    path = Path(model).absolute()
    if path.is_dir():
        path = path / "checkpoints" / "model.ckpt"
    if not path.is_file():
        raise InputError(
            f"{model}: no COMET checkpoint there; expected a folder holding "
            "checkpoints/model.ckpt and hparams.yaml (as unbabel-comet downloads it) or the .ckpt file"
        )
    return path


def hparams_file(ckpt: Path) -> Path | None:
    """``hparams.yaml`` two folders above ``ckpt`` (beside ``checkpoints/``); None if there is no such folder."""
    parents = ckpt.absolute().parents
    return parents[1] / "hparams.yaml" if len(parents) > 1 else None


def read_class(ckpt: Path) -> str:
    """The ``class_identifier`` of ``hparams.yaml`` two folders above ``ckpt``, checked."""
    name = read_hparams_yaml(ckpt).get("class_identifier")
    if name not in SUPPORTED_CLASSES:
        what = (
            "a class evalab does not compute" if name in KNOWN_UNSUPPORTED else "an unknown class"
        )
        raise InputError(
            f"{hparams_file(ckpt)}: class_identifier {name!r} is {what}; evalab computes "
            + ", ".join(SUPPORTED_CLASSES)
        )
    return str(name)


def read_hparams_yaml(ckpt: Path) -> dict[str, Any]:
    """``hparams.yaml`` two folders above ``ckpt`` (a mapping; empty when it holds none)."""
    yaml = require("yaml", what="reading COMET checkpoints", extra="semantic")
    hparams = hparams_file(ckpt)
    if hparams is None or not hparams.is_file():
        raise InputError(
            f"{ckpt}: no hparams.yaml two folders up ({hparams or 'none'}); a COMET checkpoint folder holds "
            "hparams.yaml beside checkpoints/model.ckpt: give that folder"
        )
    try:
        data = yaml.safe_load(hparams.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"{hparams}: not a readable YAML file ({first_line(exc)})") from None
    return dict(data) if isinstance(data, dict) else {}


def input_sides(class_identifier: str, hparams: dict[str, Any]) -> tuple[str, ...]:
    """The sides a model of this class reads (``mt`` first): a regression model ``mt, src,
    ref``, a reference-free one ``mt, src``, xCOMET ``mt, src, ref``, a ``UnifiedMetric``
    its ``input_segments`` (unbabel-comet's default ``mt, src, ref``)."""
    if class_identifier == "referenceless_regression_metric":
        return ("mt", "src")
    if class_identifier != "unified_metric":
        return ("mt", "src", "ref")
    segments = hparams.get("input_segments") or ["mt", "src", "ref"]
    return ("mt", *(s for s in ("src", "ref") if s in segments))


def read_checkpoint(model: str | Path) -> CheckpointInfo:
    """Class, hyper-parameters, weights and SHA-256 of the checkpoint at ``model``."""
    torch = require("torch", what="COMET", extra="semantic")
    ckpt = checkpoint_file(model)
    class_identifier = read_class(ckpt)
    if ckpt.stat().st_size == 0:
        raise InputError(
            f"{ckpt}: empty (0 bytes); not a PyTorch checkpoint (an interrupted download?)"
        )
    try:
        # weights_only: a checkpoint is data, and loading it must not run code from it
        data = torch.load(ckpt, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise InputError(f"{ckpt}: not a readable PyTorch checkpoint ({first_line(exc)})") from None
    if not isinstance(data, dict) or "state_dict" not in data or "hyper_parameters" not in data:
        raise InputError(f"{ckpt}: not a Lightning checkpoint (no state_dict and hyper_parameters)")
    for key in ("state_dict", "hyper_parameters"):
        if not isinstance(data[key], dict):
            raise InputError(
                f"{ckpt}: {key} is a {type(data[key]).__name__}, not a mapping; not a Lightning checkpoint"
            )
    hparams = dict(data["hyper_parameters"])
    check_hidden_sizes(hparams.get("hidden_sizes", DEFAULT_HIDDEN_SIZES), ckpt)
    return CheckpointInfo(ckpt, class_identifier, hparams, data["state_dict"], _sha256(ckpt))


#: unbabel-comet's estimator sizes when a checkpoint names none
DEFAULT_HIDDEN_SIZES = [3072, 1024]


def check_hidden_sizes(sizes: Any, ckpt: Path) -> None:
    """``hidden_sizes`` must be a non-empty list of positive integers (the estimator's layers)."""
    if (
        not isinstance(sizes, (list, tuple))
        or not sizes
        or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in sizes)
    ):
        raise InputError(
            f"{ckpt}: hidden_sizes {sizes!r} is not a non-empty list of positive integers "
            "(the estimator's layer widths, e.g. [3072, 1024])"
        )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()
