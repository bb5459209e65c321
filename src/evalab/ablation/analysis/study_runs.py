"""A study's stored runs as the analysis reads them: each row's finished values by seed
and metric, its missing runs, and the runs' per-example data (refused, with a typed reason,
where it does not reproduce the run's stored value).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from evalab.ablation.analysis.example_intervals import Comparison
from evalab.ablation.analysis.study_analysis import FailedRun
from evalab.ablation.plan.runs import Row, study_rows, study_run_key
from evalab.ablation.store import per_example
from evalab.ablation.store.example_refusals import (
    ExampleGap,
    ExampleMismatch,
    Refusal,
    UnreadableExamples,
)
from evalab.ablation.store.per_example import ExampleStats
from evalab.ablation.store.run_store import RunStore, StoredRun
from evalab.errors import InputError

if TYPE_CHECKING:
    from evalab.ablation.study.spec import Study


@dataclass(frozen=True)
class StudyRuns:
    """A study's stored runs, read by row, seed and metric."""

    study: Study
    stored: dict[str, StoredRun]
    examples: dict[str, dict[str, ExampleStats]]

    @cached_property
    def _row_keys(self) -> dict[str, tuple[Row, dict[int, str]]]:
        """Each study row's run keys by seed, by label (hashed once, not per row x metric)."""
        return {
            r.label: (r, {s: study_run_key(self.study, r, s) for s in self.study.seeds})
            for r in study_rows(self.study)
        }

    def keys(self, row: Row) -> dict[int, str]:
        """The run key of ``row`` for each of the study's seeds."""
        known = self._row_keys.get(row.label)
        if known is not None and known[0] == row:
            return known[1]
        return {s: study_run_key(self.study, row, s) for s in self.study.seeds}

    def by_seed(self, row: Row, metric: str) -> tuple[dict[int, float], list[FailedRun]]:
        """The row's finished values by seed, and its seeds without one."""
        vals: dict[int, float] = {}
        missing: list[FailedRun] = []
        for s, key in self.keys(row).items():
            run = self.stored.get(key)
            if run is not None and run.status == "ok" and metric in run.metrics:
                vals[s] = float(run.metrics[metric])
            elif run is not None and run.status == "failed":
                missing.append(FailedRun(s, "failed", run.error, run.attempts))
            else:
                missing.append(FailedRun(s, "pending", "", run.attempts if run else 0))
        return vals, missing

    def seed_values(self, config: dict[str, Any], metric: str) -> list[float]:
        return list(self.by_seed(Row("", "", "grid", config, {}, {}), metric)[0].values())

    def run_examples(self, row: Row, metric: str) -> dict[int, ExampleStats] | None:
        """The row's finished runs' per-example data by seed; None unless every one has it."""
        keys = self.keys(row)
        found = {
            s: self.examples.get(keys[s], {}).get(metric) for s in self.by_seed(row, metric)[0]
        }
        if not found or any(v is None for v in found.values()):
            return None
        return {s: v for s, v in found.items() if v is not None}

    @cached_property
    def example_metrics(self) -> frozenset[str]:
        """The metrics some stored run has per-example data for (read once, not per row)."""
        return frozenset(m for found in self.examples.values() for m in found)

    def example_gaps(
        self, row: Row, labels: dict[str, Row], comparisons: dict[str, list[Comparison]]
    ) -> list[ExampleGap]:
        """Why ``row`` has no test-set interval for a metric that other runs have per-example
        data for: it, or the row its Δ is taken to, lacks the data on some finished run
        (an interval over the other seeds would describe another mean than the one shown)."""
        why: list[ExampleGap] = []
        for m, cs in comparisons.items():
            if m not in self.example_metrics or any(c.label == row.label for c in cs):
                continue
            other = (
                labels[row.parent] if row.stage == "eval" else next(iter(labels.values()))
            )  # the base row
            for r in (
                [row] if row.config == self.study.base and row.stage != "eval" else [row, other]
            ):
                done, keys = self.by_seed(r, m)[0], self.keys(r)
                lacking = [s for s in done if m not in self.examples.get(keys[s], {})]
                if lacking:
                    why.append(
                        ExampleGap(m, row.label, r.label, r is not row, len(done), tuple(lacking))
                    )
        return why


def example_stats_of(study: Study, store: RunStore, run: StoredRun) -> dict[str, ExampleStats]:
    """The per-example statistics of one stored run, ``{metric: ExampleStats}`` ({} for a run
    without them): the one place the analysis reads per-example data."""
    return dict(per_example.load_example_stats(store, study, run))


def examples_of_runs(
    study: Study, store: RunStore, stored: dict[str, StoredRun], by_key: dict[str, Any]
) -> tuple[dict[str, dict[str, ExampleStats]], list[Refusal]]:
    """Per-example data of the study's finished runs, by run key, and the runs refused: data
    that does not reproduce the run's stored value would give intervals around another number."""
    out: dict[str, dict[str, ExampleStats]] = {}
    refused: list[Refusal] = []
    for key, run in stored.items():
        if key not in by_key or run.status != "ok":
            continue
        try:
            found = example_stats_of(study, store, run)
        except InputError as exc:  # a missing or unreadable examples file: no intervals for it
            refused.append(UnreadableExamples(run.rows[0] if run.rows else key, run.seed, str(exc)))
            continue
        for m, es in list(found.items()):
            value, stored_value = es.value(), run.metrics.get(m)
            if stored_value is None or not math.isclose(
                value, float(stored_value), rel_tol=1e-6, abs_tol=1e-9
            ):
                row = run.rows[0] if run.rows else key
                refused.append(ExampleMismatch(m, row, run.seed, value, stored_value))
                del found[m]
        out[key] = found
    return out, refused
