"""The one boundary to the optional compiled kernel (``evalab._mtkernel``).

Every function here runs the kernel when it is built and otherwise its pure-Python
fallback, written beside it, which gives identical results (the tests run both). Callers
never branch on the kernel. :data:`kernel` is read at call time, so tests can set it to
``None`` to exercise the fallbacks.

What the kernel does: sacrebleu's mteval-v13a and zh tokenization (:func:`mteval_split`,
:func:`encode_lines`), packing characters as code points (:func:`pack_chars`), and clipped
n-gram matching of packed token ids (:func:`match_counts`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import numpy as np

__all__ = [
    "ZH_RANGES",
    "encode_lines",
    "kernel",
    "match_counts",
    "mteval_split",
    "new_vocab",
    "pack_chars",
    "vocab_size",
]

try:
    from evalab import _mtkernel

    kernel: ModuleType | None = _mtkernel
except ImportError:  # no C compiler at install time: the fallbacks are used
    kernel = None


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
_ZH_CHAR = re.compile("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ZH_RANGES) + "]")


_ZH_CHAR = re.compile("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ZH_RANGES) + "]")


def mteval_split(line: str, cjk: bool = False) -> list[str]:
    """The language-independent part of mteval-v13a, returning the tokens.

    With ``cjk``, CJK characters are first padded with spaces (the ``zh`` tokenizer).

    >>> mteval_split("a,b (c)")
    ['a', ',', 'b', '(', 'c', ')']
    """
    if kernel is not None:
        words: list[str] = kernel.mteval_split(line, cjk)
        return words
    if cjk:
        line = _ZH_CHAR.sub(r" \g<0> ", line)
    line = line.translate(_PAD_TABLE)
    for pattern, repl in _RULES_13A:
        line = pattern.sub(repl, line)
    return line.split()


def _offsets(lengths: Sequence[int]) -> np.ndarray:
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


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
    if kernel is not None:
        chars, offsets = kernel.pack_chars(list(segments), keep_whitespace)
        return np.frombuffer(chars, dtype=np.uint32), np.frombuffer(offsets, dtype=np.int64)
    if not keep_whitespace:
        segments = ["".join(s.split()) for s in segments]
    joined = "".join(segments).encode("utf-32-le", "surrogatepass")
    # uint32 as it comes: the kernel reads 4-byte ids, so no widening copy is made
    return np.frombuffer(joined, dtype="<u4"), _offsets([len(s) for s in segments])


def new_vocab() -> Any:
    """An empty token table for :func:`encode_lines` (the kernel's, or a dict)."""
    return kernel.Vocab() if kernel is not None else {}


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
        ids, offsets = kernel.encode_lines(list(lines), vocab, cjk, add)  # type: ignore[union-attr]
        return np.frombuffer(ids, dtype=np.int64), np.frombuffer(offsets, dtype=np.int64)
    per_line = [tokens(line) for line in lines]
    if add:
        flat = [vocab.setdefault(t, len(vocab)) for toks in per_line for t in toks]
    else:
        flat = [vocab.get(t, -1) for toks in per_line for t in toks]
    return np.array(flat, dtype=np.int64), _offsets([len(t) for t in per_line])


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
    if kernel is not None:
        count = kernel.match_counts_shared if shared else kernel.match_counts
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
