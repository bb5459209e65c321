"""Meta-evaluation: which metric agrees with human judgements, and how sure we are.

* :mod:`~evalab.metaeval.human`: human segment scores (MQM average-score files, TSV);
* :mod:`~evalab.metaeval.scores`: metric system and segment scores (evalab metrics or a
  precomputed file), recomputable on bootstrap resamples of segments;
* :mod:`~evalab.metaeval.correlation`, :mod:`~evalab.metaeval.grouped`,
  :mod:`~evalab.metaeval.ties`, :mod:`~evalab.metaeval.flat_ties`: Pearson, Kendall τ_b (O(n log n)), pairwise accuracy and
  acc_eq with tie calibration, with no grouping and grouped by item;
* :mod:`~evalab.metaeval.evaluate`: every statistic with a bootstrap interval, and rank
  clusters from :mod:`~evalab.metaeval.significance`;
* the text forms live in the report layer: :mod:`evalab.report.metaeval_table` (table, JSON,
  Markdown, LaTeX) and :mod:`evalab.report.metaeval_html` (a self-contained HTML page).
"""

from __future__ import annotations

from evalab.metaeval.correlation import kendall_tau_b, pairwise_accuracy, pearson
from evalab.metaeval.evaluate import Estimate, MetaEvalResult, MetaEvalSettings, meta_evaluate
from evalab.metaeval.flat_ties import acc_eq_flat
from evalab.metaeval.ties import acc_eq_grouped, group_pairs

__all__ = [
    "Estimate",
    "MetaEvalResult",
    "MetaEvalSettings",
    "acc_eq_flat",
    "acc_eq_grouped",
    "group_pairs",
    "kendall_tau_b",
    "meta_evaluate",
    "pairwise_accuracy",
    "pearson",
]
