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

Speed (identical numbers): tokens, n-gram counts and LCS match masks are cached per
distinct string (references are shared by every system), the LCS *length* uses the
bit-parallel algorithm of Hyyrö (2004, "Bit-parallel LCS-length computation revisited")
on Python integers, and the union LCS of ROUGE-Lsum reads rouge-score's particular LCS
(its backtracking tie-break) from the bit-parallel rows instead of an O(nm) table.
"""

from __future__ import annotations

import re
import warnings
from abc import abstractmethod
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from evalab.errors import SettingsError
from evalab.metrics.base import Metric, MetricSettings, Score, setting
from evalab.text.porter import porter_stem
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

    tokenizer: str = setting(
        "rouge",
        "tokenizer name: 'rouge' = rouge-score's default (ASCII [a-z0-9] only, for parity), "
        "'unicode' = the same rules for every script; or any registered tokenizer",
    )
    use_stemmer: bool = setting(
        False, "Porter-stem lowercase ASCII tokens of 4+ characters (rouge-score's rule)"
    )
    beta: float = setting(1.0, "F-beta weight of recall (1 = F1, rouge-score's F)")

    def validate(self) -> None:
        super().validate()
        check_tokenizer_name(self.tokenizer)
        if not self.beta > 0:
            raise SettingsError(f"setting 'beta' must be > 0, got {self.beta!r}")


RougeLSettings = RougeSettings


@dataclass(frozen=True)
class RougeLsumSettings(RougeSettings):
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


@lru_cache(maxsize=_CACHE_SIZE)
def _ngrams(tokenizer: str, stem: bool, n: int, text: str) -> tuple[dict, int]:
    tokens = _tokens(tokenizer, stem, text)
    # shifted copies of different lengths: zip stops at the shortest on purpose
    grams = tokens if n == 1 else zip(*(tokens[k:] for k in range(n)), strict=False)
    counts = Counter(grams)
    return counts, max(len(tokens) - n + 1, 0)


@lru_cache(maxsize=_CACHE_SIZE)
def _masks(tokens: tuple[str, ...]) -> dict[str, int]:
    return match_masks(tokens)


@lru_cache(maxsize=_CACHE_SIZE)
def _sentences(tokenizer: str, stem: bool, sep: str | None, text: str) -> tuple[tuple[str, ...], ...]:
    if sep:
        text = text.replace(sep, "\n")
    # rouge-score: split on "\n", drop empty strings (a blank-but-spaced line stays, empty)
    return tuple(_tokens(tokenizer, stem, s) for s in text.split("\n") if s)


# -- LCS ------------------------------------------------------------------------------------
def match_masks(tokens: tuple[str, ...] | list[str]) -> dict[str, int]:
    """Bit ``i`` of ``masks[t]`` is set where ``tokens[i] == t`` (Hyyrö's match vectors)."""
    masks: dict[str, int] = {}
    for i, t in enumerate(tokens):
        masks[t] = masks.get(t, 0) | (1 << i)
    return masks


def _lcs_from_masks(masks: dict[str, int], m: int, other) -> int:
    # V holds, in its low m bits, the zeros of one DP row: LCS = m - popcount(V).
    v = (1 << m) - 1
    get = masks.get
    for t in other:
        bits = get(t)
        if bits:
            u = v & bits
            v = (v + u) | (v - u)
    return m - (v & ((1 << m) - 1)).bit_count()


def lcs_length(a, b) -> int:
    """Length of the longest common subsequence of two token sequences (bit-parallel).

    >>> lcs_length("the cat sat on the mat".split(), "the cat on a mat".split())
    4
    """
    return _lcs_from_masks(match_masks(a), len(a), b)


def lcs_indices(ref, can) -> list[int]:
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
def _f(p: float, r: float, beta: float) -> float:
    if beta == 1.0:
        # rouge_score.scoring.fmeasure, operation for operation (identical floats)
        return 2 * p * r / (p + r) if p + r > 0 else 0.0
    b2 = beta * beta
    return (1 + b2) * p * r / (r + b2 * p) if p + r > 0 else 0.0


def _summary_lcs_hits(ref_sents, can_sents) -> int:
    """rouge-score's ``_summary_level_lcs`` hit count (union LCS without double counting)."""
    cnt_r: Counter = Counter()
    cnt_c: Counter = Counter()
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
    stat_names: ClassVar[tuple[str, ...]] = ("precision", "recall", "fmeasure", "count")  # type: ignore[assignment]
    test_setting_values: ClassVar[Mapping[str, Sequence[Any]]] = {"tokenizer": ("unicode",), "sentence_sep": (" . ",)}

    settings: RougeSettings

    @abstractmethod
    def _pair(self, hyp: str, ref: str) -> tuple[float, float, float]:
        """Precision, recall and F of one hypothesis against one reference."""

    def _segment_stats(self, hypotheses: list[str], references: list[list[str]]) -> np.ndarray:
        self._warn_empty(hypotheses, references)
        rows = np.empty((len(hypotheses), 4), dtype=np.float64)
        pair = self._pair
        if len(references) == 1:
            for i, (h, r) in enumerate(zip(hypotheses, references[0], strict=True)):
                rows[i, :3] = pair(h, r)
        else:
            for i, h in enumerate(hypotheses):
                best = pair(h, references[0][i])
                for stream in references[1:]:
                    cand = pair(h, stream[i])
                    if cand[2] > best[2]:  # np.argmax in score_multi: first maximum wins
                        best = cand
                rows[i, :3] = best
        rows[:, 3] = 1.0
        return rows

    def _warn_empty(self, hypotheses: list[str], references: list[list[str]]) -> None:
        tok, stem = self.settings.tokenizer, self.settings.use_stemmer
        texts = [*hypotheses, *(r for stream in references for r in stream)]
        lost = sum(1 for t in texts if not _tokens(tok, stem, t) and t.strip())
        if lost:
            hint = " (non-Latin text? use tokenizer='unicode')" if tok == "rouge" else ""
            warnings.warn(
                f"{self.name}: the {tok!r} tokenizer reduced {lost} non-empty segment(s) "
                f"(hypotheses and references) to no tokens; they score 0{hint}",
                UserWarning,
                stacklevel=4,
            )

    def scores_from_sums(self, sums: np.ndarray) -> np.ndarray:
        sums = np.asarray(sums, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return sums[..., 2] / sums[..., 3]

    def _score_from_sums(self, sums: np.ndarray, nrefs: int | None) -> Score:
        count = float(sums[3])
        if count > 0:
            p, r, f = (float(x) / count for x in sums[:3])
        else:
            p = r = f = float("nan")
        return Score(
            metric=self.name,
            score=f,
            signature=self.signature_for(nrefs),
            scale=self.scale,
            higher_is_better=self.higher_is_better,
            components={"precision": p, "recall": r, "fmeasure": f},
            verbose=f"P = {p:.4f} R = {r:.4f}",
        )

    def _signature_fields(self, nrefs: int | None) -> list[tuple[str, str]]:
        s = self.settings
        return [
            ("nrefs", str(nrefs) if nrefs is not None else "?"),
            ("tok", s.tokenizer),
            ("stem", "porter" if s.use_stemmer else "no"),
            ("beta", f"{s.beta:g}"),
        ]


class _RougeN(_Rouge):
    n: ClassVar[int]

    def _pair(self, hyp: str, ref: str) -> tuple[float, float, float]:
        s = self.settings
        ref_counts, ref_total = _ngrams(s.tokenizer, s.use_stemmer, self.n, ref)
        hyp_counts, hyp_total = _ngrams(s.tokenizer, s.use_stemmer, self.n, hyp)
        # clipped overlap: sum over shared n-grams of the smaller count (the key-set
        # intersection runs in C, so only shared n-grams are visited in Python)
        overlap = 0
        for gram in ref_counts.keys() & hyp_counts.keys():
            a, b = ref_counts[gram], hyp_counts[gram]
            overlap += a if a < b else b
        p = overlap / max(hyp_total, 1)
        r = overlap / max(ref_total, 1)
        return p, r, _f(p, r, s.beta)


class Rouge1(_RougeN):
    """ROUGE-1: unigram overlap P/R/F (rouge-score's numbers); score = mean F."""

    name = "rouge1"
    description = "rouge1"
    n = 1


class Rouge2(_RougeN):
    """ROUGE-2: bigram overlap P/R/F (rouge-score's numbers); score = mean F."""

    name = "rouge2"
    description = "rouge2"
    n = 2


class RougeL(_Rouge):
    """ROUGE-L: longest common subsequence P/R/F (rouge-score's numbers); score = mean F."""

    name = "rougeL"
    description = "rougeL"

    def _pair(self, hyp: str, ref: str) -> tuple[float, float, float]:
        s = self.settings
        ref_tokens = _tokens(s.tokenizer, s.use_stemmer, ref)
        hyp_tokens = _tokens(s.tokenizer, s.use_stemmer, hyp)
        m = len(ref_tokens)
        if not m or not hyp_tokens:
            return 0.0, 0.0, 0.0
        lcs = _lcs_from_masks(_masks(ref_tokens), m, hyp_tokens)
        p = lcs / len(hyp_tokens)
        r = lcs / m
        return p, r, _f(p, r, s.beta)


class RougeLsum(_Rouge):
    """ROUGE-Lsum: summary-level union LCS over sentences (lines); score = mean F."""

    name = "rougeLsum"
    description = "rougeLsum"
    settings_class = RougeLsumSettings
    settings: RougeLsumSettings

    def _pair(self, hyp: str, ref: str) -> tuple[float, float, float]:
        s = self.settings
        ref_sents = _sentences(s.tokenizer, s.use_stemmer, s.sentence_sep, ref)
        hyp_sents = _sentences(s.tokenizer, s.use_stemmer, s.sentence_sep, hyp)
        m = sum(map(len, ref_sents))
        n = sum(map(len, hyp_sents))
        if not m or not n:
            return 0.0, 0.0, 0.0
        if len(ref_sents) == 1 and len(hyp_sents) == 1:
            # One sentence each: the union LCS is the LCS, and no token of it can be
            # double counted, so the hits are the LCS length.
            hits = _lcs_from_masks(_masks(ref_sents[0]), m, hyp_sents[0])
        else:
            hits = _summary_lcs_hits(ref_sents, hyp_sents)
        p = hits / n
        r = hits / m
        return p, r, _f(p, r, s.beta)

    def _signature_fields(self, nrefs: int | None) -> list[tuple[str, str]]:
        sep = self.settings.sentence_sep
        split = "newline" if not sep else f"newline+{sep}"
        return [*super()._signature_fields(nrefs), ("split", split)]
