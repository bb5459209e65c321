"""Optional heavy parts behind extras: token embedders (transformers) and static tables.

Nothing here imports torch at import time; :mod:`evalab.models.embedders` imports it
inside the functions that need it and raises :class:`~evalab.errors.MissingExtraError`
naming the ``semantic`` extra when it is absent.
"""

from evalab.models.embedders import (
    Embedder,
    StaticTableEmbedder,
    TokenEmbeddings,
    TransformerEmbedder,
    default_model_path,
    load_embedder,
)

__all__ = [
    "Embedder",
    "StaticTableEmbedder",
    "TokenEmbeddings",
    "TransformerEmbedder",
    "default_model_path",
    "load_embedder",
]
