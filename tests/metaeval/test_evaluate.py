"""Intervals over resamples on which a statistic can be undefined: shown with a note while
few, refused when they would describe a sample the data does not resemble."""

from __future__ import annotations

import numpy as np

from evalab.metaeval import MetaEvalSettings, meta_evaluate
from evalab.metaeval.scores import MetricScores, system_scores_from_segments


def _metric(name: str, segment: np.ndarray) -> MetricScores:
    mask = np.ones_like(segment, dtype=bool)
    system, resample = system_scores_from_segments(name, segment, "mean", mask)
    return MetricScores(name, f"{name}|test", system, segment, "mean", resample)


def _study(n_segments: int, differing: int) -> tuple[np.ndarray, list[MetricScores]]:
    # three systems the humans tell apart on `differing` segments only: a resample without
    # them leaves the human system scores all equal, and the system-level Pearson undefined
    rng = np.random.default_rng(0)
    human = np.zeros((3, n_segments))
    human[:, :differing] = np.array([[0.0], [-1.0], [-2.0]])
    metric = human + rng.normal(0, 0.1, human.shape)
    return human, [_metric("m", metric)]


def _pearson(n_segments: int, differing: int):
    human, metrics = _study(n_segments, differing)
    result = meta_evaluate(
        human, ["a", "b", "c"], metrics, MetaEvalSettings(n_bootstrap=400, n_permutations=0)
    )
    return result.estimates[("system", "pearson")]["m"], result.notes


def test_an_interval_over_mostly_undefined_resamples_is_refused():
    # 10 segments, 1 differing: about 0.9^10 = 35% of resamples leave Pearson undefined
    est, notes = _pearson(10, 1)
    assert est.low is None and est.high is None and np.isfinite(est.value)
    assert any(
        n.startswith("Pearson, m: no interval: the statistic is undefined on ") for n in notes
    )


def test_an_interval_over_a_few_undefined_resamples_is_shown_and_said():
    # 200 segments, 5 differing: about e^-5 = 0.7% of resamples are undefined
    est, notes = _pearson(200, 5)
    assert est.low is not None and est.low <= est.value <= est.high
    said = [n for n in notes if n.startswith("Pearson, m: interval over the ")]
    assert len(said) == 1 and said[0].endswith("of 400 resamples on which the statistic is defined")


def test_no_note_when_every_resample_is_defined():
    est, notes = _pearson(200, 200)
    assert est.low is not None and not any(
        "resamples on which" in n or "undefined on" in n for n in notes
    )
