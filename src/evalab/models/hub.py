"""Model names (``Org/name``) resolved in the local Hugging Face cache, never on the network.

The cache is the folder ``HF_HUB_CACHE`` names, else ``$HF_HOME/hub``, else
``~/.cache/huggingface/hub`` (the folders ``huggingface_hub`` itself uses). A model
``Org/name`` lives in ``models--Org--name``; the snapshot used is the one
``refs/main`` names (``snapshots/<revision>``), as ``from_pretrained`` picks it offline.

>>> is_model_name("Unbabel/wmt22-comet-da"), is_model_name("gpt2"), is_model_name("./gpt2")
(True, True, False)
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from evalab.errors import InputError, first_line

__all__ = [
    "MODEL_SETTINGS",
    "cache_dir",
    "cached_snapshot",
    "is_model_name",
    "resolve_model",
    "resolve_model_settings",
]

#: settings naming a model: a hub id (``Org/name``) there is looked up in the local cache
MODEL_SETTINGS = ("model", "encoder")

_Settings = TypeVar("_Settings")
_Loaded = TypeVar("_Loaded")

#: what a hub model id looks like: ``name`` or ``Org/name`` (letters, digits, - _ .)
_MODEL_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The Hugging Face hub cache folder, from the environment as ``huggingface_hub`` reads it."""
    env = os.environ if environ is None else environ
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def is_model_name(value: str) -> bool:
    """Whether ``value`` reads as a hub model id rather than a path (``./x``, ``/x``, ``a/b/c``)."""
    return bool(_MODEL_ID.match(value)) and not value.endswith((".ckpt", ".tsv", ".txt"))


def cached_snapshot(name: str, cache: Path | None = None) -> Path:
    """The snapshot folder of model ``name`` in the cache, or one :class:`InputError` saying
    where it looked (nothing is downloaded)."""
    root = cache_dir() if cache is None else cache
    repo = root / ("models--" + name.replace("/", "--"))
    ref = repo / "refs" / "main"
    if not ref.is_file():
        raise InputError(
            f"{name}: not a local folder and not in the Hugging Face cache (no {ref}); evalab never "
            "downloads: fetch it where there is a network (`huggingface-cli download "
            f"{name}`) and set HF_HUB_CACHE or HF_HOME, or pass the model's folder"
        )
    revision = ref.read_text(encoding="utf-8").strip()
    snapshot = repo / "snapshots" / revision
    if not revision or not snapshot.is_dir():
        raise InputError(
            f"{name}: {ref} names revision {revision!r}, but {snapshot} is not there; download it again"
        )
    return snapshot


def resolve_model(value: str) -> str:
    """A model option's value as a path: an existing path as given, a hub id (``Org/name``)
    as its cached snapshot; anything else as given (the loader says what is wrong with it)."""
    if Path(value).expanduser().exists() or not is_model_name(value):
        return value
    return str(cached_snapshot(value))


def resolve_model_settings(settings: _Settings) -> _Settings:
    """A metric's settings (a dataclass) with every :data:`MODEL_SETTINGS` string resolved by
    :func:`resolve_model`: the one place where library and CLI turn ``Org/name`` into a folder."""
    fields = {f.name for f in dataclasses.fields(settings)}  # type: ignore[arg-type]
    changes: dict[str, Any] = {}
    for key in MODEL_SETTINGS:
        value = getattr(settings, key, None) if key in fields else None
        if isinstance(value, str):
            resolved = resolve_model(value)
            if resolved != value:
                changes[key] = resolved
    return dataclasses.replace(settings, **changes) if changes else settings  # type: ignore[type-var]


def model_label(folder: Path) -> str:
    """The name a model folder is recorded under in signatures: ``Org/name`` for a snapshot
    in a Hugging Face cache (its folder is a revision hash), else the folder's name.

    >>> model_label(Path("/c/hub/models--Unbabel--wmt22-comet-da/snapshots/2760a22"))
    'Unbabel/wmt22-comet-da'
    """
    for part in Path(folder).parts:
        if part.startswith("models--"):
            return part[len("models--") :].replace("--", "/")
    return Path(folder).resolve().name


def load_local(load: Callable[..., _Loaded], folder: Path, refusal: str) -> _Loaded:
    """``load(folder)`` from local files only (a Hugging Face ``from_pretrained``), refused
    with one line naming the folder, what could not be done and the first line of why."""
    try:
        return load(str(folder), local_files_only=True)
    except Exception as exc:
        raise InputError(f"{folder}: {refusal} ({first_line(exc)})") from None
