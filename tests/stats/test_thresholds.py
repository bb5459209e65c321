"""The human-accuracy calibration equals the mt-thresholds package (Kocmi et al. 2024)."""

from __future__ import annotations

import math

import pytest

from evalab.errors import SettingsError
from evalab.stats.thresholds import CALIBRATIONS, human_accuracy, needed_delta

mt_thresholds = pytest.importorskip("mt_thresholds")


@pytest.mark.parametrize("metric", sorted(CALIBRATIONS))
def test_equals_mt_thresholds(metric: str) -> None:
    assert CALIBRATIONS.keys() == mt_thresholds.METRICS
    for delta in (-2.0, -0.3, 0.0, 0.05, 0.5, 1.0, 2.5, 7.0):
        assert human_accuracy(delta, metric) == pytest.approx(
            mt_thresholds.accuracy(delta, metric) / 100, abs=1e-9
        )
    for accuracy in (0.5, 0.6, 0.75, 0.9):
        expected = mt_thresholds.delta(accuracy, metric)
        got = needed_delta(accuracy, metric)
        assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(
            expected, abs=1e-9
        )


def test_refusals() -> None:
    with pytest.raises(SettingsError, match="no human-accuracy calibration for 'ter'"):
        human_accuracy(1.0, "ter")
    with pytest.raises(SettingsError, match=r"between 0\.5 and 1"):
        needed_delta(0.4, "bleu")
