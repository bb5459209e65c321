"""Text renderers of a study analysis: terminal (rich), Markdown, LaTeX, CSV/TSV and JSON.

All of them, and the HTML page, are built from one table model (:func:`report_tables`:
Table 3's layout, then one Δ table per metric; :func:`row_notes`, :func:`effect_lines`,
:func:`missing_lines`, :func:`report_notes`), so they cannot drift apart: the same rows,
columns, cells, rounding and notes in every format.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import TYPE_CHECKING, Any

from evalab.report import terminal
from evalab.report.columns import config_cells, config_header, config_keys, config_note
from evalab.report.delimited import delimited_tables
from evalab.report.markdown import markdown_table, md_code, md_escape
from evalab.report.notes import note_lines
from evalab.report.numbers import interval, number, p_value
from evalab.report.table import Interval, Number, Table, TableCell, table_data

if TYPE_CHECKING:
    from evalab.ablation.analysis.analyze import MetricStats, RowAnalysis, StudyAnalysis
    from evalab.report.latex import LatexLayout

#: the heading of the component view
COMPONENTS = "Per component: retrained and at evaluation"


def decimals_for(analysis: StudyAnalysis, metric: str) -> int:
    """Decimals for a metric: 2 for values >= 10 (BLEU, accuracy in %), 3 from 1, else 4."""
    top = analysis.largest_mean[metric]
    return 2 if top >= 10 else 3 if top >= 1 else 4


def mean_cell(m: MetricStats, d: int) -> Number:
    """``mean ± sd`` (``mean`` alone for one seed, the no-value symbol for none)."""
    return Number(m.mean if m.n else None, d, spread=m.std if m.n > 1 else None)


def delta_value(m: MetricStats, d: int) -> TableCell:
    """Δ with its sign; ``= base`` for the base row (no value when nothing to compare)."""
    if m.delta is None and m.n and m.vs == "" and not m.too_few_seeds:
        return "= base"
    return Number(m.delta, d, signed=True)


def row_name(r: RowAnalysis) -> str:
    """The row's label, with those of the rows that are the same runs: ``(A) = heads=1, dropout=0.1``."""
    return " = ".join(r.labels)


#: why a CI or p is not shown (the analysis's reason codes)
ABSENT_WORDS = {
    "no_runs": "no finished runs",
    "one_seed": "fewer than two seeds",
    "no_seed_spread": "no seed spread",
    "no_common_seeds": "no seed that both rows finished",
    "missing_cells": "a cell has no finished run",
}

#: a component view's reading (the analysis's codes)
READING_WORDS = {
    "needed_to_learn": "needed to learn: a model retrained without it is worse",
    "relied_on_when_trained": "relied on when trained: a model retrained without it is not separated from the base, "
    "yet the trained model loses without it at evaluation",
    "needed_and_relied_on": "needed to learn and relied on when trained: both Δs are losses separated from seed noise",
    "neither": "neither: no Δ is a loss separated from seed noise",
}


def vs_cell(m: MetricStats) -> str:
    """What the row's Δ is taken to: ``base``, or the trained row an eval row evaluates; ``paired`` when by seed."""
    return "" if m.delta is None else (m.vs or "base") + (", paired" if m.paired else "")


def seeds_cell(r: RowAnalysis) -> str:
    """``ok/planned``, with ``!`` when runs are missing."""
    return f"{r.ok}/{r.planned}" + (" !" if r.ok < r.planned else "")


def flag_cell(m: MetricStats) -> str:
    """``negligible`` (Δ inside the study's min_effect), or the too-few-seeds flag with the
    seeds a power analysis asks for."""
    if m.delta is None:
        return ""
    if m.negligible:
        return "negligible"
    if m.no_seed_spread:
        return "no seed spread"
    if not m.too_few_seeds:
        return ""
    if m.n < 2:
        return "few seeds (need >= 2)"
    if not m.seeds_needed:
        return "few seeds (Δ ≈ 0: no seed count separates it)"
    return f"few seeds (need {m.seeds_needed})"


def stage_cell(r: RowAnalysis) -> str:
    """``trained``, or for a row suppressed at evaluation the trained row it evaluates."""
    return f"at eval of {r.parent} (paired Δ)" if r.stage == "eval" else "trained"


def main_table(a: StudyAnalysis) -> Table:
    """Table 3's layout: the row, its configuration columns (blank = as in the base), the
    seeds, every metric's mean ± sd over seeds, then the study's reference columns."""
    staged = any(r.stage == "eval" for r in a.rows)
    keys = config_keys(a)
    header = ["Row", *(["Stage"] if staged else []), *config_header(a, keys), "Seeds"]
    header += [
        f"{m} {'↑' if a.higher_is_better.get(m, True) else '↓'} (mean ± sd)" for m in a.metrics
    ]
    header += list(a.reference_columns)
    dp = decimals_for(a, a.primary)
    body = []
    for r in a.rows:
        cells: list[TableCell] = [
            row_name(r),
            *([stage_cell(r)] if staged else []),
            *config_cells(a, r, keys),
            seeds_cell(r),
        ]
        cells += [mean_cell(r.metrics[m], decimals_for(a, m)) for m in a.metrics]
        cells += [Number(r.reference.get(c), dp) for c in a.reference_columns]
        body.append(cells)
    return Table(header, body, caption="Results")


def _any(a: StudyAnalysis, metric: str, attr: str) -> bool:
    return any(getattr(r.metrics[metric], attr) is not None for r in a.rows)


def delta_table(a: StudyAnalysis, metric: str) -> Table:
    """One metric's uncertainty: the mean's CI, Δ to the base with its intervals (over
    seeds; over test examples and over both where the runs have per-example data), the
    p-values and the flag. Columns that no row fills (no per-example data, no Holm
    correction, no ASO) are left out."""
    pct = round(a.settings.get("confidence", 0.95) * 100)
    d = decimals_for(a, metric)
    examples, both = _any(a, metric, "examples_low"), _any(a, metric, "both_low")
    level_examples, n_examples = _any(a, metric, "mean_examples_low"), _any(a, metric, "n_examples")
    p_both, p_holm, aso = (
        _any(a, metric, "p_both"),
        _any(a, metric, "p_holm"),
        bool(a.settings.get("aso")),
    )
    ms_all = [r.metrics[metric] for r in a.rows]
    to_other = any(m.delta is not None and m.vs not in ("", "base") for m in ms_all)
    to_base = any(m.to_base is not None for m in ms_all)
    header = ["Row", *(["Δ to"] if to_other else []), f"mean {pct}% CI (seeds)"]
    header += [f"mean {pct}% CI (test set)"] if level_examples else []
    header += ["test examples"] if n_examples else []
    header += ["Δ", f"Δ {pct}% CI (seeds)"] + ([f"Δ {pct}% CI (test set)"] if examples else [])
    header += [f"Δ {pct}% CI (seeds + test set)"] if both else []
    header += (
        ["p (t)", "p (perm)"]
        + (["p (2-level)"] if p_both else [])
        + (["p (Holm)"] if p_holm else [])
    )
    header += [f"Δ to base {pct}% CI (seeds)", "p (t) to base"] if to_base else []
    header += (["ASO ε_min"] if aso else []) + ["Note"]
    body = []
    for r in a.rows:
        m = r.metrics[metric]
        cells: list[TableCell] = [row_name(r), *([vs_cell(m)] if to_other else [])]
        cells += [Interval(m.ci_low, m.ci_high, d)]
        cells += [Interval(m.mean_examples_low, m.mean_examples_high, d)] if level_examples else []
        cells += [Number(m.n_examples, 0)] if n_examples else []
        cells += [delta_value(m, d), Interval(m.delta_low, m.delta_high, d)]
        cells += [Interval(m.examples_low, m.examples_high, d)] if examples else []
        cells += [Interval(m.both_low, m.both_high, d)] if both else []
        ps = [m.p_welch, m.p_perm, *([m.p_both] if p_both else []), *([m.p_holm] if p_holm else [])]
        cells += [Number(p, 3, p=True) for p in ps]
        cells += _to_base_cells(m, d) if to_base else []
        cells += ([Number(m.aso_eps, 2)] if aso else []) + [flag_cell(m)]
        body.append(cells)
    arrow = "higher" if a.higher_is_better.get(metric, True) else "lower"
    to = (
        "Δ to the row in 'Δ to'"
        + ("; eval rows of other trained rows also to the base" if to_base else "")
        if to_other
        else "Δ to the base"
    )
    return Table(header, body, caption=f"{metric} ({arrow} is better): {to}")


def _to_base_cells(m: MetricStats, d: int) -> list[TableCell]:
    """An eval row's Δ to the base beside its Δ to the trained row it evaluates (blank for other rows)."""
    b = m.to_base
    if b is None:
        return ["", ""]
    delta = number(b.delta, d, signed=True)
    return [
        f"{delta} {interval(b.low, b.high, d)}" + (" paired" if b.paired else ""),
        Number(b.p_t, 3, p=True),
    ]


def report_tables(a: StudyAnalysis) -> list[Table]:
    """Every table of the report, in order: the results, then one Δ table per metric
    (the primary first)."""
    return [
        main_table(a),
        *(delta_table(a, m) for m in [a.primary, *(x for x in a.metrics if x != a.primary)]),
    ]


def row_notes(a: StudyAnalysis) -> list[str]:
    """The rows' descriptions (Table 3's free text), one note per row; grid cells are left
    out: their label and configuration columns already say what they are."""
    return [f"{row_name(r)}: {r.description}" for r in a.rows if r.description and r.kind != "grid"]


def report_notes(a: StudyAnalysis) -> list[str]:
    """The notes under the tables: what the configuration columns are, then the analysis's
    notes in words (:mod:`evalab.report.notes`), then the Holm families."""
    note = config_note(a, config_keys(a))
    return [*([note] if note else []), *note_lines(a), *holm_lines(a)]


def _values_text(values: dict[str, Any]) -> str:
    return (
        ", ".join(
            f"{k} = {json.dumps(v, ensure_ascii=False) if isinstance(v, str | bool) else v}"
            for k, v in values.items()
        )
        or "none"
    )


def condition_lines(a: StudyAnalysis) -> list[str]:
    """What no row changes: the base keys, the [evaluation] defaults, the seeds, the code version."""
    c = a.conditions
    if c is None:
        return []
    lines = [f"Base configuration keys no row changes: {_values_text(c.fixed)}."]
    if c.evaluation:
        changed = [k for k in c.evaluation if k not in c.evaluation_fixed]
        lines.append(
            f"[evaluation] defaults (every trained row is evaluated with them): {_values_text(c.evaluation)}"
            + (f"; eval rows change {', '.join(changed)} (Stage column)." if changed else ".")
        )
    lines.append(
        f"Seeds: {', '.join(map(str, c.seeds))} ({len(c.seeds)} per row, the same for every row)."
    )
    how = (
        "written in the study file" if c.code_pinned else "hash of the code the entry points import"
    )
    lines.append(f"Code version: {c.code_version} ({how}).")
    return lines


def definition_lines(a: StudyAnalysis) -> list[str]:
    """Each metric's definition (signature, or the study's declared text) and its bounds."""
    out = []
    for d in a.definitions:
        what = {
            "signature": f"computed by evalab, signature {d.text}",
            "declared": d.text,
            "undeclared": "returned by the run; the study declares no definition ([study] definitions)",
        }[d.kind]
        if d.bounds is not None:
            where = (
                "declared in the study" if d.bounds_from == "study" else "the metric's own range"
            )
            what += f"; bounds [{d.bounds[0]:g}, {d.bounds[1]:g}] ({where})"
        out.append(f"{d.metric}: {what}.")
    return out


def opening_sections(a: StudyAnalysis) -> list[tuple[str, list[str]]]:
    """The sections every format opens with: the conditions held fixed and the metrics' definitions."""
    return [
        (h, lines)
        for h, lines in (
            ("Conditions held fixed", condition_lines(a)),
            ("Metrics", definition_lines(a)),
        )
        if lines
    ]


def holm_lines(a: StudyAnalysis) -> list[str]:
    """Each Holm family: its metric, what it compares, its size and its members."""
    what = {
        "train": "trained rows vs the base",
        "eval": "eval rows vs the trained row they evaluate",
    }
    lines = [
        f"Holm family for {f.metric}, {what[f.stage]}: {f.size} comparison{'s' * (f.size != 1)} "
        f"({'; '.join(row_name(a.row(x)) for x in f.members)})."
        for f in a.holm
    ]
    if lines and any(a.contrasts.values()):
        lines.append(
            "Grid effects' p (t) are not Holm-adjusted: a removal is the Δ of the row it equals (adjusted "
            "there); additions, interactions and main effects are hypotheses outside these families."
        )
    return lines


def _side_text(
    label: str,
    vs: str,
    paired: bool,
    delta: float | None,
    low: float | None,
    high: float | None,
    p: float | None,
    d: int,
) -> str:
    return (
        f"{label}: Δ {number(delta, d, signed=True)} {interval(low, high, d)} to {vs or 'base'}"
        f"{' (paired)' if paired else ''}, p {p_value(p)}"
    )


def component_lines(a: StudyAnalysis) -> list[str]:
    """One line per component with a retrained row and an eval row: both Δs and the reading."""
    out = []
    for c in a.components:
        d = decimals_for(a, c.metric)
        r, e = c.retrained, c.at_eval
        out.append(
            f"{c.component} ({c.metric}): retrained {_side_text(r.label, r.vs, r.paired, r.delta, r.low, r.high, r.p, d)}; "
            f"at eval {_side_text(e.label, e.vs, e.paired, e.delta, e.low, e.high, e.p, d)}; "
            f"reading: {READING_WORDS[c.reading]} (α = {c.alpha:g})."
        )
    return out


def effect_lines(a: StudyAnalysis) -> list[tuple[str, list[tuple[str, str, str, str]]]]:
    """Per metric (primary first): (kind, name, arithmetic, CI and p) of every grid effect."""
    out = []
    for m in [a.primary, *(x for x in a.metrics if x != a.primary)]:
        cs = a.contrasts.get(m, [])
        if not cs:
            continue
        d = decimals_for(a, m)
        lines = []
        for c in cs:
            extra = ""
            if c.absent and c.absent != "missing_cells":  # the t-test is undefined: no CI, no p (t)
                extra = f"{ABSENT_WORDS[c.absent]}: no CI, no p (t)"
            elif c.low is not None and c.high is not None:
                extra = f"CI {interval(c.low, c.high, d)}, p (t) {p_value(c.p)}" + (
                    ", paired by seed" if c.paired else ""
                )
            lines.append((c.kind, c.name, c.arithmetic, extra))
        out.append((m, lines))
    return out


def effect_text(kind: str, name: str, arith: str, extra: str) -> str:
    """One grid effect as a line: ``kind: name: arithmetic (CI and p)``."""
    return f"{kind}: {name}: {arith}" + (f" ({extra})" if extra else "")


def missing_lines(a: StudyAnalysis) -> list[str]:
    """One line per missing run: row, seed, status and error."""
    lines = []
    for r in a.rows:
        if r.kind == "grid" and not r.changes:
            continue  # the base grid cell has the base's runs, listed once
        for f in r.missing:
            what = (
                f"failed after {f.attempts} attempt(s): {f.error}"
                if f.status == "failed"
                else "not run"
            )
            lines.append(f"{row_name(r)} seed {f.seed}: {what}")
    return lines


def title(a: StudyAnalysis) -> str:
    return f"Ablation study {a.study!r}" + (f": {a.description}" if a.description else "")


# --------------------------------------------------------------------------- terminal


def natural_width(analysis: StudyAnalysis) -> int:
    """Characters a terminal needs to print every table without wrapping a cell (at least 100)."""
    return max(100, terminal.natural_width(report_tables(analysis)))


def render_table(analysis: StudyAnalysis, console: Any = None) -> None:
    """Print the analysis as rich tables (to ``console``, default stdout)."""
    from rich.console import Console
    from rich.text import Text

    tables = report_tables(analysis)
    if console is None:
        import shutil
        import sys

        # piped output is not cut to 80 columns: a table row stays one line in a log file
        width = (
            shutil.get_terminal_size().columns if sys.stdout.isatty() else natural_width(analysis)
        )
        console = Console(width=width, soft_wrap=False)
    con = console
    con.print(Text(title(analysis), style="bold"), soft_wrap=True)
    for heading, lines in opening_sections(analysis):
        con.print(Text(f"{heading}:", style="bold"))
        for line in lines:
            con.print(Text(f"  {line}"), soft_wrap=True)
    for i, t in enumerate(tables):
        if i == 1 and component_lines(analysis):
            con.print(Text(f"{COMPONENTS}:", style="bold"))
            for line in component_lines(analysis):
                con.print(Text(f"  {line}"), soft_wrap=True)
        con.print(terminal.rich_table(t))
        if i == 0:
            for note in row_notes(analysis):
                con.print(Text(f"  {note}"), soft_wrap=True)
    for metric, effects in effect_lines(analysis):
        con.print(Text(f"Grid effects on {metric}:", style="bold"))
        for kind, name, arith, extra in effects:
            con.print(
                Text(f"  {kind:<11} {name}: {arith}" + (f"  ({extra})" if extra else "")),
                soft_wrap=True,
            )
    missing = missing_lines(analysis)
    if missing:
        con.print(Text("Missing runs:", style="bold red"))
        for line in missing:
            con.print(Text(f"  {line}"), soft_wrap=True)
    for note in report_notes(analysis):
        con.print(Text(note, style="dim"), soft_wrap=True)


# --------------------------------------------------------------------------- Markdown


def render_markdown(analysis: StudyAnalysis) -> str:
    """The analysis as GitHub-flavoured Markdown (tables, row notes, effects, missing runs, notes)."""
    a = analysis
    out = [f"## {md_escape(title(a))}", ""]
    out.append(
        f"Primary metric: **{md_escape(a.primary)}**; seeds: {', '.join(map(str, a.seeds))}; "
        f"code version {md_code(a.code_version)}."
    )
    for heading, lines in opening_sections(a):
        out += ["", f"### {heading}", "", *(f"- {md_escape(x)}" for x in lines)]
    for i, t in enumerate(report_tables(a)):
        out += ["", f"### {md_escape(t.caption)}", "", markdown_table(t).rstrip("\n")]
        if i == 0 and row_notes(a):
            out += ["", *(f"- {md_escape(n)}" for n in row_notes(a))]
        if i == 0 and component_lines(a):
            out += [
                "",
                f"### {COMPONENTS}",
                "",
                *(f"- {md_escape(x)}" for x in component_lines(a)),
            ]
    for metric, effects in effect_lines(a):
        out += ["", f"### Grid effects on {md_escape(metric)}", ""]
        out += [
            f"- {kind}: {md_escape(name)}: {md_code(arith)}" + (f" ({extra})" if extra else "")
            for kind, name, arith, extra in effects
        ]
    missing = missing_lines(a)
    if missing:
        out += ["", "### Missing runs", ""] + [f"- {md_escape(line)}" for line in missing]
    out += ["", *(f"> {md_escape(n)}  " for n in report_notes(a))]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- LaTeX


def render_latex(analysis: StudyAnalysis, layout: LatexLayout | None = None) -> str:
    """booktabs tables like Table 3 (configuration columns beside mean ± sd per metric, one
    table), one Δ table per metric, then the row notes, the grid effects with their
    arithmetic, the missing runs and the notes as lists: the same content as the other
    formats. Every table is fitted to a two-column paper (``report.latex.fit_table``); the
    first line names the packages the preamble needs."""
    from evalab.report.latex import WHOLE, needs_line, table_tex

    layout = layout or WHOLE
    a = analysis
    out = ["% evalab ablation report\n"]
    out += [_latex_list(heading, lines) for heading, lines in opening_sections(a)]
    packages: set[str] = set()
    for i, t in enumerate(report_tables(a)):
        cap = (
            f"{title(a)}. Mean ± sd over seeds; blank = as in the base row."
            if i == 0
            else t.caption + "."
        )
        if i == 0 and any(r.stage == "eval" for r in a.rows):
            cap += (
                " Rows at eval: not retrained; Δ to the trained row they evaluate, paired by seed."
            )
        tex = table_tex(dataclasses.replace(t, caption=cap), layout, index=i)
        packages |= tex.packages
        out.append(tex.text)
        if i == 0 and row_notes(a):
            out.append(_latex_list("Rows", row_notes(a)))
        if i == 0 and component_lines(a):
            out.append(_latex_list(COMPONENTS, component_lines(a)))
    # a list as in the other formats: the arithmetic is too long for a table column to fit the page
    for metric, lines in effect_lines(a):
        out.append(_latex_list(f"Grid effects on {metric}", [effect_text(*line) for line in lines]))
    missing = missing_lines(a)
    if missing:
        out.append(_latex_list("Missing runs", missing))
    out.append(_latex_list("Notes", report_notes(a)))
    return needs_line(packages) + "\n".join(out)


def _latex_list(heading: str, items: list[str]) -> str:
    from evalab.report.latex import latex_paragraph, latex_text

    # \sloppy: a long token (a path, a hash) stretches the spaces rather than overflowing the
    # line; \item{} so that an item starting with "[" is not read as the item's label
    lines = [rf"\paragraph{{{latex_text(heading)}}}", r"\begin{itemize}\small\sloppy"]
    lines += [rf"\item{{}} {latex_paragraph(x)}" for x in items]
    return "\n".join([*lines, r"\end{itemize}"]) + "\n"


# --------------------------------------------------------------------------- JSON


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def render_json(analysis: StudyAnalysis) -> str:
    """The full analysis as JSON (NaN and infinities become null), with the report's tables
    and notes under ``"report"``."""
    data = analysis.to_dict()
    # "notes": the analysis's notes in words, as ever; "note_values": each one's code and numbers
    data["note_values"], data["notes"] = data["notes"], note_lines(analysis)
    # the rendered tables and notes, cell for cell as the other formats show them
    data["report"] = {
        "opening": [{"heading": h, "lines": lines} for h, lines in opening_sections(analysis)],
        "components": component_lines(analysis),
        "tables": [table_data(t) for t in report_tables(analysis)],
        "row_notes": row_notes(analysis),
        "effects": effect_lines(analysis),
        "missing": missing_lines(analysis),
        "notes": report_notes(analysis),
    }
    return json.dumps(_clean(data), indent=2, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------- CSV and TSV


def render_delimited(analysis: StudyAnalysis, fmt: str) -> str:
    """The report's tables as CSV or TSV (:mod:`evalab.report.delimited`): each followed by
    its heading as a note, the last one by the report's notes."""
    tables = report_tables(analysis)
    last = len(tables) - 1
    return delimited_tables(
        [
            dataclasses.replace(
                t, footer=[t.caption, *(report_notes(analysis) if i == last else [])]
            )
            for i, t in enumerate(tables)
        ],
        fmt,
    )
