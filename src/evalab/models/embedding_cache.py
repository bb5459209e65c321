"""The :class:`Embedder` interface and its per-string cache.

Every embedder caches results by sentence string (LRU, bounded in bytes), so a reference
shared by nine systems, or a segment repeated in a corpus, goes through the model once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from evalab.models.token_embeddings import TokenEmbeddings

__all__ = ["DEFAULT_CACHE_BYTES", "Embedder"]

#: default byte budget of an embedder's per-string cache
DEFAULT_CACHE_BYTES = 512 * 2**20


class Embedder(ABC):
    """Per-token embeddings of sentences, cached by string."""

    #: short display name (``all-MiniLM-L6-v2``, a table's file name)
    name: str
    #: short hash of the configuration/weights, for signatures
    fingerprint: str
    #: the layer whose hidden states are used (0 for static tables)
    layer: int
    #: ``"transformer"`` or ``"static"``
    kind: str

    def __init__(self, cache_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self._cache: OrderedDict[str, TokenEmbeddings] = OrderedDict()
        self._cache_bytes = cache_bytes
        self._cached_bytes = 0
        #: how many sentences went through the model (for tests and benchmarks)
        self.computed = 0
        #: seconds spent per stage (``tokenize``, ``forward``), summed over calls
        self.profile: dict[str, float] = {"tokenize": 0.0, "forward": 0.0}

    def embed(self, sentences: Sequence[str], *, progress: bool = False) -> list[TokenEmbeddings]:
        """Embeddings of ``sentences`` (in order); each distinct uncached string once."""
        out: dict[str, TokenEmbeddings] = {}
        missing: list[str] = []
        for s in sentences:
            if s in out:
                continue
            hit = self._cache.get(s)
            if hit is not None:
                self._cache.move_to_end(s)
                out[s] = hit
            else:
                out[s] = None  # type: ignore[assignment]
                missing.append(s)
        if missing:
            computed = self._embed_uncached(missing, progress=progress)
            self.computed += len(missing)
            for s, emb in zip(missing, computed, strict=True):
                out[s] = emb
                self._remember(s, emb)
        return [out[s] for s in sentences]

    def _remember(self, sentence: str, emb: TokenEmbeddings) -> None:
        size = emb.nbytes + 2 * len(sentence)
        if size > self._cache_bytes:
            return
        self._cache[sentence] = emb
        self._cached_bytes += size
        while self._cached_bytes > self._cache_bytes:
            old, old_emb = self._cache.popitem(last=False)
            self._cached_bytes -= old_emb.nbytes + 2 * len(old)

    def clear_cache(self) -> None:
        """Forget every cached embedding."""
        self._cache.clear()
        self._cached_bytes = 0

    @abstractmethod
    def _embed_uncached(self, sentences: list[str], *, progress: bool) -> list[TokenEmbeddings]:
        """Embeddings of distinct sentences not in the cache."""

    def similarity(self, hyp: TokenEmbeddings, ref: TokenEmbeddings) -> np.ndarray:
        """Cosine matrix ``[len(hyp), len(ref)]`` (float64)."""
        return hyp.vectors.astype(np.float64) @ ref.vectors.astype(np.float64).T

    def function_words(self) -> frozenset[str]:
        """Words this embedder marks as function words (static tables with a tag column)."""
        return frozenset()
