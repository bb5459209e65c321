"""The words and cells of the human-agreement column beside a Δ (:mod:`evalab.stats.thresholds`).

A row's ``human_agreement`` (:meth:`evalab.stats.thresholds.Agreement.to_dict`) becomes the
cell: the share of judges (two decimals), ``> range`` outside the calibrated range (no
number: the fit is not extrapolated), the no-value symbol where the metric has no
calibration; the footer names the calibration, its source and its range.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from evalab.report.numbers import NO_VALUE
from evalab.report.table import Number, TableCell
from evalab.stats.thresholds import CALIBRATIONS, SOURCE, AgreementKind

__all__ = ["AGREEMENT_HEADER", "OUTSIDE", "agreement_cell", "agreement_notes"]

AGREEMENT_HEADER = "humans agree"
#: the cell of a Δ outside the calibrated range
OUTSIDE = "> range"


def agreement_cell(agreement: Mapping[str, Any] | None) -> TableCell:
    """The column's cell for one row (``None``: the baseline's row, no Δ)."""
    if agreement is None:
        return ""
    kind = AgreementKind(agreement["status"])
    if kind is AgreementKind.CALIBRATED:
        return Number(agreement["share"], 2)
    return OUTSIDE if kind is AgreementKind.OUTSIDE_RANGE else NO_VALUE


def agreement_notes(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """One footer line per metric: the calibration read, its source and range, or that the
    metric has none."""
    by_metric: dict[str, str | None] = {}
    for r in rows:
        a = r.get("human_agreement")
        if a is not None:
            by_metric.setdefault(r["metric"], a["calibration"])
    lines = []
    for metric, name in by_metric.items():
        if name is None:
            lines.append(
                f"{AGREEMENT_HEADER} ({metric}): {NO_VALUE}, no published calibration for this "
                "metric with these settings or this checkpoint"
            )
            continue
        c = CALIBRATIONS[name]
        lines.append(
            f"{AGREEMENT_HEADER} ({metric}): share of human judges expected to confirm the "
            f"order the Δ gives, {c.a:.1f}% · σ({c.b:.4g} · |Δ|), Δ in {c.unit}s ({SOURCE}, "
            f"fit {name}); calibrated for |Δ| ≤ {c.max_delta:.2f}, 1 point below the fit's "
            f"ceiling; {OUTSIDE}: beyond it, not extrapolated"
        )
    return lines
