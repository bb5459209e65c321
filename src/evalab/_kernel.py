"""The one boundary to evalab's compiled kernels, their switch, and the packed-segment types.

Four optional C extensions are loaded here and nowhere else: :data:`mt` (``_mtkernel``:
mteval-v13a/zh tokenization, TER's Tercom normaliser, jiwer's words, packing characters,
clipped n-gram matching),
:data:`ed` (``_edkernel``: Levenshtein and TER edits), :data:`rouge` (``_rougekernel``: LCS
lengths and n-gram overlaps) and :data:`ties` (``_tieskernel``: acc_eq tie curves). Each is the
module, or ``None`` when it was not built (no C compiler at install time) or when the
environment sets ``EVALAB_NO_KERNELS=1``; then every caller runs its pure-Python fallback,
written beside the call and giving identical numbers. Callers read the attribute at call
time (``_kernel.ed``), so a test forces the fallbacks by setting it to ``None`` (or runs a
subprocess with ``EVALAB_NO_KERNELS=1``).

Every kernel takes segments packed the same way (:class:`Packed`: the ids of all segments
end to end, and ``nseg + 1`` offsets), and tokens become ids through one policy
(:class:`TokenTable`: equal tokens get equal ids while a table lives; a table that caches
ids across calls empties itself, between sessions, once it holds more than its bound).

The rest of this module wraps the ``mt`` kernel: sacrebleu's mteval-v13a and zh
tokenization (:func:`mteval_split`, :func:`encode_lines`), packing characters as code points
(:func:`pack_chars`), and clipped n-gram matching of packed token ids (:func:`match_counts`).
"""

from __future__ import annotations

import os
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from importlib import import_module
from itertools import chain, repeat
from types import ModuleType
from typing import Any

import numpy as np

__all__ = [
    "NO_KERNELS_ENV",
    "PACK_CHUNK",
    "ZH_RANGES",
    "Packed",
    "TokenTable",
    "chunks",
    "ed",
    "encode_lines",
    "match_counts",
    "mt",
    "mteval_split",
    "new_vocab",
    "offsets_of",
    "pack_chars",
    "rouge",
    "ties",
    "vocab_size",
]

#: set to 1 (or any value but 0 and empty) to run every pure-Python fallback
NO_KERNELS_ENV = "EVALAB_NO_KERNELS"


def _load(name: str) -> ModuleType | None:
    """The compiled module ``evalab.<name>``, or ``None`` (not built, or switched off)."""
    if os.environ.get(NO_KERNELS_ENV, "").strip() not in ("", "0"):
        return None
    try:
        return import_module(f"evalab.{name}")
    except ImportError:  # no C compiler at install time: the fallbacks are used
        return None


mt: ModuleType | None = _load("_mtkernel")
ed: ModuleType | None = _load("_edkernel")
rouge: ModuleType | None = _load("_rougekernel")
ties: ModuleType | None = _load("_tieskernel")


# --- packed segments -------------------------------------------------------------------
def offsets_of(lengths: Iterable[int], n: int | None = None) -> np.ndarray:
    """Segment offsets (``n + 1`` int64 entries from 0) of segments of these lengths.

    >>> offsets_of([2, 0, 3]).tolist()
    [0, 2, 2, 5]
    """
    counts = (
        np.fromiter(lengths, dtype=np.int64, count=n)
        if n is not None
        else np.asarray(list(lengths), dtype=np.int64)
    )
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


@dataclass(frozen=True)
class Packed:
    """The ids of a list of segments, end to end, with ``nseg + 1`` offsets (int64)."""

    ids: np.ndarray
    offsets: np.ndarray

    @classmethod
    def of(cls, segments: Sequence[Sequence[int] | np.ndarray], dtype: Any = np.int32) -> Packed:
        """Pack id sequences (lists or arrays) as one contiguous ``dtype`` array."""
        offsets = offsets_of(map(len, segments), len(segments))
        if segments and isinstance(segments[0], np.ndarray):
            ids = np.concatenate(segments).astype(dtype, copy=False)
        else:
            ids = np.fromiter(chain.from_iterable(segments), dtype=dtype, count=int(offsets[-1]))
        return cls(np.ascontiguousarray(ids), offsets)

    @classmethod
    def concat(cls, parts: Sequence[Packed]) -> Packed:
        """The segments of every part, one part after the other."""
        if len(parts) == 1:
            return parts[0]
        starts = np.cumsum([0, *(int(p.offsets[-1]) for p in parts)])
        offsets = np.concatenate(
            [p.offsets[:-1] + start for p, start in zip(parts, starts, strict=False)]
            + [starts[-1:]]
        )
        return cls(np.concatenate([p.ids for p in parts]), offsets.astype(np.int64))

    def split(self, counts: Sequence[int]) -> list[Packed]:
        """The segments in parts of ``counts`` segments each, in order (``concat``'s inverse).

        >>> [p.offsets.tolist() for p in Packed.of([[1], [2, 3], [], [4]]).split([1, 3])]
        [[0, 1], [0, 2, 2, 3]]
        """
        bounds = offsets_of(counts, len(counts))
        if bounds[-1] != len(self):
            raise ValueError(f"{int(bounds[-1])} segments asked for, {len(self)} packed")
        return [
            Packed(
                self.ids[self.offsets[a] : self.offsets[b]],
                self.offsets[a : b + 1] - self.offsets[a],
            )
            for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)
        ]

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        """Number of ids (tokens or characters) of each segment."""
        return np.diff(self.offsets)

    def segment(self, s: int) -> np.ndarray:
        """The ids of segment ``s``."""
        return self.ids[self.offsets[s] : self.offsets[s + 1]]

    def tiled(self, times: int) -> Packed:
        """The segments repeated ``times`` times (one side shared by several systems)."""
        total = int(self.offsets[-1])
        starts = np.arange(times, dtype=np.int64).repeat(len(self)) * total
        offsets = np.r_[np.tile(self.offsets[:-1], times) + starts, times * total]
        return Packed(np.tile(self.ids, times), offsets.astype(np.int64))


#: segments tokenised at a time by :meth:`TokenTable.pack_chunked` and its callers: their
#: token lists are dropped once packed, so the Python objects alive stay bounded (millions
#: of token lists made the cyclic garbage collector's full passes, each over every live
#: list, dominate TER at 2M segments)
PACK_CHUNK = 1 << 14


def chunks(texts: Sequence[Any]) -> Iterator[Sequence[Any]]:
    """``texts`` :data:`PACK_CHUNK` at a time (one empty chunk for no texts).

    >>> [len(c) for c in chunks(range(40000))]
    [16384, 16384, 7232]
    """
    size = PACK_CHUNK  # read at call time: a test sets a small one
    return (texts[k : k + size] for k in range(0, max(len(texts), 1), size))


# --- interning -------------------------------------------------------------------------
class TokenTable:
    """Token -> id (0, 1, 2, ... in order of first sight), the one interning policy.

    Ids are only compared with each other, so equal tokens must get equal ids and nothing
    else matters. A table made for one call lives as long as the call (its size is the
    call's distinct tokens). A table shared by calls (so caches may keep ids) is used inside
    :meth:`session`: when a session starts with no other session open and the table holds
    more than ``limit`` tokens, the table is emptied and ``on_reset`` empties the caches
    that hold its ids; ids never change while a session is open.
    """

    #: distinct tokens a shared table keeps before it is emptied (about 100 MB of strings)
    LIMIT = 1 << 21

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        # a missing token gets the next id (the dict's length) inside map(), at C speed
        self._ids: defaultdict[Hashable, int] = defaultdict()
        self._ids.default_factory = self._ids.__len__
        self._lock = threading.Lock()
        self._open = 0

    def __len__(self) -> int:
        return len(self._ids)

    @contextmanager
    def session(self, on_reset: Callable[[], None] | None = None) -> Iterator[TokenTable]:
        """Hold the ids stable for one call; empty the table first if it is over its bound."""
        with self._lock:
            if self._open == 0 and len(self._ids) > self.limit:
                self._ids.clear()
                if on_reset is not None:
                    on_reset()
            self._open += 1
        try:
            yield self
        finally:
            with self._lock:
                self._open -= 1

    def tokens(self) -> list[Hashable]:
        """Every token of the table, in the order of their ids."""
        with self._lock:
            return list(self._ids)

    def ids(self, tokens: Iterable[Hashable], dtype: Any = np.int32) -> np.ndarray:
        """The ids of ``tokens`` (new tokens are added)."""
        with self._lock:  # two threads must not give one id to two tokens
            return np.fromiter(map(self._ids.__getitem__, tokens), dtype=dtype)

    def known(self, tokens: Iterable[Hashable], dtype: Any = np.int64) -> np.ndarray:
        """The ids of ``tokens`` without adding any: an unknown token is -1."""
        return np.fromiter(map(self._ids.get, tokens, _MINUS_ONES), dtype=dtype)

    def pack(self, segments: Sequence[Sequence[Hashable]], dtype: Any = np.int32) -> Packed:
        """Ids of every segment's tokens, packed (new tokens are added)."""
        offsets = offsets_of(map(len, segments), len(segments))
        with self._lock:
            ids = np.fromiter(
                map(self._ids.__getitem__, chain.from_iterable(segments)),
                dtype=dtype,
                count=int(offsets[-1]),
            )
        return Packed(ids, offsets)

    def pack_chunked(
        self, tokens: Callable[[Sequence[Any]], Sequence[Sequence[Hashable]]], texts: Sequence[Any]
    ) -> Packed:
        """``self.pack(tokens(texts))``, tokenising :data:`PACK_CHUNK` texts at a time."""
        return Packed.concat([self.pack(tokens(chunk)) for chunk in chunks(texts)])

    def pack_known(self, segments: Sequence[Sequence[Hashable]], dtype: Any = np.int64) -> Packed:
        """Ids of every segment's tokens with no token added (unknown: -1), packed."""
        offsets = offsets_of(map(len, segments), len(segments))
        ids = np.fromiter(
            map(self._ids.get, chain.from_iterable(segments), _MINUS_ONES),
            dtype=dtype,
            count=int(offsets[-1]),
        )
        return Packed(ids, offsets)


#: the endless default of ``dict.get`` in ``map`` (an unknown token is -1)
_MINUS_ONES = repeat(-1)


# --- the mteval-v13a rules -------------------------------------------------------------
# Rule 1 of mteval-v13a pads every ASCII punctuation/symbol except ' , - . (the class
# [{-~[-` -&(-+:-@/]); it is a per-character substitution, so str.translate does it
# exactly and much faster than re.sub.
_PAD_CHARS = [chr(c) for c in range(0x20, 0x7F)]
_PAD_CHARS = [
    c
    for c in _PAD_CHARS
    if ("{" <= c <= "~")
    or ("[" <= c <= "`")
    or (" " <= c <= "&")
    or ("(" <= c <= "+")
    or (":" <= c <= "@")
    or c == "/"
]
_PAD_TABLE = str.maketrans({c: f" {c} " for c in _PAD_CHARS})
# Rules 2-4 look at a neighbour, so they stay regular expressions with the exact
# left-to-right, non-overlapping semantics of the Perl script.
_RULES_13A = (
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),  # period/comma unless preceded by a digit
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),  # period/comma unless followed by a digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),  # dash after a digit
)


# --- zh: CJK characters become tokens ---------------------------------------------------
# The code-point ranges sacrebleu's TokenizerZh treats as Chinese. Two of its ranges are
# written as '\u20000'-'\u2a6d6' and '\u2f800'-'\u2fa1d', which Python reads as the
# two-character strings '\u2000' '0' ... ; compared with one character they select
# U+2001..U+2A6D and U+2F81..U+2FA1 (general punctuation such as “ ” — included), not the
# CJK Extension B block. We reproduce that behaviour, since the official WMT zh scores
# were computed with it.
ZH_RANGES = (
    (0x3400, 0x4DB5),
    (0x4E00, 0x9FA5),
    (0x9FA6, 0x9FBB),
    (0xF900, 0xFA2D),
    (0xFA30, 0xFA6A),
    (0xFA70, 0xFAD9),
    (0x2001, 0x2A6D),
    (0x2F81, 0x2FA1),
    (0xFF00, 0xFFEF),
    (0x2E80, 0x2EFF),
    (0x3000, 0x303F),
    (0x31C0, 0x31EF),
    (0x2F00, 0x2FDF),
    (0x2FF0, 0x2FFF),
    (0x3100, 0x312F),
    (0x31A0, 0x31BF),
    (0xFE10, 0xFE1F),
    (0xFE30, 0xFE4F),
    (0x2600, 0x26FF),
    (0x2700, 0x27BF),
    (0x3200, 0x32FF),
    (0x3300, 0x33FF),
)


@lru_cache(maxsize=1)
def _zh_char() -> re.Pattern[str]:
    # compiled on first use (by the fallback only): re enumerates every code point of the
    # ranges, which would cost each process a few milliseconds at start-up
    return re.compile("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ZH_RANGES) + "]")


def mteval_split(line: str, cjk: bool = False) -> list[str]:
    """The language-independent part of mteval-v13a, returning the tokens.

    With ``cjk``, CJK characters are first padded with spaces (the ``zh`` tokenizer).

    >>> mteval_split("a,b (c)")
    ['a', ',', 'b', '(', 'c', ')']
    """
    if mt is not None:
        words: list[str] = mt.mteval_split(line, cjk)
        return words
    if cjk:
        line = _zh_char().sub(r" \g<0> ", line)
    line = line.translate(_PAD_TABLE)
    for pattern, repl in _RULES_13A:
        line = pattern.sub(repl, line)
    return line.split()


def pack_chars(
    segments: Sequence[str], keep_whitespace: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Code points of every segment, concatenated (uint32), and the segment offsets (int64).

    Without ``keep_whitespace`` every character ``str.split()`` treats as whitespace is
    dropped (``"".join(s.split())``, chrF's default).

    >>> ids, offsets = pack_chars(["ab", "c d"], keep_whitespace=False)
    >>> ids.tolist(), offsets.tolist()
    ([97, 98, 99, 100], [0, 2, 4])
    """
    if mt is not None:
        chars, offsets = mt.pack_chars(list(segments), keep_whitespace)
        return np.frombuffer(chars, dtype=np.uint32), np.frombuffer(offsets, dtype=np.int64)
    if not keep_whitespace:
        segments = ["".join(s.split()) for s in segments]
    joined = "".join(segments).encode("utf-32-le", "surrogatepass")
    # uint32 as it comes: the kernel reads 4-byte ids, so no widening copy is made
    return np.frombuffer(joined, dtype="<u4"), offsets_of(map(len, segments), len(segments))


def new_vocab() -> Any:
    """An empty token table for :func:`encode_lines` (the kernel's, or a dict)."""
    return mt.Vocab() if mt is not None else {}


def vocab_size(vocab: Any) -> int:
    """Number of tokens in a table made by :func:`new_vocab`."""
    return len(vocab)


def encode_lines(
    lines: Sequence[str], vocab: Any, cjk: bool, add: bool, tokens: Callable[[str], Sequence[str]]
) -> tuple[np.ndarray, np.ndarray]:
    """Token ids of every line under the 13a (``cjk=False``) or zh tokenizer, and offsets.

    ``tokens`` is that tokenizer (used by the fallback; the kernel has its own). A token
    missing from ``vocab`` gets the next id if ``add``, else -1 (a hypothesis token no
    reference has, which can never be part of a matching n-gram).
    """
    if not isinstance(vocab, dict):  # the kernel's table, so the kernel is there
        ids, offsets = mt.encode_lines(list(lines), vocab, cjk, add)  # type: ignore[union-attr]
        return np.frombuffer(ids, dtype=np.int64), np.frombuffer(offsets, dtype=np.int64)
    per_line = [tokens(line) for line in lines]
    if add:
        flat = [vocab.setdefault(t, len(vocab)) for toks in per_line for t in toks]
    else:
        flat = [vocab.get(t, -1) for toks in per_line for t in toks]
    return np.array(flat, dtype=np.int64), offsets_of(map(len, per_line), len(per_line))


def match_counts(
    hyps: Sequence[np.ndarray],
    hyp_offsets: Sequence[np.ndarray],
    refs: Sequence[np.ndarray],
    ref_offsets: Sequence[np.ndarray],
    max_order: int,
    per_ref: Sequence[np.ndarray],
    best: Sequence[np.ndarray],
    shared: bool,
) -> None:
    """Clipped n-gram matches of every system's segments, written into the outputs.

    ``per_ref[k][s, j, n-1]`` clips system ``k``'s n-gram counts in segment ``s`` by
    reference ``j``; ``best[k][s, n-1]`` by the maximum count in any single reference.
    ``shared`` asks the kernel to count each reference segment's n-grams once for all
    systems (faster from a few systems on); the counts are the same either way.
    """
    if mt is not None:
        count = mt.match_counts_shared if shared else mt.match_counts
        count(
            list(hyps),
            list(hyp_offsets),
            list(refs),
            list(ref_offsets),
            int(max_order),
            list(per_ref),
            list(best),
        )
        return
    r_ids = [r.tolist() for r in refs]
    for h, h_off, out_ref, out_best in zip(hyps, hyp_offsets, per_ref, best, strict=True):
        h_ids = h.tolist()
        for s in range(len(h_off) - 1):
            seg = h_ids[h_off[s] : h_off[s + 1]]
            rs = [ids[off[s] : off[s + 1]] for ids, off in zip(r_ids, ref_offsets, strict=True)]
            count_segment(seg, rs, max_order, out_ref[s], out_best[s])


def _ngram_counter(seq: list[int], n: int) -> Counter[tuple[int, ...]]:
    return Counter(tuple(seq[i : i + n]) for i in range(len(seq) - n + 1))


def count_segment(
    hyp: list[int], refs: list[list[int]], max_order: int, per_ref: np.ndarray, best: np.ndarray
) -> None:
    """Pure-Python clipped matches of one segment (the fallback of :func:`match_counts`)."""
    for n in range(1, max_order + 1):
        hc = _ngram_counter(hyp, n)
        if not hc:
            break
        rcs = [_ngram_counter(r, n) for r in refs]
        for j, rc in enumerate(rcs):
            per_ref[j, n - 1] = sum(min(c, rc[g]) for g, c in hc.items())
        best[n - 1] = sum(min(c, max(rc[g] for rc in rcs)) for g, c in hc.items())
