"""WER/CER against jiwer 4 (the oracle): its test vectors, WMT22 English outputs, options."""

from __future__ import annotations

import random

import pytest
from tests.conftest import read_lines, wmt_file, wmt_systems

from evalab.metrics.wer import CER, WER

jiwer = pytest.importorskip("jiwer")

ENGLISH = {"cs-en": ["B", "C"], "de-en": ["A", "B"], "ru-en": ["A"], "uk-en": ["A"]}

# jiwer's own test vectors (jitsi/jiwer tests/test_wer.py, test_cer.py, test_empty_ref.py):
# (reference(s), hypothesis(es), expected corpus rate)
JIWER_WER = [
    ("This is a test", "This is a test", 0.0),
    ("This is a test", "", 1.0),
    ("This is a test", "This test", 0.5),
    ("", "hello", 1.0),
    ("", "0 1 2 3 4", 5.0),
    ("hello", "", 1.0),
    (["hello world", ""], ["hello world", "done"], 1 / 2),
    (["", ""], ["", ""], 0.0),
]
JIWER_CER = [
    ("This is a test", "This is a test", 0 / 14),
    ("This is a test", "", 14 / 14),
    ("This is a test", "This test", 5 / 14),
    ("X", "X X Y Y", 6),
    ("X Y X", "X Z", 3 / 5),
    ("X", "Y", 1),
    ("X", "Y Z", 3),
    (["i", "am i good"], ["i am", "i good"], 0.6),
    (["am i good", "i"], ["i good", "i am"], 0.6),
    (["i", "am i good"], ["i am", "y good"], 0.7),
    ("", "", 0),
    ("", "abd", 3),
    ("abc", "", 1),
]


def _lists(ref, hyp):
    return ([ref], [hyp]) if isinstance(ref, str) else (ref, hyp)


@pytest.mark.parametrize(("ref", "hyp", "expected"), JIWER_WER)
def test_jiwer_wer_vectors(ref, hyp, expected, edit_backend) -> None:
    refs, hyps = _lists(ref, hyp)
    ours = WER().corpus_score(hyps, [refs]).score
    assert ours == pytest.approx(expected, abs=1e-15)
    assert ours == jiwer.wer(refs, hyps)


@pytest.mark.parametrize(("ref", "hyp", "expected"), JIWER_CER)
def test_jiwer_cer_vectors(ref, hyp, expected, edit_backend) -> None:
    refs, hyps = _lists(ref, hyp)
    ours = CER().corpus_score(hyps, [refs]).score
    assert ours == pytest.approx(expected, abs=1e-15)
    assert ours == jiwer.cer(refs, hyps)


def jiwer_transform(unit: str, lowercase: bool, punct: bool, whitespace: str):
    steps = [jiwer.ToLowerCase()] if lowercase else []
    steps += [jiwer.RemovePunctuation()] if punct else []
    if unit == "word":
        steps += [jiwer.RemoveWhiteSpace(replace_by_space=True)] if whitespace == "any" else []
        steps += [jiwer.RemoveMultipleSpaces(), jiwer.Strip(), jiwer.ReduceToListOfListOfWords()]
    else:
        steps += {
            "keep": [],
            "collapse": [jiwer.RemoveMultipleSpaces()],
            "remove": [jiwer.RemoveWhiteSpace()],
        }[whitespace]
        steps += [jiwer.Strip(), jiwer.ReduceToListOfListOfChars()]
    return jiwer.Compose(steps)


def check_against_jiwer(hyps: list[str], ref: list[str], rng: random.Random) -> None:
    lowercase, punct = rng.random() < 0.5, rng.random() < 0.5
    for cls, unit, choices, oracle in (
        (WER, "word", ["default", "any"], jiwer.wer),
        (CER, "char", ["keep", "collapse", "remove"], jiwer.cer),
    ):
        ws = rng.choice(choices)
        tr = jiwer_transform(unit, lowercase, punct, ws)
        expected = oracle(ref, hyps, reference_transform=tr, hypothesis_transform=tr)
        metric = cls(lowercase=lowercase, remove_punctuation=punct, whitespace=ws)
        assert metric.corpus_score(hyps, [ref]).score == expected, (cls.name, lowercase, punct, ws)


def test_wmt22_english_random_settings(wmt22, edit_backend) -> None:
    rng = random.Random(18)
    for _ in range(3):
        pair = rng.choice(sorted(ENGLISH))
        system = rng.choice(wmt_systems(pair))
        hyps = read_lines(wmt_file("hyp", pair, system))
        ref = read_lines(wmt_file("ref", pair, rng.choice(ENGLISH[pair])))
        idx = sorted(rng.sample(range(len(hyps)), 400 if edit_backend == "kernel" else 40))
        check_against_jiwer([hyps[i] for i in idx], [ref[i] for i in idx], rng)


@pytest.mark.slow
@pytest.mark.timeout(7200)  # the peers take minutes per pair on a loaded machine
@pytest.mark.parametrize("pair", sorted(ENGLISH))
def test_wmt22_english_every_system(wmt22, pair) -> None:
    rng = random.Random(pair)
    for system in wmt_systems(pair):
        hyps = read_lines(wmt_file("hyp", pair, system))
        for ref_id in ENGLISH[pair]:
            ref = read_lines(wmt_file("ref", pair, ref_id))
            assert WER().corpus_score(hyps, [ref]).score == jiwer.wer(ref, hyps)
            assert CER().corpus_score(hyps, [ref]).score == jiwer.cer(ref, hyps)
            check_against_jiwer(hyps, ref, rng)


def test_several_references_take_the_closest_per_segment() -> None:
    hyps = ["a b c", "x y"]
    refs = [["a b c d e", "x y"], ["a x c d", "q r s t"]]
    # segment 0: 2 edits to either reference, the first wins (length 5); segment 1: 0 edits
    rows = WER().stats(hyps, refs)
    assert rows.stat_names == ("hits", "substitutions", "deletions", "insertions")
    assert rows.rows.tolist() == [[3.0, 0.0, 2.0, 0.0], [2.0, 0.0, 0.0, 0.0]]
    assert WER().corpus_score(hyps, refs).score == pytest.approx(2 / 7)
    assert WER().corpus_score(hyps, [refs[1], refs[0]]).score == pytest.approx(2 / 6)


def test_none_reference_is_missing() -> None:
    hyps = ["a b c", "x y"]
    assert WER().corpus_score(hyps, [["a b c", None], [None, "x"]]).score == pytest.approx(1 / 4)


def test_error_rate_above_one_is_kept() -> None:
    score = WER().corpus_score(["a b c d"], [["a"]])
    assert score.score == 3.0
    assert score.higher_is_better is False


def test_signature_records_the_normalisation() -> None:
    sig = WER(lowercase=True, remove_punctuation=True, whitespace="any").signature_for(1)
    assert sig.startswith("wer|nrefs:1|unit:word|case:lc|punct:no|space:any|ref:closest|version:")
    assert (
        CER().signature_for(2).startswith("cer|nrefs:2|unit:char|case:mixed|punct:yes|space:keep|")
    )
