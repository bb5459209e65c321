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

:func:`agreement` reads an evalab Δ (a metric's score difference on its own scale, with the
signature it was computed under) through the calibration fitted for that metric version,
found by the metric's name (:func:`calibration_for`): BLEU and chrF with sacrebleu's
default settings (any tokenizer), COMET and MetricX by the checkpoint their signature names.
The calibrated range is ``|Δ| ≤`` :attr:`Calibration.max_delta`, where the fitted curve
climbs to within one point of its ceiling ``a``; past it the curve is flat, and a larger Δ
would read as certainty the fit was never asked about, so the share is withheld there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from evalab.errors import SettingsError

__all__ = [
    "CALIBRATIONS",
    "SOURCE",
    "Agreement",
    "AgreementKind",
    "Calibration",
    "agreement",
    "calibration_for",
    "human_accuracy",
    "needed_delta",
]

SOURCE = "Kocmi et al. 2024 (ACL), mt-thresholds 1.0.4"


@dataclass(frozen=True)
class Calibration:
    """``accuracy(Δ) = a · σ(b · Δ)`` percent, fitted for one metric version."""

    name: str
    a: float
    b: float
    #: what one unit of Δ is, as the fit expects it
    unit: str

    @property
    def per_point(self) -> float:
        """Δ units per unit of the metric's evalab score (COMET-style 0-1 scores: 100)."""
        return 100.0 if "× 100" in self.unit else 1.0

    @property
    def max_delta(self) -> float:
        """The top of the calibrated range: the Δ at which the curve is one point below its
        ceiling ``a`` (in the fit's units)."""
        # a·σ(b·Δ) = a - 1  <=>  b·Δ = ln(a - 1)
        return math.log(self.a - 1.0) / self.b


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


class AgreementKind(Enum):
    """Whether a Δ has a share of judges: calibrated, outside the range, or no calibration."""

    CALIBRATED = "calibrated"
    OUTSIDE_RANGE = "outside-range"
    NOT_CALIBRATED = "not-calibrated"


@dataclass(frozen=True)
class Agreement:
    """The share of human judges expected to confirm a Δ's order (None unless calibrated)."""

    kind: AgreementKind
    #: ``|Δ|`` in the calibration's units (NaN without one)
    delta: float = math.nan
    share: float | None = None
    #: the calibration read (None: the metric or its version has none)
    calibration: Calibration | None = None

    def to_dict(self) -> dict[str, float | str | None]:
        c = self.calibration
        return {
            "share": self.share,
            "status": self.kind.value,
            "calibration": c.name if c else None,
            "delta": self.delta if c else None,
            "max_delta": c.max_delta if c else None,
            "source": SOURCE if c else None,
        }


#: checkpoint names (the last part of the model a signature names) -> calibration
_CHECKPOINTS = (
    ("wmt20-comet-da", "comet20"),
    ("wmt22-comet-da", "comet22"),
    ("wmt21-comet-qe-da", "comet21qe"),
    ("wmt22-cometkiwi-da", "cometkiwi22"),
    ("wmt23-cometkiwi-da-xxl", "cometkiwixxl"),
    ("wmt23-cometkiwi-da-xl", "cometkiwi23-xl-src"),
    ("xcomet-xxl", "xcometxxl"),
    ("xcomet-xl", "xcometxl"),
    ("metricx-23-qe-large", "metricx-23-qe-large"),
    ("metricx-23-large", "metricx-23-large"),
)

#: the signature fields a string metric's calibration assumes (sacrebleu's defaults)
_DEFAULTS: dict[str, dict[str, str | None]] = {
    # ngram: absent at the default order 4
    "bleu": {"case": "mixed", "eff": "no", "smooth": "exp", "ngram": None},
    "chrf": {"case": "mixed", "nc": "6", "nw": "0", "space": "no"},
}


def _fields(signature: str) -> dict[str, str]:
    return dict(f.split(":", 1) for f in signature.split("|") if ":" in f)


def calibration_for(metric: str, signature: str) -> Calibration | None:
    """The calibration fitted for this metric version, by the metric's name and the
    signature it was computed under; None where there is none (TER, chrF++, BLEU with
    non-default settings, a COMET or MetricX checkpoint the fits did not cover)."""
    fields = _fields(signature)
    if metric in _DEFAULTS:
        want = _DEFAULTS[metric]
        return CALIBRATIONS[metric] if all(fields.get(k) == v for k, v in want.items()) else None
    if metric not in ("comet", "metricx"):
        return None
    for value in fields.values():
        checkpoint = value.split("@")[0].rstrip("/").rsplit("/", 1)[-1].lower()
        for prefix, name in _CHECKPOINTS:
            if checkpoint.startswith(prefix) and metric in name:
                return CALIBRATIONS[name]
    return None


def agreement(delta: float, calibration: Calibration | None) -> Agreement:
    """The share of judges confirming the order of two systems whose scores (on the metric's
    evalab scale) differ by ``delta``; withheld outside the calibrated range."""
    if calibration is None or not math.isfinite(delta):
        return Agreement(AgreementKind.NOT_CALIBRATED)
    units = abs(delta) * calibration.per_point
    if units > calibration.max_delta:
        return Agreement(AgreementKind.OUTSIDE_RANGE, units, calibration=calibration)
    share = human_accuracy(units, calibration.name)
    return Agreement(AgreementKind.CALIBRATED, units, share, calibration)
