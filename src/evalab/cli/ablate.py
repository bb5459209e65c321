"""``evalab ablate {run,status,report}``: ablation studies from a TOML study file."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from evalab.cli import app
from evalab.cli.output import check_format, check_out, emit

ablate_app = typer.Typer(
    name="ablate",
    help="Ablation studies: run base + variants (+ grid) x seeds, show status, report like Table 3.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(ablate_app, name="ablate")

REPORT_FORMATS = ("table", "markdown", "latex", "json", "html")

StudyArg = Annotated[str, typer.Argument(help="The study file (TOML): [study], [base], [[variant]], optional [grid], [reference].")]
DbOpt = Annotated[str | None, typer.Option("--db", help="Run database (SQLite). Default: .evalab/studies.db in the current folder.")]


@ablate_app.command("run")
def run_cmd(
    study_file: StudyArg,
    jobs: Annotated[int, typer.Option("-j", "--jobs", help="Runs at once (local executor); each run is its own process.")] = 1,
    executor: Annotated[str, typer.Option("--executor", help="local (process pool) or ray (Ray tasks with the study's resources).")] = "local",
    ray_address: Annotated[str | None, typer.Option("--ray-address", help="Ray cluster address (e.g. auto or ray://host:10001); default: start a local cluster.")] = None,
    db: DbOpt = None,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No progress bar.")] = False,
) -> None:
    """Run every run of the study that is not finished yet (finished runs are skipped)."""
    from evalab.ablation import load_study, run_study

    study = load_study(study_file)
    summary = run_study(study, db, jobs=jobs, executor=executor, ray_address=ray_address, progress=not quiet)
    sys.stderr.write(
        f"study {summary.study!r}: {summary.planned} runs planned, {summary.skipped} already finished, "
        f"{summary.ok} ok, {summary.failed} failed in {summary.seconds:.1f} s; database {summary.db_path}\n"
    )
    if summary.failed:
        sys.stderr.write("failed runs are recorded with their errors: see `evalab ablate status`\n")


@ablate_app.command("status")
def status_cmd(study_file: StudyArg, db: DbOpt = None) -> None:
    """Counts of ok / failed / pending runs per row, and the stored errors."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from evalab.ablation import load_study, study_status

    st = study_status(load_study(study_file, check_entry=False), db)
    console = Console(soft_wrap=False, width=None if sys.stdout.isatty() else 120)
    console.print(Text(f"{st.study}: {st.ok}/{st.planned} ok, {st.failed} failed, {st.pending} pending ({st.db_path})"), soft_wrap=True)
    table = Table()
    for h in ("Row", "Planned", "OK", "Failed", "Pending"):
        table.add_column(h, justify="left" if h == "Row" else "right")
    for r in st.rows:
        table.add_row(Text(r.label), str(r.planned), str(r.ok), str(r.failed), str(r.pending))
    console.print(table)
    for rows, seed, error in st.errors:
        console.print(Text(f"failed: {rows} seed {seed}: {error}"), soft_wrap=True)


@ablate_app.command("report")
def report_cmd(
    study_file: StudyArg,
    db: DbOpt = None,
    format: Annotated[str, typer.Option("-f", "--format", help="table, markdown, latex, json or html.")] = "table",
    out: Annotated[str | None, typer.Option("-o", "--out", help="Write the report to this file (atomically) instead of stdout.")] = None,
    aso: Annotated[bool, typer.Option("--aso", help="Add the Almost Stochastic Order test (Dror et al. 2019) per row.")] = False,
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level of the tests and the power analysis.")] = 0.05,
    power: Annotated[float, typer.Option("--power", help="Power the seed-count analysis aims for.")] = 0.8,
) -> None:
    """Per row: mean, sd, 95% CI over seeds, Δ to the base with CI and p-values; grid effects."""
    from evalab.ablation import analyze, load_study
    from evalab.ablation.store import DEFAULT_DB
    from evalab.report import render_html, render_json, render_latex, render_markdown, render_table

    check_out(out, [("STUDY_FILE", study_file), ("--db", db if db is not None else str(DEFAULT_DB))])
    check_format(format, REPORT_FORMATS)
    analysis = analyze(load_study(study_file, check_entry=False), db, aso=aso, alpha=alpha, power=power)
    if format == "table":
        if out:
            import io

            from rich.console import Console

            buf = io.StringIO()
            render_table(analysis, Console(file=buf, width=200, soft_wrap=False))
            emit(buf.getvalue(), out)
        else:
            render_table(analysis)
        return
    render = {"markdown": render_markdown, "latex": render_latex, "json": render_json, "html": render_html}[format]
    emit(render(analysis), out)
