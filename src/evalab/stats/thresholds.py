"""What a metric difference means to people: the share of human judges expected to agree.

Kocmi, Zouhar, Federmann & Post (2024), "Navigating the Metrics Maze: Reconciling Score
Magnitudes and Accuracies" (ACL 2024), fitted, for each metric, how often the system that a
metric scores higher by ``Δ`` is also the one human judges prefer (system-level pairwise
accuracy against WMT human judgements), as ``accuracy(Δ) = a · σ(b · Δ)`` (percent). Their
``mt-thresholds`` package (1.0.4) carries the fitted ``(a, b)``; the numbers below are those,
so :func:`human_accuracy` equals its ``accuracy`` (tested to 1e-9).

``Δ`` is the improvement in the metric's own units as the paper reports them: BLEU and chrF
points (0-100), COMET and BLEURT-style scores times 100 where the paper does (``comet22``:
``Δ = 1`` is one COMET point ×100), MetricX in its own 0-25 units with ``Δ`` the *decrease*
(lower is better). A calibration holds for the metric version it was fitted on and for the
range of Δs seen in WMT (a few points): outside it, it is an extrapolation.

>>> round(human_accuracy(1.0, "bleu"), 4)
0.6399
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evalab.errors import SettingsError

__all__ = ["CALIBRATIONS", "Calibration", "human_accuracy", "needed_delta"]

SOURCE = "Kocmi et al. 2024 (ACL), mt-thresholds 1.0.4"


@dataclass(frozen=True)
class Calibration:
    """``accuracy(Δ) = a · σ(b · Δ)`` percent, fitted for one metric version."""

    name: str
    a: float
    b: float
    #: what one unit of Δ is, as the fit expects it
    unit: str


#: the published fits (mt-thresholds 1.0.4's table), by lower-case name
CALIBRATIONS: dict[str, Calibration] = {
    c.name: c
    for c in (
        Calibration("bleu", 88.33333333333225, 0.9663926931178954, "BLEU point"),
        Calibration("chrf", 92.999999999972, 1.1142732157139852, "chrF point"),
        Calibration("spbleu101", 84.58445492823891, 1.262507595109315, "spBLEU point"),
        Calibration("spbleu200", 90.99999999998793, 0.8079046528617078, "spBLEU point"),
        Calibration("bleurt-default", 94.66666666666666, 0.4947232832741672, "BLEURT × 100"),
        Calibration("bleurt20", 98.33333333332963, 1.3727206190931929, "BLEURT × 100"),
        Calibration("comet20", 97.33333333332897, 0.7266990738678005, "COMET × 100"),
        Calibration("comet22", 96.22374133884283, 2.8359194570556636, "COMET × 100"),
        Calibration("comet21qe", 93.7997435048193, 43.38413992717536, "COMET-QE × 100"),
        Calibration("cometkiwi22", 98.88141616584615, 2.719280643871758, "CometKiwi × 100"),
        Calibration("xcometxxl", 98.93432477039522, 1.1629533711748128, "xCOMET × 100"),
        Calibration("xcometxl", 96.56738237041118, 1.4535595865214588, "xCOMET × 100"),
        Calibration("cometkiwixxl", 96.23167242471065, 1.2826577343149304, "CometKiwi × 100"),
        Calibration("bertscore", 94.99999999999999, 2.6823162097239917, "BERTScore × 100"),
        Calibration("cometkiwi23-xl-src", 96.39080593943235, 1.8888877927713834, "CometKiwi × 100"),
        Calibration("metricx-23-large", 93.60777624544488, 26.277850179370947, "MetricX decrease"),
        Calibration(
            "metricx-23-qe-large", 97.99999999782683, 15.541455989240491, "MetricX decrease"
        ),
    )
}


def _calibration(metric: str) -> Calibration:
    try:
        return CALIBRATIONS[metric.lower()]
    except KeyError:
        raise SettingsError(
            f"no human-accuracy calibration for {metric!r}; calibrated: {', '.join(sorted(CALIBRATIONS))}"
        ) from None


def human_accuracy(delta: float, metric: str) -> float:
    """The share (0-1) of system pairs with this ``delta`` whose order people confirm."""
    c = _calibration(metric)
    return c.a / 100.0 / (1.0 + math.exp(-c.b * delta))


def needed_delta(accuracy: float, metric: str) -> float:
    """The ``delta`` at which people confirm the order with this ``accuracy`` (0.5 to the
    calibration's ceiling ``a``; NaN above the ceiling, which no Δ reaches)."""
    c = _calibration(metric)
    if not 0.5 <= accuracy <= 1.0:
        raise SettingsError(f"accuracy must be between 0.5 and 1, got {accuracy}")
    ratio = c.a / (accuracy * 100.0) - 1.0
    return -math.log(ratio) / c.b if ratio > 0 else math.nan
