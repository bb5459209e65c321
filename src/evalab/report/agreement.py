"""The words and cells of the human-agreement column beside a Δ (:mod:`evalab.stats.thresholds`).

A row's ``human_agreement`` (:meth:`evalab.stats.thresholds.Agreement.to_dict`) becomes the
cell: the share of judges (two decimals); past the calibrated range, where the fitted curve
is within a point of its ceiling, ``≥`` the ceiling less that point (the fit read no
further); the no-value symbol where the metric has no calibration; the footer names the
calibration, its source and its range.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from evalab.report.numbers import NO_VALUE
from evalab.report.table import Number, TableCell
from evalab.stats.thresholds import CALIBRATIONS, SOURCE, AgreementKind

__all__ = ["AGREEMENT_HEADER", "agreement_cell", "agreement_notes"]

AGREEMENT_HEADER = "humans agree"


def agreement_cell(agreement: Mapping[str, Any] | None) -> TableCell:
    """The column's cell for one row (``None``: the baseline's row, no Δ)."""
    if agreement is None:
        return ""
    kind = AgreementKind(agreement["status"])
    if kind is AgreementKind.CALIBRATED:
        return Number(agreement["share"], 2)
    if kind is AgreementKind.OUTSIDE_RANGE:
        return f"≥ {_floor(agreement['calibration']):.2f}"
    return NO_VALUE


def _floor(name: str) -> float:
    """The share at the top of the calibrated range: the fit's ceiling less one point."""
    return (CALIBRATIONS[name].a - 1.0) / 100.0


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
            f"fit {name}); calibrated for |Δ| ≤ {c.max_delta:.2f}, where it is 1 point below its "
            f"ceiling; beyond it ≥ {_floor(name):.2f}, not extrapolated further"
        )
    return lines
