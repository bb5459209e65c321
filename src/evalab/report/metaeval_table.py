"""Text forms of a meta-evaluation: the long table, one row per (level, statistic, metric),
and the wide one, metrics x statistics, as papers print it.

The terminal table, Markdown and LaTeX (through ``report``'s one writer per format), the
HTML page (:mod:`evalab.report.metaeval_html`) and JSON are all built from
:func:`table_rows`, so they show the same cells with the same rounding. The wide layout
(:func:`wide_rows`, mt-metrics-eval's tables: a row per metric, a column per statistic)
shows each value with its rank cluster after it, the best of each column in bold.
"""

from __future__ import annotations

import math
from typing import Any

from evalab.metaeval.evaluate import Estimate, MetaEvalResult
from evalab.metaeval.statistics import NAMES, SOFT_ACCURACY
from evalab.report.table import Interval, Number, TableCell
from evalab.report.wide import Cell, WideMetric, WideTable, wide_table

__all__ = ["footer", "header", "table_rows", "to_dict", "wide_notes", "wide_rows"]


def header(result: MetaEvalResult) -> list[str]:
    """Column names of :func:`table_rows`."""
    pct = f"{result.settings.confidence * 100:g}%"
    return ["level", "statistic", "metric", "value", f"{pct} CI", "rank", "p vs best", "tie ε"]


def _cells(level: str, stat: str, metric: str, e: Estimate, d: int) -> list[TableCell]:
    return [
        level,
        NAMES[(level, stat)].label,
        metric,
        Number(e.value, d),
        Interval(e.low, e.high, d),
        Number(e.rank, 0),
        Number(e.p_vs_best, 3, p=True),
        Number(e.threshold, 2) if e.threshold is not None else "",
    ]


def table_rows(result: MetaEvalResult, decimals: int = 4) -> list[list[TableCell]]:
    """Every estimate as table cells, metrics of a statistic in rank order."""
    rows = []
    for (level, stat), per_metric in result.estimates.items():
        ordered = sorted(
            per_metric.items(),
            key=lambda kv: (
                kv[1].rank is None,
                kv[1].rank or 0,
                -kv[1].value if math.isfinite(kv[1].value) else 0,
            ),
        )
        rows += [_cells(level, stat, name, e, decimals) for name, e in ordered]
    return rows


def wide_rows(result: MetaEvalResult, decimals: int = 4) -> WideTable:
    """Metrics (in the order given) x statistics (in the order computed): each value with its
    rank cluster as ``(k)`` after it, the best value of each column in bold (every statistic
    is higher-is-better)."""
    keys = list(result.estimates)
    cells = {
        (name, NAMES[key].short): Cell(e.value, None, "" if e.rank is None else f" ({e.rank})")
        for key in keys
        for name, e in result.estimates[key].items()
    }
    columns = [WideMetric(NAMES[key].short, True, decimals) for key in keys]
    return wide_table([m.name for m in result.metrics], columns, cells, first="metric")


def wide_notes(result: MetaEvalResult) -> list[str]:
    """What the wide table's column names, ``(k)`` and bold say."""
    names = "; ".join(f"{NAMES[k].short}: {k[0]} level, {NAMES[k].label}" for k in result.estimates)
    return [
        f"Columns: {names}.",
        "(k): the metric's rank cluster on that statistic; bold: the best value of each column "
        "(every statistic is higher-is-better, ↑).",
    ]


def footer(result: MetaEvalResult) -> list[str]:
    """Signatures, settings and notes printed under the table."""
    lines = [
        f"{m.name}: {m.signature}|system:{m.system_mode}"
        + (f" (segment scores: {m.segment_signature})" if m.segment_signature else "")
        for m in result.metrics
    ]
    s = result.settings
    lines.append(
        f"meta-eval: systems:{len(result.systems)}|segments:{result.n_segments}|"
        f"rated:{result.rated_segments}|{s.signature}"
    )
    lines.append(
        f"rank: cluster of metrics not significantly worse (p >= {s.alpha:g}) than a better metric of "
        "the cluster; system level: paired bootstrap, segment level: permutation (PERM-BOTH; "
        "acc_eq with no grouping: paired bootstrap)"
    )
    return lines + _soft_lines(result) + result.notes


def _soft_lines(result: MetaEvalResult) -> list[str]:
    """How soft pairwise accuracy was computed, or why it was not."""
    soft = result.soft
    label = NAMES[("system", SOFT_ACCURACY)].label
    if soft is None:
        if not any(m.segment is not None for m in result.metrics):
            return [f"{label}: not computed: it needs segment scores, and no metric has them"]
        return [f"{label}: not computed: no segment is rated for every system"]
    return [
        f"{label} (WMT24; mt-metrics-eval's PairwiseConfidenceError): 1 - mean over system "
        f"pairs of |p_human - p_metric|, the p-values of paired permutation tests of summed "
        f"segment scores ({soft.n_permutations} permutations, seed {soft.seed}) on the "
        f"{soft.columns.size} segments rated for every system"
    ]


def to_dict(result: MetaEvalResult) -> dict[str, Any]:
    """The whole result as JSON-ready data (NaN left for the JSON writer to null)."""
    return {
        "systems": result.systems,
        "human_system_scores": dict(
            zip(result.systems, map(float, result.human_system), strict=True)
        ),
        "metrics": {
            m.name: {
                "signature": m.signature,
                "system_mode": m.system_mode,
                "system_scores": dict(zip(result.systems, map(float, m.system), strict=True)),
            }
            for m in result.metrics
        },
        "statistics": [
            {
                "level": level,
                "statistic": stat,
                "label": NAMES[(level, stat)].label,
                "metric": name,
                **e.to_dict(),
            }
            for (level, stat), per_metric in result.estimates.items()
            for name, e in per_metric.items()
        ],
        "settings": {**result.settings.__dict__},
        "soft_pairwise": None
        if result.soft is None
        else {
            "segments": int(result.soft.columns.size),
            "permutations": result.soft.n_permutations,
            "seed": result.soft.seed,
        },
        "rated_segments": result.rated_segments,
        "notes": result.notes,
    }
