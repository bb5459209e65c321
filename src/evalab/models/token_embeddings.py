"""The value an embedder hands back: the tokens of one sentence with their unit vectors."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

__all__ = ["TokenEmbeddings", "unit_rows"]


@dataclass(frozen=True)
class TokenEmbeddings:
    """The tokens of one sentence with their unit vectors.

    ``vectors`` is ``[n_tokens, dim]`` float32 with unit rows (zero rows for tokens outside
    a static table); ``content`` is ``False`` for special tokens (weight 0, still a match
    target, as in bert-score); ``known`` is ``False`` for tokens without a vector.
    """

    tokens: tuple[str, ...]
    keys: tuple[Hashable, ...]
    vectors: np.ndarray
    content: np.ndarray
    known: np.ndarray
    truncated: bool = False

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def nbytes(self) -> int:
        """Approximate memory held (for the cache budget)."""
        return int(
            self.vectors.nbytes + self.content.nbytes + self.known.nbytes + 64 * len(self.tokens)
        )

    def select(self, mask: np.ndarray) -> TokenEmbeddings:
        """The tokens where ``mask`` is true (used to drop function words)."""
        mask = np.asarray(mask, dtype=bool)
        idx = np.flatnonzero(mask)
        return TokenEmbeddings(
            tokens=tuple(self.tokens[i] for i in idx),
            keys=tuple(self.keys[i] for i in idx),
            vectors=self.vectors[idx],
            content=self.content[idx],
            known=self.known[idx],
            truncated=self.truncated,
        )


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norm; all-zero rows stay zero (cosine 0, not NaN).

    >>> unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [[0.6, 0.8], [0.0, 0.0]]
    """
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    out: np.ndarray = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return out
