"""Soft pairwise accuracy equal to mt-metrics-eval's PairwiseConfidenceError (same permutations),
on random scores and on the WMT21 en-de MQM data with BLEU and chrF."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from tests.conftest import REPO

from evalab.errors import InputError
from evalab.metaeval.soft_pairwise import pairwise_p_values, soft_pairwise_accuracy

ORACLE = REPO.parent / "shared" / "oracles" / "mt-metrics-eval"


@pytest.fixture(scope="module")
def mtme():
    if not ORACLE.exists():
        pytest.skip(f"mt-metrics-eval not found at {ORACLE}")
    sys.path.insert(0, str(ORACLE))
    try:
        from mt_metrics_eval import pce, stats
    finally:
        sys.path.remove(str(ORACLE))
    return pce, stats


@pytest.mark.parametrize(
    ("systems", "segments", "permutations"), [(2, 5, 10), (8, 300, 1000), (14, 1300, 200)]
)
def test_equal_to_the_oracle_on_random_scores(
    mtme, systems: int, segments: int, permutations: int
) -> None:
    pce, stats = mtme
    rng = np.random.default_rng(systems)
    human = rng.normal(size=(systems, segments)) + rng.normal(size=(systems, 1))
    metric = human + rng.normal(scale=2.0, size=human.shape)
    np.testing.assert_array_equal(
        pairwise_p_values(metric, permutations),
        pce.compute_pairwise_p_values(metric, num_permutations=permutations),
    )
    (expected,) = stats.PairwiseConfidenceError(
        human.ravel(), metric.ravel(), num_sys=systems, num_permutations=permutations
    )
    assert soft_pairwise_accuracy(human, metric, n_permutations=permutations) == expected


def _near_ties(scores: np.ndarray) -> float:
    """The mean over pairs of permutations whose difference ties the observed one within
    float32 rounding (MQM scores tie often): each may count either way, in the oracle as
    here, depending on the summation order BLAS picks for an array's place in memory, so a
    pair's p-value is known to (ties / permutations) and SPA to their mean."""
    from evalab.metaeval.soft_pairwise import _signs

    seg = scores.astype(np.float64)
    partial = _signs(1000, seg.shape[1], 4).astype(np.float64) @ seg.T
    totals = seg.sum(axis=1)
    slack = 8 * np.finfo(np.float32).eps * np.abs(seg).sum(axis=1).max()
    i, j = np.triu_indices(seg.shape[0], k=1)
    close = np.abs((partial[:, i] - partial[:, j]) - (totals[i] - totals[j])) <= slack
    return float(close.sum(axis=0).mean())


def test_lower_is_better_is_negated(mtme) -> None:
    _, stats = mtme
    rng = np.random.default_rng(0)
    human = rng.normal(size=(5, 200))
    ter = -human + rng.normal(size=human.shape)
    (expected,) = stats.PairwiseConfidenceError(human.ravel(), (-ter).ravel(), num_sys=5)
    assert soft_pairwise_accuracy(human, ter, higher_is_better=False) == expected


def test_refusals() -> None:
    with pytest.raises(InputError, match="every system scored on every segment"):
        pairwise_p_values(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(InputError, match="differ in shape"):
        soft_pairwise_accuracy(np.zeros((2, 3)), np.zeros((3, 3)))


def test_equal_to_the_oracle_on_wmt21_mqm(mtme, mqm) -> None:
    """BLEU and chrF sentence scores of the eight rated WMT21 en-de systems against MQM, on
    the segments every system was rated on."""
    from tests.metaeval.conftest import SYSTEMS

    from evalab.io import read_segments
    from evalab.metaeval.human import read_human_scores
    from evalab.metrics.registry import metric as get_metric
    from evalab.stats.ranking import segment_scores_from_stats

    _, stats = mtme
    refs = read_segments(mqm / "references" / "newstest2021.en-de.ref.A.de")
    human = read_human_scores(
        str(mqm / "human" / "mqm_newstest2021_ende.avg_seg_scores.tsv"), len(refs)
    )
    names = {"NVIDIA-NeMo": "Nemo"}
    h = np.array([human.scores[names.get(s, s)] for s in SYSTEMS])
    rated = np.isfinite(h).all(axis=0)
    assert rated.sum() > 400
    for metric_name in ("bleu", "chrf"):
        metric = get_metric(metric_name)
        hyps = [
            read_segments(mqm / "system-outputs" / f"newstest2021.en-de.hyp.{s}.de")
            for s in SYSTEMS
        ]
        rows = metric.stats_many(hyps, [refs])
        seg = np.array([segment_scores_from_stats(metric, st.rows) for st in rows])[:, rated]
        (expected,) = stats.PairwiseConfidenceError(h[:, rated].ravel(), seg.ravel(), num_sys=8)
        got = soft_pairwise_accuracy(h[:, rated], seg)
        tolerance = (_near_ties(h[:, rated]) + _near_ties(seg)) / 1000
        assert abs(got - expected) <= tolerance + 1e-15, (got, expected, tolerance)


# -- in meta-eval: on the segments rated for every system, and on bootstrap resamples ------------
def test_on_the_segments_every_system_was_rated_on(mtme) -> None:
    from evalab.metaeval.soft_pairwise import SoftPairwise

    _, stats = mtme
    rng = np.random.default_rng(3)
    human = rng.normal(size=(4, 60))
    human[rng.random(human.shape) < 0.1] = np.nan
    metric = np.nan_to_num(human) + rng.normal(size=human.shape)
    soft = SoftPairwise.rated_by_all(human)
    assert soft is not None
    common = np.isfinite(human).all(axis=0)
    assert soft.columns.tolist() == np.flatnonzero(common).tolist()
    (expected,) = stats.PairwiseConfidenceError(
        human[:, common].ravel(), metric[:, common].ravel(), num_sys=4
    )
    assert soft.point(metric) == expected
    assert SoftPairwise.rated_by_all(np.where(np.eye(3, 6, dtype=bool), 1.0, np.nan)) is None


def test_a_resample_is_the_oracle_on_the_drawn_segments(mtme) -> None:
    """With one permutation the first L signs of the all-segments draw are the oracle's own
    draw for L segments, so a resample's SPA is PairwiseConfidenceError on the drawn segments
    listed in order (a segment drawn twice is two segments)."""
    from evalab.metaeval.soft_pairwise import SoftPairwise
    from evalab.stats.resampling import bootstrap_counts

    _, stats = mtme
    rng = np.random.default_rng(5)
    human = rng.normal(size=(5, 80)) + rng.normal(size=(5, 1))
    human[:, rng.random(80) < 0.3] = np.nan
    metrics = [np.nan_to_num(human) + rng.normal(size=human.shape) for _ in range(2)]
    soft = SoftPairwise(human, np.flatnonzero(np.isfinite(human).all(axis=0)), n_permutations=1)
    counts = next(bootstrap_counts(80, 6, seed=1)).astype(np.float64)
    got = soft.resampled(metrics, counts)
    for b, c in enumerate(counts):
        idx = np.repeat(soft.columns, c[soft.columns].astype(int))
        for a, m in enumerate(metrics):
            (expected,) = stats.PairwiseConfidenceError(
                human[:, idx].ravel(), m[:, idx].ravel(), num_sys=5, num_permutations=1
            )
            assert got[a, b] == pytest.approx(expected, abs=1e-12)
    none_drawn = np.zeros((1, 80))
    none_drawn[0, np.flatnonzero(~np.isfinite(human).all(axis=0))[0]] = 80
    assert np.isnan(soft.resampled(metrics, none_drawn)).all()


def test_through_meta_eval_on_wmt21_equals_the_oracle(run_cli, mtme, mqm) -> None:
    """``evalab meta-eval`` on the eight rated WMT21 en-de systems: BLEU and TER (lower is
    better) against MQM, SPA beside pairwise accuracy with an interval and a cluster, equal
    to PairwiseConfidenceError on the sentence scores within the near-tie tolerance."""
    from tests.metaeval.conftest import SYSTEMS, mqm_args

    from evalab.io import read_segments
    from evalab.metrics.registry import metric as get_metric
    from evalab.stats.ranking import segment_scores_from_stats

    _, stats = mtme
    res = run_cli(
        "meta-eval", *mqm_args(mqm), "-m", "bleu", "ter", "-n", "20", "--permutations", "0",
        "-q", "-f", "json",
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    rows = {(r["metric"], r["statistic"]): r for r in data["statistics"] if r["level"] == "system"}
    assert data["soft_pairwise"] == {"segments": 527, "permutations": 1000, "seed": 4}
    refs = read_segments(mqm / "references" / "newstest2021.en-de.ref.A.de")
    human = np.array(
        [data_human(mqm, len(refs))[{"NVIDIA-NeMo": "Nemo"}.get(s, s)] for s in SYSTEMS]
    )
    rated = np.isfinite(human).all(axis=0)
    hyps = [
        read_segments(mqm / "system-outputs" / f"newstest2021.en-de.hyp.{s}.de") for s in SYSTEMS
    ]
    for name, sign in (("bleu", 1.0), ("ter", -1.0)):
        metric = get_metric(name)
        seg = (
            sign
            * np.array(
                [
                    segment_scores_from_stats(metric, st.rows)
                    for st in metric.stats_many(hyps, [refs])
                ]
            )[:, rated]
        )
        (expected,) = stats.PairwiseConfidenceError(human[:, rated].ravel(), seg.ravel(), num_sys=8)
        row = rows[(name, "soft_accuracy")]
        tolerance = (_near_ties(human[:, rated]) + _near_ties(seg)) / 1000
        assert abs(row["value"] - expected) <= tolerance + 1e-15, (name, row["value"], expected)
        assert row["ci_low"] <= row["value"] <= row["ci_high"] and row["rank"] == 1
        assert rows[(name, "accuracy")]["rank"] == 1  # beside pairwise accuracy


def data_human(mqm, n_segments: int) -> dict[str, np.ndarray]:
    from evalab.metaeval.human import read_human_scores

    path = mqm / "human" / "mqm_newstest2021_ende.avg_seg_scores.tsv"
    return read_human_scores(str(path), n_segments).scores
