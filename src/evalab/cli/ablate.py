"""``evalab ablate {run,status,report,gc,import}``: ablation studies from a TOML study file."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

import typer

from evalab.cli.app import command, sub_app
from evalab.cli.inputs import study_inputs
from evalab.cli.options import (
    Figures,
    FigureWidth,
    Format,
    LatexCaption,
    LatexFragment,
    LatexLabel,
    LatexOptions,
    LatexSplit,
    OutFile,
    RayAddress,
    RayTimeout,
    check_figures,
    executor_option,
    latex_layout,
    ray_cluster,
    write_figures_checked,
)
from evalab.cli.output import PAGE_FORMATS, check_format, check_out, emit, emit_table, format_option
from evalab.report.latex import WHOLE, LatexLayout
from evalab.report.table import Number, TableCell
from evalab.report.table import Table as ReportTable

if TYPE_CHECKING:
    from pathlib import Path

    from evalab.ablation import RunSummary, StudyAnalysis, Subset
    from evalab.ablation.analysis.curve_bands import StudyCurves
    from evalab.ablation.execution.status import DryRun, RunFailure, StudyStatus
    from evalab.ablation.importing.importer import ImportSummary
    from evalab.ablation.study.spec import Study
    from evalab.metrics.ray_shards import RayCluster

ablate_app = sub_app(
    "ablate",
    "Ablation studies: run base + variants (+ grid) x seeds, show status, report like Table 3.",
)

STATUS_COLUMNS = ("Row", "Planned", "OK", "Failed", "Pending")
#: failed runs `ablate run` shows in full (the rest: `ablate status`)
SHOWN_FAILURES = 10

StudyArg = Annotated[
    str,
    typer.Argument(
        help="The study file (TOML): the tables study, base and variant, optional grid and reference (docs/ablation.md)."
    ),
]
DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db", help="Run database (SQLite). Default: .evalab/studies.db in the current folder."
    ),
]


def _summary_lines(s: RunSummary) -> list[str]:
    from evalab.ablation.execution.status import superseded_lines

    subset = f" (a subset of the study's {s.whole_plan})" if s.whole_plan else ""
    lines = [
        f"study {s.study!r}: {s.planned} runs planned{subset}, {s.skipped} already finished, "
        f"{s.ok} ok, {s.failed} failed in {s.seconds:.1f} s; database {s.db_path}"
    ]
    if s.held:
        lines.append(
            f"{s.held} runs were being run by another runner on this database and were left to it"
        )
    if s.blocked:
        lines.append(
            f"{s.blocked} eval runs not started: the trained run whose checkpoint they evaluate failed or is "
            "being run by another runner; run the same command again once it has finished"
        )
    if s.moved:
        lines.append(
            f"{s.moved / 1e6:.1f} MB of run folders moved through Ray (no shared folder; "
            "[study] transfer_limit_mb bounds each)"
        )
    lines += superseded_lines(s.superseded)
    for failure in s.failures[:SHOWN_FAILURES]:
        lines += failure_lines(failure)
    if len(s.failures) > SHOWN_FAILURES:
        lines.append(
            f"{len(s.failures) - SHOWN_FAILURES} more failed runs: `evalab ablate status` shows every one"
        )
    return lines


def toml_inline(value: object) -> str:
    """A configuration value as TOML (an inline table for a table).

    >>> toml_inline({"hidden": 16, "optim": {"lr": 0.5, "name": "adam"}, "relu": True, "l": [1, 2]})
    '{ hidden = 16, optim = { lr = 0.5, name = "adam" }, relu = true, l = [1, 2] }'
    """
    import json

    if isinstance(value, dict):
        return (
            "{ "
            + ", ".join(
                f"{json.dumps(str(k)) if not str(k).isidentifier() else k} = {toml_inline(v)}"
                for k, v in value.items()
            )
            + " }"
        )
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_inline(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)


def shown_path(path: Path) -> str:
    """A path as the user can open it: relative to the current folder when inside it."""
    from pathlib import Path

    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def failure_lines(f: RunFailure) -> list[str]:
    """A failed run: its error, the last lines of its traceback (or log), and the log's path."""
    return [
        f"failed: {', '.join(f.rows)} seed {f.seed}: {f.error}",
        *(f"  | {ln}" for ln in f.tail),
        f"  log: {shown_path(f.log)}",
    ]


@dataclass(frozen=True)
class RunRequest:
    """``evalab ablate run``'s options, as the command line gives them."""

    study_file: StudyArg
    jobs: Annotated[
        int,
        typer.Option(
            "-j", "--jobs", help="Runs at once (local executor); each run is its own process."
        ),
    ] = 1
    executor: Annotated[
        str,
        executor_option(
            "local (process pool) or ray (Ray tasks with the study's resources; needs the ray extra)."
        ),
    ] = "local"
    ray_address: RayAddress = None
    ray_timeout: RayTimeout = None
    db: DbOpt = None
    wait_db: Annotated[
        float,
        typer.Option(
            "--wait-db", help="Seconds to wait for a database another process holds locked."
        ),
    ] = 60.0
    quiet: Annotated[
        bool,
        typer.Option(
            "-q", "--quiet", help="No progress (bar on a terminal, one line per run otherwise)."
        ),
    ] = False
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Only show the planned runs (commands or configurations), what the database holds and what is superseded; runs, imports and writes nothing.",
        ),
    ] = False
    row: Annotated[
        list[str],
        typer.Option(
            "--row",
            help="Run only the runs of this row (its label, e.g. base or '(A)'). Repeatable.",
        ),
    ] = field(default_factory=list)
    seed: Annotated[
        list[int],
        typer.Option(
            "--seed", help="Run only the runs of this seed (one of the study's seeds). Repeatable."
        ),
    ] = field(default_factory=list)
    set_: Annotated[
        list[str],
        typer.Option(
            "-s",
            "--set",
            help="KEY=VALUE: a new row, the base with KEY (a key of the base; optim.lr inside a table) set to VALUE, read as the type of the base's value; only that row runs unless --row names rows. Repeatable: one row with every change.",
        ),
    ] = field(default_factory=list)


@command(RunRequest, on=ablate_app.command("run"))
def run_cmd(req: RunRequest) -> None:
    """Run every run of the study that is not finished yet (finished runs are skipped).

    Exits 1 when runs failed (they are stored with their errors), 130 on Ctrl-C."""
    from evalab.ablation import load_study
    from evalab.ablation.plan.runs import Subset
    from evalab.ablation.study.overrides import with_overrides
    from evalab.errors import SettingsError

    if not req.wait_db > 0:
        raise SettingsError(f"--wait-db must be a positive number of seconds, got {req.wait_db:g}")
    cluster = ray_cluster(req.executor, req.ray_address, req.ray_timeout)
    # a dry run imports no code either
    study = load_study(req.study_file, check_entry=not req.dry_run)
    row = req.row
    if req.set_:
        study = with_overrides(study, req.set_)
        row = row or [study.variants[-1].label]  # the new row, unless --row names the rows to run
    subset = Subset(tuple(row), tuple(req.seed))
    if req.dry_run:
        from evalab.ablation.execution.status import dry_run as plan_dry_run

        lines = _dry_run_lines(plan_dry_run(study, req.db, subset))
        sys.stdout.write("".join(line + "\n" for line in lines))
        return
    summary = _run_study(req, study, subset, cluster)
    sys.stderr.write("".join(line + "\n" for line in _summary_lines(summary)))
    if req.set_:
        added = study.variants[-1]
        sys.stderr.write(
            f"row {added.label!r} is not in {req.study_file}: `evalab ablate report` shows it once the file has it "
            f"as a [[variant]] with set = {toml_inline(added.settings)} (its finished runs are kept and are not run "
            "again)\n"
        )
    if summary.failed:
        raise typer.Exit(1)


def _run_study(
    req: RunRequest, study: Study, subset: Subset, cluster: RayCluster | None
) -> RunSummary:
    """Run the study's pending runs of ``subset``; Ctrl-C says what was stored and exits 130."""
    from evalab.ablation import run_study
    from evalab.ablation.execution.executors import RunInterrupted
    from evalab.metrics.ray_shards import RAY_TIMEOUT_S

    try:
        return run_study(
            study,
            req.db,
            jobs=req.jobs,
            executor=req.executor,
            ray_address=req.ray_address,
            ray_timeout=cluster.timeout if cluster else RAY_TIMEOUT_S,
            progress=not req.quiet,
            busy_timeout=req.wait_db,
            subset=subset,
        )
    except RunInterrupted as exc:
        s = exc.summary
        sys.stderr.write(
            f"interrupted: {s.ok + s.failed} runs stored in this invocation ({s.ok} ok, {s.failed} failed), "
            f"{s.skipped + s.ok} of {s.planned} finished in all; run the same command again to resume "
            "(finished runs are skipped)\n"
        )
        raise typer.Exit(130) from None


def _dry_run_lines(d: DryRun) -> list[str]:
    """The dry run: counts, then one entry per run (its rows, seed, state, command or
    configuration, folder), then the superseded runs."""
    from evalab.ablation.execution.status import superseded_lines
    from evalab.ablation.plan.runs import canonical

    subset = f" (a subset of the study's {d.whole_plan})" if d.whole_plan else ""
    where = (
        f"database {d.db_path}"
        if d.db_exists
        else f"database {d.db_path} (does not exist yet: every run is new)"
    )
    todo = len(d.steps) - d.count("stored") - d.count("held")
    stale = f", {d.count('stale')} stale" if d.count("stale") else ""
    lines = [
        f"dry run of study {d.study!r}: nothing is run or written. {len(d.steps)} runs planned{subset}: "
        f"{d.count('stored')} stored (skipped), {todo} to run ({d.count('new')} new, {d.count('failed')} "
        f"failed before{stale}), {d.count('held')} held by another runner; {where}"
    ]
    what = {
        "stored": "stored, skipped",
        "new": "to run",
        "failed": "to run again",
        "stale": "to run again",
        "held": "held",
    }
    for step in d.steps:
        r = step.run
        why = {
            "failed": f": failed before: {step.error}",
            "stale": f": stored, but changed since it ran: {', '.join(step.changed)}",
            "held": f" by {step.holder}",
        }.get(step.state, "")
        lines.append(f"{', '.join(r.rows)} seed {r.seed} [{what[step.state]}{why}]")
        lines.append(
            f"  $ {step.command.text}" if step.command else f"  config {canonical(r.config)}"
        )
        if step.folder is not None:
            lines.append(f"  folder {shown_path(step.folder)}")
    return lines + superseded_lines(d.superseded)


def _read_study(
    study_file: str, db: str | None, out: str | None
) -> tuple[Study, list[tuple[str, str | None]]]:
    """The study of a command that reports on its stored runs, and every file the report
    reads; ``-o`` is checked against them before the study is read and after."""
    from evalab.ablation import load_study
    from evalab.ablation.store.run_store import DEFAULT_DB

    db_path = db if db is not None else str(DEFAULT_DB)
    check_out(out, [("STUDY_FILE", study_file), ("--db", db_path)])  # before the study is even read
    study = load_study(study_file, check_entry=False)
    inputs = study_inputs(study, db_path)
    check_out(out, inputs)
    return study, inputs


@dataclass(frozen=True)
class StatusRequest:
    """``evalab ablate status``'s options, as the command line gives them."""

    study_file: StudyArg
    db: DbOpt = None
    format: Format = "table"
    out: OutFile = None
    latex: LatexOptions = field(default_factory=LatexOptions)


@command(StatusRequest, on=ablate_app.command("status"))
def status_cmd(req: StatusRequest) -> None:
    """Counts of ok / failed / pending runs per row, the stored errors, and superseded runs."""
    from evalab.ablation import study_status

    db, format, out = req.db, req.format, req.out
    study, _ = _read_study(req.study_file, db, out)
    check_format(format)
    latex = req.latex.layout(format)
    st = study_status(study, db)
    if format != "table" or out:
        _emit_status(st, format, out, latex)
        return
    _print_status(st)


def _status_header_lines(st: StudyStatus) -> list[str]:
    from evalab.ablation.execution.status import example_lines, stale_lines, superseded_lines

    git = f"; git {st.git.commit[:10]}{' (dirty tree)' if st.git.dirty else ''}" if st.git else ""
    where = f"{st.db_path}, read-only" if st.read_only else str(st.db_path)
    return [
        f"{st.study}: {st.ok}/{st.planned} ok, {st.failed} failed, {st.pending} pending ({where})",
        f"code version {st.code_version}{git}",
        *superseded_lines(st.superseded or []),
        *stale_lines(st.stale),
        *example_lines(st.examples),
    ]


def _emit_status(st: StudyStatus, fmt: str, out: str | None, latex: LatexLayout = WHOLE) -> None:
    """The status as JSON, Markdown, LaTeX or a tab-separated file (summary lines after it)."""
    errors = [
        f"failed: {', '.join(f.rows)} seed {f.seed}: {f.error} (log: {shown_path(f.log)})"
        for f in st.failures
    ]
    data = {
        "study": st.study,
        "db": str(st.db_path),
        "code_version": st.code_version,
        "git": None if st.git is None else {"commit": st.git.commit, "dirty": st.git.dirty},
        "planned": st.planned,
        "ok": st.ok,
        "failed": st.failed,
        "pending": st.pending,
        "rows": [
            dict(
                zip(
                    ["row", "planned", "ok", "failed", "pending"],
                    [r.label, r.planned, r.ok, r.failed, r.pending],
                    strict=True,
                )
            )
            for r in st.rows
        ],
        "errors": [
            {
                "rows": ", ".join(f.rows),
                "seed": f.seed,
                "key": f.key,
                "error": f.error,
                "tail": list(f.tail),
                "log": str(f.log),
            }
            for f in st.failures
        ],
        "superseded": _status_header_lines(st)[2:],
    }
    table = _status_table(st, [*_status_header_lines(st), *errors])
    emit_table(fmt, table, out, data=data, latex=latex)


def _status_table(st: StudyStatus, footer: list[str]) -> ReportTable:
    """Per row its planned, ok, failed and pending runs."""
    body: list[list[TableCell]] = [
        [r.label, *(Number(n, 0) for n in (r.planned, r.ok, r.failed, r.pending))] for r in st.rows
    ]
    return ReportTable(list(STATUS_COLUMNS), body, footer)


def _print_status(st: StudyStatus) -> None:
    from rich.console import Console
    from rich.text import Text

    from evalab.report.terminal import rich_table

    console = Console(soft_wrap=False, width=None if sys.stdout.isatty() else 120)
    for line in _status_header_lines(st):
        console.print(Text(line), soft_wrap=True)
    console.print(rich_table(_status_table(st, [])))
    for failure in st.failures:
        for line in failure_lines(failure):
            console.print(Text(line), soft_wrap=True)


@ablate_app.command("gc")
def gc_cmd(
    study_file: StudyArg,
    db: DbOpt = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only say what would be removed.")
    ] = False,
) -> None:
    """Remove the study's superseded runs (stored for an older code version) and their run folders."""
    from evalab.ablation import gc_study, load_study

    found = gc_study(load_study(study_file, check_entry=False), db, dry_run=dry_run)
    n = sum(s.runs for s in found)
    verb = "would remove" if dry_run else "removed"
    versions = ", ".join(s.code_version for s in found)
    sys.stderr.write(
        f"{verb} {n} superseded runs" + (f" (code versions {versions})" if found else "") + "\n"
    )


@dataclass(frozen=True)
class ImportRequest:
    """``evalab ablate import``'s options, as the command line gives them."""

    runs_file: Annotated[
        str,
        typer.Argument(
            help="Finished runs made elsewhere: a .csv (header line) or .jsonl file (evalab's columns: row or config, seed, one column per metric, optional per_example and outputs; or a W&B or MLflow export), or a Hydra multirun folder."
        ),
    ]
    study_file: Annotated[
        str, typer.Option("--study", help="The study file (TOML) the runs belong to.")
    ]
    db: DbOpt = None
    layout: Annotated[
        str,
        typer.Option(
            "--from",
            help="The export's layout: auto (by its columns; a folder is Hydra's), evalab, wandb, mlflow or hydra.",
        ),
    ] = "auto"
    maps: Annotated[
        list[str] | None,
        typer.Option(
            "--map",
            help="SOURCE=TARGET: read the export's column SOURCE as TARGET (seed, row, a metric, config.KEY); an empty TARGET ignores the column. Repeatable.",
        ),
    ] = None
    seed_from: Annotated[
        str | None,
        typer.Option(
            "--seed-from",
            help="The column (e.g. config.seed, params.seed) that holds each run's seed. Default: seed, or the configuration key seed.",
        ),
    ] = None
    metrics_file: Annotated[
        str,
        typer.Option(
            "--metrics-file", help="Hydra: the JSON file of metrics each job wrote into its folder."
        ),
    ] = "metrics.json"
    skip_unmatched: Annotated[
        bool,
        typer.Option(
            "--skip-unmatched",
            help="Import the records that match a row of the study and list the others, instead of refusing the import.",
        ),
    ] = False


@command(ImportRequest, on=ablate_app.command("import"))
def import_cmd(req: ImportRequest) -> None:
    """Store runs made elsewhere (W&B, MLflow, Hydra, a cluster) so `ablate report` treats them like local runs.

    Records are matched to the study's rows by their configuration. Every record is checked
    first; then all are stored in one transaction (all or nothing). A run already stored as
    ok is refused, never duplicated; a record that is not imported is listed."""
    from evalab.ablation import load_study
    from evalab.ablation.importing.importer import import_runs

    study = load_study(req.study_file, check_entry=False)
    done = import_runs(
        study,
        req.runs_file,
        req.db,
        layout=req.layout,
        maps=tuple(req.maps or ()),
        seed_column=req.seed_from,
        metrics_file=req.metrics_file,
        skip_unmatched=req.skip_unmatched,
    )
    lines = _import_lines(done, study, req.runs_file, req.db)
    sys.stderr.write("".join(line + "\n" for line in lines))


def _import_lines(done: ImportSummary, study: Study, runs_file: str, db: str | None) -> list[str]:
    """What ``ablate import`` says: every record skipped and why, what was stored where, and
    the export's columns it did not use."""
    from evalab.ablation.store.run_store import DEFAULT_DB

    lines = []
    for s in done.skipped:
        why = (
            f"not finished ({s.detail})"
            if s.reason == "unfinished"
            else f"configuration {s.detail} is no row of the study"
        )
        lines.append(
            f"skipped {s.where}{f' ({s.name})' if s.name and s.name != s.where else ''}: {why}"
        )
    source = "" if done.layout == "evalab" else f" ({done.layout} export)"
    lines.append(
        f"imported {done.stored} runs of study {study.name!r} from {runs_file}{source} into "
        f"{db or DEFAULT_DB}"
    )
    if done.ignored:
        lines.append(
            f"columns not used (neither a key of [base], the seed nor a metric of the study): "
            f"{', '.join(done.ignored)}"
        )
    return lines


def _with_curves(
    analysis: StudyAnalysis, study: Study, db: str | None
) -> tuple[StudyAnalysis, StudyCurves | None]:
    """The runs' learning curves (None when no run logged one), and the analysis with a note
    saying how the runs' values were picked from them (every format says it)."""
    import dataclasses

    from evalab.ablation.analysis.curve_bands import study_curves
    from evalab.ablation.analysis.note_kinds import CurvesNote

    found = study_curves(study, db)
    if not found.rows:
        return analysis, None
    return dataclasses.replace(analysis, notes=[*analysis.notes, CurvesNote(found)]), found


def _check_stored_bounds(study: Study, db: str | None) -> None:
    """Refuse a report whose stored values break bounds declared after they were stored."""
    from evalab.ablation.store.run_store import RunStore
    from evalab.ablation.study.bounds import stored_bounds_error
    from evalab.errors import InputError

    if not study.bounds:
        return
    with RunStore(db, create=False) as store:
        error = stored_bounds_error(
            study.bounds, store.runs(study.name).values(), study.code_versions
        )
        path = store.path
    if error:
        raise InputError(
            f"{path}: {error} (declared in {study.path}); intervals clipped to the bounds would not "
            "contain it"
        )


@ablate_app.command("report")
def report_cmd(
    study_file: StudyArg,
    db: DbOpt = None,
    format: Annotated[str, format_option(PAGE_FORMATS)] = "table",
    out: OutFile = None,
    aso: Annotated[
        bool,
        typer.Option(
            "--aso", help="Add the Almost Stochastic Order test (Dror et al. 2019) per row."
        ),
    ] = False,
    alpha: Annotated[
        float,
        typer.Option("--alpha", help="Significance level of the tests and the power analysis."),
    ] = 0.05,
    power: Annotated[
        float, typer.Option("--power", help="Power the seed-count analysis aims for.")
    ] = 0.8,
    holm: Annotated[
        bool,
        typer.Option(
            "--holm",
            help="Holm-adjust the rows' p-values per metric (many rows compared with one base).",
        ),
    ] = False,
    n_samples: Annotated[
        int,
        typer.Option(
            "-n",
            "--n-samples",
            help="Bootstrap resamples of the test examples (rows with per-example data).",
        ),
    ] = 1000,
    latex_split: LatexSplit = None,
    latex_fragment: LatexFragment = False,
    latex_caption: LatexCaption = None,
    latex_label: LatexLabel = None,
    figures: Figures = None,
    figure_width: FigureWidth = "double",
) -> None:
    """Per row: mean, sd, 95% CI over seeds, Δ to the base with CI and p-values; grid effects.

    Where the runs have per-example data, each Δ also gets an interval over test examples and
    one over seeds and examples together (docs/ablation.md)."""
    from evalab.ablation import analyze

    study, inputs = _read_study(study_file, db, out)
    check_figures(figures, [*inputs, ("--out", out)], figure_width)
    check_format(format, PAGE_FORMATS)
    latex = latex_layout(format, latex_split, latex_fragment, latex_caption, latex_label)
    _check_stored_bounds(study, db)
    analysis = analyze(study, db, aso=aso, alpha=alpha, power=power, holm=holm, resamples=n_samples)
    analysis, curves = _with_curves(analysis, study, db)
    if figures is not None:
        from evalab.report.ablation_figures import report_figures

        write_figures_checked(
            report_figures(analysis, curves), figures, [*inputs, ("--out", out)], figure_width
        )
    _emit_report(analysis, curves, format, out, latex)


def _emit_report(
    analysis: StudyAnalysis,
    curves: StudyCurves | None,
    fmt: str,
    out: str | None,
    latex: LatexLayout,
) -> None:
    """The report in ``fmt``, to ``out`` or stdout (the table as wide as it needs in a file)."""
    from evalab.report import render_html, render_json, render_latex, render_markdown, render_table

    if fmt == "html":
        emit(render_html(analysis, curves=curves), out)
        return
    if fmt == "table":
        if out:
            import io

            from rich.console import Console

            from evalab.report.tables import natural_width

            buf = io.StringIO()
            render_table(
                analysis,
                Console(file=buf, width=max(200, natural_width(analysis)), soft_wrap=False),
            )
            emit(buf.getvalue(), out)
        else:
            render_table(analysis)
        return
    if fmt in ("csv", "tsv"):
        from evalab.report.tables import render_delimited

        emit(render_delimited(analysis, fmt), out)
        return
    render = {
        "markdown": render_markdown,
        "latex": lambda a: render_latex(a, latex),
        "json": render_json,
    }[fmt]
    emit(render(analysis), out)
