"""Every registered metric against the Metric contract (docs/metric-contract.md).

The tests iterate the registry (``evalab.metrics.registry.METRICS``), so a metric added
there is checked without any change here: this is the first test a new metric meets.
What a metric may declare for it (on its class):

* ``bounds``: the interval its score lies in (default ``[0, scale]``);
* ``additive``: False when rows of different calls must not be summed (then sharding and
  ``Stats.concat`` must refuse, and the CLI scores the corpus in one call);
* ``test_setting_values``: values to try for a setting whose alternatives cannot be
  derived (strings without choices, optional paths), or ``{setting: value, ...}`` dicts to
  try a setting where it has an effect (``smooth_value`` under ``smooth_method="floor"``);
* ``inert_settings``: settings that by design change neither score nor signature
  (``device``, ``batch_size``), each with its reason;
* ``row_tolerance``: how far a row may move when computed in another call (default 0: bit
  for bit; BERTScore's float32 block products declare 1e-6).

Only what is data for the test lives here: the word-vector table BERTScore runs on, and
the log-probabilities standing in for a language model (loss metrics score text only
with a model, which the default suite does not load).
"""

from __future__ import annotations

import dataclasses
import math
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalab.errors import SettingsError
from evalab.metrics.base import Metric, Stats
from evalab.metrics.parallel import parallel_stats
from evalab.metrics.registry import METRICS, metric_class

DATA = Path(__file__).resolve().parents[1] / "data"
#: settings a metric needs in the test because of the data it runs on (not its contract)
FIXTURE_SETTINGS: dict[str, dict[str, Any]] = {"bertscore": {"model": str(DATA / "vi_seed001_table.tsv")}}
#: setting values that are test data files (tried in place of declared or derived values);
#: a dict is compared with the same dict without the setting (or the defaults, where the
#: metric refuses that), a pair ``(base, variant)`` with its base
DATA_VALUES: dict[str, dict[str, list[Any]]] = {
    "bertscore": {
        "model": [{"model": str(DATA / "one_word_table.tsv")}],
        "rescale": [{"rescale": True, "baseline": str(DATA / "vi_seed001_baseline.csv")}],
        # (base, variant): one baseline file against another
        "baseline": [({"rescale": True, "baseline": str(DATA / "vi_seed001_baseline.csv")},
                      {"rescale": True, "baseline": str(DATA / "vi_seed001_baseline_b.csv")})],
        "drop_function_words": [{"drop_function_words": True}],
        "stopwords": [{"drop_function_words": True, "stopwords": str(DATA / "vi_stopwords.txt")}],
    },
}
#: words from the BERTScore table (so its vectors are used), English and punctuation
WORDS = ["bố", "cha", "tôi", "mèo", "chó", "mua", "xe_hơi", "ô_tô", "con", "ghế",
         "the", "cat", "sat", "on", "mat", "a", "dog", "ran", ",", ".", "Cat", "naïve"]

sentence = st.lists(st.sampled_from(WORDS), min_size=0, max_size=9).map(" ".join)
corpus = st.lists(st.tuples(sentence, sentence, sentence), min_size=1, max_size=7)
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def build(name: str, **overrides: Any) -> Metric:
    return metric_class(name)(**{**FIXTURE_SETTINGS.get(name, {}), **overrides})


def is_reference_free(m: Metric) -> bool:
    """Loss metrics score text with a language model; the test gives them rows from numbers."""
    return hasattr(m, "stats_from_token_logprobs")


def stats_of(m: Metric, hyps: list[str], refs: list[list[str]]) -> Stats:
    if is_reference_free(m):
        # a stand-in LM: every word costs len(word) / 4 nats
        logprobs = [[-len(w) / 4 for w in h.split()] for h in hyps]
        return m.make_stats(m.stats_from_token_logprobs(logprobs, texts=hyps), None)
    return m.stats(hyps, refs)


def bounds(m: Metric) -> tuple[float, float]:
    return getattr(m, "bounds", None) or (0.0, m.scale)


def split(data: list[tuple[str, str, str]]) -> tuple[list[str], list[list[str]]]:
    hyps = [h for h, _, _ in data]
    return hyps, [[r for _, r, _ in data], [r for _, _, r in data]]


def usable(m: Metric, rows: Stats) -> bool:
    """Rows a loss metric can score (some tokens) — other metrics score every corpus."""
    return not is_reference_free(m) or rows.sums()[1] > 0


def same_rows(m: Metric, a: Stats, b: Stats) -> bool:
    """Equal rows: bit for bit, or within the metric's declared ``row_tolerance``."""
    return a.shape == b.shape and np.allclose(a.rows, b.rows, rtol=0.0, atol=m.row_tolerance)


NAMES = sorted(METRICS)


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=corpus)
def test_self_score_is_best_and_scores_within_bounds(name: str, data) -> None:
    m = build(name)
    hyps, refs = split(data)
    rows = stats_of(m, hyps, refs)
    if not usable(m, rows):
        return
    score = m.aggregate(rows).score
    low, high = bounds(m)
    assert low - 1e-9 <= score <= high + 1e-9 or math.isnan(score), (score, (low, high))
    if is_reference_free(m):
        return
    own = m.corpus_score(hyps, [hyps]).score
    better = own >= score - 1e-9 if m.higher_is_better else own <= score + 1e-9
    assert better, f"self-score {own} is not the best: {score} against other references"


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=corpus, cut=st.integers(0, 7))
def test_shards_concatenate_to_the_whole_or_are_refused(name: str, data, cut: int) -> None:
    m = build(name)
    hyps, refs = split(data)
    cut = min(cut, len(hyps))
    whole = stats_of(m, hyps, refs)
    parts = [stats_of(m, hyps[:cut], [r[:cut] for r in refs]), stats_of(m, hyps[cut:], [r[cut:] for r in refs])]
    assert whole.additive == m.additive
    if m.additive:
        joined = Stats.concat(parts)
        assert same_rows(m, joined, whole) and joined.signature == whole.signature
    elif 0 < cut < len(hyps) and parts[0].context != parts[1].context:
        with pytest.raises(ValueError, match="not additive"):
            Stats.concat(parts)
    if not is_reference_free(m) and len(hyps) > 1:
        # --jobs: the same rows, sharded only where that is exact
        assert same_rows(m, parallel_stats(m, hyps, refs, jobs=2), whole)


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=corpus, other=st.lists(sentence, min_size=7, max_size=7))
def test_stats_many_equals_stats_per_system(name: str, data, other) -> None:
    m = build(name)
    if is_reference_free(m):
        pytest.skip("reference-free: rows come from a language model, one system at a time")
    hyps, refs = split(data)
    second = other[: len(hyps)]
    many = m.stats_many([hyps, second], refs)
    for got, system in zip(many, [hyps, second], strict=True):
        alone = m.stats(system, refs)
        assert same_rows(m, got, alone) and got.signature == alone.signature


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=corpus)
def test_vectorised_scores_equal_the_scalar_score(name: str, data) -> None:
    m = build(name)
    hyps, refs = split(data)
    rows = stats_of(m, hyps, refs)
    if not usable(m, rows):
        return
    # every segment alone, every prefix, and the corpus, scored in one vectorised call
    sums = np.concatenate([rows.rows, np.cumsum(rows.rows, axis=0)])
    vec = m.scores_from_sums(sums[None, :, :])[0]
    for i, row in enumerate(sums):
        try:
            scalar = m.aggregate(row[None], rows.nrefs).score
        except ValueError:  # a loss metric refuses a segment without tokens
            continue
        # BLEU's scalar score is libm arithmetic (sacrebleu's), its vectorised one numpy's
        assert vec[i] == pytest.approx(scalar, rel=1e-13, abs=1e-12, nan_ok=True), (i, row)


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(hyp=sentence, refs=st.lists(sentence, min_size=1, max_size=3))
def test_sentence_score_is_the_aggregate_of_one_row(name: str, hyp: str, refs: list[str]) -> None:
    m = build(name)
    if is_reference_free(m):
        pytest.skip("reference-free: sentence scores need a language model")
    one = m.sentence_score(hyp, refs)
    sentence_metric = m.sentence_metric()
    expected = sentence_metric.aggregate(sentence_metric.stats([hyp], [[r] for r in refs]))
    assert one.signature == expected.signature
    assert one.score == expected.score or (math.isnan(one.score) and math.isnan(expected.score))


@pytest.mark.parametrize("name", NAMES)
def test_score_and_signature_do_not_depend_on_earlier_calls(name: str) -> None:
    m = build(name)
    hyps, refs = split([("the cat sat", "the cat sat on", "a cat"), ("bố tôi", "cha tôi", "mèo")])
    first = stats_of(m, hyps, refs[:1])
    before = m.aggregate(first)
    stats_of(m, hyps[:1], [r[:1] for r in refs])  # another call, other nrefs, in between
    after = m.aggregate(first)
    assert (after.score, after.signature) == (before.score, before.signature)
    assert first.signature == m.signature_for(first.nrefs)


# -- every setting that changes a score is in the signature ---------------------------------
def _alternatives(cls: type[Metric], field: dataclasses.Field) -> list[dict[str, Any]]:
    """Setting overrides to compare with the defaults, from declarations or the field's type."""
    declared = DATA_VALUES.get(cls.name, {}).get(field.name, cls.test_setting_values.get(field.name))
    if declared is not None:
        return [v if isinstance(v, (dict, tuple)) else {field.name: v} for v in declared]
    default = field.default
    choices = field.metadata.get("choices")
    hint = typing.get_type_hints(cls.settings_class)[field.name]
    args = set(typing.get_args(hint)) or {hint}
    if choices:
        return [{field.name: c} for c in choices if c != default]
    if bool in args:
        values = [True, False, *([None] if type(None) in args else [])]
        return [{field.name: v} for v in values if v != default]
    if isinstance(default, int):
        return [{field.name: default + 1}]
    if isinstance(default, float):
        return [{field.name: default + 0.5}]
    return []


def _cases() -> list[tuple[str, str]]:
    cases = []
    for name in NAMES:
        cls = metric_class(name)
        cases += [(name, f.name) for f in dataclasses.fields(cls.settings_class)]
    return cases


def _fingerprint(m: Metric, hyps: list[str], refs: list[list[str]]) -> tuple[Any, ...]:
    rows = stats_of(m, hyps, refs)
    sentence_metric = m.sentence_metric()
    return (m.aggregate(rows).score, rows.signature, sentence_metric.signature_for(rows.nrefs))


@pytest.mark.parametrize(("name", "setting"), _cases())
def test_every_setting_is_named_in_the_signature(name: str, setting: str) -> None:
    cls = metric_class(name)
    if setting in cls.inert_settings:
        assert cls.inert_settings[setting].strip(), f"{name}.{setting}: say why the setting is inert"
        return
    if cls.test_setting_values.get(setting, None) == () and setting not in DATA_VALUES.get(name, {}):
        pytest.skip(f"{name}.{setting}: declared as checked by the metric's own tests (needs data not here)")
    field = {f.name: f for f in dataclasses.fields(cls.settings_class)}[setting]
    variants = _alternatives(cls, field)
    assert variants, (
        f"{name}.{setting}: the contract test cannot derive another value; declare some in "
        f"{cls.__name__}.test_setting_values, or the reason it is inert in inert_settings"
    )
    hyps, refs = split([("The cat sat on the mat .", "the cat sat on a mat", "A cat sat ."),
                        ("bố tôi mua xe_hơi", "cha tôi mua ô_tô", "bố mua chó"),
                        ("naïve dog ran , a", "a naïve dog ran", "dog")])
    checked = 0
    for case in variants:
        base, variant = case if isinstance(case, tuple) else ({k: v for k, v in case.items() if k != setting}, case)
        try:
            after = _fingerprint(build(name, **variant), hyps, refs)
        except SettingsError:
            continue  # a combination the metric refuses: nothing can be hidden there
        try:
            before = _fingerprint(build(name, **base), hyps, refs)
        except SettingsError:  # the context alone is refused (a baseline without rescale)
            before = _fingerprint(build(name), hyps, refs)
        checked += 1
        assert after[1:] != before[1:], (
            f"{name}: {variant} leaves the signature unchanged"
            + (f" while the score moves {before[0]} -> {after[0]}" if after[0] != before[0] else "")
        )
    assert checked, f"{name}.{setting}: every test value was refused; declare usable ones"
