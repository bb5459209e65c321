"""Packing and clipped n-gram matching (evalab.metrics._ngrams): kernel, fallback, threads."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalab import _kernel
from evalab._kernel import Packed
from evalab.errors import SettingsError
from evalab.metrics import _ngrams
from evalab.metrics._ngrams import (
    _match_counts_python,
    kernel_threads,
    match_counts,
    match_counts_many,
    pack_chars,
)

# characters str.split() treats as whitespace, ASCII and not
SPACES = [
    " ",
    "\t",
    "\n",
    "\x0b",
    "\x0c",
    "\r",
    "\x1c",
    "\x1d",
    "\x1e",
    "\x1f",
    "\x85",
    "\xa0",
    "\u2028",
    "\u3000",
]
TEXT = st.lists(st.sampled_from(["a", "b", "é", "中", "🙂", "\ud800", *SPACES]), max_size=20).map(
    "".join
)


def kernel_or_skip():
    if _kernel.mt is None:
        pytest.skip("compiled kernel not built")
    return _kernel.mt


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXT, max_size=6), st.booleans())
def test_pack_chars_kernel_equals_python(texts, keep) -> None:
    kernel_or_skip()
    fast = pack_chars(texts, keep_whitespace=keep)
    saved, _kernel.mt = _kernel.mt, None
    try:
        slow = pack_chars(texts, keep_whitespace=keep)
    finally:
        _kernel.mt = saved
    assert fast.ids.tolist() == slow.ids.tolist()
    assert fast.offsets.tolist() == slow.offsets.tolist()
    expected = [t if keep else "".join(t.split()) for t in texts]
    assert fast.lengths.tolist() == [len(t) for t in expected]
    assert fast.ids.tolist() == [ord(c) for c in "".join(expected)]


def _random_streams(rng: np.random.Generator, nseg: int, nrefs: int) -> tuple[Packed, list[Packed]]:
    def stream(unknown: bool) -> Packed:
        lengths = rng.integers(0, 40, size=nseg)
        ids = rng.integers(-1 if unknown else 0, 6, size=int(lengths.sum()))
        return Packed(
            ids.astype(np.int64), np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        )

    return stream(True), [stream(False) for _ in range(nrefs)]


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.int16])
def test_kernel_reads_4_and_8_byte_ids(dtype) -> None:
    kernel_or_skip()
    rng = np.random.default_rng(3)
    hyp, refs = _random_streams(rng, 50, 2)
    if dtype == np.uint32:  # no -1 there: code points
        hyp = Packed(np.abs(hyp.ids), hyp.offsets)
    expected = _match_counts_python(hyp, refs, 4)
    cast = Packed(hyp.ids.astype(dtype), hyp.offsets)
    got = match_counts(cast, [Packed(r.ids.astype(dtype), r.offsets) for r in refs], 4)
    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])


def test_kernel_rejects_wrong_item_sizes() -> None:
    k = kernel_or_skip()
    ids, off = np.zeros(3, dtype=np.int64), np.array([0, 3], dtype=np.int64)
    per_ref, best = np.zeros((1, 1, 2), dtype=np.int64), np.zeros((1, 2), dtype=np.int64)
    bad_off = np.array([0, 4], dtype=np.int64)
    for count in (k.match_counts, k.match_counts_shared):
        with pytest.raises(TypeError, match="4- or 8-byte"):
            count([ids.astype(np.int16)], [off], [ids], [off], 2, [per_ref], [best])
        with pytest.raises(TypeError, match="hyp offsets must hold 8-byte"):
            count([ids], [off.astype(np.int32)], [ids], [off], 2, [per_ref], [best])
        with pytest.raises(ValueError, match="wrong size"):
            count([ids], [off], [ids], [off], 3, [per_ref], [best])
        with pytest.raises(ValueError, match="need >= 1 hypothesis stream"):
            count([], [], [ids], [off], 2, [], [])
        with pytest.raises(ValueError, match="invalid reference offsets"):
            count([ids], [off], [ids], [bad_off], 2, [per_ref], [best])
        with pytest.raises(TypeError, match="must be sequences"):
            count(5, [off], [ids], [off], 2, [per_ref], [best])


@pytest.mark.parametrize("threads", ["1", "2", "3", "7"])
def test_threaded_matching_equals_one_thread(threads, monkeypatch) -> None:
    kernel_or_skip()
    rng = np.random.default_rng(11)
    hyp, refs = _random_streams(rng, 300, 3)
    expected = _match_counts_python(hyp, refs, 5)
    monkeypatch.setattr(_ngrams, "PARALLEL_MIN_ITEMS", 100)
    monkeypatch.setenv("EVALAB_NUM_THREADS", threads)
    got = match_counts(hyp, refs, 5)
    assert np.array_equal(got[0], expected[0]) and np.array_equal(got[1], expected[1])


def test_threaded_matching_reraises_kernel_errors(monkeypatch) -> None:
    kernel_or_skip()
    rng = np.random.default_rng(2)
    hyp, refs = _random_streams(rng, 200, 1)
    monkeypatch.setattr(_ngrams, "PARALLEL_MIN_ITEMS", 10)
    monkeypatch.setenv("EVALAB_NUM_THREADS", "3")
    offsets = hyp.offsets.copy()
    offsets[150] = offsets[149] - 1  # a segment of negative length, in a worker's share
    with pytest.raises(ValueError, match="invalid hypothesis offsets"):
        match_counts(Packed(hyp.ids, offsets), refs, 3)


def test_kernel_threads_setting(monkeypatch) -> None:
    monkeypatch.setenv("EVALAB_NUM_THREADS", "5")
    assert kernel_threads() == 5
    monkeypatch.delenv("EVALAB_NUM_THREADS")
    assert 1 <= kernel_threads() <= 8
    for bad in ("0", "-2", "many", "1.5", "1_0", "٣"):
        monkeypatch.setenv("EVALAB_NUM_THREADS", bad)
        with pytest.raises(SettingsError, match="EVALAB_NUM_THREADS must be a positive integer"):
            kernel_threads()


@pytest.mark.parametrize("shared_from", [1, 3, 99])
@pytest.mark.parametrize("threads", ["1", "3"])
def test_many_systems_at_once_equal_one_at_a_time(threads, shared_from, monkeypatch) -> None:
    """With the shared reference side no system may see another's counts, and both kernel
    paths give the fallback's numbers, whatever the number of systems, references, orders
    and threads."""
    kernel_or_skip()
    monkeypatch.setattr(_ngrams, "PARALLEL_MIN_ITEMS", 100)
    monkeypatch.setattr(_ngrams, "SHARED_MIN_SYSTEMS", shared_from)
    monkeypatch.setenv("EVALAB_NUM_THREADS", threads)
    rng = np.random.default_rng(5)
    for nsys, nrefs, order in [(1, 1, 4), (2, 2, 3), (5, 1, 6), (4, 3, 2), (7, 2, 9)]:
        streams = [_random_streams(rng, 120, nrefs) for _ in range(nsys)]
        refs = streams[0][1]
        hyps = [h for h, _ in streams]
        got = match_counts_many(hyps, refs, order)
        for h, (per_ref, best) in zip(hyps, got, strict=True):
            expected = _match_counts_python(h, refs, order)
            assert np.array_equal(per_ref, expected[0]) and np.array_equal(best, expected[1])


def test_many_systems_must_be_aligned() -> None:
    rng = np.random.default_rng(1)
    a, refs = _random_streams(rng, 10, 1)
    b, _ = _random_streams(rng, 11, 1)
    with pytest.raises(ValueError, match="segments"):
        match_counts_many([a, b], refs, 2)
    assert match_counts_many([], refs, 2) == []
