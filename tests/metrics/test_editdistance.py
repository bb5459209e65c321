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
