"""jiwer's alignment layout (``visualize_alignment``: REF/HYP lines, S/D/I marks) on WMT22
English-target outputs and random tokens, and the error-count table and JSON."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import read_lines, wmt_file, wmt_systems
from tests.metrics.test_wer import ENGLISH
from tests.metrics.test_wer_alignments import jiwer_process, random_metric

from evalab.metrics.wer import CER, WER, ErrorCount, ErrorCounts
from evalab.report.table import cell_text
from evalab.report.word_alignment import (
    AlignedSegments,
    SystemErrors,
    alignment_data,
    alignment_lines,
    alignment_text,
    error_table,
    errors_data,
)

jiwer = pytest.importorskip("jiwer")


def jiwer_blocks(output) -> dict[int, list[str]]:
    """Segment index -> the lines of jiwer's block for it (correct segments are skipped)."""
    text = jiwer.visualize_alignment(output, show_measures=False)
    parts = re.split(r"=== SENTENCE (\d+) ===\n\n", text)[1:]
    return {
        int(k) - 1: body.rstrip("\n").split("\n")
        for k, body in zip(parts[::2], parts[1::2], strict=True)
    }


@pytest.mark.parametrize("unit", ["word", "char"])
@pytest.mark.parametrize("pair", sorted(ENGLISH))
def test_wmt22_layout_is_jiwers(wmt22, pair, unit) -> None:
    rng = random.Random(f"layout {pair} {unit}")
    system = rng.choice(wmt_systems(pair))
    hyps = read_lines(wmt_file("hyp", pair, system))
    ref = read_lines(wmt_file("ref", pair, rng.choice(ENGLISH[pair])))
    idx = sorted(rng.sample(range(len(hyps)), 200 if unit == "word" else 60))
    hyps, ref = [hyps[i] for i in idx], [ref[i] for i in idx]
    metric, tr = random_metric(rng, unit)
    expected = jiwer_blocks(jiwer_process(unit, ref, hyps, tr))
    ours = metric.alignments(hyps, [ref], range(len(hyps)))
    for k, a in enumerate(ours):
        if k in expected:
            assert alignment_lines(a, spaced=unit == "word") == expected[k], k


TEXT = st.lists(st.sampled_from(["a", "bb", "*", "ccc", "é"]), max_size=7).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(TEXT, TEXT)
def test_random_layout_is_jiwers(ref, hyp) -> None:
    for spaced, process, metric in (
        (True, jiwer.process_words, WER()),
        (False, jiwer.process_characters, CER()),
    ):
        blocks = jiwer_blocks(process(ref, hyp))
        (a,) = metric.alignments([hyp], [[ref]], [0])
        if 0 in blocks:
            assert alignment_lines(a, spaced=spaced) == blocks[0]


def test_text_heading_and_blocks() -> None:
    hyps, refs = ["a x c", "a b"], ["a b c", "a b"]
    found = WER().alignments(hyps, [refs], [0])
    text = alignment_text([AlignedSegments("sys", "wer", found, [1 / 3], spaced=True)])
    assert text == (
        "wer alignments of sys: the 1 worst segment with an error\n\n"
        "=== SENTENCE 1 === wer 0.3333\n\nREF: a b c\nHYP: a x c\n       S  \n\n"
    )


COUNTS = ErrorCounts(
    (ErrorCount("a", "b", 3), ErrorCount("c", "d", 1)),
    (ErrorCount("", "x y", 2),),
    (),
)


def test_error_table_and_data() -> None:
    t = error_table([SystemErrors("sys", "wer", COUNTS)], 2)
    assert [[cell_text(c) for c in row] for row in t.body] == [
        ["sys", "wer", "substitution", "a", "b", "3"],
        ["sys", "wer", "substitution", "c", "d", "1"],
        ["sys", "wer", "insertion", "-", "x y", "2"],
        ["sys", "wer", "deletion", "none", "", ""],
    ]
    assert errors_data(COUNTS) == {
        "substitutions": [
            {"reference": "a", "hypothesis": "b", "count": 3},
            {"reference": "c", "hypothesis": "d", "count": 1},
        ],
        "insertions": [{"hypothesis": "x y", "count": 2}],
        "deletions": [],
    }


def test_alignment_data_has_jiwers_chunk_fields() -> None:
    (a,) = WER().alignments(["b"], [["a b"]], [0])
    (row,) = alignment_data(AlignedSegments("s", "wer", [a], [0.5], spaced=True))
    assert row == {
        "segment": 1,
        "score": 0.5,
        "reference": ["a", "b"],
        "hypothesis": ["b"],
        "chunks": [
            {
                "type": "delete",
                "ref_start_idx": 0,
                "ref_end_idx": 1,
                "hyp_start_idx": 0,
                "hyp_end_idx": 0,
            },
            {
                "type": "equal",
                "ref_start_idx": 1,
                "ref_end_idx": 2,
                "hyp_start_idx": 0,
                "hyp_end_idx": 1,
            },
        ],
    }


def test_text_when_no_segment_has_an_error() -> None:
    text = alignment_text([AlignedSegments("sys", "cer", [], [], spaced=False)])
    assert text == "cer alignments of sys: no segment has an error\n\n"
