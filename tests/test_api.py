"""The public API: ``evalab.score`` dispatch (seed 002), ``evalab.metric``, the version."""

from __future__ import annotations

import importlib.metadata

import pytest

import evalab
from evalab.errors import InputError, SettingsError

# seed 002's dispatch table: score(metric_name, pred, targets) -> float in [0, 1]
DISPATCH = [
    ("exact_match", "Paris", ["paris", "Paris"], 1.0),
    ("exact_match", "Lyon", ["Paris"], 0.0),
    ("f1", "The cat sat", ["the cat sat down"], 6 / 7),
    ("f1", "a b", ["c", "a b c"], 0.8),  # best over targets
    ("accuracy", "Positive", ["positive"], 1.0),
    ("rouge_l", "the cat sat on the mat", ["the cat on a mat"], 16 / 22),
    ("rougeL", "the cat sat on the mat", ["the cat on a mat"], 16 / 22),
]


@pytest.mark.parametrize(("name", "pred", "targets", "expected"), DISPATCH)
def test_score_dispatch(name, pred, targets, expected):
    value = evalab.score(name, pred, targets)
    assert isinstance(value, float)
    assert 0.0 <= value <= 1.0
    assert value == pytest.approx(expected, abs=1e-12)


def test_unknown_metric_name_lists_known_names():
    with pytest.raises(ValueError, match="unknown metric_name 'bleu5'") as exc:
        evalab.score("bleu5", "a", ["a"])
    for name in ("exact_match", "f1", "accuracy", "rouge_l", "rouge1", "rougeLsum"):
        assert name in str(exc.value)
    with pytest.raises(ValueError, match=r"unknown metric 'nope'; known metrics: .*rouge1"):
        evalab.metric("nope")


def test_score_input_errors():
    with pytest.raises(InputError, match="targets must be a list of strings"):
        evalab.score("f1", "a", "a")
    with pytest.raises(InputError, match="targets is empty"):
        evalab.score("f1", "a", [])


def test_metric_builds_with_settings():
    m = evalab.metric("rouge1", use_stemmer=True, tokenizer="unicode")
    assert m.settings.use_stemmer and m.settings.tokenizer == "unicode"
    with pytest.raises(SettingsError, match="unknown setting"):
        evalab.metric("f1", stemmer=True)


def test_my_metrics_are_registered_and_available():
    for name in ("exact_match", "f1", "accuracy", "rouge1", "rouge2", "rougeL", "rougeLsum"):
        assert name in evalab.METRICS
        assert name in evalab.available_metrics()
        assert evalab.metric(name).name == name


def test_version_matches_installed_metadata():
    assert evalab.__version__ == importlib.metadata.version("evalab")


def test_score_takes_the_best_single_target_as_seed_002():
    # seed 002: score("bleu_4", pred, targets) = max(bleu4(pred, t) for t in targets),
    # not one multi-reference BLEU (whose clipping pools the references)
    pred = "the quick brown fox jumps over the dog"
    targets = ["the quick brown fox leaps over the dog", "a fast brown fox jumps over a lazy dog"]
    singles = [evalab.score("bleu_4", pred, [t]) for t in targets]
    assert evalab.score("bleu_4", pred, targets) == max(singles)
    multi = evalab.metric("bleu", smooth_method="add-k", smooth_value=1.0, tokenize="words")
    assert multi.sentence_score(pred, targets).score / 100 != max(singles)
