"""Name -> metric class, imported lazily so heavy backends load only when used.

Registry names follow the peers (sacrebleu, rouge-score, bert-score, torchmetrics).
``SCORE_ALIASES`` maps the dispatch names of seed 002 (``rouge_l``, ``bleu_4``) used by
:func:`evalab.score`.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from evalab.errors import SettingsError
from evalab.metrics.base import Metric

#: metric name -> "module:ClassName" (lazy: importing evalab never imports torch)
METRICS: dict[str, str] = {
    "exact_match": "evalab.metrics.overlap:ExactMatch",
    "f1": "evalab.metrics.overlap:TokenF1",
    "accuracy": "evalab.metrics.overlap:Accuracy",
    "rouge1": "evalab.metrics.rouge:Rouge1",
    "rouge2": "evalab.metrics.rouge:Rouge2",
    "rougeL": "evalab.metrics.rouge:RougeL",
    "rougeLsum": "evalab.metrics.rouge:RougeLsum",
    "bleu": "evalab.metrics.bleu:BLEU",
    "chrf": "evalab.metrics.chrf:CHRF",
    "chrf++": "evalab.metrics.chrf:CHRFPlusPlus",
    "ter": "evalab.metrics.ter:TER",
    "wer": "evalab.metrics.wer:WER",
    "cer": "evalab.metrics.wer:CER",
    "mer": "evalab.metrics.wer:MER",
    "wil": "evalab.metrics.wer:WIL",
    "wip": "evalab.metrics.wer:WIP",
    "bertscore": "evalab.metrics.semantic:BERTScore",
    "comet": "evalab.metrics.comet:Comet",
    "metricx": "evalab.metrics.metricx:MetricX",
    "cross_entropy": "evalab.metrics.loss:CrossEntropy",
    "perplexity": "evalab.metrics.loss:Perplexity",
}

#: names accepted by :func:`evalab.score` in addition to the registry names (seed 002)
SCORE_ALIASES: dict[str, tuple[str, dict[str, Any]]] = {
    "rouge_l": ("rougeL", {}),
    # seed 002: BLEU-4 with add-one smoothing (Lin & Och 2004 = Chen & Cherry method 2,
    # sacrebleu's add-k) on the lesson's tokenizer (lowercase \w+ runs)
    "bleu_4": (
        "bleu",
        {"max_ngram_order": 4, "smooth_method": "add-k", "smooth_value": 1.0, "tokenize": "words"},
    ),
}


def available_metrics() -> list[str]:
    """Registry names whose implementation module exists in this installation."""
    out = []
    for name, target in METRICS.items():
        module = target.split(":")[0]
        if importlib.util.find_spec(module) is not None:
            out.append(name)
    return out


def metric_class(name: str) -> type[Metric]:
    """The :class:`Metric` subclass registered under ``name``."""
    if name not in METRICS:
        raise SettingsError(
            f"unknown metric {name!r}; known metrics: {', '.join(available_metrics())}"
        )
    module_name, cls_name = METRICS[name].split(":")
    module = importlib.import_module(module_name)
    cls: type[Metric] = getattr(module, cls_name)
    return cls


def metric(name: str, **settings: Any) -> Metric:
    """Build the metric ``name`` with ``settings`` (see ``evalab metrics`` for the list)."""
    return metric_class(name)(**settings)
