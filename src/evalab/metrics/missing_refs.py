"""A variable number of references: ``None`` marks a missing reference (sacrebleu's convention).

A segment whose reference in some stream is ``None`` is scored against its other
references only, exactly as if those were all it had. :func:`rows_with_missing` gets
this from any metric's per-segment statistics by scoring each group of segments that
share the same set of present references on its own and putting the rows back in order.
Statistics that depend on the whole corpus (BERTScore's IDF weights) are then computed
per group. As in sacrebleu, the signature says ``nrefs:var`` when the number differs
between segments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from evalab.errors import InputError

__all__ = ["check_some_reference", "has_missing", "reference_count", "rows_with_missing"]


def has_missing(references: Sequence[Sequence[str | None]]) -> bool:
    """Whether any reference stream has a ``None``."""
    return any(None in stream for stream in references)


def reference_count(references: Sequence[Sequence[str | None]]) -> int | Literal["var"]:
    """References per segment for the signature: the number, or ``"var"`` if it varies."""
    if not has_missing(references):
        return len(references)
    counts = {sum(r is not None for r in refs) for refs in zip(*references, strict=True)}
    return counts.pop() if len(counts) == 1 else "var"


def check_some_reference(references: Sequence[Sequence[str | None]], metric: str) -> None:
    """Refuse a segment whose reference is ``None`` in every stream."""
    for i, refs in enumerate(zip(*references, strict=True)):
        if all(r is None for r in refs):
            raise InputError(
                f"{metric}: segment {i} has no reference (None in every reference stream); "
                "give at least one reference per segment"
            )


def rows_with_missing(
    segment_stats: Callable[[list[str], list[list[str]]], np.ndarray],
    hypotheses: list[str],
    references: Sequence[Sequence[str | None]],
    metric: str,
) -> np.ndarray:
    """Rows of ``segment_stats`` with each segment scored against its present references."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, refs in enumerate(zip(*references, strict=True)):
        present = tuple(j for j, r in enumerate(refs) if r is not None)
        if not present:
            check_some_reference(references, metric)
        groups.setdefault(present, []).append(i)
    out: np.ndarray | None = None
    for present, idx in groups.items():
        rows = np.asarray(
            segment_stats(
                [hypotheses[i] for i in idx],
                [[r for i in idx if (r := references[j][i]) is not None] for j in present],
            ),
            dtype=np.float64,
        )
        if out is None:
            out = np.zeros((len(hypotheses), rows.shape[1]), dtype=np.float64)
        out[idx] = rows
    assert out is not None  # hypotheses is not empty, so there is a group
    return out
