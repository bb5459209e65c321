"""Ablation studies: a TOML study file -> planned runs -> executor -> SQLite store -> analysis.

Each stage is a subpackage whose docstring says what it owns and which stages it may
import: :mod:`~evalab.ablation.contract` (what a run is given and gives back: keys, command
templates, code version, computed metrics, curves), :mod:`~evalab.ablation.study` (the
study file), :mod:`~evalab.ablation.plan` (rows
and runs), :mod:`~evalab.ablation.store` (the run store), :mod:`~evalab.ablation.execution`
(running them, locally or on Ray), :mod:`~evalab.ablation.importing` (runs made elsewhere)
and :mod:`~evalab.ablation.analysis` (statistics, findings, notes).

The public API (everything a caller needs; the submodules are implementation detail):

``load_study(path) -> Study``
    Parse and validate a study file *before anything runs*. Every problem raises
    :class:`~evalab.errors.SettingsError` naming the file, the key and what is wrong
    (unknown key, a variant setting a key ``[base]`` lacks, empty seeds, an entry point
    that does not import, ``primary`` not in ``metrics`` ...).

``plan_runs(study) -> list[PlannedRun]``
    base + variants (+ grid cells) x seeds. Each run has a ``key``: a hash of the merged
    configuration, the seed and the study's code version (a hash over the syntax trees of
    every local module the entry imports, or ``code_version`` from the study file; see
    :mod:`evalab.ablation.contract.codeversion`). Rows that share a configuration (a grid cell equal
    to the base) share runs. Rows with ``stage = "eval"`` are not trained: their runs call
    the study's ``evaluate(config, seed, checkpoint_dir)`` on the run folder of the trained
    run of their ``from`` row with the same seed; their key hashes that run's key, the
    ``[evaluation]`` configuration and the code version (docs/ablation-eval-stage.md).

``run_study(study, db_path=None, *, jobs=1, executor="local", ray_address=None,
progress=True) -> RunSummary``
    Run every planned run that is not already finished in the store (default database
    ``.evalab/studies.db`` under the current directory). ``executor="local"`` uses a pool of
    ``jobs`` slots, each run isolated in its own fresh Python process with the study's
    ``timeout`` (the process group is killed) and ``retries``; ``executor="ray"`` submits the
    same runs as Ray tasks with the study's ``resources`` (``ray.init(address=ray_address)``
    or a local cluster). Each finished run is committed immediately, so Ctrl-C or a killed
    runner loses no finished run; rerunning skips finished runs. ``progress`` shows a live
    bar (done / failed / running / ETA) on stderr when it is a terminal.
    ``RunSummary`` has ``planned``, ``skipped`` (already finished), ``ok``, ``failed``,
    ``held`` (left to another runner), ``unstored``, ``superseded``, ``seconds`` and
    ``db_path``. Runs are claimed in the store before they start, so several runners may
    share one store (``busy_timeout``: how long a write waits for a locked database).
    Ctrl-C raises ``RunInterrupted`` (a KeyboardInterrupt carrying the summary).

    ``subset=Subset(rows=..., seeds=...)`` runs only those rows' and seeds' runs;
    ``RunSummary.failures`` holds a ``RunFailure`` (error, the last lines of its traceback
    or log, the log's path) per run that failed.

``study_status(study, db_path=None) -> StudyStatus``
    Counts per row of ok / failed / pending runs, the failed runs (``RunFailure``), the
    code version and git state, and the superseded runs (stored for an older code version).

``dry_run(study, db_path=None, subset=None) -> DryRun``
    What ``run_study`` would do, read from the store opened read-only (nothing is written):
    a ``PlannedStep`` per run (its state, command line, run folder).

``with_overrides(study, ["key=value", ...]) -> Study``
    The study with one more row: the base with those keys changed (``ablate run --set``).

``parse_template(text, style) -> CommandTemplate``
    A command template: ``{key}``, ``{a.b}``, ``{args}``, ``{config}``, ``{seed}``,
    ``{out}``, ``{{``/``}}``; ``.render(config, seed, config_path, out_path) -> CommandLine``.

``gc_study(study, db_path=None, *, dry_run=False) -> list[Superseded]``
    Remove the superseded runs of a study (rows and run folders).

``analyze(study, db_path=None, *, alpha=0.05, power=0.8, aso=False, seed=0,
permutations=10000) -> StudyAnalysis``
    Per row and metric: mean, std, 95% t-based CI over seeds, delta to the base with its
    Welch CI, Welch's t-test p-value, a permutation-test p-value (exact when feasible),
    a ``too_few_seeds`` flag with the number of seeds per arm a power analysis says is
    needed (two-sided, at ``alpha`` and ``power``), optionally Almost Stochastic Order
    (Dror et al. 2019), grid main effects and 2x2 interaction contrasts with their
    arithmetic, the optional ``[reference]`` columns, and the missing / failed runs.
    A ``stage = "eval"`` row's delta is to its trained row, paired by seed (paired t-test
    and CI, sign-flip permutation test); ``RowAnalysis.stage`` and ``MetricStats.paired``
    say so.
    ``StudyAnalysis.to_dict()`` gives plain JSON-ready data.

``log(step=..., **values) -> bool``
    In an entry point: append per-step values to the run's curves (``metrics.jsonl`` in its
    run folder); True once the study's ``[curves] stop_when`` rule holds. Stored compactly
    per run and metric, drawn by the HTML report (:mod:`evalab.ablation.contract.curves`).

The renderers live in :mod:`evalab.report`: ``render_table(analysis)`` (prints a rich
table), ``render_markdown``, ``render_latex``, ``render_json`` and ``render_html`` (a
self-contained page with a forest plot of Δ and a level plot per metric).

>>> from evalab.ablation import load_study, run_study, analyze  # doctest: +SKIP
>>> study = load_study("examples/toy_study/study.toml")           # doctest: +SKIP
>>> summary = run_study(study, "toy.db", jobs=2)                    # doctest: +SKIP
>>> from evalab.report import render_markdown                       # doctest: +SKIP
>>> print(render_markdown(analyze(study, "toy.db")))                # doctest: +SKIP
"""

from __future__ import annotations

from itertools import chain

from evalab._lazy import lazy_exports

# Lazy re-exports: importing evalab.ablation stays cheap (no numpy, no sqlite, no ray).
_EXPORTS = {
    "study.spec": (
        "Study",
        "Variant",
        "Resources",
    ),
    "study.load": ("load_study",),
    "plan.runs": (
        "PlannedRun",
        "Row",
        "plan_runs",
        "Subset",
        "study_rows",
    ),
    "study.overrides": ("with_overrides",),
    "contract.template": (
        "CommandTemplate",
        "CommandLine",
        "parse_template",
    ),
    "execution.status": (
        "DryRun",
        "PlannedStep",
        "RunFailure",
        "dry_run",
        "StudyStatus",
        "study_status",
        "gc_study",
    ),
    "execution.executors": (
        "RunSummary",
        "run_study",
    ),
    "store.run_store": (
        "RunStore",
        "DEFAULT_DB",
    ),
    "contract.codeversion": ("CodeVersion",),
    "analysis.analyze": (
        "StudyAnalysis",
        "RowAnalysis",
        "MetricStats",
        "Contrast",
        "analyze",
    ),
    "contract.curves": ("log",),
}

__all__ = sorted(chain.from_iterable(_EXPORTS.values()))


__getattr__ = lazy_exports(__name__, _EXPORTS)
