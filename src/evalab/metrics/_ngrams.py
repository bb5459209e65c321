"""Clipped n-gram match counts shared by BLEU and chrF.

Sequences (word or character ids) are packed into one int64 array per stream with segment
offsets. :func:`match_counts` returns, for every segment, reference stream and order
``n``, the clipped matches ``sum_g min(count_hyp(g), count_ref(g))`` and the same clipped
by the maximum count over references (BLEU's multi-reference rule, Papineni et al. 2002,
section 2.1.1). The compiled kernel (``evalab._mtkernel``) does this in one pass with a
hash table per segment; :func:`_match_counts_python` is the reference implementation with
``collections.Counter`` and gives identical numbers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from evalab import _kernel

__all__ = ["Packed", "match_counts", "offsets_of", "pack_chars", "pack_ids", "pack_new_vocab"]


@dataclass(frozen=True)
class Packed:
    """Ids of all segments of one stream, concatenated, with ``offsets`` (nseg + 1)."""

    ids: np.ndarray
    offsets: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        """Number of items (tokens or characters) of each segment."""
        return np.diff(self.offsets)


def offsets_of(lengths: Iterable[int], n: int) -> np.ndarray:
    """Segment offsets (n + 1 entries, starting at 0) from ``n`` segment lengths."""
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.fromiter(lengths, dtype=np.int64, count=n), out=off[1:])
    return off


def pack_new_vocab(segments: Sequence[Sequence[Hashable]], vocab: dict) -> Packed:
    """Pack token sequences, adding unseen tokens to ``vocab`` (the reference side)."""
    flat = list(chain.from_iterable(segments))
    ids = np.fromiter(
        (vocab.setdefault(t, len(vocab)) for t in flat), dtype=np.int64, count=len(flat)
    )
    return Packed(ids, offsets_of(map(len, segments), len(segments)))


def pack_ids(segments: Sequence[Sequence[Hashable]], vocab: dict) -> Packed:
    """Pack token sequences with a fixed ``vocab``; unknown tokens become -1.

    A hypothesis token absent from every reference can never be part of a matching
    n-gram, so one shared id for all of them changes no clipped count.
    """
    flat = list(chain.from_iterable(segments))
    get = vocab.get
    ids = np.fromiter((get(t, -1) for t in flat), dtype=np.int64, count=len(flat))
    return Packed(ids, offsets_of(map(len, segments), len(segments)))


def pack_chars(segments: Sequence[str]) -> Packed:
    """Pack strings as code points (characters need no vocabulary)."""
    joined = "".join(segments).encode("utf-32-le", "surrogatepass")
    ids = np.frombuffer(joined, dtype="<u4").astype(np.int64)
    return Packed(ids, offsets_of(map(len, segments), len(segments)))


def match_counts(hyp: Packed, refs: Sequence[Packed], max_order: int) -> tuple[np.ndarray, np.ndarray]:
    """Clipped matches: ``per_ref[nseg, nrefs, max_order]`` and ``best[nseg, max_order]``.

    ``per_ref[s, j, n-1]`` clips hypothesis n-gram counts by reference ``j``; ``best``
    clips by the maximum count in any single reference.

    >>> h = pack_chars(["aab"]); r = pack_chars(["ab"])
    >>> per_ref, best = match_counts(h, [r], 2)
    >>> best.tolist()
    [[2, 1]]
    """
    nseg = len(hyp.offsets) - 1
    for r in refs:
        if len(r.offsets) - 1 != nseg:
            raise ValueError(f"reference stream has {len(r.offsets) - 1} segments, hypotheses {nseg}")
    kernel = _kernel.kernel
    if kernel is None:
        return _match_counts_python(hyp, refs, max_order)
    per_ref = np.zeros((nseg, len(refs), max_order), dtype=np.int64)
    best = np.zeros((nseg, max_order), dtype=np.int64)
    kernel.match_counts(
        np.ascontiguousarray(hyp.ids, dtype=np.int64),
        np.ascontiguousarray(hyp.offsets, dtype=np.int64),
        [np.ascontiguousarray(r.ids, dtype=np.int64) for r in refs],
        [np.ascontiguousarray(r.offsets, dtype=np.int64) for r in refs],
        int(max_order),
        per_ref,
        best,
    )
    return per_ref, best


def _ngram_counter(seq: list[int], n: int) -> Counter:
    return Counter(tuple(seq[i : i + n]) for i in range(len(seq) - n + 1))


def _match_counts_python(hyp: Packed, refs: Sequence[Packed], max_order: int) -> tuple[np.ndarray, np.ndarray]:
    """Pure-Python :func:`match_counts` (the fallback and the test oracle)."""
    nseg = len(hyp.offsets) - 1
    per_ref = np.zeros((nseg, len(refs), max_order), dtype=np.int64)
    best = np.zeros((nseg, max_order), dtype=np.int64)
    h_ids = hyp.ids.tolist()
    r_ids = [r.ids.tolist() for r in refs]
    for s in range(nseg):
        h = h_ids[hyp.offsets[s] : hyp.offsets[s + 1]]
        rs = [ids[r.offsets[s] : r.offsets[s + 1]] for ids, r in zip(r_ids, refs, strict=True)]
        for n in range(1, max_order + 1):
            hc = _ngram_counter(h, n)
            if not hc:
                break
            rcs = [_ngram_counter(r, n) for r in rs]
            for j, rc in enumerate(rcs):
                per_ref[s, j, n - 1] = sum(min(c, rc[g]) for g, c in hc.items())
            best[s, n - 1] = sum(min(c, max(rc[g] for rc in rcs)) for g, c in hc.items())
    return per_ref, best
