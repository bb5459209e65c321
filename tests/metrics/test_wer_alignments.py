"""WER/CER alignments and error counts against jiwer 4 (the oracle): the chunks of
``process_words``/``process_characters`` and ``collect_error_counts``, on English-target
WMT22 outputs under random settings, and the worst-segment order."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import read_lines, wmt_file, wmt_systems
from tests.metrics.test_wer import ENGLISH, jiwer_transform

from evalab.metrics._editdistance import (
    alignment_py,
    levenshtein_counts_many,
    levenshtein_steps_many,
)
from evalab.metrics.wer import CER, WER, error_counts
from evalab.report.word_alignment import EDIT_NAMES

jiwer = pytest.importorskip("jiwer")


def chunks(alignment) -> list[tuple[str, int, int, int, int]]:
    return [(EDIT_NAMES[c.edit], *c[1:]) for c in alignment.chunks]


def jiwer_chunks(output, k: int) -> list[tuple[str, int, int, int, int]]:
    return [
        (c.type, c.ref_start_idx, c.ref_end_idx, c.hyp_start_idx, c.hyp_end_idx)
        for c in output.alignments[k]
    ]


def jiwer_ranked(output) -> tuple[list, list, list]:
    """jiwer's error counts, most frequent first (its own sort, stable on first seen)."""
    subs, ins, dels = jiwer.collect_error_counts(output)

    def ranked(d):
        return sorted(d.items(), key=lambda kv: kv[1], reverse=True)

    return (
        [(r, h, n) for (r, h), n in ranked(subs)],
        [("", h, n) for h, n in ranked(ins)],
        [(r, "", n) for r, n in ranked(dels)],
    )


def ours_ranked(counts) -> tuple[list, list, list]:
    return tuple(
        [(e.reference, e.hypothesis, e.count) for e in kind]
        for kind in (counts.substitutions, counts.insertions, counts.deletions)
    )


def random_metric(rng: random.Random, unit: str):
    lowercase, punct = rng.random() < 0.5, rng.random() < 0.5
    if unit == "word":
        ws = rng.choice(["default", "any"])
        metric = WER(lowercase=lowercase, remove_punctuation=punct, whitespace=ws)
    else:
        ws = rng.choice(["keep", "collapse", "remove"])
        metric = CER(lowercase=lowercase, remove_punctuation=punct, whitespace=ws)
    return metric, jiwer_transform(unit, lowercase, punct, ws)


def jiwer_process(unit: str, ref: list[str], hyps: list[str], tr):
    process = jiwer.process_words if unit == "word" else jiwer.process_characters
    return process(ref, hyps, reference_transform=tr, hypothesis_transform=tr)


@pytest.mark.parametrize("unit", ["word", "char"])
@pytest.mark.parametrize("pair", sorted(ENGLISH))
def test_wmt22_alignments_and_error_counts(wmt22, pair, unit, edit_backend) -> None:
    rng = random.Random(f"align {pair} {unit}")
    system = rng.choice(wmt_systems(pair))
    hyps = read_lines(wmt_file("hyp", pair, system))
    ref = read_lines(wmt_file("ref", pair, rng.choice(ENGLISH[pair])))
    idx = sorted(rng.sample(range(len(hyps)), 300 if unit == "word" else 80))
    hyps, ref = [hyps[i] for i in idx], [ref[i] for i in idx]
    metric, tr = random_metric(rng, unit)
    out = jiwer_process(unit, ref, hyps, tr)
    ours = metric.alignments(hyps, [ref], range(len(hyps)))
    for k, a in enumerate(ours):
        assert chunks(a) == jiwer_chunks(out, k), (k, metric.settings)
        assert list(a.reference) == list(out.references[k])
        assert list(a.hypothesis) == list(out.hypotheses[k])
    rows = metric.stats(hyps, [ref]).rows
    assert np.array_equal(np.array([a.counts for a in ours]), rows)
    counts = error_counts(ours, metric.separator)
    assert ours_ranked(counts) == jiwer_ranked(out)
    k = rng.randint(1, 5)
    assert ours_ranked(counts.top(k)) == tuple(kind[:k] for kind in jiwer_ranked(out))


def test_worst_segments_order() -> None:
    refs = ["a b c d", "a b", "a b c", "x", "a"]
    hyps = ["a b c d", "a", "x y z", "y", "b"]
    metric = WER()
    rows = metric.stats(hyps, [refs]).rows
    # rates: 0, 0.5, 1, 1, 1: the errors only, worst first, earlier first on ties
    assert metric.worst_segments(rows, 10) == [2, 3, 4, 1]
    assert metric.worst_segments(rows, 2) == [2, 3]
    assert metric.worst_segments(rows[:1], 3) == []


def test_closest_reference_is_aligned(edit_backend) -> None:
    hyps = ["the cat sat", "a dog"]
    refs = [["a cat sat down", "the dog"], ["the cat sat", "the big dog"]]
    metric = WER()
    found = metric.alignments(hyps, refs, [0, 1])
    assert [a.reference for a in found] == [("the", "cat", "sat"), ("the", "dog")]
    assert np.array_equal(np.array([a.counts for a in found]), metric.stats(hyps, refs).rows)


def test_missing_reference_is_skipped() -> None:
    (a,) = WER().alignments(["a b"], [[None], ["a c"]], [0])
    assert a.reference == ("a", "c") and a.counts.tolist() == [1, 1, 0, 0]
    (none,) = WER().alignments(["a b"], [[None]], [0])
    assert none.reference == () and none.counts.tolist() == [0, 0, 0, 2]


WORDS = st.lists(st.sampled_from(["a", "b", "c", "*", "dd"]), max_size=8).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(WORDS, WORDS), min_size=1, max_size=4))
def test_random_alignments_and_counts(pairs) -> None:
    refs, hyps = [r for r, _ in pairs], [h for _, h in pairs]
    out = jiwer.process_words(refs, hyps)
    ours = WER().alignments(hyps, [refs], range(len(hyps)))
    assert [chunks(a) for a in ours] == [jiwer_chunks(out, k) for k in range(len(hyps))]
    assert ours_ranked(error_counts(ours, " ")) == jiwer_ranked(out)


@pytest.mark.slow
@pytest.mark.timeout(7200)
@pytest.mark.parametrize("unit", ["word", "char"])
@pytest.mark.parametrize("pair", sorted(ENGLISH))
def test_wmt22_every_system_alignments(wmt22, pair, unit) -> None:
    rng = random.Random(f"every align {pair} {unit}")
    for system in wmt_systems(pair):
        hyps = read_lines(wmt_file("hyp", pair, system))
        for ref_id in ENGLISH[pair]:
            ref = read_lines(wmt_file("ref", pair, ref_id))
            metric, tr = random_metric(rng, unit)
            out = jiwer_process(unit, ref, hyps, tr)
            ours = metric.alignments(hyps, [ref], range(len(hyps)))
            assert [chunks(a) for a in ours] == [jiwer_chunks(out, k) for k in range(len(hyps))]
            assert ours_ranked(error_counts(ours, metric.separator)) == jiwer_ranked(out)


SIDES = st.lists(st.integers(0, 5), max_size=150)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(SIDES, SIDES), min_size=1, max_size=5))
def test_kernel_steps_are_the_python_trace(pairs) -> None:
    """The kernel's steps (several 64-bit words per column beyond 64 reference tokens)
    equal :func:`alignment_py`'s, segment by segment."""
    from evalab import _kernel

    if _kernel.ed is None:
        pytest.skip("evalab._edkernel is not built")
    refs, hyps = [r for r, _ in pairs], [h for _, h in pairs]
    steps = levenshtein_steps_many(hyps, refs)
    assert [s.tolist() for s in steps] == [list(alignment_py(r, h)) for r, h in pairs]
    counts = levenshtein_counts_many(hyps, refs)
    assert [np.bincount(s, minlength=4).tolist() for s in steps] == counts.tolist()


def test_kernel_refuses_too_little_room() -> None:
    from evalab import _kernel
    from evalab._kernel import Packed

    if _kernel.ed is None:
        pytest.skip("evalab._edkernel is not built")
    hyp, ref = Packed.of([[1, 2]]), Packed.of([[3]])
    args = (hyp.ids, hyp.offsets, ref.ids, ref.offsets, np.zeros(1, np.int64))
    with pytest.raises(ValueError, match="places"):
        _kernel.ed.levenshtein_counts(
            args, np.zeros((1, 4), np.int64), np.zeros(2, np.int8), np.array([0, 2], np.int64)
        )
