"""Edit distances of TER and WER/CER: the compiled kernel, or pure Python with equal results.

All work on segments of integer token ids. :func:`alignment_py` (and its counts,
:func:`levenshtein_counts_many`, and its steps, :func:`levenshtein_steps_many`) is the
alignment jiwer 4 reports: of the several shortest edit paths, the one rapidfuzz's ``Levenshtein.editops(reference, hypothesis)``
traces (Hyyrö 2004): after cutting the common prefix and suffix, the vertical differences
of the reference x hypothesis table are kept for every hypothesis token, and the trace
goes back from the end, taking a deletion where the difference above the cell is +1,
else stepping one hypothesis token back and taking an insertion where that column's
difference is -1 (never in column 0), else a diagonal step (a hit or a substitution).
rapidfuzz traces pairs whose cut table has at least 2**22 cells, with at least 65
reference and 10 hypothesis tokens, by Hirschberg's divide and conquer instead, which
may pick another path of the same length; evalab traces every pair the one way.

:func:`ter_edits_py` (and the kernel's ``ter_edits``) is the TER search of
sacrebleu 2.x (``lib_ter``, after Tercom), reproduced rule for rule because its greedy
heuristics decide the number:

* each round evaluates every shift of a hypothesis span ``h[s:s+k]`` (``k <= 10``) that
  equals a reference span ``r[t:t+k]`` with ``|s - t| <= 50``, where the span has an error
  on both sides and is not already aligned to ``t``; target positions come from the
  alignment of the current beam edit distance (one per reference word around ``t``);
* the best shift ranks by (edit distance gain, span length, earliest start, earliest
  target); the round's shift is applied when its gain is positive;
* the search stops after 1000 candidate evaluations per segment (counted over all rounds;
  the round that crosses the limit is discarded), or when no shift gains;
* the edit distance is a beam search: row ``i`` only fills the cells within 25 (more for
  very unequal lengths) of ``floor(i * m / n)``, the last row completely, with ties
  preferring match/substitution, then deletion, then insertion; the alignment comes from
  that trace.

sacrebleu caches matrix rows by hypothesis prefix; a row depends only on the prefix and
the two lengths, so reusing the rows of the shared prefix (as done here) gives the same
numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from enum import IntEnum
from typing import NamedTuple

import numpy as np

from evalab import _kernel
from evalab._kernel import Packed

__all__ = [
    "Chunk",
    "Edit",
    "alignment_py",
    "chunks_of",
    "levenshtein_counts_many",
    "levenshtein_many",
    "levenshtein_py",
    "levenshtein_steps_many",
    "ter_edits_many",
    "ter_edits_py",
]

_INF = 10**16
_MAX_SHIFT_SIZE = 10
_MAX_SHIFT_DIST = 50
_BEAM_WIDTH = 25
_MAX_CANDIDATES = 1000
_NOP, _SUB, _INS, _DEL, _UNDEF = 1, 2, 3, 4, 0

Segments = Packed | Sequence[Sequence[int]]


def _packed(side: Segments) -> Packed:
    if isinstance(side, Packed):
        return side
    return Packed.of(side)


def _kernel_args(hyp: Packed, ref: Packed) -> tuple[np.ndarray, ...]:
    """The kernel's buffers: ids and offsets of both sides, and one int64 out per segment."""
    if len(hyp) != len(ref):
        raise ValueError(f"{len(hyp)} hypotheses against {len(ref)} references")
    # code points (uint32, from pack_chars) are below 2**31: the same bits read as int32
    h_ids, r_ids = (
        np.ascontiguousarray(p.ids).view(np.int32)
        if p.ids.dtype == np.uint32
        else np.ascontiguousarray(p.ids, dtype=np.int32)
        for p in (hyp, ref)
    )
    return h_ids, hyp.offsets, r_ids, ref.offsets, np.zeros(len(hyp), dtype=np.int64)


def _per_segment(
    name: str, fallback: Callable[[list[int], list[int]], int], hyps: Segments, refs: Segments
) -> np.ndarray:
    """One int64 per segment: the kernel's function ``name``, or ``fallback`` of the
    hypothesis and reference ids of each segment."""
    hyp, ref = _packed(hyps), _packed(refs)
    kernel = _kernel.ed
    if kernel is not None:
        args = _kernel_args(hyp, ref)
        getattr(kernel, name)(*args)
        return args[-1]
    return np.array(
        [fallback(hyp.segment(s).tolist(), ref.segment(s).tolist()) for s in range(len(hyp))],
        dtype=np.int64,
    )


def levenshtein_many(hyps: Segments, refs: Segments) -> np.ndarray:
    """Levenshtein distance (unit costs) of every hypothesis to its reference."""
    return _per_segment("levenshtein", levenshtein_py, hyps, refs)


def levenshtein_counts_many(hyps: Segments, refs: Segments) -> np.ndarray:
    """``[n, 4]`` int64: hits, substitutions, deletions and insertions of every reference
    against its hypothesis along jiwer's alignment (:func:`alignment_py`)."""
    hyp, ref = _packed(hyps), _packed(refs)
    kernel = _kernel.ed
    if kernel is not None:
        args = _kernel_args(hyp, ref)
        counts = np.zeros((len(hyp), 4), dtype=np.int64)
        kernel.levenshtein_counts(args, counts)
        return counts
    out = np.zeros((len(hyp), 4), dtype=np.int64)
    for s in range(len(hyp)):
        steps = alignment_py(ref.segment(s).tolist(), hyp.segment(s).tolist())
        out[s] = np.bincount(np.asarray(steps, dtype=np.int64), minlength=4)
    return out


def levenshtein_steps_many(hyps: Segments, refs: Segments) -> list[np.ndarray]:
    """The steps (int8 :class:`Edit` values, in order) of every reference against its
    hypothesis along jiwer's alignment (:func:`alignment_py`), from the kernel's trace."""
    hyp, ref = _packed(hyps), _packed(refs)
    kernel = _kernel.ed
    if kernel is None:
        return [
            np.asarray(alignment_py(ref.segment(s).tolist(), hyp.segment(s).tolist()), np.int8)
            for s in range(len(hyp))
        ]
    args = _kernel_args(hyp, ref)
    room = np.concatenate([[0], np.cumsum(hyp.lengths + ref.lengths)]).astype(np.int64)
    steps = np.zeros(int(room[-1]), dtype=np.int8)
    counts = np.zeros((len(hyp), 4), dtype=np.int64)
    kernel.levenshtein_counts(args, counts, steps, room)
    ends = room[:-1] + counts.sum(axis=1)
    return [steps[a:b] for a, b in zip(room[:-1].tolist(), ends.tolist(), strict=True)]


def ter_edits_many(hyps: Segments, refs: Segments) -> np.ndarray:
    """TER edits (shifts + edit distance) of every hypothesis to its reference."""
    return _per_segment("ter_edits", ter_edits_py, hyps, refs)


def levenshtein_py(a: Sequence[int], b: Sequence[int]) -> int:
    """Levenshtein distance in pure Python (one row)."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        diag, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            up = row[j]
            row[j] = min(diag + (x != y), up + 1, row[j - 1] + 1)
            diag = up
    return row[-1]


class Edit(IntEnum):
    """One step of an alignment of a reference to a hypothesis (jiwer's chunk types)."""

    EQUAL = 0
    SUBSTITUTE = 1
    DELETE = 2  # a reference token with no hypothesis token
    INSERT = 3  # a hypothesis token with no reference token


class Chunk(NamedTuple):
    """A run of one kind of step: reference tokens ``[ref_start, ref_end)`` against
    hypothesis tokens ``[hyp_start, hyp_end)`` (jiwer's ``AlignmentChunk``)."""

    edit: Edit
    ref_start: int
    ref_end: int
    hyp_start: int
    hyp_end: int


def _columns(ref: Sequence[int], hyp: Sequence[int]) -> tuple[list[int], list[int]]:
    """The vertical differences of the ref x hyp table after every hypothesis token: bit
    ``i`` of ``vp[j]`` (``vn[j]``) is set where ``D[i + 1][j + 1] - D[i][j + 1]`` is +1 (-1)."""
    masks: dict[int, int] = {}
    for i, token in enumerate(ref):
        masks[token] = masks.get(token, 0) | 1 << i
    full = (1 << len(ref)) - 1
    vp, vn, vps, vns = full, 0, [], []
    for token in hyp:
        eq = masks.get(token, 0)
        d0 = (((eq & vp) + vp) ^ vp) | eq | vn
        hp = ((vn | ~(d0 | vp)) << 1) | 1
        hn = (d0 & vp) << 1
        vp, vn = (hn | ~(d0 | hp)) & full, hp & d0 & full
        vps.append(vp)
        vns.append(vn)
    return vps, vns


def alignment_py(ref: Sequence[int], hyp: Sequence[int]) -> list[Edit]:
    """The steps, in order, of the alignment jiwer 4 reports (rapidfuzz's; module docstring)."""
    n, m = len(ref), len(hyp)
    pre = 0
    while pre < min(n, m) and ref[pre] == hyp[pre]:
        pre += 1
    suf = 0
    while suf < min(n, m) - pre and ref[n - 1 - suf] == hyp[m - 1 - suf]:
        suf += 1
    r, h = ref[pre : n - suf], hyp[pre : m - suf]
    vp, vn = _columns(r, h)
    col, row, back = len(r), len(h), []
    while row and col:
        if vp[row - 1] >> (col - 1) & 1:
            back.append(Edit.DELETE)
            col -= 1
            continue
        row -= 1
        if row and vn[row - 1] >> (col - 1) & 1:
            back.append(Edit.INSERT)
            continue
        col -= 1
        back.append(Edit.EQUAL if r[col] == h[row] else Edit.SUBSTITUTE)
    back += [Edit.DELETE] * col + [Edit.INSERT] * row
    return [Edit.EQUAL] * pre + back[::-1] + [Edit.EQUAL] * suf


def chunks_of(steps: Sequence[int] | np.ndarray) -> list[Chunk]:
    """The runs of equal steps, with their token ranges (jiwer's alignment chunks)."""
    a = np.asarray(steps, dtype=np.int8)
    if not len(a):
        return []
    starts = np.flatnonzero(np.r_[True, a[1:] != a[:-1]])
    ends = np.r_[starts[1:], len(a)]
    ref_at = np.r_[0, np.cumsum(a != Edit.INSERT)]  # tokens of each side before each step
    hyp_at = np.r_[0, np.cumsum(a != Edit.DELETE)]
    return [
        Chunk(Edit(e), r0, r1, h0, h1)
        for e, r0, r1, h0, h1 in zip(
            a[starts].tolist(),
            ref_at[starts].tolist(),
            ref_at[ends].tolist(),
            hyp_at[starts].tolist(),
            hyp_at[ends].tolist(),
            strict=True,
        )
    ]


class _Beam:
    """Beam edit distance of hypotheses of one length against one reference."""

    def __init__(self, ref: Sequence[int], n: int) -> None:
        self.ref, self.n, self.m = ref, n, len(ref)
        self.ratio = self.m / n if n else 1
        self.beam = (
            math.ceil(self.ratio / 2 + _BEAM_WIDTH) if self.ratio / 2 > _BEAM_WIDTH else _BEAM_WIDTH
        )

    def row(self, i: int, word: int, prev: list[int], ops: list[int] | None) -> list[int]:
        """Row ``i`` from row ``i - 1``; fills ``ops`` with the chosen operations if given."""
        m = self.m
        diag = math.floor(i * self.ratio)
        lo, hi = max(0, diag - self.beam), min(m + 1, diag + self.beam)
        if i == self.n:
            hi = m + 1
        row = [_INF] * (m + 1)
        for j in range(lo, hi):
            if j == 0:
                row[0] = prev[0] + 1
                if ops is not None:
                    ops[0] = _DEL
                continue
            same = word == self.ref[j - 1]
            best, op = _INF, _UNDEF
            c = prev[j - 1] + (not same)
            if best > c:
                best, op = c, (_NOP if same else _SUB)
            if best > prev[j] + 1:
                best, op = prev[j] + 1, _DEL
            if best > row[j - 1] + 1:
                best, op = row[j - 1] + 1, _INS
            row[j] = best
            if ops is not None:
                ops[j] = op
        return row

    def matrix(self, hyp: Sequence[int]) -> tuple[list[list[int]], list[list[int]]]:
        """All rows and operations of ``hyp``."""
        rows = [list(range(self.m + 1))]
        ops = [[_INS] * (self.m + 1)]
        for i in range(1, self.n + 1):
            op = [_UNDEF] * (self.m + 1)
            rows.append(self.row(i, hyp[i - 1], rows[-1], op))
            ops.append(op)
        return rows, ops

    def cost_from(self, hyp: Sequence[int], p: int, start_row: list[int]) -> int:
        """Distance of ``hyp`` given its row ``p`` (rows of a shared prefix are reused)."""
        prev = start_row
        for i in range(p + 1, self.n + 1):
            prev = self.row(i, hyp[i - 1], prev, None)
        return prev[self.m]


def _alignment(ops: list[list[int]], n: int, m: int) -> tuple[list[int], list[int], list[int]]:
    """Aligned hypothesis position per reference word, and error prefix sums per side."""
    trace = []
    i, j = n, m
    while i > 0 or j > 0:
        op = ops[i][j]
        trace.append(op)
        if op in (_NOP, _SUB):
            i, j = i - 1, j - 1
        elif op == _INS:
            j -= 1
        elif op == _DEL:
            i -= 1
        else:
            raise RuntimeError("TER: no edit path in the beam")
    align, hyp_err, ref_err = [0] * m, [0], [0]
    ph = pr = -1
    for op in reversed(trace):
        if op in (_NOP, _SUB):
            ph, pr = ph + 1, pr + 1
            align[pr] = ph
            hyp_err.append(hyp_err[-1] + (op == _SUB))
            ref_err.append(ref_err[-1] + (op == _SUB))
        elif op == _DEL:  # a hypothesis word with no reference word
            ph += 1
            hyp_err.append(hyp_err[-1] + 1)
        else:  # a reference word with no hypothesis word
            pr += 1
            align[pr] = ph
            ref_err.append(ref_err[-1] + 1)
    return align, hyp_err, ref_err


def _shifted(words: list[int], start: int, length: int, target: int) -> list[int]:
    """``words`` with ``[start, start + length)`` moved before ``target`` (sacrebleu's cases)."""
    span = words[start : start + length]
    if target < start:
        return words[:target] + span + words[target:start] + words[start + length :]
    if target > start + length:
        return words[:start] + words[start + length : target] + span + words[target:]
    return words[:start] + words[start + length : length + target] + span + words[length + target :]


def _pairs(hyp: list[int], ref: Sequence[int]) -> Iterator[tuple[int, int, int]]:
    """Matching spans ``(start_h, start_r, length)`` in sacrebleu's enumeration order."""
    n, m = len(hyp), len(ref)
    for sh in range(n):
        for sr in range(max(0, sh - _MAX_SHIFT_DIST), min(m, sh + _MAX_SHIFT_DIST + 1)):
            length = 0
            while length < _MAX_SHIFT_SIZE and hyp[sh + length] == ref[sr + length]:
                length += 1
                yield sh, sr, length
                if sh + length == n or sr + length == m:
                    break


def _best_shift(beam: _Beam, hyp: list[int], checked: int) -> tuple[int, list[int], int, int]:
    """(gain, shifted hypothesis, candidates checked so far, distance before) of one round."""
    rows, ops = beam.matrix(hyp)
    pre = rows[-1][-1]
    align, hyp_err, ref_err = _alignment(ops, beam.n, beam.m)
    best: tuple[int, int, int, int] | None = None
    for sh, sr, k in _pairs(hyp, beam.ref):
        if hyp_err[sh + k] == hyp_err[sh] or ref_err[sr + k] == ref_err[sr]:
            continue
        if sh <= align[sr] < sh + k:
            continue
        prev_idx = -1
        for off in range(-1, k):
            idx = 0 if sr + off == -1 else align[sr + off] + 1
            if idx == prev_idx:
                continue
            prev_idx = idx
            p = min(idx, sh)
            cand = (pre - beam.cost_from(_shifted(hyp, sh, k, idx), p, rows[p]), k, -sh, -idx)
            checked += 1
            if best is None or cand > best:
                best = cand
        if checked >= _MAX_CANDIDATES:
            break
    if best is None:
        return 0, hyp, checked, pre
    gain, k, sh, idx = best
    return gain, _shifted(hyp, -sh, k, -idx), checked, pre


def ter_edits_py(hyp: Sequence[int], ref: Sequence[int]) -> int:
    """TER edits of one segment in pure Python (the rules in the module docstring)."""
    if not ref:
        return len(hyp)
    beam = _Beam(ref, len(hyp))
    words, shifts, checked = list(hyp), 0, 0
    while True:
        gain, shifted, checked, _ = _best_shift(beam, words, checked)
        if checked >= _MAX_CANDIDATES or gain <= 0:
            break
        shifts += 1
        words = shifted
    rows, ops = beam.matrix(words)
    _alignment(ops, beam.n, beam.m)  # a broken trace is an error, as in sacrebleu
    return shifts + rows[-1][-1]
