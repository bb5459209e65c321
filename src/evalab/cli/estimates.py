"""The options the estimator commands share (``winrate``, ``arena``, ``agreement``, ``judge``,
``passk``): the bootstrap, the output format and file, and the LaTeX layout of ``-f latex``
(the :class:`~evalab.cli.options.LatexOptions` group, as ``compare`` and ``score`` take it).

Each command's request dataclass extends :class:`EstimateRequest` (or :class:`PageRequest`,
whose ``-f html`` draws a leaderboard) and is registered with :func:`evalab.cli.app.command`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar

from evalab.cli.options import (
    BootstrapSamples,
    BootstrapSeed,
    Format,
    IntervalConfidence,
    LatexOptions,
    OutFile,
    PageFormat,
)
from evalab.cli.output import PAGE_FORMATS, TABLE_FORMATS, check_format, check_out
from evalab.report.latex import LatexLayout
from evalab.stats.resampling import DEFAULT_SEED

__all__ = ["EstimateRequest", "PageRequest"]


@dataclass(frozen=True, kw_only=True)
class EstimateRequest:
    """The shared options of an estimator command that writes tables."""

    format: Format = "table"
    out: OutFile = None
    n_samples: BootstrapSamples = 1000
    seed: BootstrapSeed = DEFAULT_SEED
    latex: LatexOptions = field(default_factory=LatexOptions)

    #: the formats the command writes
    formats: ClassVar[tuple[str, ...]] = TABLE_FORMATS

    def checked(self, inputs: Iterable[tuple[str, str | None]]) -> LatexLayout:
        """Refuse an unknown format, a ``--latex-*`` option with another format and an
        output that is one of the ``(option, path)`` inputs; the LaTeX layout asked for."""
        check_format(self.format, self.formats)
        latex = self.latex.layout(self.format)
        check_out(self.out, inputs)
        return latex


@dataclass(frozen=True, kw_only=True)
class PageRequest(EstimateRequest):
    """An estimator command whose ``-f html`` draws a leaderboard page; intervals at
    ``--confidence``."""

    format: PageFormat = "table"
    confidence: IntervalConfidence = 0.95

    formats: ClassVar[tuple[str, ...]] = PAGE_FORMATS
