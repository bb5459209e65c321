"""The value every :meth:`Metric.stats` call returns: rows plus what they were computed under.

A :class:`Stats` carries the per-segment rows together with the names of their columns,
the number of references, the metric's name and signature, and whether rows of different
calls may be combined (``additive``). Everything downstream (``aggregate``, bootstrap
intervals, paired tests, ``--jobs`` shards) takes this value, so a score and its signature
never depend on which call came before, and shards that cannot be combined are refused
instead of summed.

>>> import numpy as np
>>> a = Stats("toy", ("hits", "count"), np.array([[1.0, 1.0]]), nrefs=1, signature="nrefs:1")
>>> b = Stats("toy", ("hits", "count"), np.array([[0.0, 1.0]]), nrefs=1, signature="nrefs:1")
>>> Stats.concat([a, b]).sums().tolist()
[1.0, 2.0]
>>> Stats.concat([a, Stats("toy", ("hits", "count"), np.zeros((1, 2)), nrefs=2, signature="nrefs:2")])
Traceback (most recent call last):
...
evalab.errors.InputError: toy: cannot concatenate stats computed with different numbers of references (1 and 2); ...

``nrefs`` is ``"var"`` when the number of references differs between segments (a ``None``
reference marks a missing one, as in sacrebleu), and the signature then says ``nrefs:var``.
Parts computed with different numbers are refused rather than relabelled: a value's
signature is the metric's, which :class:`Stats` cannot recompute, so whoever splits a
corpus with missing references relabels its parts with the whole corpus's count
(``metric.make_stats(part.rows, nrefs, part.context)``, as ``evalab.metrics.parallel`` does).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

import numpy as np

from evalab.errors import InputError

__all__ = ["NRefs", "Stats"]

#: references per segment: a count, ``"var"`` (it differs between segments: ``None``
#: references), or ``None`` (reference-free rows, e.g. ``LossMetric.stats_from_nll``)
NRefs: TypeAlias = int | Literal["var"] | None


@dataclass(frozen=True, eq=False)
class Stats:
    """Per-segment sufficient statistics of one metric, with their provenance.

    ``rows`` is a read-only float64 array ``[n_segments, len(stat_names)]``. ``signature``
    is the metric's signature for these settings and ``nrefs`` (a pure function of both).
    ``additive`` says whether rows of different calls may be concatenated; a metric whose
    rows depend on corpus-level context (IDF-weighted BERTScore) is not additive, and
    ``context`` then names that context (e.g. a digest of the references that define the
    IDF table): such rows combine only with rows of the same context.
    """

    metric: str
    stat_names: tuple[str, ...]
    rows: np.ndarray
    nrefs: NRefs
    signature: str
    additive: bool = True
    context: str = field(default="")

    def __post_init__(self) -> None:
        if isinstance(self.nrefs, str) and self.nrefs != "var":
            raise InputError(
                f"{self.metric}: nrefs must be a count, 'var' or None, got {self.nrefs!r}"
            )
        rows = np.array(self.rows, dtype=np.float64)  # a private copy: the value is immutable
        if rows.ndim != 2 or rows.shape[1] != len(self.stat_names):
            raise InputError(
                f"{self.metric}: stats rows must have shape [n_segments, {len(self.stat_names)}] "
                f"({', '.join(self.stat_names)}), got {rows.shape}"
            )
        rows.setflags(write=False)
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "stat_names", tuple(self.stat_names))

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        # refused, not converted: numpy would otherwise take the value for an object scalar,
        # and np.array_equal(stats, rows) would be False where the rows are equal
        raise TypeError(
            f"{self.metric}: a Stats value is not an array; its rows are stats.rows "
            "(column sums: stats.sums())"
        )

    def sums(self) -> np.ndarray:
        """Column sums of the rows: the corpus statistics (float64 ``[k]``)."""
        sums: np.ndarray = self.rows.sum(axis=0)
        return sums

    def select(self, index: Any) -> Stats:
        """The rows at ``index`` (a slice, mask or index array) under the same provenance."""
        return replace(self, rows=self.rows[index])

    def check_finite(self) -> None:
        """Refuse rows with NaN or infinite values, naming the first bad row."""
        bad = ~np.isfinite(self.rows).all(axis=1)
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(
                f"{self.metric}: stats row {i} contains NaN or infinite values "
                f"({dict(zip(self.stat_names, self.rows[i].tolist(), strict=True))}); "
                "rows must be finite to be summed"
            )

    @classmethod
    def concat(cls, parts: Iterable[Stats]) -> Stats:
        """Rows of several calls (e.g. shards of one corpus) in order, as one value.

        Refused when the parts differ in metric, columns, number of references (see the
        module docstring for ``"var"``) or signature, or when the metric is not additive and
        the parts were computed under different corpus-level contexts.
        """
        parts = list(parts)
        if not parts:
            raise InputError("cannot concatenate an empty list of stats")
        first = parts[0]
        for other in parts[1:]:
            if not isinstance(other, Stats):
                raise InputError(
                    f"{first.metric}: can only concatenate Stats values, got {type(other).__name__}"
                )
            if (other.metric, other.stat_names) != (first.metric, first.stat_names):
                raise InputError(
                    f"cannot concatenate stats of {first.metric!r} ({', '.join(first.stat_names)}) "
                    f"and {other.metric!r} ({', '.join(other.stat_names)})"
                )
            if other.nrefs != first.nrefs:
                raise InputError(
                    f"{first.metric}: cannot concatenate stats computed with different numbers of "
                    f"references ({first.nrefs} and {other.nrefs}); a corpus whose segments have "
                    "different numbers is nrefs 'var' as a whole: compute its stats in one call, or "
                    "relabel every part with metric.make_stats(part.rows, 'var', part.context)"
                )
            if other.signature != first.signature:
                raise InputError(
                    f"{first.metric}: cannot concatenate stats computed under different signatures: "
                    f"{first.signature!r} and {other.signature!r}"
                )
            if not (first.additive and other.additive) and other.context != first.context:
                raise InputError(
                    f"{first.metric}: these stats are not additive (they depend on corpus-level "
                    "context such as an IDF table) and were computed on different corpora; score "
                    "the whole corpus in one call instead of combining shards"
                )
        rows = np.concatenate([p.rows for p in parts], axis=0)
        return replace(first, rows=rows, additive=all(p.additive for p in parts))
