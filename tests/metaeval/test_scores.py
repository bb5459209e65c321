"""Metric scores: corpus scores on resamples, sentence scores, precomputed files."""

from __future__ import annotations

import numpy as np
import pytest

from evalab.metaeval.scores import metric_scores
from evalab.metrics.registry import metric_class

HYPS = [
    ["the cat sat on the mat", "a dog", "hello world", "it rains today"],
    ["the cat is on a mat", "the dog", "hello there world", "rain today"],
]
REFS = [["the cat sat on the mat", "the dog", "hello world", "it is raining today"]]


@pytest.mark.parametrize("name", ["bleu", "chrf"])
def test_resampled_system_scores_are_corpus_scores_of_the_resampled_text(name):
    metric = metric_class(name)()
    scores = metric_scores(name, metric, HYPS, REFS, "corpus", np.ones((2, 4), bool))
    counts = np.array([[2.0, 0.0, 1.0, 1.0], [0.0, 3.0, 0.0, 1.0]])
    got = scores.resample(counts)
    for b, row in enumerate(counts):
        idx = np.repeat(np.arange(4), row.astype(int))
        for s, hyps in enumerate(HYPS):
            expected = metric.corpus_score(
                [hyps[i] for i in idx], [[REFS[0][i] for i in idx]]
            ).score
            assert got[b, s] == pytest.approx(expected, abs=1e-9)
    assert scores.system == pytest.approx(
        [metric.corpus_score(h, REFS).score for h in HYPS], abs=1e-12
    )


@pytest.mark.parametrize("name", ["bleu", "chrf"])
def test_segment_scores_are_the_metrics_sentence_scores(name):
    metric = metric_class(name)()
    scores = metric_scores(name, metric, HYPS, REFS, "corpus", np.ones((2, 4), bool))
    for s, hyps in enumerate(HYPS):
        expected = [sc.score for sc in metric.segment_scores(hyps, REFS)]
        assert scores.segment[s] == pytest.approx(expected, abs=1e-12)


def test_sentence_bleu_uses_effective_order_and_says_so():
    sacrebleu = pytest.importorskip("sacrebleu")
    scores = metric_scores(
        "bleu", metric_class("bleu")(), HYPS, REFS, "corpus", np.ones((2, 4), bool)
    )
    expected = [sacrebleu.sentence_bleu(h, [REFS[0][i]]).score for i, h in enumerate(HYPS[1])]
    assert scores.segment[1] == pytest.approx(expected, abs=1e-9)
    assert "eff:yes" in scores.segment_signature and "eff:no" in scores.signature


def test_rated_mean_averages_only_rated_segments():
    mask = np.array([[True, False, True, True], [True, True, False, False]])
    scores = metric_scores("chrf", metric_class("chrf")(), HYPS, REFS, "rated-mean", mask)
    assert scores.system[1] == pytest.approx(scores.segment[1, :2].mean(), abs=1e-12)
