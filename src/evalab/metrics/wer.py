"""WER and CER (word and character error rate), MER, WIL and WIP with jiwer 4's numbers.

Per segment the statistics are the counts of jiwer's alignment of the reference to the
hypothesis tokens (words or characters, see :mod:`evalab.text.asr`): hits,
substitutions, deletions and insertions, along the shortest edit path that jiwer (through
rapidfuzz) picks (:func:`evalab.metrics._editdistance.alignment_py`). The reference has
``H + S + D`` tokens, the hypothesis ``H + S + I``, and ``S + D + I`` is the Levenshtein
distance. Every corpus score is jiwer's function of the summed counts (not a mean of
segment rates):

* WER / CER ``(S + D + I) / (H + S + D)``, lower is better, above 1 when the hypotheses
  insert more than the references hold; when every reference is empty, the insertions;
* MER ``(S + D + I) / (H + S + D + I)``, lower is better; 0 when references and
  hypotheses are all empty, 1 when only the references are;
* WIP ``H / N_ref * H / N_hyp``, higher is better; 0 when every hypothesis is empty, and
  with empty references 1 if the hypotheses are empty too, else 0;
* WIL ``1 - WIP``, lower is better.

Several references (jiwer takes one): each segment keeps the reference with the fewest
edits, the first one on ties, and counts that reference's alignment.

The alignments themselves (``WER.alignments``: the tokens and jiwer's chunks per segment,
:class:`SegmentAlignment`) and jiwer's error counts over them (:func:`error_counts`) are
what ``evalab score --align/--errors`` shows; ``WER.worst_segments`` picks the segments.

>>> from evalab.metrics.wer import WER, CER, MER, WIP
>>> s = WER().corpus_score(["the cat sat", "a dog"], [["the cat sat down", "the dog"]])
>>> s.score, s.edits, s.ref_length
(0.3333333333333333, 2, 6)
>>> s.hits, s.substitutions, s.deletions, s.insertions
(4, 1, 1, 0)
>>> round(CER().corpus_score(["kitten"], [["sitting"]]).score, 4)
0.4286
>>> MER().corpus_score(["a b x"], [["a b c d"]]).score, WIP().corpus_score(["a b x"], [["a b c d"]]).score
(0.5, 0.3333333333333333)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, ClassVar

import numpy as np

from evalab import _kernel
from evalab._kernel import Packed, TokenTable
from evalab.metrics._editdistance import (
    Chunk,
    Edit,
    chunks_of,
    levenshtein_counts_many,
    levenshtein_steps_many,
)
from evalab.metrics.base import MetricSettings, PairWork, SystemsMetric, nrefs_field, setting
from evalab.metrics.stats_value import NRefs
from evalab.text.asr import (
    CHAR_WHITESPACE,
    WORD_WHITESPACE,
    char_tokens,
    word_ids,
    word_tokens,
)

__all__ = [
    "CER",
    "MER",
    "WER",
    "WIL",
    "WIP",
    "CERSettings",
    "ErrorCount",
    "ErrorCounts",
    "ErrorRateSettings",
    "SegmentAlignment",
    "WERSettings",
    "error_counts",
    "error_rate_from_sums",
    "match_error_rate_from_sums",
    "word_information_lost_from_sums",
    "word_information_preserved_from_sums",
]

#: the per-segment statistics of every measure here: jiwer's alignment counts
COUNT_NAMES = ("hits", "substitutions", "deletions", "insertions")


@dataclass(frozen=True)
class ErrorRateSettings(MetricSettings):
    """Settings shared by :class:`WER` and :class:`CER`: jiwer transforms applied before its defaults."""

    lowercase: bool = setting(False, "Lowercase (jiwer ToLowerCase).")
    remove_punctuation: bool = setting(
        False, "Remove Unicode punctuation, categories P* (jiwer RemovePunctuation)."
    )
    whitespace: str = setting("default", "Whitespace handling.")


@dataclass(frozen=True)
class WERSettings(ErrorRateSettings):
    """Settings of :class:`WER`."""

    whitespace: str = setting(
        "default",
        "default: jiwer's (words split at spaces); any: every whitespace character separates words.",
        WORD_WHITESPACE,
    )


@dataclass(frozen=True)
class CERSettings(ErrorRateSettings):
    """Settings of :class:`CER`."""

    whitespace: str = setting(
        "keep",
        "keep: spaces are characters (jiwer's default); collapse: runs become one space; remove: no whitespace.",
        CHAR_WHITESPACE,
    )


def _counts(sums: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Hits, edits, reference and hypothesis lengths of summed ``[..., 4]`` counts."""
    sums = np.asarray(sums, dtype=np.float64)
    h, s, d, i = (sums[..., k] for k in range(4))
    return h, s + d + i, h + s + d, h + s + i


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a / np.where(b > 0, b, 1.0)


def error_rate_from_sums(sums: np.ndarray) -> np.ndarray:
    """WER/CER of summed ``[..., 4]`` (H, S, D, I); the insertions if no reference token."""
    _, edits, ref_len, _ = _counts(sums)
    return np.where(ref_len > 0, _divide(edits, ref_len), edits)


def match_error_rate_from_sums(sums: np.ndarray) -> np.ndarray:
    """MER of summed ``[..., 4]`` (H, S, D, I): ``(S + D + I) / (H + S + D + I)``."""
    h, edits, ref_len, hyp_len = _counts(sums)
    empty = np.where(hyp_len > 0, 1.0, 0.0)
    return np.where(ref_len > 0, _divide(edits, h + edits), empty)


def word_information_lost_from_sums(sums: np.ndarray) -> np.ndarray:
    """WIL of summed ``[..., 4]``: ``1 - WIP``."""
    return 1 - word_information_preserved_from_sums(sums)


def word_information_preserved_from_sums(sums: np.ndarray) -> np.ndarray:
    """WIP of summed ``[..., 4]`` (H, S, D, I): ``H / N_ref * H / N_hyp`` as jiwer orders it."""
    h, _, ref_len, hyp_len = _counts(sums)
    preserved = np.where(hyp_len > 0, _divide(h, ref_len) * _divide(h, hyp_len), 0.0)
    return np.where(ref_len > 0, preserved, np.where(hyp_len > 0, 0.0, 1.0))


@dataclass(frozen=True)
class SegmentAlignment:
    """jiwer's alignment of one segment (``process_words(...).alignments[k]``): the tokens of
    the reference (the closest one, as the counts pick it) and of the hypothesis after the
    metric's transforms, and the runs of equal steps over them."""

    #: the segment's index (from 0)
    segment: int
    reference: tuple[str, ...]
    hypothesis: tuple[str, ...]
    chunks: tuple[Chunk, ...]

    @property
    def counts(self) -> np.ndarray:
        """Hits, substitutions, deletions and insertions (the metric's statistics row)."""
        out = np.zeros(len(COUNT_NAMES), dtype=np.int64)
        for c in self.chunks:
            out[c.edit] += max(c.ref_end - c.ref_start, c.hyp_end - c.hyp_start)
        return out


@dataclass(frozen=True)
class ErrorCount:
    """How often one reference text was replaced by one hypothesis text (``""``: nothing on
    that side, an insertion or a deletion); a text is a run of tokens, jiwer's chunk."""

    reference: str
    hypothesis: str
    count: int


@dataclass(frozen=True)
class ErrorCounts:
    """jiwer's ``collect_error_counts``: every substituted, inserted and deleted run of
    tokens with its count, most frequent first (ties: the first seen first)."""

    substitutions: tuple[ErrorCount, ...]
    insertions: tuple[ErrorCount, ...]
    deletions: tuple[ErrorCount, ...]

    def top(self, k: int) -> ErrorCounts:
        """The ``k`` most frequent of each kind (jiwer's ``top_k``)."""
        return ErrorCounts(self.substitutions[:k], self.insertions[:k], self.deletions[:k])


def error_counts(alignments: Iterable[SegmentAlignment], separator: str) -> ErrorCounts:
    """The error counts of ``alignments``, each run's tokens joined by ``separator`` (a space
    for words, nothing for characters, as jiwer joins them).

    >>> from evalab.metrics._editdistance import alignment_py
    >>> ref, hyp = ("a", "b", "c"), ("x", "b")
    >>> a = SegmentAlignment(0, ref, hyp, tuple(chunks_of(alignment_py([0, 1, 2], [3, 1]))))
    >>> error_counts([a, a], " ")
    ErrorCounts(substitutions=(ErrorCount(reference='a', hypothesis='x', count=2),), \
insertions=(), deletions=(ErrorCount(reference='c', hypothesis='', count=2),))
    """
    found: dict[Edit, dict[tuple[str, str], int]] = {e: {} for e in Edit}
    for a in alignments:
        for c in a.chunks:
            key = (
                separator.join(a.reference[c.ref_start : c.ref_end]),
                separator.join(a.hypothesis[c.hyp_start : c.hyp_end]),
            )
            found[c.edit][key] = found[c.edit].get(key, 0) + 1

    def ranked(edit: Edit) -> tuple[ErrorCount, ...]:
        items = sorted(found[edit].items(), key=lambda kv: -kv[1])  # stable: first seen first
        return tuple(ErrorCount(r, h, n) for (r, h), n in items)

    return ErrorCounts(ranked(Edit.SUBSTITUTE), ranked(Edit.INSERT), ranked(Edit.DELETE))


class WER(SystemsMetric):
    """Word error rate as jiwer 4 (``jiwer.wer``) computes it over a corpus."""

    name = "wer"
    settings_class: ClassVar[type[MetricSettings]] = WERSettings
    settings: ErrorRateSettings
    scale = 1.0
    higher_is_better = False
    #: an error rate exceeds its scale when the hypotheses insert more than the references hold
    bounds = (0.0, math.inf)
    releases_gil = _kernel.ed is not None  # the edit distances run in the kernel without the GIL
    #: the unit written in the signature
    unit: ClassVar[str] = "word"
    #: the Levenshtein table of hyp x ref words: 100 000 x 100 000 runs for minutes
    pair_work = PairWork("words", 10_000_000_000)

    def _tokens(self, text: str) -> list[Any]:
        s = self.settings
        return word_tokens(text, s.lowercase, s.remove_punctuation, s.whitespace)

    def _pack(self, texts: list[str], table: TokenTable) -> Packed:
        return table.pack([self._tokens(t) for t in texts])

    def _pack_groups(self, groups: list[list[str]]) -> list[Packed]:
        """Every group of texts packed, all in one id space (the words split and interned in
        C by :func:`~evalab.text.asr.word_ids` when the kernel is built)."""
        s = self.settings
        texts = list(chain.from_iterable(groups))
        packed = word_ids(texts, s.lowercase, s.remove_punctuation, s.whitespace)
        return packed.split([len(g) for g in groups])

    @property
    def stat_names(self) -> tuple[str, ...]:
        return COUNT_NAMES

    def _segment_stats_many(
        self, systems: list[list[str]], references: list[list[str]]
    ) -> list[np.ndarray]:
        # one id space and one packing of the references for all systems, and one kernel
        # call over all of them: the systems end to end against each reference stream repeated
        packed = self._pack_groups([*references, *systems])
        streams, hyps = packed[: len(references)], packed[len(references) :]
        longest = np.max([ref.lengths for ref in streams], axis=0)
        for hyp in hyps:
            self.check_pair_work(hyp.lengths, longest)
        joined = Packed.concat(hyps)
        best = np.zeros((len(joined), len(COUNT_NAMES)))
        fewest = np.full(len(joined), np.inf)
        for ref in streams:
            counts = levenshtein_counts_many(joined, ref.tiled(len(hyps)))
            edits = counts[:, 1:].sum(axis=1)
            closer = edits < fewest  # strict: the first reference wins ties
            fewest[closer] = edits[closer]
            best[closer] = counts[closer]
        return np.split(best, len(hyps))

    #: what joins the tokens of a run in :func:`error_counts` (jiwer's separator)
    separator: ClassVar[str] = " "

    def alignments(
        self,
        hypotheses: Sequence[str],
        references: Sequence[Sequence[str | None]],
        segments: Iterable[int],
    ) -> list[SegmentAlignment]:
        """jiwer's alignments of ``segments`` (indices), each against the reference its
        counts come from: the one with the fewest edits, the first on ties (missing ones
        skipped; none at all: every hypothesis token an insertion)."""
        chosen = list(segments)
        table = TokenTable()
        hyp = self._pack([hypotheses[k] for k in chosen], table)
        best: list[np.ndarray] = [np.full(n, Edit.INSERT, np.int8) for n in hyp.lengths.tolist()]
        refs: list[str] = [""] * len(chosen)
        fewest = [math.inf] * len(chosen)
        for stream in references:
            texts = [stream[k] for k in chosen]
            ref = self._pack([t or "" for t in texts], table)
            for j, steps in enumerate(levenshtein_steps_many(hyp, ref)):
                edits = int(np.count_nonzero(steps))  # every step but a hit is an edit
                if (text := texts[j]) is not None and edits < fewest[j]:
                    fewest[j], best[j], refs[j] = edits, steps, text
        return [
            SegmentAlignment(
                k,
                tuple(str(t) for t in self._tokens(refs[j])),
                tuple(str(t) for t in self._tokens(hypotheses[k])),
                tuple(chunks_of(best[j])),
            )
            for j, k in enumerate(chosen)
        ]

    def worst_segments(self, rows: np.ndarray, n: int) -> list[int]:
        """The ``n`` segments (indices) of worst score among those with an error, the
        earlier first on ties."""
        scores = np.asarray(self.scores_from_sums(rows), dtype=np.float64)
        order = np.argsort(scores if self.higher_is_better else -scores, kind="stable")
        wrong = np.asarray(rows)[:, 1:].sum(axis=1) > 0
        return [int(k) for k in order if wrong[k]][:n]

    def pair_sizes(
        self, hypotheses: Sequence[str], references: Sequence[Sequence[str | None]]
    ) -> tuple[list[int], list[int]]:
        return (
            [len(self._tokens(h)) for h in hypotheses],
            [
                max(len(self._tokens(ref)) if (ref := r[k]) is not None else 0 for r in references)
                for k in range(len(hypotheses))
            ],
        )

    def scores_from_sums(self, sums: np.ndarray) -> np.ndarray:
        """Error rate of summed stats ``[..., 4]`` (e.g. bootstrap resamples)."""
        return error_rate_from_sums(sums)

    def _score_components(self, sums: np.ndarray) -> tuple[dict[str, Any], str]:
        h, s, d, i = (int(v) for v in sums)
        counts = dict(zip(COUNT_NAMES, (h, s, d, i), strict=True))
        return {**counts, "edits": s + d + i, "ref_length": h + s + d, "hyp_length": h + s + i}, ""

    def _signature_fields(self, nrefs: NRefs) -> list[tuple[str, str]]:
        s = self.settings
        return [
            nrefs_field(nrefs),
            ("unit", self.unit),
            ("case", "lc" if s.lowercase else "mixed"),
            ("punct", "no" if s.remove_punctuation else "yes"),
            ("space", s.whitespace),
            ("ref", "closest"),
        ]


class CER(WER):
    """Character error rate as jiwer 4 (``jiwer.cer``) computes it over a corpus."""

    name = "cer"
    settings_class = CERSettings
    unit = "char"
    releases_gil = _kernel.ed is not None  # the same kernel, on code points
    pair_work = PairWork("characters", 10_000_000_000)
    separator = ""

    def _tokens(self, text: str) -> list[Any]:
        s = self.settings
        return list(char_tokens(text, s.lowercase, s.remove_punctuation, s.whitespace))

    def _pack_groups(self, groups: list[list[str]]) -> list[Packed]:
        table = TokenTable()  # unused: code points are the ids
        return [self._pack(texts, table) for texts in groups]

    def _pack(self, texts: list[str], table: TokenTable) -> Packed:
        # code points are the ids (packed in C when the kernel is built)
        s = self.settings
        chars = [char_tokens(t, s.lowercase, s.remove_punctuation, s.whitespace) for t in texts]
        return Packed(*_kernel.pack_chars(chars))


class _Measure(WER):
    """A measure of jiwer 4 other than WER over the same counts, as a fraction of them."""

    bounds = (0.0, 1.0)

    def scores_from_sums(self, sums: np.ndarray) -> np.ndarray:
        return _MEASURES[self.name](sums)


#: each measure's function of summed stats ``[..., 4]``, by registry name
_MEASURES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "mer": match_error_rate_from_sums,
    "wip": word_information_preserved_from_sums,
    "wil": word_information_lost_from_sums,
}


class MER(_Measure):
    """Match error rate as jiwer 4 (``jiwer.mer``) computes it over a corpus."""

    name = "mer"
    releases_gil = _kernel.ed is not None  # WER's kernel


class WIP(_Measure):
    """Word information preserved as jiwer 4 (``jiwer.wip``) computes it over a corpus."""

    name = "wip"
    higher_is_better = True
    releases_gil = _kernel.ed is not None  # WER's kernel


class WIL(_Measure):
    """Word information lost as jiwer 4 (``jiwer.wil``) computes it: ``1 - WIP``."""

    name = "wil"
    releases_gil = _kernel.ed is not None  # WER's kernel
