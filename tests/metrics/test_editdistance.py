"""The C edit distances against the pure-Python ones and sacrebleu's lib_ter."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalab import _kernel
from evalab.metrics import _editdistance as ed

pytestmark = pytest.mark.skipif(_kernel.ed is None, reason="evalab._edkernel is not built")

# few distinct words make shifts and ties frequent; lengths cross the beam width (25)
words = st.lists(st.integers(0, 5), max_size=70)
pairs = st.lists(st.tuples(words, words), min_size=1, max_size=6)


@settings(max_examples=150, deadline=None)
@given(pairs)
def test_ter_kernel_equals_python_and_sacrebleu(segments) -> None:
    lib_ter = pytest.importorskip("sacrebleu.metrics.lib_ter")
    hyps, refs = [h for h, _ in segments], [r for _, r in segments]
    kernel = ed.ter_edits_many(hyps, refs).tolist()
    assert kernel == [ed.ter_edits_py(h, r) for h, r in segments]
    assert kernel == [
        lib_ter.translation_edit_rate([str(w) for w in h], [str(w) for w in r])[0]
        for h, r in segments
    ]


@settings(max_examples=200, deadline=None)
@given(pairs)
def test_levenshtein_kernel_equals_python(segments) -> None:
    hyps, refs = [h for h, _ in segments], [r for _, r in segments]
    assert ed.levenshtein_many(hyps, refs).tolist() == [
        ed.levenshtein_py(h, r) for h, r in segments
    ]


def test_very_unequal_lengths_widen_the_beam() -> None:
    lib_ter = pytest.importorskip("sacrebleu.metrics.lib_ter")
    hyp, ref = [1, 2], list(range(120))
    assert ed.ter_edits_many([hyp], [ref]).tolist() == [lib_ter.translation_edit_rate(hyp, ref)[0]]
    assert (
        ed.ter_edits_py(ref, hyp)
        == ed.ter_edits_many([ref], [hyp])[0]
        == lib_ter.translation_edit_rate(ref, hyp)[0]
    )


def test_ter_workspace_kept_across_segments_of_any_size() -> None:
    """One call keeps its buffers from segment to segment: lengths that grow, shrink and
    empty sides give each segment's own number."""
    import random

    rng = random.Random(3)
    sizes = [(0, 4), (3, 0), (60, 2), (1, 1), (2, 90), (40, 40), (0, 0), (5, 7), (80, 75)]
    segments = [
        ([rng.randint(0, 4) for _ in range(n)], [rng.randint(0, 4) for _ in range(m)])
        for n, m in sizes
    ]
    hyps, refs = [h for h, _ in segments], [r for _, r in segments]
    assert ed.ter_edits_many(hyps, refs).tolist() == [ed.ter_edits_py(h, r) for h, r in segments]


def test_kernel_rejects_inconsistent_buffers() -> None:
    import numpy as np

    ids = np.zeros(3, dtype=np.int32)
    with pytest.raises(ValueError, match="int32 ids"):
        _kernel.ed.ter_edits(
            ids,
            np.array([0, 5], dtype=np.int64),
            ids,
            np.array([0, 3], dtype=np.int64),
            np.zeros(1, dtype=np.int64),
        )


def _rapidfuzz_chunks(ref: list[int], hyp: list[int]) -> list[tuple[int, int, int, int, int]]:
    levenshtein = pytest.importorskip("rapidfuzz.distance.Levenshtein")
    kinds = {"equal": 0, "replace": 1, "delete": 2, "insert": 3}
    return [(kinds[t], *span) for t, *span in levenshtein.opcodes(ref, hyp)]


@settings(max_examples=300, deadline=None)
@given(pairs)
def test_alignment_is_rapidfuzzs_and_the_kernel_counts_it(segments) -> None:
    # jiwer 4 reports rapidfuzz's opcodes(reference, hypothesis); with few distinct words
    # many shortest paths tie, so the chunks check the path, not only the distance
    hyps, refs = [h for h, _ in segments], [r for _, r in segments]
    counts = ed.levenshtein_counts_many(hyps, refs).tolist()
    for (hyp, ref), kernel in zip(segments, counts, strict=True):
        steps = ed.alignment_py(ref, hyp)
        assert [tuple(c) for c in ed.chunks_of(steps)] == _rapidfuzz_chunks(ref, hyp)
        assert kernel == [steps.count(e) for e in ed.Edit]
        assert sum(kernel[1:]) == ed.levenshtein_py(hyp, ref)


@pytest.mark.parametrize(("n", "m", "distinct"), [(70, 5000, 3), (130, 130, 2), (640, 700, 40)])
def test_alignment_of_multiword_references(n, m, distinct) -> None:
    # references beyond 64 tokens take several bit-vector words per column
    import random

    rng = random.Random(n * m)
    ref = [rng.randrange(distinct) for _ in range(n)]
    hyp = [rng.randrange(distinct) for _ in range(m)]
    steps = ed.alignment_py(ref, hyp)
    assert [tuple(c) for c in ed.chunks_of(steps)] == _rapidfuzz_chunks(ref, hyp)
    assert ed.levenshtein_counts_many([hyp], [ref]).tolist() == [[steps.count(e) for e in ed.Edit]]


def test_rapidfuzz_traces_huge_tables_another_way() -> None:
    # the one documented difference: from 2**22 cells (after cutting the common prefix and
    # suffix) rapidfuzz runs Hirschberg's algorithm, which may take another shortest path
    import random

    rng = random.Random(0)
    ref = [rng.randint(0, 3) for _ in range(2040)]
    hyp = [rng.randint(0, 3) for _ in range(2060)]
    assert len(ref) * len(hyp) >= 2**22
    ours = [tuple(c) for c in ed.chunks_of(ed.alignment_py(ref, hyp))]
    theirs = _rapidfuzz_chunks(ref, hyp)
    assert ours != theirs

    def edits(chunks: list[tuple[int, int, int, int, int]]) -> int:
        return sum(max(c[2] - c[1], c[4] - c[3]) for c in chunks if c[0])

    assert edits(ours) == edits(theirs) == ed.levenshtein_many([hyp], [ref])[0]
