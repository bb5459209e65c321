"""The Metric contract: reference layout checks, settings parsing, Score, signatures."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import numpy as np
import pytest
from tests.conftest import read_lines, wmt_file, wmt_systems

import evalab
from evalab.errors import InputError, SettingsError
from evalab.metrics.base import Metric, MetricSettings, Stats, check_references, setting


@dataclass(frozen=True)
class ToySettings(MetricSettings):
    flag: bool = setting(False, "a bool")
    order: int = setting(4, "an int")
    weight: float = setting(0.5, "a float")
    mode: str = setting("a", "a choice", choices=("a", "b"))
    limit: int | None = setting(None, "an optional int")
    orders: tuple[int, ...] = setting((1, 2), "ints")


class Toy(Metric):
    """Length ratio: hypothesis characters over reference characters."""

    name = "toy"
    settings_class = ToySettings
    stat_names = ("hyp_len", "ref_len")

    def _segment_stats(self, hypotheses, references):
        return np.array([[len(h), len(references[0][i])] for i, h in enumerate(hypotheses)])

    def scores_from_sums(self, sums):
        return sums[..., 0] / sums[..., 1]

    def _score_components(self, sums):
        return {"hyp_len": float(sums[0]), "ratio_list": [1, 2]}, ""

    def _signature_fields(self, nrefs):
        return [("nrefs", str(nrefs)), ("mode", self.settings.mode)]


# -- check_references ------------------------------------------------------------------------
def test_valid_layout_returns_lists():
    hyps, refs = check_references(("a", "b"), (("x", "y"), ["z", "w"]), metric="m")
    assert hyps == ["a", "b"] and refs == [["x", "y"], ["z", "w"]]


@pytest.mark.parametrize(
    ("hyps", "refs", "pattern"),
    [
        ("a b", [["x"]], "hypotheses must be a list of strings, got one string"),
        (["a"], "x", "references must be a list of reference streams, got one string"),
        (["a"], [], "no references given"),
        (["a", "b"], ["x", "y"], r"got a list of strings.*wrap it: \[refs\]"),
        (["a", "b"], [["x"]], r"2 hypotheses but reference streams of lengths \[1\]"),
        ([1], [["x"]], "hypothesis 0 is int"),
        (["a"], [[None]], "segment 0 has no reference"),  # None alone: missing everywhere
        (["a"], [[b"x"]], "reference stream 0, segment 0 is bytes"),
    ],
)
def test_layout_errors(hyps, refs, pattern):
    with pytest.raises(InputError, match=pattern):
        check_references(hyps, refs, metric="m")


def test_per_segment_list_mistake_is_explained():
    # three segments, each with a list of two references: the classic transposition mistake
    hyps = ["a", "b", "c"]
    per_segment = [["a1", "a2"], ["b1", "b2"], ["c1", "c2"]]
    with pytest.raises(
        InputError, match="one list of references per segment was passed; transpose"
    ):
        check_references(hyps, per_segment, metric="m")
    with pytest.raises(InputError, match="transpose"):
        evalab.metric("f1").corpus_score(hyps, per_segment)


# -- settings ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "raw", "value"),
    [
        ("flag", "yes", True), ("flag", "0", False), ("flag", "True", True),
        ("order", "3", 3), ("weight", "0.25", 0.25), ("mode", "b", "b"),
        ("limit", "none", None), ("limit", "7", 7), ("orders", "1,2,3", (1, 2, 3)),
    ],
)  # fmt: skip
def test_parse_value(name, raw, value):
    assert ToySettings.parse_value(name, raw) == value


def test_parse_value_errors():
    with pytest.raises(SettingsError, match="unknown setting 'nope'; known settings: flag, limit"):
        ToySettings.parse_value("nope", "1")
    with pytest.raises(SettingsError, match="setting 'order': cannot read 'x' as int"):
        ToySettings.parse_value("order", "x")
    with pytest.raises(SettingsError, match="cannot read 'maybe' as bool"):
        ToySettings.parse_value("flag", "maybe")


def test_describe_and_validate():
    rows = {r["name"]: r for r in ToySettings.describe()}
    assert rows["mode"]["choices"] == ("a", "b") and rows["mode"]["default"] == "a"
    assert rows["order"]["type"] == "int" and rows["flag"]["help"] == "a bool"
    with pytest.raises(
        SettingsError, match="invalid value 'c' for setting 'mode'; expected one of 'a', 'b'"
    ):
        Toy(mode="c")


def test_metric_init_errors():
    with pytest.raises(SettingsError, match="unknown setting"):
        Toy(bogus=1)
    with pytest.raises(SettingsError, match="not both"):
        Toy(ToySettings(), order=2)
    assert Toy(ToySettings(order=2)).settings.order == 2


# -- Score and the derived API -----------------------------------------------------------------
def test_score_attributes_and_dict():
    m = Toy()
    s = m.corpus_score(["ab", "c"], [["abcd", "ef"]])
    assert s.score == 0.5 and s.hyp_len == 3.0 and s.scale == 1.0 and s.higher_is_better
    with pytest.raises(AttributeError, match="no component 'nope'"):
        _ = s.nope
    d = s.to_dict()
    assert d["metric"] == "toy" and d["hyp_len"] == 3.0 and d["signature"] == s.signature
    json.dumps(d)
    assert str(s) == "toy = 0.5000"


def test_stats_is_a_value_with_provenance():
    m = Toy()
    value = m.stats(["ab", "c"], [["abcd", "ef"]])
    assert (
        isinstance(value, Stats) and value.rows.shape == (2, 2) and value.rows.dtype == np.float64
    )
    assert value.metric == "toy" and value.stat_names == ("hyp_len", "ref_len") and value.nrefs == 1
    assert value.signature == m.signature_for(1) and value.additive
    assert value.rows.tolist() == [[2.0, 4.0], [1.0, 2.0]]
    with pytest.raises(TypeError):  # a value, not an array: its rows are value.rows
        len(value)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"not an array; its rows are stats.rows"):
        np.asarray(value)
    with pytest.raises(ValueError, match="read-only"):
        value.rows[0, 0] = 5
    assert m.aggregate(value).score == 0.5
    assert m.stats([], [[]]).rows.shape == (0, 2)
    with pytest.raises(InputError, match=r"stats rows must have shape \[n_segments, 2\]"):
        m.aggregate(np.zeros((2, 3)))


def test_score_and_signature_do_not_depend_on_call_history():
    m = Toy(mode="b")
    one = m.stats(["a"], [["b"]])
    m.corpus_score(["a"], [["b"], ["c"]])  # a 3-reference call in between changes nothing
    assert m.aggregate(one).signature == f"toy|nrefs:1|mode:b|version:{evalab.__version__}"
    with pytest.raises(InputError, match="signature_for"):
        _ = m.signature  # nrefs is part of this signature: no silent "nrefs:?"


def test_aggregate_refuses_stats_of_other_settings_or_metrics():
    rows = Toy(mode="b").stats(["a"], [["b"]])
    with pytest.raises(InputError, match="computed under"):
        Toy(mode="a").aggregate(rows)
    with pytest.raises(InputError, match="computed by 'toy'"):
        evalab.metric("exact_match").aggregate(rows)
    with pytest.raises(InputError, match="nrefs=2 given"):
        Toy(mode="b").aggregate(rows, nrefs=2)


def test_concatenation_checks_signatures_and_additivity():
    m = Toy()
    a, b = m.stats(["ab"], [["abcd"]]), m.stats(["c"], [["ef"]])
    assert (
        m.aggregate(Stats.concat([a, b])).score
        == m.corpus_score(["ab", "c"], [["abcd", "ef"]]).score
    )
    with pytest.raises(InputError, match=r"different numbers of references \(1 and 2\)"):
        Stats.concat([a, m.stats(["c"], [["ef"], ["g"]])])
    with pytest.raises(InputError, match="different signatures"):
        Stats.concat([a, Toy(mode="b").stats(["c"], [["ef"]])])
    with pytest.raises(InputError, match="not additive"):
        Stats.concat(
            [replace(a, additive=False, context="x"), replace(b, additive=False, context="y")]
        )
    both = Stats.concat(
        [replace(a, additive=False, context="x"), replace(b, additive=False, context="x")]
    )
    assert len(both.rows) == 2 and not both.additive


@pytest.mark.parametrize("name", ["bleu", "chrf", "exact_match", "f1", "rougeL"])
@pytest.mark.parametrize(("hyps", "refs"), [([], [[]]), ([], []), ((h for h in []), [[]])])
def test_every_empty_corpus_is_one_input_error(name, hyps, refs):
    with pytest.raises(InputError, match=f"{name}: empty corpus"):
        evalab.metric(name).corpus_score(hyps, refs)
    with pytest.raises(InputError, match=f"{name}: empty corpus"):
        evalab.metric(name).aggregate(evalab.metric(name).stats([], [[]]))


@pytest.mark.parametrize("name", ["bleu", "chrf", "exact_match", "f1", "rouge1"])
def test_references_and_hypotheses_may_be_generators(name):
    m = evalab.metric(name)
    hyps, refs = (
        ["the cat sat", "a dog"],
        [["the cat sat down", "a dog ran"], ["a cat sat", "the dog"]],
    )
    expected = m.corpus_score(hyps, refs)
    got = m.corpus_score((h for h in hyps), (list(s) for s in refs))
    assert got.score == expected.score and got.signature == expected.signature
    many = m.stats_many([hyps, hyps], (s for s in refs))
    assert [x.rows.tolist() for x in many] == [m.stats(hyps, refs).rows.tolist()] * 2


def test_aggregate_of_nan_rows_is_a_clear_error():
    m = evalab.metric("f1")
    rows = np.array([[1.0, 1.0, 1.0, 1.0], [np.nan, 0.5, 0.5, 1.0]])
    with pytest.raises(InputError, match=r"f1: stats row 1 contains NaN"):
        m.aggregate(rows, nrefs=1)


def test_sentence_score_checks_types():
    m = Toy()
    assert m.sentence_score("ab", ["abcd"]).score == 0.5
    with pytest.raises(InputError, match="references must be a list of strings"):
        m.sentence_score("ab", "abcd")
    with pytest.raises(InputError, match="hypothesis must be a str"):
        m.sentence_score(["ab"], ["abcd"])


def test_signature_has_version_and_names_nrefs():
    m = Toy(mode="b")
    assert m.signature_for(2) == f"toy|nrefs:2|mode:b|version:{evalab.__version__}"
    for name in ("exact_match", "f1", "accuracy", "rouge1", "rouge2", "rougeL", "rougeLsum"):
        sig = evalab.metric(name).signature_for(1)
        assert sig.startswith(f"{name}|nrefs:1|") and sig.endswith(f"|version:{evalab.__version__}")


def test_str_subclasses_are_accepted_and_other_types_named():
    class Segment(str):
        pass

    hyps, refs = check_references([Segment("a b")], [[Segment("a b")]], metric="m")
    assert hyps == ["a b"] and refs == [["a b"]]
    with pytest.raises(InputError, match=r"m: hypothesis 1 is int, expected str"):
        check_references(["a", 3], [["a", "b"]], metric="m")
    with pytest.raises(InputError, match=r"m: reference stream 1, segment 0 is float"):
        check_references(["a"], [["a"], [1.5]], metric="m")
    # None is a missing reference (sacrebleu's convention), accepted beside another one
    assert check_references(["a"], [["a"], [None]], metric="m") == (["a"], [["a"], [None]])


# --- stats_many: several systems against the same references ------------------------------
@pytest.mark.parametrize(
    ("name", "settings"),
    [
        ("bleu", {}),
        ("bleu", {"tokenize": "intl"}),  # the pure-Python tokenizer path
        ("chrf", {}),
        ("chrf++", {}),
        ("chrf", {"whitespace": True}),
        ("rougeLsum", {}),  # the base class's loop
        ("exact_match", {}),
    ],
)
def test_stats_many_equals_one_call_per_system(wmt22, name, settings, monkeypatch) -> None:
    refs = [read_lines(wmt_file("ref", "cs-en", r))[:120] for r in ("B", "C")]
    systems = [read_lines(wmt_file("hyp", "cs-en", s))[:120] for s in wmt_systems("cs-en")[:5]]
    systems.append(list(refs[0]))  # a system equal to a reference
    systems.append([""] * 120)  # and an empty one
    metric = evalab.metric(name, **settings)
    monkeypatch.setattr(type(metric), "STATS_BATCH", 3)  # batches of 3, 3 and 1 systems
    many = metric.stats_many(systems, refs)
    for hyps, rows in zip(systems, many, strict=True):
        assert np.array_equal(rows.rows, evalab.metric(name, **settings).stats(hyps, refs).rows)


def test_stats_many_checks_every_system_and_handles_empty_input() -> None:
    bleu = evalab.metric("bleu")
    assert bleu.stats_many([], [["a"]]) == []
    empty = bleu.stats_many([[], []], [[]])
    assert [e.rows.shape for e in empty] == [(0, 10), (0, 10)]
    with pytest.raises(InputError, match="2 hypotheses but reference streams of lengths"):
        bleu.stats_many([["a"], ["a", "b"]], [["x"]])
    with pytest.raises(InputError, match="hypothesis 0 is int"):
        bleu.stats_many([["a"], [3]], [["x"]])


# ---------------------------------------------------------------- the work of one segment pair
CJK_LINE = "漢字" * 15_000  # 30 000 characters, one "word" to a whitespace split
COMMAS = "a," * 20_000  # one whitespace word; 40 000 TER tokens once punctuation is split off


@pytest.mark.parametrize(
    ("name", "settings", "hyp", "needle"),
    [
        (
            "ter",
            {"normalized": True, "asian_support": True},
            CJK_LINE,
            "30,000 TER tokens against a reference of 30,000",
        ),
        ("ter", {"normalized": True}, COMMAS, "40,000 TER tokens against a reference of 40,000"),
        ("wer", {}, " ".join(["w"] * 110_000), "110,000 words"),
        ("cer", {}, "c" * 110_000, "110,000 characters"),
    ],
)
def test_a_pair_beyond_the_metrics_own_token_bound_is_refused_by_the_api(
    name, settings, hyp, needle
):
    # was: MemoryError (TER counted whitespace words, and only in the CLI)
    from evalab.metrics.base import PairTooLarge

    metric = evalab.metric(name, **settings)
    ref = hyp[::-1] if name != "wer" else " ".join(["v"] * 110_000)
    for call in (metric.stats, metric.corpus_score):
        with pytest.raises(PairTooLarge, match=needle) as info:
            call(["short", hyp], [["short", ref]])
        assert info.value.segment == 1 and info.value.metric == name
    sizes = metric.pair_sizes(["short", hyp], [["short", ref]])
    assert (info.value.hyp_size, info.value.ref_size) == (sizes[0][1], sizes[1][1])


@pytest.mark.parametrize(
    ("name", "settings", "expected"),
    [
        ("ter", {}, ([1, 2], [2, 3])),  # whitespace words without normalisation
        (
            "ter",
            {"normalized": True, "asian_support": True},
            ([2, 3], [3, 3]),
        ),  # "a," -> a , ; 漢字 d -> 漢 字 d
        ("wer", {}, ([1, 2], [2, 3])),
        ("cer", {}, ([2, 4], [4, 5])),
        ("rougeL", {}, ([1, 1], [2, 3])),  # rouge-score's tokenizer drops punctuation and CJK
    ],
)
def test_pair_sizes_count_the_metrics_own_tokens(name, settings, expected):
    from evalab.metrics.registry import available_metrics, metric_class

    hyps, refs = ["a,", "漢字 d"], [["a, b", None], ["x", "y z w"]]
    assert (
        evalab.metric(name, **settings).pair_sizes(hyps, refs) == expected
    )  # the longest reference; None is 0
    assert {"ter", "wer", "cer", "rougeL", "rougeLsum"} <= {
        n for n in available_metrics() if metric_class(n).pair_work
    }


def test_releases_gil_is_declared_per_class_not_inherited():
    from evalab.metrics.base import Metric
    from evalab.metrics.wer import WER

    class Slow(WER):  # computes in Python: claims nothing it did not declare
        name = "slow-wer"

    assert "releases_gil" in WER.__dict__ and Slow.releases_gil is False
    assert all(
        "releases_gil" in cls.__dict__ or not cls.releases_gil for cls in _subclasses(Metric)
    )


def _subclasses(cls: type) -> list[type]:
    return [sub for direct in cls.__subclasses__() for sub in (direct, *_subclasses(direct))]
