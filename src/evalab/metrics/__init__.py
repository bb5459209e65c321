"""Metrics: one module per family, all following :class:`evalab.metrics.base.Metric`."""

from evalab.metrics.base import Metric, MetricSettings, Score, Stats
from evalab.metrics.registry import METRICS, available_metrics, metric, metric_class

__all__ = [
    "METRICS",
    "Metric",
    "MetricSettings",
    "Score",
    "Stats",
    "available_metrics",
    "metric",
    "metric_class",
]
