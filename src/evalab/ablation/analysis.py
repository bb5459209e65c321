"""Analysis of a study's stored runs: per-row statistics over seeds, deltas, effects.

Honest by construction: every mean comes with its spread and a t-based CI over seeds,
every delta to the base with a Welch CI and two p-values (Welch's t-test; a permutation
test that is exact when the relabelings can be enumerated), a flag when the seeds are too
few to tell the delta from seed noise (with the seeds a power analysis asks for), and runs
that failed or never ran are counted and listed, never silently dropped.
Seeds are treated as independent samples per row (unpaired tests): the same seed number in
two configurations does not make the two runs a matched pair.

The exception is a row of ``stage = "eval"`` (suppressed at evaluation): its run for a seed
evaluates the very model its trained row (``from``) produced for that seed, so its Δ is to
that trained row and paired by seed (paired t-test and CI, sign-flip permutation test,
power of the paired test), over the seeds both rows finished. A study that declares
``paired_seeds = true`` (its seeds share data order and initialization across rows) pairs
every row with the base the same way.

Where the runs have per-example data (``per_example.py``), each row also gets its value's
interval over test examples and Δ's intervals over test examples and over seeds and
examples, with the two-level p-value (``stats/two_level.py``); declared ``bounds`` clip
every interval, ``min_effect`` turns a Δ whose intervals lie inside it into "negligible"
(no seed count asked), and ``holm`` adjusts the rows' p-values per metric.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evalab.ablation import per_example
from evalab.ablation.display import Display
from evalab.ablation.example_intervals import Comparison, example_fields
from evalab.ablation.findings import (
    ComponentView,
    Conditions,
    HolmFamily,
    MetricDefinition,
    Side,
    component_pairs,
    conditions,
    definitions,
    holm_families,
    reading,
)
from evalab.ablation.per_example import ExampleStats
from evalab.ablation.plan import Row, plan_runs, study_rows, study_run_key
from evalab.ablation.spec import own_bounds
from evalab.ablation.store import RunStore, StoredRun, stale_runs
from evalab.errors import InputError, SettingsError
from evalab.stats.effects import Contrast, factorial_effects
from evalab.stats.resampling import check_n_samples
from evalab.stats.seed_stats import aso as aso_test
from evalab.stats.seed_stats import (
    mean_ci,
    paired_t,
    pairs_needed,
    permutation_test,
    pooled_sd,
    seeds_needed,
    sign_flip_test,
    welch,
)
from evalab.stats.two_level import Bounds, clip, delta_bounds

if TYPE_CHECKING:
    from evalab.ablation.spec import Study

#: why a number is None (``MetricStats.absent`` maps a field group to one of these)
ABSENT = ("no_runs", "one_seed", "no_seed_spread", "no_common_seeds")


@dataclass(frozen=True)
class Delta:
    """A row's second Δ: an eval row's Δ to the base, when it evaluates another trained row."""

    vs: str
    delta: float | None
    low: float | None
    high: float | None
    p_t: float | None
    p_perm: float | None
    paired: bool
    absent: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MetricStats:
    """One metric of one row, over its finished seeds."""

    metric: str
    n: int
    values: list[float]
    mean: float
    std: float
    ci_low: float | None
    ci_high: float | None
    delta: float | None = (
        None  # row - base (eval rows: row - its trained row; None for the base row)
    )
    delta_low: float | None = None
    delta_high: float | None = None
    p_welch: float | None = None
    p_perm: float | None = None
    perm_exact: bool | None = None
    seeds_needed: int | None = None
    too_few_seeds: bool = False
    aso_eps: float | None = None  # eps_min of "this row is better than the base"
    direction: str = ""  # "better" | "worse" | "" (delta sign under higher_is_better)
    paired: bool = False  # Δ paired by seed (eval rows, or a study with paired_seeds = true)
    vs: str = ""  # the row Δ is taken to ("base", or an eval row's trained row)
    # Test-set uncertainty, where the runs have per-example data (ablation/per_example.py);
    # None where they do not. delta_low/delta_high above stay the interval over seeds.
    n_examples: int | None = None
    mean_examples_low: float | None = None  # the row's value, CI over test examples (seeds pooled)
    mean_examples_high: float | None = None
    examples_low: float | None = None  # Δ, CI over test examples (paired bootstrap, seeds pooled)
    examples_high: float | None = None
    both_low: float | None = (
        None  # Δ, CI over seeds and examples (seed variance + test-set variance)
    )
    both_high: float | None = None
    p_both: float | None = None  # two-level resampling p-value of Δ ≠ 0 (the row's p when present)
    p_holm: float | None = None  # Holm-adjusted p across the rows compared (when requested)
    negligible: bool = False  # |Δ| and its CI inside the study's min_effect: no seed count asked
    # every seed of both rows gave the same value (paired: the same difference): the t-test is
    # 0/0, so p_welch and the CI over seeds are NaN (shown '–'), not the degenerate limit
    no_seed_spread: bool = False
    # why a CI or p is None: "mean_ci", "delta_ci", "p_t", "p_perm" -> a code of ABSENT
    absent: dict[str, str] = field(default_factory=dict)
    to_base: Delta | None = None  # an eval row of another trained row: its Δ to the base as well


@dataclass(frozen=True)
class FailedRun:
    """A planned run without a usable result."""

    seed: int
    status: str  # "failed" | "pending"
    error: str
    attempts: int


@dataclass(frozen=True)
class RowAnalysis:
    """One row of the report."""

    label: str
    description: str
    kind: str
    changes: dict[str, Any]
    planned: int
    ok: int
    metrics: dict[str, MetricStats]
    missing: list[FailedRun]
    reference: dict[str, float | None] = field(default_factory=dict)
    stage: str = "train"  # "eval": suppressed at evaluation of row ``parent``'s trained models
    parent: str = ""
    config: dict[str, Any] = field(
        default_factory=dict
    )  # the configuration it ran with ([evaluation] defaults included)
    aliases: tuple[
        str, ...
    ] = ()  # the other rows that are the same runs (a grid cell equal to a variant or the base)

    @property
    def labels(self) -> tuple[str, ...]:
        """Every label of the row: its own, then those of the rows with the same runs."""
        return (self.label, *self.aliases)

    @property
    def failed(self) -> int:
        return sum(m.status == "failed" for m in self.missing)

    @property
    def pending(self) -> int:
        return sum(m.status == "pending" for m in self.missing)


@dataclass(frozen=True)
class StudyAnalysis:
    """Everything the renderers show. ``to_dict()`` is the JSON form."""

    study: str
    description: str
    path: str
    db_path: str
    code_version: str
    metrics: list[str]
    primary: str
    higher_is_better: dict[str, bool]
    seeds: list[int]
    rows: list[RowAnalysis]
    contrasts: dict[str, list[Contrast]]
    reference_columns: list[str]
    grid: dict[str, list[Any]]
    settings: dict[str, Any]
    notes: list[str]
    display: Display = field(
        default_factory=Display
    )  # the study's [display]: how config columns are shown
    holm: list[HolmFamily] = field(default_factory=list)  # the families p(Holm) was adjusted over
    conditions: Conditions | None = None  # what no row changes
    definitions: list[MetricDefinition] = field(default_factory=list)
    components: list[ComponentView] = field(default_factory=list)

    @property
    def base(self) -> RowAnalysis:
        return self.rows[0]

    def row(self, label: str) -> RowAnalysis:
        """The row with this label, or whose runs a row of this label shares (KeyError if absent)."""
        for r in self.rows:
            if label in r.labels:
                return r
        raise KeyError(label)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (NaN stays NaN; the JSON renderer turns it into null)."""
        d = asdict(self)
        d["contrasts"] = {m: [c.to_dict() for c in cs] for m, cs in self.contrasts.items()}
        for row, r in zip(d["rows"], self.rows, strict=True):
            row["failed"], row["pending"] = r.failed, r.pending
        return d


def analyze(
    study: Study,
    db_path: str | Path | None = None,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    confidence: float = 0.95,
    aso: bool = False,
    seed: int = 0,
    permutations: int = 10_000,
    resamples: int = 1000,
    holm: bool = False,
) -> StudyAnalysis:
    """Analyze the stored runs of ``study`` (see the module docstring for what is computed).

    ``resamples``: bootstrap resamples of the test examples (rows with per-example data);
    ``holm``: Holm-adjust the rows' p-values per metric (`evalab ablate report --holm`).
    """
    if not 0 < alpha < 1 or not 0 < power < 1 or not 0 < confidence < 1:
        raise SettingsError(
            f"alpha, power and confidence must be in (0, 1); got {alpha}, {power}, {confidence}"
        )
    check_n_samples(resamples, "resamples")

    plan = plan_runs(study)
    by_key = {r.key: r for r in plan}
    with RunStore(db_path, create=False) as store:
        stored = store.runs(study.name)
        for key in stale_runs(study, stored.values()):  # a file it read changed: not used
            del stored[key]
        db = str(store.path)
        examples, refused = _examples_of_runs(study, store, stored, by_key)
    runs = _Runs(study, stored, examples)
    every = study_rows(study)
    labels = {r.label: r for r in every}
    rows, aliases = _distinct_rows(study, every)
    opts = {
        "alpha": alpha,
        "power": power,
        "confidence": confidence,
        "aso": aso,
        "seed": seed,
        "permutations": permutations,
    }
    stats: dict[str, dict[str, MetricStats]] = {}
    missing: dict[str, list[FailedRun]] = {}
    comparisons: dict[str, list[Comparison]] = {m: [] for m in study.metrics}
    for row in rows:
        stats[row.label], missing[row.label] = _row_stats(runs, row, labels, comparisons, opts)
        refused += [r for r in runs.example_gaps(row, labels, comparisons) if r not in refused]
    families: list[HolmFamily] = []
    for m in study.metrics:
        fields, why = example_fields(
            comparisons[m],
            confidence=confidence,
            resamples=resamples,
            seed=seed,
            bounds=_bounds(study, m),
        )
        refused += [f"{m}, row {w}" for w in why]
        families += _finish_metric(
            study, m, stats, fields, holm=holm, stages={r.label: r.stage for r in rows}
        )
    out_rows: list[RowAnalysis] = []
    for row in rows:
        names = (row.label, *aliases[row.label])
        planned = sum(1 for r in plan if row.label in r.rows)
        reference = {
            col: next((study.reference[col][x] for x in names if x in study.reference[col]), None)
            for col in study.reference
        }
        out_rows.append(
            RowAnalysis(
                row.label,
                row.description,
                row.kind,
                row.changes,
                planned,
                planned - len(missing[row.label]),
                stats[row.label],
                missing[row.label],
                reference,
                row.stage,
                row.parent,
                {**study.evaluation, **row.config},
                aliases[row.label],
            )
        )
    notes = _notes(study, out_rows, alpha, power, confidence, aso, permutations, by_key, stored)
    notes += _test_set_notes(study, out_rows, confidence, resamples, refused, holm=holm)
    held = conditions(
        study,
        [r.config for r in every if r.stage == "train"],
        [r.changes for r in every if r.stage == "eval"],
    )
    return StudyAnalysis(
        study=study.name,
        description=study.description,
        path=str(study.path),
        db_path=db,
        code_version=study.code_version,
        metrics=list(study.metrics),
        primary=study.primary,
        higher_is_better=dict(study.higher_is_better),
        seeds=list(study.seeds),
        rows=out_rows,
        contrasts=_contrasts(runs, out_rows, confidence),
        reference_columns=list(study.reference),
        grid=dict(study.grid),
        settings={
            "alpha": alpha,
            "power": power,
            "confidence": confidence,
            "aso": aso,
            "seed": seed,
            "permutations": permutations,
            "resamples": resamples,
            "holm": holm,
            "paired_seeds": study.paired_seeds,
        },
        notes=notes,
        display=study.display,
        holm=families,
        conditions=held,
        definitions=definitions(study, lambda m: (_bounds(study, m), _bounds_source(study, m))),
        components=_components(study, out_rows, alpha),
    )


def _distinct_rows(study: Study, rows: list[Row]) -> tuple[list[Row], dict[str, tuple[str, ...]]]:
    """The rows that are distinct runs, in order (the first row of each set of runs), and
    for each the labels of the later rows with the same runs (a grid cell that equals a
    variant or the base): one comparison, shown once, under every label it carries."""
    first: dict[tuple[str, ...], Row] = {}
    aliases: dict[str, list[str]] = {}
    for row in rows:
        keys = tuple(study_run_key(study, row, s) for s in study.seeds)
        if keys in first:
            aliases[first[keys].label].append(row.label)
        else:
            first[keys] = row
            aliases[row.label] = []
    return list(first.values()), {k: tuple(v) for k, v in aliases.items()}


def _components(study: Study, rows: list[RowAnalysis], alpha: float) -> list[ComponentView]:
    """The component view on the primary metric: a retrained row beside the eval row
    that removes the same component (``component = "NAME"`` on both)."""
    found = {x: r for r in rows for x in r.labels}
    out = []
    m = study.primary
    for component, trained, at_eval in component_pairs(study):
        sides = []
        for label in (trained, at_eval):
            ms = found[label].metrics[m]
            p = _row_p(ms)
            worse = ms.direction == "worse"
            low, high = (
                (ms.both_low, ms.both_high)
                if ms.p_both is not None
                else (ms.delta_low, ms.delta_high)
            )
            sides.append(
                Side(
                    label,
                    ms.vs,
                    ms.paired,
                    ms.delta,
                    low,
                    high,
                    p,
                    bool(p is not None and p < alpha and worse),
                )
            )
        out.append(
            ComponentView(component, m, sides[0], sides[1], reading(sides[0], sides[1]), alpha)
        )
    return out


@dataclass(frozen=True)
class _Runs:
    """A study's stored runs, read by row, seed and metric."""

    study: Study
    stored: dict[str, StoredRun]
    examples: dict[str, dict[str, ExampleStats]]

    def by_seed(self, row: Row, metric: str) -> tuple[dict[int, float], list[FailedRun]]:
        """The row's finished values by seed, and its seeds without one."""
        vals: dict[int, float] = {}
        missing: list[FailedRun] = []
        for s in self.study.seeds:
            run = self.stored.get(study_run_key(self.study, row, s))
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
        found = {
            s: self.examples.get(study_run_key(self.study, row, s), {}).get(metric)
            for s in self.by_seed(row, metric)[0]
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
    ) -> list[str]:
        """Why ``row`` has no test-set interval for a metric that other runs have per-example
        data for: it, or the row its Δ is taken to, lacks the data on some finished run
        (an interval over the other seeds would describe another mean than the one shown)."""
        why = []
        for m, cs in comparisons.items():
            if m not in self.example_metrics or any(c.label == row.label for c in cs):
                continue
            other = (
                labels[row.parent] if row.stage == "eval" else next(iter(labels.values()))
            )  # the base row
            for r in (
                [row] if row.config == self.study.base and row.stage != "eval" else [row, other]
            ):
                done = self.by_seed(r, m)[0]
                lacking = [
                    s
                    for s in done
                    if m not in self.examples.get(study_run_key(self.study, r, s), {})
                ]
                if lacking:
                    whose = f"row {r.label}" + (" (the row Δ is taken to)" if r is not row else "")
                    why.append(
                        f"{m}, row {row.label}: {whose} has usable per-example data on {len(done) - len(lacking)} of "
                        f"its {len(done)} finished runs (none for seed {', '.join(map(str, lacking))})"
                    )
        return why


def _row_stats(
    runs: _Runs,
    row: Row,
    labels: dict[str, Row],
    comparisons: dict[str, list[Comparison]],
    opts: dict[str, Any],
) -> tuple[dict[str, MetricStats], list[FailedRun]]:
    """One row's statistics over seeds per metric, and its missing runs (primary metric);
    appends the row's per-example data to ``comparisons`` where it and its comparison row have it."""
    study = runs.study
    stats: dict[str, MetricStats] = {}
    missing: list[FailedRun] = []
    for m in study.metrics:
        vals, miss = runs.by_seed(row, m)
        if m == study.primary:
            missing = miss
        eps = _min_effect(study, m)
        # Δ is to the trained row for an eval row, to the base otherwise; none for the base's configuration
        other = (
            labels[row.parent]
            if row.stage == "eval"
            else None
            if row.config == study.base
            else Row("", "", "grid", study.base, {}, {})
        )
        paired = row.stage == "eval" or (study.paired_seeds and other is not None)
        if other is not None and paired:
            stats[m] = _paired_stats(
                m,
                vals,
                runs.by_seed(other, m)[0],
                row.parent or "base",
                study.better(m),
                min_effect=eps,
                **opts,
            )
        else:
            base = None if other is None else runs.seed_values(study.base, m)
            stats[m] = _metric_stats(
                m, list(vals.values()), base, study.better(m), min_effect=eps, **opts
            )
        if row.stage == "eval" and row.parent_config != study.base:
            stats[m] = replace(stats[m], to_base=_to_base(runs, vals, m, opts))
        mine, theirs = (
            runs.run_examples(row, m),
            None if other is None else runs.run_examples(other, m),
        )
        if mine is not None and (other is None or theirs is not None):
            comparisons[m].append(Comparison(row.label, mine, theirs, paired))
    return stats, missing


def _to_base(runs: _Runs, vals: dict[int, float], metric: str, opts: dict[str, Any]) -> Delta:
    """An eval row's Δ to the base (its models are another trained row's): paired by seed
    when the study pairs seeds, else Welch; clipped like every interval of the metric."""
    study = runs.study
    base = Row("", "", "grid", study.base, {}, {})
    if study.paired_seeds:
        ms = _paired_stats(
            metric, vals, runs.by_seed(base, metric)[0], "base", study.better(metric), **opts
        )
    else:
        ms = _metric_stats(
            metric,
            list(vals.values()),
            runs.seed_values(study.base, metric),
            study.better(metric),
            **opts,
        )
    ms = _with_absent(_within_bounds(ms, _bounds(study, metric)))
    return Delta(
        "base",
        ms.delta,
        ms.delta_low,
        ms.delta_high,
        ms.p_welch,
        ms.p_perm,
        ms.paired,
        {k: v for k, v in ms.absent.items() if k != "mean_ci"},
    )


def _contrasts(
    runs: _Runs, rows: list[RowAnalysis], confidence: float
) -> dict[str, list[Contrast]]:
    """Factorial effects of the grid, per metric (none without a grid)."""
    study = runs.study
    contrasts: dict[str, list[Contrast]] = {}
    if study.grid:
        ref_levels = {
            f: (study.base[f] if study.base[f] in levels else levels[-1])
            for f, levels in study.grid.items()
        }
        for m in study.metrics:
            top = max((abs(r.metrics[m].mean) for r in rows if r.metrics[m].n), default=0.0)
            contrasts[m] = factorial_effects(
                study.grid,
                ref_levels,
                _grid_cell_values(runs, m),
                confidence=confidence,
                decimals=2 if top >= 10 else 3 if top >= 1 else 4,
                paired=study.paired_seeds,
                bounds=_bounds(study, m),
            )
    return contrasts


def _grid_cell_values(runs: _Runs, metric: str) -> Callable[[dict[str, Any]], dict[int, float]]:
    """The metric's values by seed in the grid cell with the given factor levels."""

    def values(levels: dict[str, Any]) -> dict[int, float]:
        row = Row("", "", "grid", {**runs.study.base, **levels}, {}, {})
        return runs.by_seed(row, metric)[0]

    return values


def example_stats_of(study: Study, store: RunStore, run: StoredRun) -> dict[str, ExampleStats]:
    """The per-example statistics of one stored run, ``{metric: ExampleStats}`` ({} for a run
    without them): the one place the analysis reads per-example data."""
    return dict(per_example.load_example_stats(store, study, run))


def _examples_of_runs(
    study: Study, store: RunStore, stored: dict[str, StoredRun], by_key: dict[str, Any]
) -> tuple[dict[str, dict[str, ExampleStats]], list[str]]:
    """Per-example data of the study's finished runs, by run key, and the runs refused: data
    that does not reproduce the run's stored value would give intervals around another number."""
    out: dict[str, dict[str, ExampleStats]] = {}
    refused: list[str] = []
    for key, run in stored.items():
        if key not in by_key or run.status != "ok":
            continue
        try:
            found = example_stats_of(study, store, run)
        except (
            InputError
        ) as exc:  # a missing or unreadable examples file: no test-set intervals for it
            refused.append(f"run {run.rows[0] if run.rows else key} seed {run.seed}: {exc}")
            continue
        for m, es in list(found.items()):
            value, stored_value = es.value(), run.metrics.get(m)
            if stored_value is None or not math.isclose(
                value, float(stored_value), rel_tol=1e-6, abs_tol=1e-9
            ):
                refused.append(
                    f"{m}, run {run.rows[0] if run.rows else key} seed {run.seed}: its per-example data "
                    f"scores {value:.6g}, its stored value is {stored_value}"
                )
                del found[m]
        out[key] = found
    return out, refused


def _bounds(study: Study, metric: str) -> Bounds:
    """The metric's bounds: the study's ``bounds``, else a computed metric's own (chrF,
    BLEU: [0, 100]), else None."""
    b = study.bounds.get(metric) or own_bounds(study.computed.get(metric))
    return None if b is None else (float(b[0]), float(b[1]))


def _bounds_source(study: Study, metric: str) -> str:
    """Where the metric's bounds come from: "study", "metric" (a computed metric's own) or ""."""
    return (
        "study"
        if metric in study.bounds
        else "metric"
        if _bounds(study, metric) is not None
        else ""
    )


def _min_effect(study: Study, metric: str) -> float | None:
    """The metric's smallest effect of interest (study key ``min_effect``), or None."""
    e = study.min_effect.get(metric)
    return None if e is None else float(e)


def _finish_metric(
    study: Study,
    metric: str,
    stats: dict[str, dict[str, MetricStats]],
    fields: dict[str, dict[str, Any]],
    *,
    holm: bool,
    stages: dict[str, str],
) -> list[HolmFamily]:
    """Complete one metric's statistics in place: the test-set fields, the bounds on every
    interval, 'negligible', the reasons for what is None, and (``holm``) Holm-adjusted
    p-values over each family of distinct comparisons (trained rows vs the base; eval rows
    vs the trained row they evaluate), which it returns."""
    bounds, eps = _bounds(study, metric), _min_effect(study, metric)
    for label, by_metric in stats.items():
        ms = replace(by_metric[metric], **fields.get(label, {}))
        ms = _within_bounds(ms, bounds)
        ms = _negligible(ms, eps) if eps is not None else ms
        by_metric[metric] = _with_absent(ms)
    if not holm:
        return []
    tested = [
        (label, stages[label], p)
        for label, by_metric in stats.items()
        if by_metric[metric].delta is not None and (p := _row_p(by_metric[metric])) is not None
    ]
    families = holm_families(metric, tested)
    for fam in families:
        for label, p in zip(fam.members, fam.adjusted, strict=True):
            stats[label][metric] = replace(stats[label][metric], p_holm=p)
    return families


def _absent_code(ms: MetricStats) -> str:
    """Why a Δ of ``ms`` has no CI or p over seeds."""
    if ms.no_seed_spread:
        return "no_seed_spread"
    if ms.n == 0 or ms.delta is None or not math.isfinite(ms.delta):
        return "no_common_seeds" if ms.paired and ms.n else "no_runs"
    return "one_seed"


def _with_absent(ms: MetricStats) -> MetricStats:
    """NaN CIs and p-values become None, each with the reason it is absent (``absent``)."""

    def gone(*xs: float | None) -> bool:
        return any(x is None or not math.isfinite(x) for x in xs)

    absent: dict[str, str] = {}
    changes: dict[str, Any] = {}
    if gone(ms.ci_low, ms.ci_high):
        absent["mean_ci"] = (
            "no_runs" if ms.n == 0 else "one_seed" if ms.n == 1 else "no_seed_spread"
        )
        changes.update(ci_low=None, ci_high=None)
    if ms.delta is not None:
        code = _absent_code(ms)
        if gone(ms.delta_low, ms.delta_high):
            absent["delta_ci"] = code
            changes.update(delta_low=None, delta_high=None)
        if gone(ms.p_welch):
            absent["p_t"] = code
            changes["p_welch"] = None
        if gone(ms.p_perm):
            absent["p_perm"] = "no_runs" if code in ("no_runs", "no_common_seeds") else "one_seed"
            changes["p_perm"] = None
    return replace(ms, absent=absent, **changes) if changes else ms


def _row_p(ms: MetricStats) -> float | None:
    """The row's p-value for 'differs from the row Δ is taken to': two-level where present,
    else the t-test's, or the permutation test's where the t-test is undefined (no seed spread)."""
    p = ms.p_both if ms.p_both is not None else ms.p_perm if ms.no_seed_spread else ms.p_welch
    return p if p is not None and math.isfinite(p) else None


def _within_bounds(ms: MetricStats, bounds: Bounds) -> MetricStats:
    """t-based intervals clipped to the declared bounds (Δ's to ``[lo - hi, hi - lo]``)."""
    if bounds is None or ms.ci_low is None or ms.ci_high is None:
        return ms
    ci_low, ci_high = clip(ms.ci_low, ms.ci_high, bounds)
    if ms.delta_low is None or ms.delta_high is None:
        return replace(ms, ci_low=ci_low, ci_high=ci_high)
    d_low, d_high = clip(ms.delta_low, ms.delta_high, delta_bounds(bounds))
    return replace(ms, ci_low=ci_low, ci_high=ci_high, delta_low=d_low, delta_high=d_high)


def _finite(low: float | None, high: float | None) -> bool:
    return low is not None and high is not None and math.isfinite(low) and math.isfinite(high)


def _negligible(ms: MetricStats, eps: float) -> MetricStats:
    """Negligible: |Δ| and every interval shown for it inside ±eps, one of them covering seed
    noise (with one seed nothing bounds the seed noise); then no seed count is asked for."""
    if ms.delta is None or not math.isfinite(ms.delta) or abs(ms.delta) > eps:
        return ms
    pairs = [
        (ms.delta_low, ms.delta_high),
        (ms.both_low, ms.both_high),
        (ms.examples_low, ms.examples_high),
    ]
    shown = [(lo, hi) for lo, hi in pairs if _finite(lo, hi)]
    if not (_finite(ms.delta_low, ms.delta_high) or _finite(ms.both_low, ms.both_high)):
        return ms
    if all(-eps <= lo and hi <= eps for lo, hi in shown):  # type: ignore[operator]
        return replace(ms, negligible=True, too_few_seeds=False, seeds_needed=None)
    return ms


def _metric_stats(
    metric: str,
    vals: list[float],
    base: list[float] | None,
    higher_is_better: bool,
    *,
    alpha: float,
    power: float,
    confidence: float,
    aso: bool,
    seed: int,
    permutations: int,
    min_effect: float | None = None,
) -> MetricStats:
    common = _seed_stats(metric, vals, confidence)
    if base is None:
        return common
    if not vals or not base:
        return replace(common, too_few_seeds=True)
    w = welch(vals, base, confidence)
    p_perm, exact = permutation_test(vals, base, resamples=permutations, seed=seed)
    p_perm = p_perm if min(len(vals), len(base)) >= 2 else math.nan  # 1 vs 1: p = 1 whatever Δ is
    flat = bool(len(vals) >= 2 and len(base) >= 2 and np.ptp(vals) == 0 and np.ptp(base) == 0)
    w = _undefined_t(w) if flat else w
    needed = None
    flag = True
    if len(vals) >= 2 and len(base) >= 2:
        pooled = pooled_sd(vals, base)
        needed = seeds_needed(_power_target(w.delta, min_effect), pooled, alpha=alpha, power=power)
        # too few seeds: the delta is not separated from seed noise, and a power analysis
        # says more seeds than we have would be needed to detect a delta this large
        # (runs without any seed noise are deterministic: there is nothing to separate)
        flag = (
            pooled > 0
            and not (w.p < alpha)
            and (needed is None or needed > min(len(vals), len(base)))
        )
    eps = None
    if aso:
        sign = 1.0 if higher_is_better else -1.0
        eps = aso_test(sign * np.asarray(vals), sign * np.asarray(base), alpha=alpha, seed=seed)
    direction = ""
    if w.delta != 0 and math.isfinite(w.delta):
        direction = "better" if (w.delta > 0) == higher_is_better else "worse"
    return replace(
        common,
        delta=w.delta,
        delta_low=w.low,
        delta_high=w.high,
        p_welch=w.p,
        p_perm=p_perm,
        perm_exact=exact,
        seeds_needed=needed,
        too_few_seeds=flag,
        aso_eps=eps,
        direction=direction,
        vs="base",
        no_seed_spread=flat,
    )


def _paired_stats(
    metric: str,
    vals: dict[int, float],
    parent: dict[int, float],
    parent_label: str,
    higher_is_better: bool,
    *,
    alpha: float,
    power: float,
    confidence: float,
    aso: bool,
    seed: int,
    permutations: int,
    min_effect: float | None = None,
) -> MetricStats:
    """A row against the row its Δ is taken to, paired by seed: an eval row and its trained
    row (the same trained model), or any row and the base when the study pairs seeds."""
    common = replace(
        _seed_stats(metric, list(vals.values()), confidence), paired=True, vs=parent_label
    )
    seeds = [s for s in vals if s in parent]
    if not seeds:
        return replace(common, too_few_seeds=True)
    a, b = np.array([vals[s] for s in seeds]), np.array([parent[s] for s in seeds])
    t = paired_t(a, b, confidence)
    p_perm, exact = sign_flip_test(a, b, resamples=permutations, seed=seed)
    p_perm = p_perm if len(seeds) >= 2 else math.nan  # one pair: p = 1 whatever Δ is
    flat = bool(len(seeds) >= 2 and np.ptp(a - b) == 0)
    t = _undefined_t(t) if flat else t
    needed = None
    flag = True
    if len(seeds) >= 2:
        sd_diff = float(np.std(a - b, ddof=1))
        needed = pairs_needed(_power_target(t.delta, min_effect), sd_diff, alpha=alpha, power=power)
        # as for unpaired rows: not separated from seed noise, and more seeds would be needed
        flag = sd_diff > 0 and not (t.p < alpha) and (needed is None or needed > len(seeds))
    eps = None
    if aso:
        sign = 1.0 if higher_is_better else -1.0
        eps = aso_test(sign * a, sign * b, alpha=alpha, seed=seed)
    direction = ""
    if t.delta != 0 and math.isfinite(t.delta):
        direction = "better" if (t.delta > 0) == higher_is_better else "worse"
    return replace(
        common,
        delta=t.delta,
        delta_low=t.low,
        delta_high=t.high,
        p_welch=t.p,
        p_perm=p_perm,
        perm_exact=exact,
        seeds_needed=needed,
        too_few_seeds=flag,
        aso_eps=eps,
        direction=direction,
        no_seed_spread=flat,
    )


def _seed_stats(metric: str, vals: list[float], confidence: float) -> MetricStats:
    """The row's own values over seeds, with no Δ: n, mean, sd and the mean's t-based CI
    over seeds; the CI is NaN where the seeds all agree (sd 0: see _undefined_t)."""
    mc = mean_ci(vals, confidence)
    flat = mc.n >= 2 and mc.std == 0
    return MetricStats(
        metric=metric,
        n=mc.n,
        values=vals,
        mean=mc.mean,
        std=mc.std,
        ci_low=math.nan if flat else mc.low,
        ci_high=math.nan if flat else mc.high,
    )


def _undefined_t(w: Any) -> Any:
    """A t-test over seeds that showed no spread: its p and CI are 0/0, not the degenerate
    limit (p 0 or 1, a zero-width CI), which holds only if the runs cannot vary with the seed;
    a coarse metric on a few examples can give equal values by chance."""
    return replace(w, p=math.nan, low=math.nan, high=math.nan)


def _power_target(delta: float, min_effect: float | None) -> float:
    """The Δ a seed count is asked for: the observed one, or the smallest effect of interest
    when the observed Δ is below it (detecting a Δ nobody cares about is not the question)."""
    if min_effect is None or not math.isfinite(delta) or abs(delta) >= min_effect:
        return delta
    return math.copysign(min_effect, delta) if delta else min_effect


def _notes(
    study: Study,
    rows: list[RowAnalysis],
    alpha: float,
    power: float,
    confidence: float,
    aso: bool,
    permutations: int,
    by_key: dict[str, Any],
    stored: dict[str, Any],
) -> list[str]:
    pct = round(confidence * 100)
    compared = sum(1 for r in rows if r.changes and r.stage == "train")
    trained = " (trained rows)" if any(r.stage == "eval" for r in rows) else ""
    if study.paired_seeds:
        delta_note = (
            f"Δ = row − base{trained}, PAIRED by seed (paired_seeds = true: the seeds share data order and "
            f"initialization across rows), over the seeds both rows finished: {pct}% CI from the paired t "
            "distribution, p(t) = paired t-test, p(perm) = sign-flip permutation test (exact over all 2^n sign "
            f"patterns when feasible, else {permutations} random ones), both two-sided"
        )
        few = "paired t-test"
    else:
        delta_note = (
            f"Δ = row − base{trained} with a Welch {pct}% CI; p(t) = Welch's t-test, p(perm) = permutation test "
            f"of |Δ| (exact over all relabelings when feasible, else {permutations} random relabelings), both "
            "two-sided, unpaired"
        )
        few = "two-sided two-sample t-test"
    adjusted = (
        "Holm-adjusted in p(Holm)"
        if any(ms.p_holm is not None for r in rows for ms in r.metrics.values())
        else "not adjusted"
    )
    notes = [
        f"{len(study.seeds)} seeds per row; mean ± sd over seeds; {pct}% CI = mean ± t(n-1)·sd/√n.",
        f"{delta_note}, {adjusted} for the {compared} rows compared with the base.",
        f"'few seeds' = p(t) ≥ {alpha:g} and a power analysis ({few}, α = {alpha:g}, "
        f"power = {power:g}, observed Δ and pooled sd) needs more seeds per row than were run; the number shown is that requirement.",
    ]
    single = [
        r.label
        for r in rows
        if any(
            ms.delta is not None and ms.absent.get("p_perm") == "one_seed"
            for ms in r.metrics.values()
        )
    ]
    if single:
        notes.append(
            f"One seed (rows {'; '.join(single)}): with one seed in the row or in the row its Δ is taken to (one "
            "pair, paired), p(t) and p(perm) are '–': the t-test needs two, and the permutation test's only "
            "possible p is 1, whatever Δ is."
        )
    flat = [
        r.label
        for r in rows
        if any(ms.no_seed_spread or (ms.n >= 2 and ms.std == 0) for ms in r.metrics.values())
    ]
    if flat:
        notes.append(
            f"No seed spread (rows {'; '.join(flat)}): where every seed of a row gave the same value, its mean's CI over "
            "seeds is not shown ('–'); where that holds for the row its Δ is taken to as well ('no seed spread'; paired: "
            "the same difference on every seed), the t-test is 0/0: p(t) and Δ's CI over seeds are not shown either, nor a grid effect's CI and p (t). "
            "Their limits (p 0, a zero-width CI) hold only for runs that cannot vary with the seed; a coarse metric on few "
            "test examples can agree by chance. p(perm) (and the test-set intervals, where shown) do not rely on it."
        )
    evals = [r for r in rows if r.stage == "eval"]
    if evals:
        notes.append(
            f"Stage 'eval' rows ({', '.join(r.label for r in evals)}) are suppressed at evaluation: not retrained, each "
            "evaluates the trained model of its row (Stage column) for every seed. Their Δ is to that trained row and PAIRED "
            f"by seed (the same model evaluated twice): {pct}% CI from the paired t distribution, p(t) = paired t-test, "
            "p(perm) = sign-flip permutation test (exact over all 2^n sign patterns when feasible), 'few seeds' from the "
            "paired t-test's power. A retrained row asks whether a model can learn the task without the component; an eval "
            "row asks whether the trained model relies on it."
        )
    if aso:
        notes.append(
            f"ASO = ε_min of 'row better than base' (Dror et al. 2019, α = {alpha:g}); < 0.5 supports the row being better, < 0.2 strongly."
        )
    if study.grid:
        notes.append(
            "Grid effects: removal = y(factor ablated) − y(full system); addition = y(factor present) − "
            "y(neither); interaction = y(both) − y(A ablated) − y(B ablated) + y(neither); other factors held at the base."
        )
    failed = sum(r.failed for r in rows)
    pending = sum(r.pending for r in rows)
    if failed or pending:
        notes.append(
            f"Missing runs: {failed} failed, {pending} not run; statistics use the finished seeds only."
        )
    notes.extend(
        _provenance_notes(study, [r for k, r in stored.items() if k in by_key and r.status == "ok"])
    )
    stale = [k for k in stored if k not in by_key]
    if stale:
        notes.append(
            f"{len(stale)} stored run(s) of this study belong to another configuration or code version and are not used."
        )
    return notes


def _test_set_notes(
    study: Study,
    rows: list[RowAnalysis],
    confidence: float,
    resamples: int,
    refused: list[str],
    *,
    holm: bool,
) -> list[str]:
    """What the test-set intervals, bounds, 'negligible' and p(Holm) are, where shown."""
    pct = round(confidence * 100)
    shown = [ms for r in rows for ms in r.metrics.values()]
    notes: list[str] = []
    if any(ms.n_examples is not None for ms in shown):
        sizes = sorted({ms.n_examples for ms in shown if ms.n_examples is not None})
        notes.append(
            f"Test-set intervals (metrics with per-example data, {', '.join(map(str, sizes))} test examples): "
            f"CI (test set) = {pct}% percentile interval of {resamples} bootstrap resamples of the test examples, the same "
            "resamples for every run of every row (so Δ is paired across rows, example by example), each seed's run scored "
            "on the resample and the row's value averaged over its seeds. It says how far the value or Δ would move on "
            "another test set of the same size with these trained models; it exists with a single seed."
        )
    if any(ms.both_low is not None for ms in shown):
        notes.append(
            "CI (seeds + test set) = Δ over both sources (two levels: seeds, then the test examples every seed's run "
            "scores): se² = the seeds' variance of Δ (Welch's, or the paired one) + the test-set variance of Δ from the "
            "same resamples, with the seed × example interaction (seeds disagreeing on single examples), which both "
            f"contain, counted once; {pct}% CI = Δ ± t(ν)·se with ν the seeds' degrees of freedom (Welch's, or S−1 "
            "paired), so it is never narrower than the seeds-only CI; p (2-level) = P(|T_ν| ≥ |Δ|/se), two-sided, the row's "
            "p for 'differs from base' where shown. It needs two seeds per row: with one the seed noise is unknown and only the test-set CI is shown."
        )
    bounded = {m: _bounds(study, m) for m in study.metrics if _bounds(study, m) is not None}
    if bounded:
        parts = [f"{m} in [{b[0]:g}, {b[1]:g}]" for m, b in bounded.items() if b is not None]
        notes.append(
            f"Declared bounds: {'; '.join(parts)}. Intervals never leave them: t-based ones are clipped to the "
            "bounds (Δ's to [lo − hi, hi − lo]); percentile ones stay inside by construction."
        )
    effects = {m: _min_effect(study, m) for m in study.metrics if _min_effect(study, m) is not None}
    if effects:
        parts = [f"{m} ±{e:g}" for m, e in effects.items()]
        notes.append(
            f"'negligible' = |Δ| and every interval shown for it (one covering seed noise included) inside the "
            f"smallest effect of interest ({', '.join(parts)}): equivalent at the intervals' level, no seeds asked "
            "for; where |Δ| is below it but an interval is not, 'few seeds' counts the seeds needed to detect that "
            "smallest effect, not the observed Δ."
        )
    if holm:
        notes.append(
            "p(Holm) = Holm's step-down adjustment (family-wise error) of each row's p — p (2-level) where shown, else "
            "p(t), else p(perm) where p(t) is undefined — over the family of distinct comparisons it belongs to "
            "(per metric: the trained rows' Δ to the base; the eval rows' Δ to the trained row they evaluate)."
        )
    notes.extend(f"No test-set interval for {why}." for why in refused)
    return notes


def _provenance_notes(study: Study, used: list[Any]) -> list[str]:
    """Which code the used runs executed: the code version, and the git commits (dirty or not)."""
    how = (
        "written in the study file"
        if study.code and study.code.pinned
        else "hash of the code the entry imports"
    )
    notes = [f"Code version {study.code_version} ({how})."]
    commits: dict[tuple[str, bool], int] = {}
    for run in used:
        if run.git_commit:
            commits[(run.git_commit, bool(run.git_dirty))] = (
                commits.get((run.git_commit, bool(run.git_dirty)), 0) + 1
            )
    if commits:
        parts = [
            f"{n} at git {c[:10]}{' with uncommitted changes' if dirty else ''}"
            for (c, dirty), n in sorted(commits.items())
        ]
        notes.append(f"Runs used: {'; '.join(parts)}.")
    return notes
