"""evalab: evaluation metrics with signatures and statistics, and ablation studies.

>>> import evalab
>>> evalab.score("exact_match", "Paris", ["paris", "Paris"])
1.0
"""

from __future__ import annotations

from collections.abc import Sequence

from evalab._version import __version__
from evalab.errors import EvalabError, InputError, MissingExtraError, SettingsError
from evalab.metrics.base import Metric, Score
from evalab.metrics.registry import METRICS, SCORE_ALIASES, available_metrics, metric

__all__ = [
    "METRICS",
    "EvalabError",
    "InputError",
    "Metric",
    "MissingExtraError",
    "Score",
    "SettingsError",
    "__version__",
    "available_metrics",
    "metric",
    "score",
]


def score(metric_name: str, prediction: str, targets: Sequence[str]) -> float:
    """Score one prediction against its targets; a float in [0, 1] for higher-is-better metrics.

    The dispatch contract of seed 002: ``metric_name`` is a registry name or one of the
    seed's aliases (``rouge_l``, ``bleu_4``), and the result is the best score over the
    targets taken one at a time (``max(metric(pred, t) for t in targets)``; for BLEU this
    differs from multi-reference clipping, which ``evalab.metric("bleu")`` offers).
    For error rates (``higher_is_better`` false: TER, WER, CER) the best is the minimum,
    and it is not clamped: a WER above 1 (more insertions than reference words) is kept.
    Metrics on a 0-100 scale are divided by 100. Unknown names raise :class:`ValueError`
    listing the known names.

    >>> score("wer", "the cat sat on on the mat", ["a cat sat on the mat", "the cat sat on the mat"])
    0.16666666666666666

    >>> score("bleu_4", "the cat sat on the mat", ["a cat sat on a mat", "the cat sat on the mat"])
    1.0
    """
    if isinstance(targets, str):
        raise InputError("score: targets must be a list of strings, e.g. ['Paris']")
    if not targets:
        raise InputError("score: targets is empty; give at least one target string")
    name, settings = SCORE_ALIASES.get(metric_name, (metric_name, {}))
    if name not in METRICS:
        known = sorted(set(available_metrics()) | set(SCORE_ALIASES))
        raise SettingsError(f"unknown metric_name {metric_name!r}; known names: {', '.join(known)}")
    m = metric(name, **settings)
    values = [float(m.sentence_score(prediction, [t]).score) for t in targets]
    if not m.higher_is_better:
        return min(values) / m.scale
    best = max(values)
    # exp(log(100)) is 100.00000000000004: BLEU (like sacrebleu) can exceed its scale by
    # an ulp, and the dispatch contract promises [0, 1]
    return min(1.0, max(0.0, best / m.scale))
