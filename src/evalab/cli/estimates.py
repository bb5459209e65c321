"""The options the estimator commands share (``winrate``, ``arena``, ``agreement``, ``judge``,
``passk``): the bootstrap, the output format and file, and the LaTeX layout of ``-f latex``
(``--latex-split``, ``--latex-fragment``, ``--latex-caption``, ``--latex-label``, declared
once in :mod:`evalab.cli.options` as for ``compare`` and ``score``).

Each command's request dataclass extends :class:`EstimateRequest` (or :class:`PageRequest`,
whose ``-f html`` draws a leaderboard) and is registered with :func:`evalab.cli.app.command`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from evalab.cli.options import (
    BootstrapSamples,
    BootstrapSeed,
    Format,
    IntervalConfidence,
    LatexCaption,
    LatexFragment,
    LatexLabel,
    LatexSplit,
    OutFile,
    PageFormat,
    latex_layout,
)
from evalab.cli.output import PAGE_FORMATS, TABLE_FORMATS, check_format, check_out
from evalab.report.latex import LatexLayout
from evalab.stats.resampling import DEFAULT_SEED

__all__ = ["EstimateRequest", "LatexRequest", "PageRequest"]


@dataclass(frozen=True, kw_only=True)
class LatexRequest:
    """The options of how ``-f latex`` sets a table."""

    latex_split: LatexSplit = None
    latex_fragment: LatexFragment = False
    latex_caption: LatexCaption = None
    latex_label: LatexLabel = None


@dataclass(frozen=True, kw_only=True)
class EstimateRequest(LatexRequest):
    """The shared options of an estimator command that writes tables."""

    format: Format = "table"
    out: OutFile = None
    n_samples: BootstrapSamples = 1000
    seed: BootstrapSeed = DEFAULT_SEED

    #: the formats the command writes
    formats: ClassVar[tuple[str, ...]] = TABLE_FORMATS

    def checked(self, inputs: Iterable[tuple[str, str | None]]) -> LatexLayout:
        """Refuse an unknown format, a ``--latex-*`` option with another format and an
        output that is one of the ``(option, path)`` inputs; the LaTeX layout asked for."""
        check_format(self.format, self.formats)
        latex = latex_layout(
            self.format, self.latex_split, self.latex_fragment, self.latex_caption, self.latex_label
        )
        check_out(self.out, inputs)
        return latex


@dataclass(frozen=True, kw_only=True)
class PageRequest(EstimateRequest):
    """An estimator command whose ``-f html`` draws a leaderboard page; intervals at
    ``--confidence``."""

    format: PageFormat = "table"
    confidence: IntervalConfidence = 0.95

    formats: ClassVar[tuple[str, ...]] = PAGE_FORMATS
