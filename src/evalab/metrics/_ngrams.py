"""Clipped n-gram match counts shared by BLEU and chrF.

Sequences (word ids, int64; character code points, uint32) are packed into one array per
stream with segment offsets. :func:`match_counts` returns, for every segment, reference
stream and order ``n``, the clipped matches ``sum_g min(count_hyp(g), count_ref(g))`` and
the same clipped by the maximum count over references (BLEU's multi-reference rule,
Papineni et al. 2002, section 2.1.1); :func:`match_counts_many` does it for several
systems against the same references. The compiled kernel (``evalab._mtkernel``) does this
in one pass with a hash table per segment, on several threads;
:func:`_match_counts_python` is the reference implementation with ``collections.Counter``
and gives identical numbers.
"""

from __future__ import annotations

import itertools
import os
import threading
from abc import abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

from evalab import _kernel, numbers
from evalab._kernel import Packed
from evalab.errors import SettingsError
from evalab.metrics.base import MetricSettings, SystemsMetric

#: from this many systems on, the reference side of a segment is built once for all of
#: them (measured on WMT22: building it costs about 1.5 systems' worth of lookups)
SHARED_MIN_SYSTEMS = 3

#: below this many ids (hypotheses and references together) a call uses one thread: starting
#: threads and splitting would cost more than they save
PARALLEL_MIN_ITEMS = 100_000

#: the highest n-gram order a setting may ask for (BLEU's 4 and chrF's 6 are the standards):
#: each order adds columns to every segment's row, so a typo such as 10**9 must be refused
MAX_ORDER = 100


__all__ = [
    "MAX_ORDER",
    "kernel_threads",
    "match_counts",
    "match_counts_many",
    "pack_chars",
]


def pack_chars(segments: Sequence[str], keep_whitespace: bool = True) -> Packed:
    """Pack strings as code points (characters need no vocabulary).

    Without ``keep_whitespace`` every character ``str.split()`` treats as whitespace is
    dropped (``"".join(s.split())``, chrF's default).
    """
    return Packed(*_kernel.pack_chars(segments, keep_whitespace))


def match_counts(
    hyp: Packed, refs: Sequence[Packed], max_order: int
) -> tuple[np.ndarray, np.ndarray]:
    """Clipped matches: ``per_ref[nseg, nrefs, max_order]`` and ``best[nseg, max_order]``.

    ``per_ref[s, j, n-1]`` clips hypothesis n-gram counts by reference ``j``; ``best``
    clips by the maximum count in any single reference.

    >>> h = pack_chars(["aab"]); r = pack_chars(["ab"])
    >>> per_ref, best = match_counts(h, [r], 2)
    >>> best.tolist()
    [[2, 1]]
    """
    return match_counts_many([hyp], refs, max_order)[0]


def match_counts_many(
    hyps: Sequence[Packed], refs: Sequence[Packed], max_order: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """:func:`match_counts` of several systems' hypotheses against the same references.

    From ``SHARED_MIN_SYSTEMS`` systems on, the compiled kernel counts each segment's
    reference n-grams once for all systems (below, one hypothesis-side table per system is
    cheaper); either way it splits the segments over ``kernel_threads()`` threads (it
    releases the GIL). The counts are the same on every path.
    """
    if not hyps:
        return []
    nseg = _segment_count(hyps, refs)
    out = [
        (
            np.zeros((nseg, len(refs), max_order), dtype=np.int64),
            np.zeros((nseg, max_order), dtype=np.int64),
        )
        for _ in hyps
    ]
    h_ids = [_kernel_ids(h.ids) for h in hyps]
    h_offs = [np.ascontiguousarray(h.offsets, dtype=np.int64) for h in hyps]
    r_ids = [_kernel_ids(r.ids) for r in refs]
    r_offs = [np.ascontiguousarray(r.offsets, dtype=np.int64) for r in refs]
    # items before each segment boundary, all streams
    sizes: np.ndarray = np.sum([*h_offs, *r_offs], axis=0)
    parts = min(kernel_threads(), int(sizes[-1]) // PARALLEL_MIN_ITEMS)

    shared = len(hyps) >= SHARED_MIN_SYSTEMS

    def run(a: int, b: int) -> None:
        # segments [a, b): rebased offsets, views of the ids; outputs are row slices
        refs_ab = [ids[off[a] : off[b]] for ids, off in zip(r_ids, r_offs, strict=True)]
        roffs_ab = [off[a : b + 1] - off[a] for off in r_offs]
        hyps_ab = [ids[off[a] : off[b]] for ids, off in zip(h_ids, h_offs, strict=True)]
        hoffs_ab = [off[a : b + 1] - off[a] for off in h_offs]
        _kernel.match_counts(
            hyps_ab,
            hoffs_ab,
            refs_ab,
            roffs_ab,
            int(max_order),
            [per_ref[a:b] for per_ref, _ in out],
            [best[a:b] for _, best in out],
            shared,
        )

    if parts <= 1:
        run(0, nseg)
    else:
        _run_on_threads(run, sizes, nseg, parts)
    return out


def _segment_count(hyps: Sequence[Packed], refs: Sequence[Packed]) -> int:
    """The segments every stream has (refused unless all have as many)."""
    nseg = len(hyps[0].offsets) - 1
    for h in hyps:
        if len(h.offsets) - 1 != nseg:
            raise ValueError(f"hypothesis streams have {len(h.offsets) - 1} and {nseg} segments")
    for r in refs:
        if len(r.offsets) - 1 != nseg:
            raise ValueError(
                f"reference stream has {len(r.offsets) - 1} segments, hypotheses {nseg}"
            )
    return nseg


def _run_on_threads(
    run: Callable[[int, int], None], sizes: np.ndarray, nseg: int, parts: int
) -> None:
    """``run(a, b)`` over ``parts`` segment ranges of equal work (``sizes``: items before each
    segment boundary), on threads in parallel; the first error is raised here. Every segment
    is counted on its own, so the split changes nothing."""
    cuts = np.searchsorted(sizes, np.linspace(0, sizes[-1], parts + 1)[1:-1])
    bounds = [int(c) for c in (0, *cuts, nseg)]
    ranges = [(a, b) for a, b in itertools.pairwise(bounds) if b > a]
    errors: list[BaseException] = []

    def guarded(a: int, b: int) -> None:
        try:
            run(a, b)
        except Exception as exc:  # re-raised in the calling thread
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=r, daemon=True) for r in ranges[1:]]
    for t in threads:
        t.start()
    guarded(*ranges[0])
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def kernel_threads() -> int:
    """Threads one kernel call may use: ``EVALAB_NUM_THREADS`` or the usable CPUs (max 8)."""
    value = os.environ.get("EVALAB_NUM_THREADS", "").strip()
    if value:
        try:
            count = numbers.parse_int(value)
        except numbers.NumberError:
            raise SettingsError(
                f"EVALAB_NUM_THREADS must be a positive integer, got {value!r}"
            ) from None
        if count < 1:
            raise SettingsError(f"EVALAB_NUM_THREADS must be a positive integer, got {value!r}")
        return count
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 1
    return max(1, min(usable, 8))


def _kernel_ids(ids: np.ndarray) -> np.ndarray:
    """``ids`` as the kernel reads them: contiguous int32, uint32 or int64 (else int64)."""
    if ids.dtype in _KERNEL_ID_TYPES and ids.flags.c_contiguous:
        return ids
    return np.ascontiguousarray(ids, dtype=np.int64)


_KERNEL_ID_TYPES = (np.dtype(np.int32), np.dtype(np.uint32), np.dtype(np.int64))


def _match_counts_python(
    hyp: Packed, refs: Sequence[Packed], max_order: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`match_counts` by the kernel's pure-Python fallback, whatever is built (a test oracle)."""
    nseg = len(hyp.offsets) - 1
    per_ref = np.zeros((nseg, len(refs), max_order), dtype=np.int64)
    best = np.zeros((nseg, max_order), dtype=np.int64)
    h_ids = hyp.ids.tolist()
    r_ids = [r.ids.tolist() for r in refs]
    for s in range(nseg):
        rs = [ids[r.offsets[s] : r.offsets[s + 1]] for ids, r in zip(r_ids, refs, strict=True)]
        _kernel.count_segment(
            h_ids[hyp.offsets[s] : hyp.offsets[s + 1]], rs, max_order, per_ref[s], best[s]
        )
    return per_ref, best


_Table = TypeVar("_Table")


class RefCache(Generic[_Table]):
    """The prepared references of the last ``size`` reference sets, oldest dropped first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._tables: OrderedDict[tuple[Hashable, ...], _Table] = OrderedDict()

    def __len__(self) -> int:
        return len(self._tables)

    def clear(self) -> None:
        self._tables.clear()

    def get(
        self, references: list[list[str]], prepare: Callable[[list[list[str]]], _Table]
    ) -> _Table:
        """The table of ``references``, prepared by ``prepare`` on first use."""
        key = tuple(tuple(stream) for stream in references)
        table = self._tables.get(key)
        if table is not None:
            self._tables.move_to_end(key)
            return table
        table = self._tables[key] = prepare(references)
        while len(self._tables) > self.size:
            self._tables.popitem(last=False)
        return table


class NgramMetric(SystemsMetric, Generic[_Table]):
    """sacrebleu's n-gram metrics (BLEU, chrF): 0-100, higher is better, every system's rows
    from one pass of the kernel, each reference set prepared once (:meth:`_prepare_references`)
    and kept for the next :attr:`REF_CACHE_SIZE` calls."""

    scale = 100.0
    higher_is_better = True
    #: how many distinct reference sets an instance keeps prepared
    REF_CACHE_SIZE = 4

    def __init__(self, settings: MetricSettings | None = None, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        self._ref_cache: RefCache[_Table] = RefCache(self.REF_CACHE_SIZE)

    def __getstate__(self) -> dict[str, Any]:
        # caches are rebuilt on demand; worker processes get a light copy
        state = self.__dict__.copy()
        state["_ref_cache"] = RefCache[_Table](self.REF_CACHE_SIZE)
        return state

    def _reference_table(self, references: list[list[str]]) -> _Table:
        return self._ref_cache.get(references, self._prepare_references)

    @abstractmethod
    def _prepare_references(self, references: list[list[str]]) -> _Table:
        """The reference side of the metric, computed once per reference set."""
