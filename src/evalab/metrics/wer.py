"""WER and CER (word and character error rate) with jiwer 4's numbers.

Per segment the statistics are (edits, reference length): the Levenshtein distance
between the hypothesis and reference tokens (words or characters, see
:mod:`evalab.text.asr`) and the number of reference tokens. The corpus score is jiwer's,
``sum(edits) / sum(ref_length)`` (not a mean of segment rates); when every reference is
empty it is the number of inserted tokens, as jiwer returns it. Lower is better, and the
rate exceeds 1 when the hypotheses insert more than the references hold.

Several references (jiwer takes one): each segment keeps the reference with the fewest
edits, the first one on ties, and counts that reference's length.

>>> from evalab.metrics.wer import WER, CER
>>> s = WER().corpus_score(["the cat sat", "a dog"], [["the cat sat down", "the dog"]])
>>> s.score, s.edits, s.ref_length
(0.3333333333333333, 2, 6)
>>> round(CER().corpus_score(["kitten"], [["sitting"]]).score, 4)
0.4286
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from evalab import _kernel
from evalab._kernel import Packed, TokenTable
from evalab.metrics._editdistance import levenshtein_many
from evalab.metrics.base import Metric, MetricSettings, PairWork, setting
from evalab.metrics.stats_value import NRefs
from evalab.text.asr import CHAR_WHITESPACE, WORD_WHITESPACE, char_tokens, word_tokens

__all__ = ["CER", "WER", "CERSettings", "ErrorRateSettings", "WERSettings", "error_rate_from_sums"]


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


def error_rate_from_sums(sums: np.ndarray) -> np.ndarray:
    """Error rate from summed ``[..., 2]`` (edits, ref_length); the edits if no reference token."""
    sums = np.asarray(sums, dtype=np.float64)
    edits, ref_len = sums[..., 0], sums[..., 1]
    return np.where(ref_len > 0, edits / np.where(ref_len > 0, ref_len, 1.0), edits)


class WER(Metric):
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

    @property
    def stat_names(self) -> tuple[str, ...]:
        return ("edits", "ref_length")

    def _segment_stats(self, hypotheses: list[str], references: list[list[str]]) -> np.ndarray:
        return self._segment_stats_many([hypotheses], references)[0]

    def _segment_stats_many(
        self, systems: list[list[str]], references: list[list[str]]
    ) -> list[np.ndarray]:
        # one token table and one packing of the references for all systems, and one kernel
        # call over all of them: the systems end to end against each reference stream repeated
        table = TokenTable()
        streams = [self._pack(stream, table) for stream in references]
        longest = np.max([ref.lengths for ref in streams], axis=0)
        hyps = [self._pack(texts, table) for texts in systems]
        for hyp in hyps:
            self.check_pair_work(hyp.lengths, longest)
        joined = Packed.concat(hyps)
        best = np.full((len(joined), 2), np.inf)
        for ref in streams:
            edits = levenshtein_many(joined, ref.tiled(len(hyps)))
            closer = edits < best[:, 0]  # strict: the first reference wins ties
            best[closer, 0] = edits[closer]
            best[closer, 1] = np.tile(ref.lengths, len(hyps))[closer]
        return np.split(best, len(hyps))

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
        """Error rate of summed stats ``[..., 2]`` (e.g. bootstrap resamples)."""
        return error_rate_from_sums(sums)

    def _score_components(self, sums: np.ndarray) -> tuple[dict[str, Any], str]:
        return {"edits": int(sums[0]), "ref_length": int(sums[1])}, ""

    def _signature_fields(self, nrefs: NRefs) -> list[tuple[str, str]]:
        s = self.settings
        return [
            ("nrefs", str(nrefs) if nrefs is not None else "?"),
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

    def _tokens(self, text: str) -> list[Any]:
        s = self.settings
        return list(char_tokens(text, s.lowercase, s.remove_punctuation, s.whitespace))

    def _pack(self, texts: list[str], table: TokenTable) -> Packed:
        # code points are the ids (packed in C when the kernel is built)
        s = self.settings
        chars = [char_tokens(t, s.lowercase, s.remove_punctuation, s.whitespace) for t in texts]
        return Packed(*_kernel.pack_chars(chars))
