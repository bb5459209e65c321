"""The human-accuracy calibration equals the mt-thresholds package (Kocmi et al. 2024)."""

from __future__ import annotations

import math

import pytest

from evalab.errors import SettingsError
from evalab.stats.thresholds import (
    CALIBRATIONS,
    AgreementKind,
    agreement,
    calibration_for,
    human_accuracy,
    needed_delta,
)

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


# -- reading an evalab Δ: the calibration by metric name and signature, the calibrated range -----
BLEU_SIG = "bleu|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:0.1.0"
CHRF_SIG = "chrf|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:0.1.0"


@pytest.mark.parametrize(
    ("metric", "signature", "expected"),
    [
        ("bleu", BLEU_SIG, "bleu"),
        ("bleu", BLEU_SIG.replace("tok:13a", "tok:ja-mecab"), "bleu"),  # any tokenizer
        ("bleu", BLEU_SIG.replace("case:mixed", "case:lc"), None),
        ("bleu", BLEU_SIG.replace("smooth:exp", "smooth:floor[0.10]"), None),
        ("bleu", BLEU_SIG + "|ngram:2", None),
        ("chrf", CHRF_SIG, "chrf"),
        ("chrf++", CHRF_SIG.replace("nw:0", "nw:2"), None),
        ("ter", "ter|nrefs:1|case:lc|tok:tercom", None),
        ("comet", "comet|nrefs:1|model:Unbabel/wmt22-comet-da@1a2b3c4d5e6f|version:0.1.0", "comet22"),
        ("comet", "comet|model:wmt22-cometkiwi-da@1a2b|version:0.1.0", "cometkiwi22"),
        ("comet", "comet|model:Unbabel/XCOMET-XXL@1a2b", "xcometxxl"),
        ("comet", "comet|model:Unbabel/XCOMET-XL@1a2b", "xcometxl"),
        ("comet", "comet|model:tiny-comet@1a2b", None),
        ("metricx", "metricx|model:google/metricx-23-qe-large-v2p0@1a2b", "metricx-23-qe-large"),
        ("metricx", "metricx|model:google/metricx-23-large-v2p0@1a2b", "metricx-23-large"),
        ("metricx", "metricx|model:google/metricx-24-hybrid-large-v2p6@1a2b", None),
        ("comet", "comet|model:google/metricx-23-large-v2p0@1a2b", None),  # not its family
    ],
)  # fmt: skip
def test_calibration_by_name_and_signature(metric, signature, expected) -> None:
    found = calibration_for(metric, signature)
    assert (found.name if found else None) == expected


@pytest.mark.parametrize("name", sorted(CALIBRATIONS))
def test_the_range_ends_one_point_below_the_ceiling(name: str) -> None:
    c = CALIBRATIONS[name]
    assert human_accuracy(c.max_delta, name) == pytest.approx((c.a - 1) / 100, abs=1e-12)
    inside = agreement(c.max_delta / c.per_point * 0.999, c)
    outside = agreement(-c.max_delta / c.per_point * 1.001, c)  # the sign does not matter
    assert inside.kind is AgreementKind.CALIBRATED and inside.share is not None
    assert outside.kind is AgreementKind.OUTSIDE_RANGE and outside.share is None


def test_agreement_reads_the_metric_scale() -> None:
    # COMET scores are 0-1 in evalab, the fit's Δ is COMET × 100
    got = agreement(-0.005, CALIBRATIONS["comet22"])
    assert got.delta == pytest.approx(0.5) and got.share == pytest.approx(
        mt_thresholds.accuracy(0.5, "comet22") / 100, abs=1e-9
    )
    assert agreement(1.0, None).kind is AgreementKind.NOT_CALIBRATED
    assert agreement(math.nan, CALIBRATIONS["bleu"]).kind is AgreementKind.NOT_CALIBRATED
