"""The Metric contract: reference layout checks, settings parsing, Score, signatures."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest
from tests.conftest import read_lines, wmt_file, wmt_systems

import evalab
from evalab.errors import InputError, SettingsError
from evalab.metrics.base import Metric, MetricSettings, Score, check_references, setting


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

    def _score_from_sums(self, sums, nrefs):
        return Score(self.name, float(sums[0] / sums[1]), self.signature_for(nrefs),
                     components={"hyp_len": float(sums[0]), "ratio_list": [1, 2]})

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
    with pytest.raises(InputError, match="one list of references per segment was passed; transpose"):
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
    with pytest.raises(SettingsError, match="invalid value 'c' for setting 'mode'; expected one of 'a', 'b'"):
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


def test_stats_aggregate_and_empty_corpus():
    m = Toy()
    rows = m.stats(["ab", "c"], [["abcd", "ef"]])
    assert rows.shape == (2, 2) and rows.dtype == np.float64
    assert m.aggregate(rows).score == 0.5
    assert m.stats([], [[]]).shape == (0, 2)
    with pytest.raises(InputError, match=r"stats must have shape \[n_segments, 2\]"):
        m.aggregate(np.zeros((2, 3)))


def test_sentence_score_checks_types():
    m = Toy()
    assert m.sentence_score("ab", ["abcd"]).score == 0.5
    with pytest.raises(InputError, match="references must be a list of strings"):
        m.sentence_score("ab", "abcd")
    with pytest.raises(InputError, match="hypothesis must be a str"):
        m.sentence_score(["ab"], ["abcd"])


def test_signature_has_version_and_uses_last_nrefs():
    m = Toy(mode="b")
    m.corpus_score(["a"], [["b"], ["c"]])
    assert m.signature == f"nrefs:2|mode:b|version:{evalab.__version__}"
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
        assert np.array_equal(rows, evalab.metric(name, **settings).stats(hyps, refs))


def test_stats_many_checks_every_system_and_handles_empty_input() -> None:
    bleu = evalab.metric("bleu")
    assert bleu.stats_many([], [["a"]]) == []
    empty = bleu.stats_many([[], []], [[]])
    assert [e.shape for e in empty] == [(0, 10), (0, 10)]
    with pytest.raises(InputError, match="2 hypotheses but reference streams of lengths"):
        bleu.stats_many([["a"], ["a", "b"]], [["x"]])
    with pytest.raises(InputError, match="hypothesis 0 is int"):
        bleu.stats_many([["a"], [3]], [["x"]])
