"""MER, WIL, WIP and the WER/CER counts against jiwer 4 (the oracle): its test vectors,
every English-target WMT22 pair with random settings, and the empty edge cases."""

from __future__ import annotations

import random

import pytest
from tests.conftest import read_lines, wmt_file, wmt_systems
from tests.metrics.test_wer import ENGLISH, jiwer_transform

from evalab.metrics.wer import CER, MER, WER, WIL, WIP

jiwer = pytest.importorskip("jiwer")

# jiwer's tests/test_measures.py: (reference(s), hypothesis(es), (wer, mer, wil))
JIWER_MEASURES = [
    ("This is a test", "This is a test", (0, 0, 0)),
    ("This is a test", "", (1, 1, 1)),
    ("This is a test", "This test", (0.5, 0.5, 0.5)),
    ("i am a short ground truth", "i am a considerably longer and very much incorrect hypothesis",
     (7 / 6, 0.7, 0.85)),
    ("X", "X", (0, 0, 0)),
    ("X", "X X Y Y", (3, 0.75, 0.75)),
    ("X Y X", "X Z", (2 / 3, 2 / 3, 5 / 6)),
    ("X", "Y", (1, 1, 1)),
    ("X", "Y Z", (2, 1, 1)),
    # jiwer's empty references: silence predicted, and words where silence was
    ("", "", (0, 0, 0)),
    ("", "hello there", (2, 1, 1)),
    (["hello world", ""], ["hello world", "done"], (0.5, 1 / 3, None)),
]  # fmt: skip
# jiwer's tests/test_alignment.py summary: 3 substitutions, 5 deletions, 0 insertions, 1 hit
COUNTED = ("this test will  have a high word error rate", "no it will not", (1, 3, 5, 0))


def _lists(ref, hyp):
    return ([ref], [hyp]) if isinstance(ref, str) else (ref, hyp)


@pytest.mark.parametrize(("ref", "hyp", "expected"), JIWER_MEASURES)
def test_jiwer_measure_vectors(ref, hyp, expected, edit_backend) -> None:
    refs, hyps = _lists(ref, hyp)
    wer, mer, wil = expected
    for cls, value, oracle in ((WER, wer, jiwer.wer), (MER, mer, jiwer.mer), (WIL, wil, jiwer.wil)):
        ours = cls().corpus_score(hyps, [refs]).score
        if value is not None:
            assert ours == pytest.approx(value, abs=1e-15), cls.name
        assert ours == oracle(refs, hyps), cls.name
    assert WIP().corpus_score(hyps, [refs]).score == jiwer.wip(refs, hyps)


def test_counts_are_jiwers(edit_backend) -> None:
    ref, hyp, expected = COUNTED
    score = WER().corpus_score([hyp], [[ref]])
    assert (score.hits, score.substitutions, score.deletions, score.insertions) == expected
    out = jiwer.process_words(ref, hyp)
    assert expected == (out.hits, out.substitutions, out.deletions, out.insertions)


def test_directions_and_bounds() -> None:
    assert WIP.higher_is_better and not (MER.higher_is_better or WIL.higher_is_better)
    assert MER.bounds == WIL.bounds == WIP.bounds == (0.0, 1.0)
    assert WIP().signature_for(1).startswith("wip|nrefs:1|unit:word|")


def _counts(output) -> tuple[int, int, int, int]:
    return output.hits, output.substitutions, output.deletions, output.insertions


def check_measures(hyps: list[str], ref: list[str], rng: random.Random) -> None:
    """Every measure and the counts, corpus and per segment, under random jiwer transforms."""
    lowercase, punct = rng.random() < 0.5, rng.random() < 0.5
    settings = {"lowercase": lowercase, "remove_punctuation": punct}
    ws = rng.choice(["default", "any"])
    tr = jiwer_transform("word", lowercase, punct, ws)
    words = jiwer.process_words(ref, hyps, reference_transform=tr, hypothesis_transform=tr)
    for cls, expected in ((WER, words.wer), (MER, words.mer), (WIL, words.wil), (WIP, words.wip)):
        score = cls(**settings, whitespace=ws).corpus_score(hyps, [ref])
        assert score.score == expected, (cls.name, settings, ws)
    assert _counts(score) == _counts(words)
    rows = WER(**settings, whitespace=ws).stats(hyps, [ref]).rows
    for k in rng.sample(range(len(hyps)), 20):
        one = jiwer.process_words(ref[k], hyps[k], reference_transform=tr, hypothesis_transform=tr)
        assert tuple(rows[k]) == _counts(one), k
    cs = rng.choice(["keep", "collapse", "remove"])
    tr = jiwer_transform("char", lowercase, punct, cs)
    chars = jiwer.process_characters(ref, hyps, reference_transform=tr, hypothesis_transform=tr)
    score = CER(**settings, whitespace=cs).corpus_score(hyps, [ref])
    assert (score.score, *_counts(score)) == (chars.cer, *_counts(chars)), (settings, cs)


@pytest.mark.parametrize("pair", sorted(ENGLISH))
def test_wmt22_english_pairs_random_settings(wmt22, pair, edit_backend) -> None:
    rng = random.Random(f"measures {pair}")
    system = rng.choice(wmt_systems(pair))
    hyps = read_lines(wmt_file("hyp", pair, system))
    ref = read_lines(wmt_file("ref", pair, rng.choice(ENGLISH[pair])))
    idx = sorted(rng.sample(range(len(hyps)), 400 if edit_backend == "kernel" else 40))
    check_measures([hyps[i] for i in idx], [ref[i] for i in idx], rng)


@pytest.mark.slow
@pytest.mark.timeout(7200)
@pytest.mark.parametrize("pair", sorted(ENGLISH))
def test_wmt22_english_every_system_measures(wmt22, pair) -> None:
    rng = random.Random(f"every {pair}")
    for system in wmt_systems(pair):
        hyps = read_lines(wmt_file("hyp", pair, system))
        for ref_id in ENGLISH[pair]:
            check_measures(hyps, read_lines(wmt_file("ref", pair, ref_id)), rng)
