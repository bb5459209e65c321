"""ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum with the numbers of Google's ``rouge-score``.

Lin (2004), "ROUGE: A Package for Automatic Evaluation of Summaries". Per segment:

* ROUGE-N: clipped n-gram overlap; precision = overlap / max(hyp n-grams, 1), recall =
  overlap / max(ref n-grams, 1).
* ROUGE-L: longest common subsequence (LCS) of the token sequences; P = LCS / |hyp|,
  R = LCS / |ref| (0 when either is empty).
* ROUGE-Lsum: summary-level LCS (section 3.2 of the paper) over sentences, one per line
  (and optionally split on ``sentence_sep``): for each reference sentence the union of
  its LCS with every hypothesis sentence, counted without double counting as in
  ROUGE-1.5.5 and rouge-score.

F is the F-beta measure ``(1 + b^2) P R / (R + b^2 P)`` (``beta=1``: rouge-score's
``2 P R / (P + R)``). With several references the reference with the highest F is used
for P, R and F (the first on ties), as ``RougeScorer.score_multi`` does. The corpus score
is the mean of the per-segment P, R and F (stats rows: per-segment P, R, F and a count).

Speed (identical numbers): tokens are interned as int32 ids once per distinct string, a
corpus side is packed once per settings (references are shared by every system, the
hypotheses by the four types), and every pair of a call is counted in one pass of a C
kernel (:mod:`evalab.metrics._rouge_pairs`, with pure-Python fallbacks): clipped n-gram
overlaps by sorted merge, LCS lengths by the bit-parallel algorithm of Hyyrö (2004,
"Bit-parallel LCS-length computation revisited"), |hyp| x |ref| / 64 word steps, so a
long line is bounded: a pair estimated at over ``LONG_LCS_SECONDS`` is refused before any
work, naming the setting ``max_lcs_cells`` that lifts the bound (it changes no score, so the
signature does not name it). The union LCS of multi-sentence ROUGE-Lsum reads rouge-score's particular LCS
(its backtracking tie-break) from the bit-parallel rows instead of an O(nm) table.
"""

from __future__ import annotations

import re
import warnings
from abc import abstractmethod
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from itertools import chain
from typing import Any, ClassVar

import numpy as np

from evalab._kernel import Packed
from evalab.errors import SettingsError
from evalab.metrics._rouge_pairs import (
    TABLE,
    lcs_lengths,
    lcs_of_ids,
    lcs_seconds,
    match_masks,
    ngram_overlaps,
)
from evalab.metrics.base import (
    Metric,
    MetricSettings,
    PairWork,
    PeerName,
    column_ratio,
    nrefs_field,
    setting,
)
from evalab.metrics.stats_value import NRefs
from evalab.text.porter import porter_stem
from evalab.text.rouge_tokenizers import DistinctTokens, emptied_count
from evalab.text.tokenizers import check_tokenizer_name, get_tokenizer

__all__ = [
    "Rouge1",
    "Rouge2",
    "RougeL",
    "RougeLSettings",
    "RougeLsum",
    "RougeLsumSettings",
    "RougeSettings",
    "lcs_indices",
    "lcs_length",
]

_CACHE_SIZE = 1 << 16
# rouge-score stems only lowercase ASCII alphanumeric tokens longer than 3 characters
_STEMMABLE_RE = re.compile(r"[a-z0-9]{4,}\Z")


# -- settings -------------------------------------------------------------------------------
@dataclass(frozen=True)
class RougeSettings(MetricSettings):
    """Settings shared by every ROUGE variant."""

    tokenize: str = setting(
        "rouge",
        "tokenizer name: 'rouge' = rouge-score's default (ASCII [a-z0-9] only, for parity), "
        "'unicode' = the same rules for every script; or any registered tokenizer "
        "(rouge-score's tokenizer)",
    )
    use_stemmer: bool = setting(
        False, "Porter-stem lowercase ASCII tokens of 4+ characters (rouge-score's rule)"
    )
    beta: float = setting(1.0, "F-beta weight of recall (1 = F1, rouge-score's F)")

    peer_names: ClassVar[Mapping[str, PeerName]] = {
        "tokenizer": PeerName("tokenize", "rouge-score")
    }

    def validate(self) -> None:
        super().validate()
        check_tokenizer_name(self.tokenize)
        if not self.beta > 0:
            raise SettingsError(f"setting 'beta' must be > 0, got {self.beta!r}")


#: a pair whose LCS is estimated to take longer than this is refused (the bound can be lifted)
LONG_LCS_SECONDS = 10.0
#: the hyp x ref cells of that many seconds: the bit-parallel LCS takes a word step per 64 cells
LONG_LCS = PairWork(
    "tokens",
    int(LONG_LCS_SECONDS * 64 / lcs_seconds(1, 1)),
    table="LCS",
    setting="max_lcs_cells",
)


@dataclass(frozen=True)
class RougeLSettings(RougeSettings):
    """ROUGE-L settings: the shared ones, and the bound on one pair's LCS work."""

    max_lcs_cells: int = setting(
        LONG_LCS.limit,
        "refuse a segment pair whose LCS table (hyp x ref tokens) has more cells (about "
        f"{LONG_LCS_SECONDS:g} s of work); a bound on time, not on the scores",
    )

    def validate(self) -> None:
        super().validate()
        if isinstance(self.max_lcs_cells, bool) or not (
            isinstance(self.max_lcs_cells, int) and self.max_lcs_cells > 0
        ):
            raise SettingsError(
                f"setting 'max_lcs_cells' must be a positive integer, got {self.max_lcs_cells!r}"
            )


@dataclass(frozen=True)
class RougeLsumSettings(RougeLSettings):
    """ROUGE-Lsum settings: sentences are lines, and optionally split on a separator."""

    sentence_sep: str | None = setting(
        None,
        "also split sentences on this string (e.g. '<n>', the CNN/DM convention), for "
        "one-line-per-segment files where newlines cannot separate sentences",
    )


# -- analysis (cached per distinct string) ----------------------------------------------------
@lru_cache(maxsize=1 << 18)
def _stem_token(token: str) -> str:
    return porter_stem(token) if _STEMMABLE_RE.match(token) else token


@lru_cache(maxsize=_CACHE_SIZE)
def _tokens(tokenizer: str, stem: bool, text: str) -> tuple[str, ...]:
    tokens = get_tokenizer(tokenizer)(text)
    return tuple(map(_stem_token, tokens)) if stem else tuple(tokens)


def _sentence_texts(sep: str | None, text: str) -> list[str]:
    if sep:
        text = text.replace(sep, "\n")
    # rouge-score: split on "\n", drop empty strings (a blank-but-spaced line stays, empty)
    return [s for s in text.split("\n") if s]


@lru_cache(maxsize=_CACHE_SIZE)
def _sentences(
    tokenizer: str, stem: bool, sep: str | None, text: str
) -> tuple[tuple[str, ...], ...]:
    return tuple(_tokens(tokenizer, stem, s) for s in _sentence_texts(sep, text))


def _token_lists(tokenizer: str, stem: bool, texts: Sequence[str]) -> list[Sequence[str]]:
    """The tokens of every text: the tokenizer's batch path when it has one and no stemming."""
    if stem:
        return [_tokens(tokenizer, True, t) for t in texts]
    tok = get_tokenizer(tokenizer)
    many = getattr(tok, "many", None)
    return many(texts) if many is not None else list(map(tok, texts))


def _break_indices(sep: str | None, texts: Sequence[str]) -> list[int]:
    """The texts with a sentence break (a newline, or ``sep``)."""
    marks = ("\n", sep) if sep else ("\n",)
    joined = "".join(texts)  # one scan rules out the usual case, no break anywhere
    if not any(mark in joined for mark in marks):
        return []
    return [i for i, text in enumerate(texts) if any(mark in text for mark in marks)]


def _sentence_token_lists(
    tokenizer: str, stem: bool, sep: str | None, texts: Sequence[str]
) -> list[Sequence[str]]:
    """The tokens of every text; those of a text with sentence breaks are its sentences'
    tokens end to end."""
    lists = _token_lists(tokenizer, stem, texts)
    for i in _break_indices(sep, texts):
        lists[i] = list(chain.from_iterable(_sentences(tokenizer, stem, sep, texts[i])))
    return lists


@dataclass(frozen=True)
class _Side:
    """One corpus side under one setting: its packed token ids, how many of its segments
    are not blank but have no token (they score 0: a warning says so) and, for ROUGE-Lsum's
    sentences, the segments with a sentence break."""

    packed: Packed
    emptied: int
    breaks: tuple[int, ...] = ()


def _distinct_side(tokenizer: str, stem: bool, texts: tuple[str, ...]) -> _Side | None:
    """The side from the tokenizer's distinct tokens (interned, and stemmed, once each), or
    ``None`` when the tokenizer has no such path."""
    distinct = getattr(get_tokenizer(tokenizer), "distinct", None)
    if distinct is None:
        return None
    tokens: DistinctTokens = distinct(texts)
    words = list(map(_stem_token, tokens.distinct)) if stem else tokens.distinct
    if not all(words):  # a stem that is no token (never seen): the per-text path drops it
        return None
    ids = TABLE.ids(words)[tokens.indices]
    return _Side(Packed(ids, tokens.offsets), tokens.emptied)


# A corpus side is packed once per settings: the reference of every system and the
# hypotheses of all four ROUGE types hit these caches (keyed by the tuple of segments).
@lru_cache(maxsize=32)
def _text_side(tokenizer: str, stem: bool, texts: tuple[str, ...]) -> _Side:
    side = _distinct_side(tokenizer, stem, texts)
    if side is not None:
        return side
    packed = TABLE.pack_chunked(partial(_token_lists, tokenizer, stem), texts)
    return _Side(packed, emptied_count(texts, packed.lengths))


@lru_cache(maxsize=32)
def _sentence_side(tokenizer: str, stem: bool, sep: str | None, texts: tuple[str, ...]) -> _Side:
    """The ids of every sentence's tokens, end to end (a text without a sentence break is
    one sentence: its own tokens)."""
    breaks = _break_indices(sep, texts)
    if not breaks:  # the same tokens as the texts: share their packing
        return _text_side(tokenizer, stem, texts)
    packed = TABLE.pack_chunked(partial(_sentence_token_lists, tokenizer, stem, sep), texts)
    return _Side(packed, emptied_count(texts, packed.lengths), tuple(breaks))


def clear_id_caches() -> None:
    """Empty the caches that hold token ids (when the shared token table is emptied)."""
    for cache in (_text_side, _sentence_side):
        cache.cache_clear()


# -- LCS ------------------------------------------------------------------------------------
def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence of two token sequences (bit-parallel).

    >>> lcs_length("the cat sat on the mat".split(), "the cat on a mat".split())
    4
    """
    return lcs_of_ids(a, b)


def lcs_indices(ref: Sequence[Hashable], can: Sequence[Hashable]) -> list[int]:
    """Indices into ``ref`` of the LCS that rouge-score's ``lcs_ind`` returns.

    rouge-score fills the full DP table ``t`` and backtracks from the end: a match is taken
    diagonally, else it moves left when ``t[i][j-1] > t[i-1][j]`` and up otherwise. The
    table rows are read here from the bit-parallel row vectors (``t[i][j]`` = ``j`` minus
    the set bits among the low ``j`` bits of row ``i``), so only O(n + m) cells are looked at.

    >>> lcs_indices("a b c d".split(), "b d a".split())
    [1, 3]
    """
    m = len(can)
    masks = match_masks(can)
    rows = [(1 << m) - 1]
    v = rows[0]
    for t in ref:
        bits = masks.get(t)
        if bits:
            u = v & bits
            v = (v + u) | (v - u)
        rows.append(v)

    def cell(i: int, j: int) -> int:
        return j - (rows[i] & ((1 << j) - 1)).bit_count()

    out: list[int] = []
    i, j = len(ref), m
    while i > 0 and j > 0:
        if ref[i - 1] == can[j - 1]:
            out.append(i - 1)
            i -= 1
            j -= 1
        elif cell(i, j - 1) > cell(i - 1, j):
            j -= 1
        else:
            i -= 1
    out.reverse()
    return out


# -- per-pair scores (precision, recall, fmeasure) --------------------------------------------
def _prf(hits: np.ndarray, hyp_len: np.ndarray, ref_len: np.ndarray, beta: float) -> np.ndarray:
    """Rows (P, R, F) of ``hits`` over the hypothesis and reference lengths (0 where a
    length is 0), with rouge-score's arithmetic operation for operation (identical floats)."""
    rows = np.zeros((len(hits), 3), dtype=np.float64)
    p, r, f = rows[:, 0], rows[:, 1], rows[:, 2]
    np.divide(hits, np.maximum(hyp_len, 1), out=p)  # int64 / int64: float64 true division
    np.divide(hits, np.maximum(ref_len, 1), out=r)
    if beta == 1.0:  # rouge_score.scoring.fmeasure: 2 * P * R / (P + R), 0 when P + R = 0
        np.divide(2 * p * r, p + r, out=f, where=p + r > 0)
    else:
        b2 = beta * beta
        np.divide((1 + b2) * p * r, r + b2 * p, out=f, where=p + r > 0)
    return rows


def _summary_lcs_hits(
    ref_sents: Sequence[Sequence[Hashable]], can_sents: Sequence[Sequence[Hashable]]
) -> int:
    """rouge-score's ``_summary_level_lcs`` hit count (union LCS without double counting)."""
    cnt_r: Counter[Hashable] = Counter()
    cnt_c: Counter[Hashable] = Counter()
    for s in ref_sents:
        cnt_r.update(s)
    for s in can_sents:
        cnt_c.update(s)
    hits = 0
    for r in ref_sents:
        union: set[int] = set()
        for c in can_sents:
            union.update(lcs_indices(r, c))
        for i in sorted(union):
            t = r[i]
            if cnt_c[t] > 0 and cnt_r[t] > 0:
                hits += 1
                cnt_c[t] -= 1
                cnt_r[t] -= 1
    return hits


# -- metrics ----------------------------------------------------------------------------------
class _Rouge(Metric):
    """Shared ROUGE machinery: per-segment best-F over references, mean over segments."""

    settings_class: ClassVar[type[MetricSettings]] = RougeSettings
    scale: ClassVar[float] = 1.0
    higher_is_better: ClassVar[bool] = True
    stat_names: ClassVar[tuple[str, ...]] = ("precision", "recall", "fmeasure", "count")
    test_setting_values: ClassVar[Mapping[str, Sequence[Any]]] = {
        "tokenize": ("unicode",),
        "sentence_sep": (" . ",),
    }

    settings: RougeSettings

    @abstractmethod
    def _pairs(
        self, hyps: tuple[str, ...], refs: tuple[str, ...], hyp: _Side, ref: _Side
    ) -> np.ndarray:
        """Rows (precision, recall, F) of every hypothesis against its reference, from the
        texts and their sides."""

    def _side(self, texts: tuple[str, ...]) -> _Side:
        s = self.settings
        return _text_side(s.tokenize, s.use_stemmer, texts)

    def pair_sizes(
        self, hypotheses: Sequence[str], references: Sequence[Sequence[str | None]]
    ) -> tuple[list[int], list[int]]:
        with TABLE.session(on_reset=clear_id_caches):
            lengths = [
                self._side(tuple(t if t is not None else "" for t in side)).packed.lengths
                for side in [hypotheses, *references]
            ]
        return [int(n) for n in lengths[0]], [int(n) for n in np.max(lengths[1:], axis=0)]

    def _segment_stats(self, hypotheses: list[str], references: list[list[str]]) -> np.ndarray:
        with TABLE.session(on_reset=clear_id_caches):  # the ids stay stable for the call
            return self._rows(hypotheses, references)

    def _rows(self, hypotheses: list[str], references: list[list[str]]) -> np.ndarray:
        hyps, *ref_texts = map(tuple, [hypotheses, *references])
        hyp, *ref_sides = map(self._side, [hyps, *ref_texts])
        self._warn_empty(hyp.emptied + sum(side.emptied for side in ref_sides))
        refs = list(zip(ref_texts, ref_sides, strict=True))
        lengths = [ref.packed.lengths for _, ref in refs]
        self.check_pair_work(
            hyp.packed.lengths, lengths[0] if len(refs) == 1 else np.max(lengths, axis=0)
        )
        best = self._pairs(hyps, refs[0][0], hyp, refs[0][1])
        for texts, ref in refs[1:]:
            cand = self._pairs(hyps, texts, hyp, ref)
            better = cand[:, 2] > best[:, 2]  # np.argmax in score_multi: first maximum wins
            best[better] = cand[better]
        rows = np.empty((len(hypotheses), 4), dtype=np.float64)
        rows[:, :3] = best
        rows[:, 3] = 1.0
        return rows

    def _warn_empty(self, lost: int) -> None:
        """Warn of ``lost`` segments (hypotheses and references) that are not blank but
        have no token."""
        tok = self.settings.tokenize
        if lost:
            hint = " (non-Latin text? use tokenize='unicode')" if tok == "rouge" else ""
            warnings.warn(
                f"{self.name}: the {tok!r} tokenizer reduced {lost} non-empty segment(s) "
                f"(hypotheses and references) to no tokens; they score 0{hint}",
                UserWarning,
                stacklevel=4,
            )

    def scores_from_sums(self, sums: np.ndarray) -> np.ndarray:
        return column_ratio(sums, 2, 3)

    def _score_components(self, sums: np.ndarray) -> tuple[dict[str, Any], str]:
        count = float(sums[3])
        if count > 0:
            p, r, f = (float(x) / count for x in sums[:3])
        else:
            p = r = f = float("nan")
        return {"precision": p, "recall": r, "fmeasure": f}, f"P = {p:.4f} R = {r:.4f}"

    def _signature_fields(self, nrefs: NRefs) -> list[tuple[str, str]]:
        s = self.settings
        return [
            nrefs_field(nrefs),
            ("tok", s.tokenize),
            ("stem", "porter" if s.use_stemmer else "no"),
            ("beta", f"{s.beta:g}"),
        ]


class _RougeN(_Rouge):
    n: ClassVar[int]

    def _pairs(
        self, hyps: tuple[str, ...], refs: tuple[str, ...], hyp: _Side, ref: _Side
    ) -> np.ndarray:
        overlap = ngram_overlaps(hyp.packed, ref.packed, self.n)
        n_hyp, n_ref = (np.maximum(side.packed.lengths - (self.n - 1), 0) for side in (hyp, ref))
        return _prf(overlap, n_hyp, n_ref, self.settings.beta)


class Rouge1(_RougeN):
    """ROUGE-1: unigram overlap P/R/F (rouge-score's numbers); score = mean F."""

    name = "rouge1"
    n = 1


class Rouge2(_RougeN):
    """ROUGE-2: bigram overlap P/R/F (rouge-score's numbers); score = mean F."""

    name = "rouge2"
    n = 2


class _LcsBound(_Rouge):
    """The ROUGE variants with an LCS: a pair beyond ``max_lcs_cells`` is refused."""

    settings_class = RougeLSettings
    settings: RougeLSettings
    pair_work = LONG_LCS
    inert_settings: ClassVar[Mapping[str, str]] = {
        "max_lcs_cells": "a bound on one pair's work: a pair beyond it is refused, never scored otherwise"
    }

    def pair_bound(self) -> PairWork:
        return replace(LONG_LCS, limit=self.settings.max_lcs_cells)


class RougeL(_LcsBound):
    """ROUGE-L: longest common subsequence P/R/F (rouge-score's numbers); score = mean F."""

    name = "rougeL"

    def _pairs(
        self, hyps: tuple[str, ...], refs: tuple[str, ...], hyp: _Side, ref: _Side
    ) -> np.ndarray:
        a, b = hyp.packed, ref.packed
        return _prf(lcs_lengths(a, b), a.lengths, b.lengths, self.settings.beta)


class RougeLsum(_LcsBound):
    """ROUGE-Lsum: summary-level union LCS over sentences (lines); score = mean F."""

    name = "rougeLsum"
    settings_class = RougeLsumSettings
    settings: RougeLsumSettings

    def _side(self, texts: tuple[str, ...]) -> _Side:
        s = self.settings
        return _sentence_side(s.tokenize, s.use_stemmer, s.sentence_sep, texts)

    def _pairs(
        self, hyps: tuple[str, ...], refs: tuple[str, ...], hyp: _Side, ref: _Side
    ) -> np.ndarray:
        s = self.settings
        # One sentence each: the union LCS is the LCS, and no token of it can be double
        # counted, so the hits are the LCS length (counted for all pairs at once; pairs
        # with several sentences on a side are then counted again, as rouge-score does).
        a, b = hyp.packed, ref.packed
        hits = lcs_lengths(a, b)
        for i in sorted({*hyp.breaks, *ref.breaks}):
            h_sents = _sentences(s.tokenize, s.use_stemmer, s.sentence_sep, hyps[i])
            r_sents = _sentences(s.tokenize, s.use_stemmer, s.sentence_sep, refs[i])
            if (len(h_sents) > 1 or len(r_sents) > 1) and h_sents and r_sents:
                hits[i] = _summary_lcs_hits(r_sents, h_sents)
        return _prf(hits, a.lengths, b.lengths, s.beta)

    def _signature_fields(self, nrefs: NRefs) -> list[tuple[str, str]]:
        sep = self.settings.sentence_sep
        split = "newline" if not sep else f"newline+{sep}"
        return [*super()._signature_fields(nrefs), ("split", split)]
