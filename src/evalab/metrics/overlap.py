"""Exact match, token F1 and accuracy: the per-example metrics of seed 002 and SQuAD.

* ``exact_match``: 1 if the prediction equals any target after normalisation, else 0.
  Default normalisation ``strip`` is the seed's ``pred.strip() == t.strip()``;
  ``tokenize='squad'`` is the SQuAD v1.1 script's ``normalize_answer`` comparison.
* ``f1``: token F1 of the multisets of prediction and target tokens (precision =
  overlap / prediction tokens, recall = overlap / target tokens), the best over the
  targets (as SQuAD's ``metric_max_over_ground_truths``). Default tokenizer ``words``
  (the seed's ``re.findall(r"\\w+", text.lower())``); ``tokenize='squad'`` is SQuAD
  v1.1's ``f1_score``.
  Empty token lists (the seed asks for an explicit rule): when prediction and target are
  both empty, P = R = F1 = 1 (they agree, as exact match says); when only one is empty,
  P = R = F1 = 0. This is the SQuAD v2.0 script's rule; the v1.1 script returns 0 for
  both-empty (it never has empty gold answers).
* ``accuracy``: exact match of a predicted label against the gold label(s) after
  ``lower`` normalisation (strip and lowercase). With several targets any one counts.

The corpus score is the mean over segments: stats rows hold the per-segment value(s) and a
count column, so they are additive like every metric's rows. Scale 0-1.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from evalab.errors import SettingsError
from evalab.metrics.base import Metric, MetricSettings, column_ratio, nrefs_field, setting
from evalab.metrics.stats_value import NRefs
from evalab.text.tokenizers import available_tokenizers, check_tokenizer_name, get_tokenizer

__all__ = [
    "Accuracy",
    "AccuracySettings",
    "ExactMatch",
    "ExactMatchSettings",
    "TokenF1",
    "TokenF1Settings",
    "token_f1",
]

#: string normalisations for exact match besides tokenizer names
_STRING_NORMS = ("none", "strip", "lower")


def _normalizer(name: str) -> Callable[[str], Hashable]:
    """A function text -> comparable value for a normalisation or tokenizer name."""
    if name == "none":
        return lambda text: text
    if name == "strip":
        return str.strip
    if name == "lower":
        return lambda text: text.strip().lower()
    tok = get_tokenizer(name)
    return lambda text: tuple(tok(text))


def _check_norm(name: str) -> None:
    if name not in _STRING_NORMS and name not in available_tokenizers():
        raise SettingsError(
            f"unknown normalisation {name!r}; expected one of {', '.join(_STRING_NORMS)} or a "
            f"tokenizer name ({', '.join(available_tokenizers())})"
        )


def token_f1(prediction: list[str], target: list[str]) -> tuple[float, float, float]:
    """Precision, recall and F1 of two token lists (multiset overlap).

    Both empty: (1, 1, 1); exactly one empty: (0, 0, 0).

    >>> token_f1(["a", "cat", "a"], ["a", "cat", "sat"])
    (0.6666666666666666, 0.6666666666666666, 0.6666666666666666)
    """
    if not prediction or not target:
        v = 1.0 if not prediction and not target else 0.0
        return v, v, v
    common = Counter(prediction) & Counter(target)
    same = sum(common.values())
    if same == 0:
        return 0.0, 0.0, 0.0
    p = same / len(prediction)
    r = same / len(target)
    # SQuAD v1.1 f1_score: (2 * precision * recall) / (precision + recall)
    return p, r, (2 * p * r) / (p + r)


class _MeanMetric(Metric):
    """A metric whose corpus score is the mean of the first stats column (last = count)."""

    scale: ClassVar[float] = 1.0
    higher_is_better: ClassVar[bool] = True

    def scores_from_sums(self, sums: np.ndarray) -> np.ndarray:
        return column_ratio(sums, 0, -1)

    def _means(self, sums: np.ndarray) -> list[float]:
        count = float(sums[-1])
        if count <= 0:
            return [float("nan")] * (len(sums) - 1)
        return [float(x) / count for x in sums[:-1]]


@dataclass(frozen=True)
class ExactMatchSettings(MetricSettings):
    """Exact-match settings."""

    tokenize: str = setting(
        "strip",
        "what is compared: 'strip' (seed: the stripped strings), 'none', 'lower' (strip + "
        "lowercase), or a tokenizer name whose tokens are ('squad' = SQuAD v1.1 normalize_answer)",
    )

    def validate(self) -> None:
        super().validate()
        _check_norm(self.tokenize)


class ExactMatch(_MeanMetric):
    """Exact match: 1 if the normalised prediction equals any normalised target."""

    name = "exact_match"
    settings_class: ClassVar[type[MetricSettings]] = ExactMatchSettings
    test_setting_values: ClassVar[Mapping[str, Sequence[Any]]] = {
        "tokenize": ("none", "lower", "squad")
    }
    settings: ExactMatchSettings
    stat_names: ClassVar[tuple[str, ...]] = ("match", "count")

    def _segment_stats(self, hypotheses: list[str], references: list[list[str]]) -> np.ndarray:
        norm = _normalizer(self.settings.tokenize)
        rows = np.ones((len(hypotheses), 2), dtype=np.float64)
        ref_norm = [[norm(r) for r in stream] for stream in references]
        for i, h in enumerate(hypotheses):
            hn = norm(h)
            rows[i, 0] = float(any(stream[i] == hn for stream in ref_norm))
        return rows

    def _score_components(self, sums: np.ndarray) -> tuple[dict[str, Any], str]:
        counts = {"matches": float(sums[0]), "count": float(sums[1])}
        return counts, f"{int(sums[0])}/{int(sums[1])}"

    def _signature_fields(self, nrefs: NRefs) -> list[tuple[str, str]]:
        return [
            nrefs_field(nrefs),
            # the signature keeps its 0.1 key: a stored signature still reads the same
            ("norm", self.settings.tokenize),
        ]


@dataclass(frozen=True)
class AccuracySettings(MetricSettings):
    """Accuracy settings."""

    tokenize: str = setting(
        "lower",
        "what is compared: 'lower' (the labels stripped and lowercased), 'strip', 'none', or "
        "a tokenizer name",
    )

    def validate(self) -> None:
        super().validate()
        _check_norm(self.tokenize)


class Accuracy(ExactMatch):
    """Accuracy: the predicted label equals the gold label (strip + lowercase by default)."""

    name = "accuracy"
    settings_class = AccuracySettings
    test_setting_values: ClassVar[Mapping[str, Sequence[Any]]] = {
        "tokenize": ("none", "strip", "squad")
    }
    # its settings are not ExactMatchSettings (other normalisations): the attribute is
    # narrowed to a sibling type, which mypy cannot express without a settings generic
    settings: AccuracySettings  # type: ignore[assignment]
    stat_names: ClassVar[tuple[str, ...]] = ("correct", "count")

    def _score_components(self, sums: np.ndarray) -> tuple[dict[str, Any], str]:
        counts = {"correct": float(sums[0]), "count": float(sums[1])}
        return counts, f"{int(sums[0])}/{int(sums[1])}"


@dataclass(frozen=True)
class TokenF1Settings(MetricSettings):
    """Token-F1 settings."""

    tokenize: str = setting(
        "words",
        "tokenizer: 'words' (\\w+ after lowercasing), 'squad' (SQuAD v1.1), "
        "'whitespace', or any registered tokenizer",
    )

    def validate(self) -> None:
        super().validate()
        check_tokenizer_name(self.tokenize)


class TokenF1(_MeanMetric):
    """Token F1: multiset overlap of tokens, best target per segment, mean over segments."""

    name = "f1"
    settings_class = TokenF1Settings
    test_setting_values: ClassVar[Mapping[str, Sequence[Any]]] = {
        "tokenize": ("whitespace", "squad")
    }
    settings: TokenF1Settings
    stat_names: ClassVar[tuple[str, ...]] = ("f1", "precision", "recall", "count")

    def _segment_stats(self, hypotheses: list[str], references: list[list[str]]) -> np.ndarray:
        tok = get_tokenizer(self.settings.tokenize)
        rows = np.ones((len(hypotheses), 4), dtype=np.float64)
        for i, h in enumerate(hypotheses):
            h_tokens = tok(h)
            best = None
            for stream in references:
                p, r, f = token_f1(h_tokens, tok(stream[i]))
                if best is None or f > best[0]:  # first maximum wins, as max() does
                    best = (f, p, r)
            rows[i, :3] = best
        return rows

    def _score_components(self, sums: np.ndarray) -> tuple[dict[str, Any], str]:
        f, p, r = self._means(sums)
        return {"precision": p, "recall": r, "fmeasure": f}, f"P = {p:.4f} R = {r:.4f}"

    def _signature_fields(self, nrefs: NRefs) -> list[tuple[str, str]]:
        return [
            nrefs_field(nrefs),
            ("tok", self.settings.tokenize),
        ]
