"""Pick and share the token embedder of an embedding-based metric (BERTScore and the like).

:func:`load_embedder` turns a model path into an :class:`Embedder` (a Hugging Face encoder
folder or a word-vector table file) and keeps one per set of arguments for the process.
The embedders live in their own modules, imported from there:

* :mod:`evalab.models.token_embeddings`: the value (:class:`TokenEmbeddings`).
* :mod:`evalab.models.embedding_cache`: the :class:`Embedder` interface and its cache.
* :mod:`evalab.models.static_table`: :class:`StaticTableEmbedder` (word-vector tables).
* :mod:`evalab.models.hf_encoder`: :class:`TransformerEmbedder` (Hugging Face loading).
* :mod:`evalab.models.idf`: bert-score's IDF weights.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalab.errors import InputError, SettingsError
from evalab.models.embedding_cache import Embedder
from evalab.models.hf_encoder import TransformerEmbedder, default_model_path
from evalab.models.static_table import StaticTableEmbedder

__all__ = ["load_embedder"]

_LOADED: dict[tuple[Any, ...], Embedder] = {}


def load_embedder(
    model: str | Path | None = None,
    *,
    layer: int | None = None,
    device: str = "cpu",
    batch_size: int | None = None,
    max_length: int | None = None,
    oov: str = "zero",
) -> Embedder:
    """The embedder for ``model``: a directory is a Hugging Face encoder, a file a static
    table, ``None`` the shipped all-MiniLM-L6-v2. Loaded embedders are shared within the
    process (same arguments, same object), so their string caches are shared too."""
    path = default_model_path() if model is None else Path(model)
    if not path.exists():
        raise InputError(
            f"{path}: model path does not exist; pass a Hugging Face encoder directory or a "
            "word-vector table file (word<TAB>v1<TAB>v2...)"
        )
    if path.is_dir():
        key: tuple[Any, ...] = (
            "transformer",
            str(path.resolve()),
            layer,
            device,
            batch_size,
            max_length,
        )
    else:
        if layer not in (None, 0):
            raise SettingsError(
                f"layer {layer} is out of range for the static table {path}: it has only layer 0"
            )
        key = ("static", str(path.resolve()), oov, path.stat().st_mtime_ns)
    if key not in _LOADED:
        if path.is_dir():
            _LOADED[key] = TransformerEmbedder(path, layer, device, batch_size, max_length)
        else:
            _LOADED[key] = StaticTableEmbedder(path, oov=oov)
    return _LOADED[key]
