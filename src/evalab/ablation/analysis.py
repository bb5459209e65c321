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
power of the paired test), over the seeds both rows finished.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evalab.ablation.display import Display
from evalab.ablation.plan import Row, plan_runs, row_run_key, study_rows
from evalab.ablation.store import RunStore
from evalab.errors import SettingsError
from evalab.stats.effects import Contrast, factorial_effects
from evalab.stats.seed_stats import aso as aso_test
from evalab.stats.seed_stats import (
    mean_ci,
    paired_t,
    pairs_needed,
    permutation_test,
    seeds_needed,
    sign_flip_test,
    welch,
)

if TYPE_CHECKING:
    from evalab.ablation.spec import Study


@dataclass(frozen=True)
class MetricStats:
    """One metric of one row, over its finished seeds."""

    metric: str
    n: int
    values: list[float]
    mean: float
    std: float
    ci_low: float
    ci_high: float
    delta: float | None = None  # row - base (eval rows: row - its trained row; None for the base row)
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
    both_low: float | None = None  # Δ, CI over seeds and examples (two-level bootstrap)
    both_high: float | None = None
    p_both: float | None = None  # two-level resampling p-value of Δ ≠ 0 (the row's p when present)
    p_holm: float | None = None  # Holm-adjusted p across the rows compared (when requested)
    negligible: bool = False  # |Δ| and its CI inside the study's min_effect: no seed count asked


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
    config: dict[str, Any] = field(default_factory=dict)  # the configuration it ran with ([evaluation] defaults included)

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
    display: Display = field(default_factory=Display)  # the study's [display]: how config columns are shown

    @property
    def base(self) -> RowAnalysis:
        return self.rows[0]

    def row(self, label: str) -> RowAnalysis:
        """The row with this label (KeyError if absent)."""
        for r in self.rows:
            if r.label == label:
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
) -> StudyAnalysis:
    """Analyze the stored runs of ``study`` (see the module docstring for what is computed)."""
    if not 0 < alpha < 1 or not 0 < power < 1 or not 0 < confidence < 1:
        raise SettingsError(f"alpha, power and confidence must be in (0, 1); got {alpha}, {power}, {confidence}")
    with RunStore(db_path, create=False) as store:
        stored = store.runs(study.name)
        db = str(store.path)
    plan = plan_runs(study)
    by_key = {r.key: r for r in plan}
    rows = study_rows(study)

    def by_seed(row: Row, metric: str) -> tuple[dict[int, float], list[FailedRun]]:
        vals: dict[int, float] = {}
        missing: list[FailedRun] = []
        for s in study.seeds:
            run = stored.get(row_run_key(row, s, study.code_version))
            if run is not None and run.status == "ok" and metric in run.metrics:
                vals[s] = float(run.metrics[metric])
            elif run is not None and run.status == "failed":
                missing.append(FailedRun(s, "failed", run.error, run.attempts))
            else:
                missing.append(FailedRun(s, "pending", "", run.attempts if run else 0))
        return vals, missing

    def seed_values(config: dict[str, Any], metric: str) -> list[float]:
        return list(by_seed(Row("", "", "grid", config, {}, {}), metric)[0].values())

    labels = {r.label: r for r in rows}
    opts = {"alpha": alpha, "power": power, "confidence": confidence, "aso": aso, "seed": seed, "permutations": permutations}
    out_rows: list[RowAnalysis] = []
    for row in rows:
        stats: dict[str, MetricStats] = {}
        missing: list[FailedRun] = []
        for m in study.metrics:
            vals, miss = by_seed(row, m)
            if m == study.primary:
                missing = miss
            if row.stage == "eval":
                stats[m] = _paired_stats(m, vals, by_seed(labels[row.parent], m)[0], row.parent, study.better(m), **opts)
            else:
                # a row whose configuration is the base's (the base grid cell) has the base's runs
                base = None if row.config == study.base else seed_values(study.base, m)
                stats[m] = _metric_stats(m, list(vals.values()), base, study.better(m), **opts)
        planned = sum(1 for r in plan if row.label in r.rows)
        ok = planned - len(missing)
        reference = {col: study.reference[col].get(row.label) for col in study.reference}
        out_rows.append(RowAnalysis(row.label, row.description, row.kind, row.changes, planned, ok, stats, missing,
                                    reference, row.stage, row.parent, {**study.evaluation, **row.config}))

    contrasts: dict[str, list[Contrast]] = {}
    if study.grid:
        ref_levels = {f: (study.base[f] if study.base[f] in levels else levels[-1]) for f, levels in study.grid.items()}
        for m in study.metrics:
            top = max((abs(r.metrics[m].mean) for r in out_rows if r.metrics[m].n), default=0.0)
            contrasts[m] = factorial_effects(
                study.grid, ref_levels,
                lambda levels, m=m: np.asarray(seed_values({**study.base, **levels}, m)),
                confidence=confidence, decimals=2 if top >= 10 else 3 if top >= 1 else 4,
            )
    notes = _notes(study, out_rows, alpha, power, confidence, aso, permutations, by_key, stored)
    return StudyAnalysis(
        study=study.name, description=study.description, path=str(study.path), db_path=db,
        code_version=study.code_version, metrics=list(study.metrics), primary=study.primary,
        higher_is_better=dict(study.higher_is_better), seeds=list(study.seeds), rows=out_rows,
        contrasts=contrasts, reference_columns=list(study.reference), grid=dict(study.grid),
        settings={"alpha": alpha, "power": power, "confidence": confidence, "aso": aso,
                  "seed": seed, "permutations": permutations},
        notes=notes, display=study.display,
    )


def _metric_stats(
    metric: str, vals: list[float], base: list[float] | None, higher_is_better: bool, *,
    alpha: float, power: float, confidence: float, aso: bool, seed: int, permutations: int,
) -> MetricStats:
    mc = mean_ci(vals, confidence)
    common = {"metric": metric, "n": mc.n, "values": vals, "mean": mc.mean, "std": mc.std,
              "ci_low": mc.low, "ci_high": mc.high}
    if base is None:
        return MetricStats(**common)
    if not vals or not base:
        return MetricStats(**common, too_few_seeds=True)
    w = welch(vals, base, confidence)
    p_perm, exact = permutation_test(vals, base, resamples=permutations, seed=seed)
    needed = None
    flag = True
    if len(vals) >= 2 and len(base) >= 2:
        pooled = math.sqrt((np.var(vals, ddof=1) + np.var(base, ddof=1)) / 2.0)
        needed = seeds_needed(w.delta, pooled, alpha=alpha, power=power)
        # too few seeds: the delta is not separated from seed noise, and a power analysis
        # says more seeds than we have would be needed to detect a delta this large
        # (runs without any seed noise are deterministic: there is nothing to separate)
        flag = pooled > 0 and not (w.p < alpha) and (needed is None or needed > min(len(vals), len(base)))
    eps = None
    if aso:
        sign = 1.0 if higher_is_better else -1.0
        eps = aso_test(sign * np.asarray(vals), sign * np.asarray(base), alpha=alpha, seed=seed)
    direction = ""
    if w.delta != 0 and math.isfinite(w.delta):
        direction = "better" if (w.delta > 0) == higher_is_better else "worse"
    return MetricStats(
        **common, delta=w.delta, delta_low=w.low, delta_high=w.high, p_welch=w.p, p_perm=p_perm,
        perm_exact=exact, seeds_needed=needed, too_few_seeds=flag, aso_eps=eps, direction=direction, vs="base",
    )


def _paired_stats(
    metric: str, vals: dict[int, float], parent: dict[int, float], parent_label: str, higher_is_better: bool, *,
    alpha: float, power: float, confidence: float, aso: bool, seed: int, permutations: int,
) -> MetricStats:
    """An eval row against its trained row, paired by seed (the same trained model)."""
    mc = mean_ci(list(vals.values()), confidence)
    common = {"metric": metric, "n": mc.n, "values": list(vals.values()), "mean": mc.mean, "std": mc.std,
              "ci_low": mc.low, "ci_high": mc.high, "paired": True, "vs": parent_label}
    seeds = [s for s in vals if s in parent]
    if not seeds:
        return MetricStats(**common, too_few_seeds=True)
    a, b = np.array([vals[s] for s in seeds]), np.array([parent[s] for s in seeds])
    t = paired_t(a, b, confidence)
    p_perm, exact = sign_flip_test(a, b, resamples=permutations, seed=seed)
    needed = None
    flag = True
    if len(seeds) >= 2:
        sd_diff = float(np.std(a - b, ddof=1))
        needed = pairs_needed(t.delta, sd_diff, alpha=alpha, power=power)
        # as for unpaired rows: not separated from seed noise, and more seeds would be needed
        flag = sd_diff > 0 and not (t.p < alpha) and (needed is None or needed > len(seeds))
    eps = None
    if aso:
        sign = 1.0 if higher_is_better else -1.0
        eps = aso_test(sign * a, sign * b, alpha=alpha, seed=seed)
    direction = ""
    if t.delta != 0 and math.isfinite(t.delta):
        direction = "better" if (t.delta > 0) == higher_is_better else "worse"
    return MetricStats(
        **common, delta=t.delta, delta_low=t.low, delta_high=t.high, p_welch=t.p, p_perm=p_perm,
        perm_exact=exact, seeds_needed=needed, too_few_seeds=flag, aso_eps=eps, direction=direction,
    )


def _notes(study: Study, rows: list[RowAnalysis], alpha: float, power: float, confidence: float,
           aso: bool, permutations: int, by_key: dict[str, Any], stored: dict[str, Any]) -> list[str]:
    pct = round(confidence * 100)
    notes = [
        f"{len(study.seeds)} seeds per row; mean ± sd over seeds; {pct}% CI = mean ± t(n-1)·sd/√n.",
        f"Δ = row − base{' (trained rows)' if any(r.stage == 'eval' for r in rows) else ''} with a Welch {pct}% CI; p(t) = Welch's t-test, p(perm) = permutation test of "
        f"|Δ| (exact over all relabelings when feasible, else {permutations} random relabelings), both two-sided, unpaired, "
        f"not adjusted for the {sum(1 for r in rows if r.changes and r.stage == 'train')} rows compared with the base.",
        f"'few seeds' = p(t) ≥ {alpha:g} and a power analysis (two-sided two-sample t-test, α = {alpha:g}, "
        f"power = {power:g}, observed Δ and pooled sd) needs more seeds per row than were run; the number shown is that requirement.",
    ]
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
        notes.append(f"ASO = ε_min of 'row better than base' (Dror et al. 2019, α = {alpha:g}); < 0.5 supports the row being better, < 0.2 strongly.")
    if study.grid:
        notes.append("Grid effects: removal = y(factor ablated) − y(full system); addition = y(factor present) − "
                     "y(neither); interaction = y(both) − y(A ablated) − y(B ablated) + y(neither); other factors held at the base.")
    failed = sum(r.failed for r in rows)
    pending = sum(r.pending for r in rows)
    if failed or pending:
        notes.append(f"Missing runs: {failed} failed, {pending} not run; statistics use the finished seeds only.")
    notes.extend(_provenance_notes(study, [r for k, r in stored.items() if k in by_key and r.status == "ok"]))
    stale = [k for k in stored if k not in by_key]
    if stale:
        notes.append(f"{len(stale)} stored run(s) of this study belong to another configuration or code version and are not used.")
    return notes


def _provenance_notes(study: Study, used: list[Any]) -> list[str]:
    """Which code the used runs executed: the code version, and the git commits (dirty or not)."""
    how = "written in the study file" if study.code and study.code.pinned else "hash of the code the entry imports"
    notes = [f"Code version {study.code_version} ({how})."]
    commits: dict[tuple[str, bool], int] = {}
    for run in used:
        if run.git_commit:
            commits[(run.git_commit, bool(run.git_dirty))] = commits.get((run.git_commit, bool(run.git_dirty)), 0) + 1
    if commits:
        parts = [f"{n} at git {c[:10]}{' with uncommitted changes' if dirty else ''}" for (c, dirty), n in sorted(commits.items())]
        notes.append(f"Runs used: {'; '.join(parts)}.")
    return notes
