"""The public API: ``evalab.score`` dispatch (seed 002), ``evalab.metric``, the version."""

from __future__ import annotations

import importlib.metadata
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    ("bleu_4", "the cat sat on the mat", ["a cat sat on a mat", "the cat sat on the mat"], 1.0),
    ("bleu_4", "the cat sat", ["the cat sat on the mat"], 0.3678794411714425),  # BP e^(1-2)
    ("exact_match", "", [""], 1.0),
    ("f1", "", ["the cat"], 0.0),  # empty prediction
    ("f1", "dog", ["the cat"], 0.0),  # no shared token
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
    m = evalab.metric("rouge1", use_stemmer=True, tokenize="unicode")
    assert m.settings.use_stemmer and m.settings.tokenize == "unicode"
    # rouge-score's name for the setting builds the same settings
    assert evalab.metric("rouge1", use_stemmer=True, tokenizer="unicode").settings == m.settings
    with pytest.raises(SettingsError, match="given twice"):
        evalab.metric("rouge1", tokenize="unicode", tokenizer="rouge")
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


def test_score_is_the_seed_entry_point_on_0_1_where_the_rest_is_on_the_metric_scale():
    hyps, refs = (
        ["The cat sat on the mat.", "hello world"],
        [["The cat sat on a mat.", "hello there world"]],
    )
    s = evalab.corpus_score("bleu", hyps, refs)
    assert (
        s == evalab.metric("bleu").corpus_score(hyps, refs)
        and float(s) == s.score
        and s.scale == 100
    )
    assert evalab.corpus_score("ter", hyps, refs, case_sensitive=True) == evalab.metric(
        "ter", case_sensitive=True
    ).corpus_score(hyps, refs)
    # the same BLEU, 0-1 from evalab.score and 0-100 everywhere else
    one = evalab.score("bleu", hyps[0], [refs[0][0]])
    assert one == pytest.approx(evalab.corpus_score("bleu", hyps[:1], [refs[0][:1]]).score / 100)
    assert "unit_score" not in dir(evalab)  # one name: the old one is gone, no alias
    with pytest.raises(AttributeError):
        evalab.unit_score  # noqa: B018
    assert "0-1" in (evalab.score.__doc__ or "") or "[0, 1]" in (evalab.score.__doc__ or "")


_WORDS = st.sampled_from(["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "über", "猫"])
_SEGMENT = st.lists(_WORDS, min_size=0, max_size=8).map(" ".join)


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(
        ["bleu", "chrf", "chrf++", "ter", "wer", "cer", "rouge1", "rougeL", "f1", "exact_match"]
    ),
    pairs=st.lists(
        st.tuples(_SEGMENT, _SEGMENT.filter(str.strip), _SEGMENT.filter(str.strip)),
        min_size=1,
        max_size=12,
    ),
    cuts=st.lists(st.integers(0, 12), max_size=4),
)
def test_accumulator_equals_one_shot_scoring(name, pairs, cuts):
    hyps = [h for h, _, _ in pairs]
    refs = [[a for _, a, _ in pairs], [b for _, _, b in pairs]]
    m = evalab.metric(name)
    bounds = sorted({0, len(pairs), *(min(c, len(pairs)) for c in cuts)})
    for lo, hi in itertools.pairwise(bounds):
        m.update(hyps[lo:hi], [stream[lo:hi] for stream in refs])
    assert m.compute() == evalab.corpus_score(name, hyps, refs)
    m.reset()
    with pytest.raises(InputError, match="empty"):
        m.compute()
