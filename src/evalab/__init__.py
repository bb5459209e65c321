"""evalab: evaluation metrics with signatures and statistics, and ablation studies.

One rule for scales: a :class:`Score` and every number it gives are on the metric's own
scale (BLEU, chrF and TER 0-100, the others 0-1), as the command line prints them.
:func:`score` alone maps to 0-1: it is the seed's single-example entry point
``score(metric_name, prediction, targets) -> float in [0, 1]``.

>>> import evalab
>>> s = evalab.corpus_score("bleu", ["The cat sat on the mat."], [["The cat sat on a mat."]])
>>> round(float(s), 2), s.scale
(48.89, 100.0)
>>> evalab.score("bleu", "The cat sat on the mat.", ["The cat sat on a mat."]) < 1
True
>>> m = evalab.metric("chrf")
>>> m.update(["a cat"], [["the cat"]]); m.update(["a dog"], [["the dog"]])
>>> m.compute().score == evalab.corpus_score("chrf", ["a cat", "a dog"], [["the cat", "the dog"]]).score
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalab._lazy import lazy_exports
from evalab._version import __version__
from evalab.errors import EvalabError, InputError, MissingExtraError, SettingsError

if TYPE_CHECKING:
    from evalab.metrics.base import Metric, Score
    from evalab.metrics.registry import METRICS, available_metrics, metric

#: names given from the metrics layer, imported on first use: numpy and the metrics cost
#: ten times a bare interpreter's start, which `import evalab` for an error class or the
#: version (and `evalab --version`) need not pay
_FROM_METRICS = {
    "metrics.base": ("Metric", "Score"),
    "metrics.registry": ("METRICS", "available_metrics", "metric"),
}

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
    "corpus_score",
    "metric",
    "score",
]


def corpus_score(
    metric_name: str,
    hypotheses: Sequence[str],
    references: Sequence[Sequence[str]],
    **settings: Any,
) -> Score:
    """The corpus :class:`Score` of ``hypotheses`` against reference streams, on the metric's
    own scale (what ``evalab score`` prints): ``metric(metric_name, **settings).corpus_score(...)``.
    """
    from evalab.metrics.registry import metric

    return metric(metric_name, **settings).corpus_score(hypotheses, references)


__getattr__ = lazy_exports(__name__, _FROM_METRICS)


def score(metric_name: str, prediction: str, targets: Sequence[str]) -> float:
    """Score one prediction against its targets: a float in [0, 1] (the seed's entry point).

    **Scale**: this is the one function on a 0-1 scale. Every other number evalab gives
    (the command line, :func:`metric`, :class:`Score`, :func:`corpus_score`) is on the
    metric's own scale: BLEU, chrF and TER 0-100, so ``evalab score`` on the command line
    prints BLEU 48.89 where ``evalab.score("bleu", ...)`` gives 0.4889.

    The dispatch contract of seed 002: ``metric_name`` is a registry name or one of the
    seed's names (``exact_match``, ``f1``, ``accuracy``, ``rouge_l``, ``bleu_4``), and the
    result is the best score over the targets taken one at a time
    (``max(metric(pred, t) for t in targets)``; for BLEU this differs from multi-reference
    clipping, which ``evalab.metric("bleu")`` offers). For error rates
    (``higher_is_better`` false: TER, WER, CER) the best is the minimum, and it is not
    clamped: a WER above 1 (more insertions than reference words) is kept. Metrics on a
    0-100 scale are divided by 100. Unknown names raise :class:`ValueError` listing the
    known names.

    >>> score("exact_match", "Paris", ["paris", "Paris"])
    1.0
    >>> score("wer", "the cat sat on on the mat", ["a cat sat on the mat", "the cat sat on the mat"])
    0.16666666666666666

    >>> score("bleu_4", "the cat sat on the mat", ["a cat sat on a mat", "the cat sat on the mat"])
    1.0
    """
    from evalab.metrics.registry import METRICS, SCORE_ALIASES, available_metrics, metric

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


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
