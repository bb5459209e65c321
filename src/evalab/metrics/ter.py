"""TER, translation edit rate (Snover et al., 2006), exactly as sacrebleu 2.x computes it.

Per segment the statistics are sacrebleu's pair: the fewest edits (word insertions,
deletions, substitutions and shifts of word spans) over the references, and the
*average* reference length. The corpus score is ``100 * sum(edits) / sum(ref_length)``
(100 if the references are all empty but the hypotheses are not, 0 if both are). Lower
is better. Like sacrebleu, references go through the Tercom normaliser twice. The shift search and the beam edit distance follow sacrebleu's ``lib_ter``
rule for rule (see :mod:`evalab.metrics._editdistance`), in C when the kernel is built.

>>> from evalab.metrics.ter import TER
>>> s = TER().corpus_score(["the cat sat on the mat"], [["the cat sat on a mat"]])
>>> round(s.score, 4), s.num_edits, s.ref_length
(16.6667, 1, 6.0)
>>> TER().signature_for(1).rsplit("|", 1)[0]
'ter|nrefs:1|case:lc|tok:tercom|norm:no|punct:yes|asian:no'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from evalab import _kernel
from evalab._kernel import Packed, chunks
from evalab.metrics._editdistance import ter_edits_many
from evalab.metrics.base import Metric, MetricSettings, PairWork, PeerName, setting
from evalab.metrics.stats_value import NRefs
from evalab.text.tercom import TercomNormalizer

__all__ = ["TER", "TERSettings", "ter_from_sums"]


@dataclass(frozen=True)
class TERSettings(MetricSettings):
    """Settings of :class:`TER`: sacrebleu's, with the names every metric uses for case and
    punctuation (sacrebleu's ``case_sensitive`` and ``no_punct`` are accepted too)."""

    normalized: bool = setting(
        False, "Tercom normalisation: tokenise punctuation, unescape XML entities."
    )
    remove_punctuation: bool = setting(
        False,
        'Remove the punctuation marks .,?:;!"() (and CJK ones with asian_support); '
        "sacrebleu's no_punct.",
    )
    asian_support: bool = setting(
        False,
        "Split CJK characters (with normalized) / drop CJK punctuation (with remove_punctuation).",
    )
    lowercase: bool = setting(
        True,
        "Lowercase everything (TER's default, as sacrebleu's); false keeps case, "
        "sacrebleu's case_sensitive=True.",
    )

    peer_names: ClassVar[Mapping[str, PeerName]] = {
        "case_sensitive": PeerName("lowercase", "sacrebleu", inverted=True),
        "no_punct": PeerName("remove_punctuation", "sacrebleu"),
    }


def ter_from_sums(sums: np.ndarray) -> np.ndarray:
    """TER (0-100, unbounded above) from summed ``[..., 2]`` (edits, ref_length)."""
    sums = np.asarray(sums, dtype=np.float64)
    edits, ref_len = sums[..., 0], sums[..., 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(ref_len > 0, edits / np.where(ref_len > 0, ref_len, 1.0), (edits > 0) * 1.0)
    return 100 * rate


Tokens = Callable[[Sequence[Any]], list[Sequence[str]]]


def _token_counts(tokens: Tokens, texts: Sequence[Any]) -> np.ndarray:
    """``[len(t) for t in tokens(texts)]``, tokenising
    :data:`~evalab._kernel.PACK_CHUNK` segments at a time."""
    counts = [np.fromiter(map(len, tokens(chunk)), dtype=np.int64) for chunk in chunks(texts)]
    return np.concatenate(counts)


class TER(Metric):
    """TER as sacrebleu 2.x: same numbers, statistics and signature."""

    name = "ter"
    settings_class = TERSettings
    scale = 100.0
    higher_is_better = False
    #: an error rate exceeds its scale when the hypotheses insert more than the references hold
    bounds = (0.0, math.inf)
    releases_gil = _kernel.ed is not None  # the shift search runs in the kernel without the GIL
    #: the beam edit distance and the shift search fill hyp x ref cells of TER's own tokens
    #: (after normalisation and CJK splitting): about 5 000 x 5 000 words
    pair_work = PairWork("TER tokens", 25_000_000)
    settings: TERSettings

    def __init__(self, settings: TERSettings | None = None, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        s = self.settings
        self._normalizer = TercomNormalizer(
            s.normalized, s.remove_punctuation, s.asian_support, not s.lowercase
        )

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
        pack = self._normalizer.packer()
        streams = [pack([t or "" for t in stream], True) for stream in references]
        longest = np.max([ref.lengths for ref in streams], axis=0)
        hyps = [pack(hyps, False) for hyps in systems]
        for hyp in hyps:
            self.check_pair_work(hyp.lengths, longest)
        joined = Packed.concat(hyps)
        # sacrebleu keeps the first reference with the fewest edits; only the count matters
        edits = np.min([ter_edits_many(joined, ref.tiled(len(hyps))) for ref in streams], axis=0)
        ref_len = np.sum([ref.lengths for ref in streams], axis=0) / len(references)
        rows = np.column_stack([edits.astype(np.float64), np.tile(ref_len, len(hyps))])
        return np.split(rows, len(hyps))

    def _ref_tokens(self, stream: Sequence[str | None]) -> list[Sequence[str]]:
        # sacrebleu normalises references twice (once when caching them, once when
        # extracting their words), so we do the same
        return self._normalizer.twice([t or "" for t in stream])

    def pair_sizes(
        self, hypotheses: Sequence[str], references: Sequence[Sequence[str | None]]
    ) -> tuple[list[int], list[int]]:
        longest = np.max([_token_counts(self._ref_tokens, r) for r in references], axis=0)
        return _token_counts(self._normalizer.many, hypotheses).tolist(), longest.tolist()

    def scores_from_sums(self, sums: np.ndarray) -> np.ndarray:
        """TER (0-100) of summed stats ``[..., 2]`` (e.g. bootstrap resamples)."""
        return ter_from_sums(sums)

    def _score_components(self, sums: np.ndarray) -> tuple[dict[str, Any], str]:
        return {"name": "TER", "num_edits": int(sums[0]), "ref_length": float(sums[1])}, ""

    def _signature_fields(self, nrefs: NRefs) -> list[tuple[str, str]]:
        s = self.settings
        return [
            ("nrefs", str(nrefs) if nrefs is not None else "?"),
            ("case", "lc" if s.lowercase else "mixed"),
            ("tok", self._normalizer.name),
            ("norm", "yes" if s.normalized else "no"),
            ("punct", "no" if s.remove_punctuation else "yes"),
            ("asian", "yes" if s.asian_support else "no"),
        ]
