"""bert-score's inverse document frequency weights over reference token keys."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

__all__ = ["idf_weights"]


def idf_weights(
    reference_keys: Sequence[Sequence[Hashable]],
) -> tuple[dict[Hashable, float], float]:
    """bert-score's IDF: ``log((M + 1) / (df + 1))`` over ``M`` reference documents,
    ``log(M + 1)`` for a token no reference contains. Returns (table, unseen value).

    >>> table, unseen = idf_weights([["a", "b"], ["a"]])
    >>> round(table["a"], 4), round(table["b"], 4), round(unseen, 4)
    (0.0, 0.4055, 1.0986)
    """
    m = len(reference_keys)
    df: dict[Hashable, int] = {}
    for doc in reference_keys:
        for k in set(doc):
            df[k] = df.get(k, 0) + 1
    return {k: math.log((m + 1) / (c + 1)) for k, c in df.items()}, math.log(m + 1)
