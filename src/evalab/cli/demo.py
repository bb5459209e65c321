"""``evalab demo``: run the built-in study (a transformer that sorts digits, ablated like
Table 3) through the ablation engine, print the table, and write the reports.

The study file is shipped with the package (``evalab/examples/sort_digits/study.toml``).
Runs are stored in ``OUT_DIR/studies.db``; a second invocation finds them there and only
re-renders the reports.
"""

from __future__ import annotations

import dataclasses
import html
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from evalab.cli.app import app

if TYPE_CHECKING:
    from evalab.ablation import Study

DEFAULT_OUT = "evalab-demo"
#: the list of files the demo wrote into its folder, with the reports' SHA-256
MANIFEST = ".evalab-demo.json"
#: what the demo keeps in its folder besides the reports: the store, its companions, run folders
OWN_ENTRIES = ("studies.db", "studies.db-wal", "studies.db-shm", "studies.db-journal", "runs")
REPORTS = ("report.html", "report.md")
#: ``--quick``: rows, seeds and budget of the smoke-test version (tests, a first look)
QUICK_ROWS = ("(A) h=1", "(A') 1 of 4 heads at eval")
QUICK_SEEDS = (0, 1)
QUICK_BUDGET = {"steps": 30, "warmup": 5, "eval_size": 200}


def quick_study(study: Study) -> Study:
    """The shipped study cut down to the base and :data:`QUICK_ROWS`, :data:`QUICK_SEEDS`
    and :data:`QUICK_BUDGET` (a few seconds per run): it shows the machinery, not the
    findings. It has its own name, so its runs never mix with the full study's."""
    keep = {"base", *QUICK_ROWS}
    return dataclasses.replace(
        study,
        name=f"{study.name}-quick",
        description=f"{study.description} (--quick: {QUICK_BUDGET['steps']} steps)",
        seeds=QUICK_SEEDS,
        base={**study.base, **QUICK_BUDGET},
        variants=tuple(v for v in study.variants if v.label in keep),
        reference={
            col: {k: v for k, v in vals.items() if k in keep}
            for col, vals in study.reference.items()
        },
    )


def protocol_lines(study: Study) -> list[str]:
    """The budget and protocol, read from the study's base configuration."""
    b = study.base
    return [
        f"Task: sort {b['seq_len']} random digits (0-{b['vocab'] - 1}); a fresh batch of "
        f"{b['batch_size']} sequences at each of {b['steps']} training steps (nothing is seen twice).",
        f"Model: encoder-decoder transformer, d_model {b['d_model']}, {b['layers']}+{b['layers']} "
        f"layers, feed-forward {b['d_ff']}; Adam, warm-up {b['warmup']} steps to lr {b['lr']}, "
        "cosine decay; one thread per run, deterministic.",
        f"Held-out set: {b['eval_size']} sequences drawn once (eval_seed {b['eval_seed']}), the "
        f"same for every run; seeds {', '.join(map(str, study.seeds))} per row.",
        "Metrics: seq_acc = % of held-out sequences sorted exactly by greedy decoding; "
        "digit_acc = % of positions right; xent = mean token cross-entropy (nats, "
        "teacher-forced, no smoothing); ppl = exp(xent).",
    ]


def timing_lines(study: Study, db: Path, summary: Any, seconds: float, jobs: int) -> list[str]:
    """How long the runs took (from the database: it survives reruns) and this invocation."""
    from evalab.ablation import RunStore, plan_runs

    keys = {r.key for r in plan_runs(study)}
    with RunStore(db, create=False) as store:
        durations = [
            r.duration
            for k, r in store.runs(study.name).items()
            if k in keys and r.status == "ok" and r.duration is not None
        ]
    lines = []
    if durations:
        total = sum(durations)
        lines.append(
            f"Run time: {len(durations)} runs, {total:.0f} s in all, {total / len(durations):.1f} s per "
            "run on average (each run a fresh process with one thread, start-up included)."
        )
    lines.append(
        f"This invocation: {seconds:.1f} s with {jobs} jobs; {summary.ok + summary.failed} runs "
        f"executed, {summary.skipped} found in the database."
    )
    return lines


#: (row suppressed at evaluation, the retrained row that removes the same component)
STAGE_PAIRS = (
    ("(A') 1 of 4 heads at eval", "(A) h=1"),
    ("(E') positions removed at eval", "(E) none"),
)


def stage_lines(analysis: Any) -> list[str]:
    """What the two kinds of rows mean, with this study's numbers side by side."""
    p = analysis.primary
    labels = {r.label: r for r in analysis.rows}
    lines = [
        "Retrained rows ((A), (D), (E)) train a new model without the component: they ask whether a model "
        "without it can learn the task. Rows at eval ((A'), (E')) take each seed's trained base model and "
        "suppress the component only while evaluating it: they ask whether the trained model relies on it. "
        "The two answer different questions, so neither stands in for the other.",
        "The Δ of a row at eval is to the base and paired by seed (the same trained model evaluated twice: "
        "paired t CI, sign-flip permutation test); the Δ of a retrained row is unpaired (Welch).",
    ]
    for at_eval, retrained in STAGE_PAIRS:
        if at_eval in labels and retrained in labels:
            e, r = labels[at_eval].metrics[p], labels[retrained].metrics[p]
            if e.n and r.n:
                lines.append(
                    f"{p}: {at_eval} {e.mean:.1f} (Δ {e.delta:+.1f} paired) vs {retrained} {r.mean:.1f} "
                    f"(Δ {r.delta:+.1f} Welch); base {analysis.base.metrics[p].mean:.1f}."
                )
    return lines


def _html_list(lines: list[str]) -> str:
    return "<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>"


def write_reports(
    study: Study, db: Path, out: Path, timing: list[str], *, directions: bool = True
) -> tuple[Any, list[str]]:
    """Analyse the stored runs and write ``report.md`` and ``report.html`` into ``out``;
    return the analysis and the lines checking the expected directions (when ``directions``)."""
    from evalab.ablation import analyze
    from evalab.examples.sort_digits.directions import check_directions
    from evalab.io import write_text_atomic
    from evalab.report import render_html, render_markdown

    analysis = analyze(study, db)
    checks = [d.line() for d in check_directions(analysis)] if directions else []
    protocol = protocol_lines(study)
    stages = stage_lines(analysis) if any(r.stage == "eval" for r in analysis.rows) else []
    sections = [("Protocol", _html_list(protocol + timing))]
    if stages:
        sections.append(("Retrained or suppressed at evaluation", _html_list(stages)))
    if checks:
        sections.append(("The expected directions at this budget", _html_list(checks)))
    write_text_atomic(out / "report.html", render_html(analysis, extra_sections=sections))
    md = render_markdown(analysis)
    md += "\n### Protocol\n\n" + "".join(f"- {x}\n" for x in protocol + timing)
    if stages:
        md += "\n### Retrained or suppressed at evaluation\n\n" + "".join(
            f"- {x}\n" for x in stages
        )
    if checks:
        md += "\n### The expected directions at this budget\n\n" + "".join(
            f"- {x}\n" for x in checks
        )
    write_text_atomic(out / "report.md", md)
    write_manifest(out, REPORTS)
    return analysis, checks


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_manifest(folder: Path, reports: tuple[str, ...] = ()) -> None:
    """Record in ``folder`` that the demo owns it, with the digest of each report it wrote."""
    import json

    from evalab.io import write_text_atomic

    digests = {name: _sha256(folder / name) for name in reports}
    write_text_atomic(
        folder / MANIFEST,
        json.dumps({"written_by": "evalab demo", "reports": digests}, indent=1) + "\n",
    )


def check_demo_folder(out_dir: str) -> None:
    """Refuse an ``--out-dir`` that holds files the demo did not write: a folder without the
    demo's manifest must be empty; with it, only the store, its run folders and the reports
    the manifest lists (unchanged since) may be there, and those the demo may replace."""
    import json

    from evalab.errors import SettingsError

    folder = Path(out_dir)
    if not folder.is_dir():
        return
    entries = sorted(p.name for p in folder.iterdir())
    manifest: dict[str, Any] = {}
    if MANIFEST in entries:
        try:
            manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8")).get(
                "reports", {}
            )
        except (ValueError, OSError, AttributeError):
            raise SettingsError(
                f"--out-dir {out_dir}: {MANIFEST} is not the demo's manifest; give another folder"
            ) from None
    elif entries:
        raise SettingsError(
            f"--out-dir {out_dir} holds files the demo did not write ({', '.join(entries[:3])}"
            f"{', ...' if len(entries) > 3 else ''}); give a new or empty folder"
        )
    foreign = [e for e in entries if e != MANIFEST and e not in OWN_ENTRIES and e not in manifest]
    changed = [
        e
        for e in entries
        if e in manifest and (not (folder / e).is_file() or _sha256(folder / e) != manifest[e])
    ]
    if foreign or changed:
        what = (
            f"{', '.join(foreign)} (not written by the demo)"
            if foreign
            else f"{', '.join(changed)} (changed since the demo wrote it)"
        )
        raise SettingsError(
            f"--out-dir {out_dir}: {what} would be replaced; move it or give another folder"
        )


def demo_folder(out_dir: str) -> Path:
    """The demo's folder, checked and created, with its manifest written first (so an
    interrupted demo can be resumed in it)."""
    from evalab.cli.output import check_out
    from evalab.errors import InputError, SettingsError

    check_out(out_dir, [], option="--out-dir", folder=True)
    check_demo_folder(out_dir)
    folder = Path(out_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / MANIFEST).exists():
            write_manifest(folder)
    except (OSError, InputError) as exc:
        raise SettingsError(
            f"--out-dir {out_dir}: cannot create the folder ({getattr(exc, 'strerror', None) or exc})"
        ) from exc
    return folder


def print_outcome(
    directions: list[str], summary: Any, timing: list[str], seconds: float, jobs: int, folder: Path
) -> None:
    """The expected directions (stdout), then the runs, the timing and the files written (stderr)."""
    if directions:
        typer.echo(
            "\nThe expected directions (95% CIs over seeds: Welch between trained rows, paired for rows at eval):"
        )
        for line in directions:
            typer.echo(f"  {line}")
    sys.stderr.write(
        f"study {summary.study!r}: {summary.planned} runs, {summary.skipped} already stored, "
        f"{summary.ok} ok, {summary.failed} failed; {seconds:.1f} s with {jobs} jobs\n"
        + "".join(f"{line}\n" for line in timing[:-1])
        + f"wrote {folder / 'report.html'}, {folder / 'report.md'} (runs in {folder / 'studies.db'})\n"
    )


@app.command()
def demo(
    out_dir: Annotated[
        str,
        typer.Option(
            "--out-dir", help="Folder for report.html, report.md and the run database studies.db."
        ),
    ] = DEFAULT_OUT,
    jobs: Annotated[
        int | None,
        typer.Option(
            "-j",
            "--jobs",
            help="Runs at once (one process and one thread each). Default: the number of CPUs.",
        ),
    ] = None,
    quick: Annotated[
        bool,
        typer.Option(
            "--quick", help="Smoke test: base and 1 head, 2 seeds, 30 steps (seconds, not minutes)."
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No progress bar.")] = False,
) -> None:
    """Run the built-in study: a small transformer that sorts digits, ablated like Table 3
    of "Attention Is All You Need" (heads, dropout, label smoothing, positional encoding),
    3 seeds per row; print the table and write OUT_DIR/report.html and OUT_DIR/report.md."""
    from evalab.ablation import load_study, run_study
    from evalab.errors import SettingsError, require
    from evalab.examples.sort_digits import study_path
    from evalab.report import render_table

    # fail once, up front, rather than 24 times inside the runs
    require("torch", what="evalab demo (the sorting transformer)", extra="lm")
    n_jobs = jobs if jobs is not None else max(1, os.cpu_count() or 1)
    if n_jobs < 1:
        raise SettingsError(f"--jobs must be >= 1, got {n_jobs}")
    folder = demo_folder(out_dir)
    db = folder / "studies.db"

    study = load_study(study_path())
    if quick:
        study = quick_study(study)
    start = time.perf_counter()
    summary = run_study(study, db, jobs=n_jobs, executor="local", progress=not quiet)
    seconds = time.perf_counter() - start
    # --quick's 30 steps teach nothing about the findings: its report does not test them
    timing = timing_lines(study, db, summary, seconds, n_jobs)
    analysis, directions = write_reports(study, db, folder, timing, directions=not quick)
    render_table(analysis)
    print_outcome(directions, summary, timing, seconds, n_jobs, folder)
