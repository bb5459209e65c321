"""Text renderers of a study analysis: terminal (rich), Markdown, LaTeX and JSON.

All four are built from one table model (:func:`main_table`, :func:`secondary_table`,
:func:`effect_lines`), so they cannot drift apart: the same cells, the same rounding.
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalab.ablation.analysis import MetricStats, RowAnalysis, StudyAnalysis

DASH = "–"


def decimals_for(analysis: StudyAnalysis, metric: str) -> int:
    """Decimals for a metric: 2 for values >= 10 (BLEU, accuracy in %), 3 from 1, else 4."""
    means = [abs(r.metrics[metric].mean) for r in analysis.rows if r.metrics[metric].n]
    top = max(means, default=0.0)
    return 2 if top >= 10 else 3 if top >= 1 else 4


def fmt(x: float | None, d: int, signed: bool = False) -> str:
    """A number with ``d`` decimals, ``–`` for None/NaN."""
    if x is None or not math.isfinite(x):
        return DASH
    text = f"{x:+.{d}f}" if signed else f"{x:.{d}f}"
    return f"{0:.{d}f}" if text.lstrip("+-") == f"{0:.{d}f}" and signed else text


def fmt_p(p: float | None) -> str:
    """A p-value: 3 decimals, ``<0.001`` below."""
    if p is None or not math.isfinite(p):
        return DASH
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def mean_cell(m: MetricStats, d: int) -> str:
    """``mean ± sd`` (``mean`` alone for one seed, ``–`` for none)."""
    if m.n == 0:
        return DASH
    if m.n == 1 or not math.isfinite(m.std):
        return fmt(m.mean, d)
    return f"{fmt(m.mean, d)} ± {fmt(m.std, d)}"


def ci_cell(low: float | None, high: float | None, d: int) -> str:
    """``[low, high]``."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return DASH
    return f"[{fmt(low, d)}, {fmt(high, d)}]"


def delta_cell(m: MetricStats, d: int) -> str:
    """``Δ [CI]`` with signed numbers; ``= base`` for the base row."""
    if m.delta is None:
        return "= base" if m.n else DASH
    ci = ci_cell(m.delta_low, m.delta_high, d)
    return fmt(m.delta, d, signed=True) + ("" if ci == DASH else f" {ci}")


def seeds_cell(r: RowAnalysis) -> str:
    """``ok/planned``, with ``!`` when runs are missing."""
    return f"{r.ok}/{r.planned}" + (" !" if r.ok < r.planned else "")


def flag_cell(m: MetricStats) -> str:
    """The too-few-seeds flag with the seeds a power analysis asks for."""
    if m.delta is None or not m.too_few_seeds:
        return ""
    if m.n < 2:
        return "few seeds (need >= 2)"
    if not m.seeds_needed:
        return "few seeds (Δ ≈ 0: no seed count separates it)"
    return f"few seeds (need {m.seeds_needed})"


def stage_cell(r: RowAnalysis) -> str:
    """``trained``, or for a row suppressed at evaluation the trained row it evaluates."""
    return f"at eval of {r.parent} (paired Δ)" if r.stage == "eval" else "trained"


def left_columns(header: list[str]) -> int:
    """Leading text columns of the main table: Row, Description (and Stage when present)."""
    return 3 if header[1:2] == ["Stage"] else 2


def main_table(a: StudyAnalysis, compact: bool = False) -> tuple[list[str], list[list[str]]]:
    """The main table: each row with every metric's mean ± sd, the primary's CI, Δ, p.

    ``compact`` (the terminal) leaves out the column of the primary's CI around its mean.
    """
    p = a.primary
    dp = decimals_for(a, p)
    staged = any(r.stage == "eval" for r in a.rows)
    header = ["Row", *(["Stage"] if staged else []), "Description", "Seeds"]
    for m in a.metrics:
        arrow = "↑" if a.higher_is_better.get(m, True) else "↓"
        header.append(f"{m} {arrow} (mean ± sd)")
    pct = round(a.settings.get("confidence", 0.95) * 100)
    header += [] if compact else [f"{p} {pct}% CI"]
    header += [f"Δ {p} [{pct}% CI]", "p (t)", "p (perm)"]
    if a.settings.get("aso"):
        header.append("ASO ε_min")
    header.append("Note")
    header += list(a.reference_columns)
    body = []
    for r in a.rows:
        ms = r.metrics[p]
        cells = [r.label, *([stage_cell(r)] if staged else []), r.description, seeds_cell(r)]
        cells += [mean_cell(r.metrics[m], decimals_for(a, m)) for m in a.metrics]
        cells += [] if compact else [ci_cell(ms.ci_low, ms.ci_high, dp)]
        cells += [delta_cell(ms, dp), fmt_p(ms.p_welch), fmt_p(ms.p_perm)]
        if a.settings.get("aso"):
            cells.append(fmt(ms.aso_eps, 2))
        cells.append(flag_cell(ms))
        cells += [fmt(r.reference.get(c), dp) for c in a.reference_columns]
        body.append(cells)
    return header, body


def secondary_table(a: StudyAnalysis) -> tuple[list[str], list[list[str]]] | None:
    """Δ, CI and p-values of the metrics other than the primary (None when there are none)."""
    others = [m for m in a.metrics if m != a.primary]
    if not others:
        return None
    header = ["Row"]
    for m in others:
        header += [f"Δ {m} [CI]", f"p (t) {m}", f"p (perm) {m}", f"note {m}"]
    body = []
    for r in a.rows[1:]:
        cells = [r.label]
        for m in others:
            ms = r.metrics[m]
            cells += [delta_cell(ms, decimals_for(a, m)), fmt_p(ms.p_welch), fmt_p(ms.p_perm), flag_cell(ms)]
        body.append(cells)
    return header, body


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
            if math.isfinite(c.low) and math.isfinite(c.high):
                extra = f"CI {ci_cell(c.low, c.high, d)}, p (t) {fmt_p(c.p)}"
            lines.append((c.kind, c.name, c.arithmetic, extra))
        out.append((m, lines))
    return out


def missing_lines(a: StudyAnalysis) -> list[str]:
    """One line per missing run: row, seed, status and error."""
    lines = []
    for r in a.rows:
        if r.kind == "grid" and not r.changes:
            continue  # the base grid cell has the base's runs, listed once
        for f in r.missing:
            what = f"failed after {f.attempts} attempt(s): {f.error}" if f.status == "failed" else "not run"
            lines.append(f"{r.label} seed {f.seed}: {what}")
    return lines


def title(a: StudyAnalysis) -> str:
    return f"Ablation study {a.study!r}" + (f": {a.description}" if a.description else "")


# --------------------------------------------------------------------------- terminal


def render_table(analysis: StudyAnalysis, console: Any = None) -> None:
    """Print the analysis as rich tables (to ``console``, default stdout)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    header, body = main_table(analysis, compact=True)
    if console is None:
        import shutil
        import sys

        # piped output is not cut to 80 columns: a table row stays one line in a log file
        natural = sum(max(len(h), *(len(r[i]) for r in body)) + 3 for i, h in enumerate(header)) + 1
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else max(100, natural)
        console = Console(width=width, soft_wrap=False)
    con = console
    t = Table(title=Text(title(analysis)), show_header=True, header_style="bold")
    for i, h in enumerate(header):
        t.add_column(Text(h), justify="left" if i < left_columns(header) or h == "Note" else "right")
    for row in body:
        t.add_row(*(Text(c) for c in row))
    con.print(t)
    sec = secondary_table(analysis)
    if sec:
        t2 = Table(show_header=True, header_style="bold")
        for i, h in enumerate(sec[0]):
            t2.add_column(Text(h), justify="left" if i == 0 else "right")
        for row in sec[1]:
            t2.add_row(*(Text(c) for c in row))
        con.print(t2)
    for metric, lines in effect_lines(analysis):
        con.print(Text(f"Grid effects on {metric}:", style="bold"))
        for kind, name, arith, extra in lines:
            con.print(Text(f"  {kind:<11} {name}: {arith}" + (f"  ({extra})" if extra else "")), soft_wrap=True)
    missing = missing_lines(analysis)
    if missing:
        con.print(Text("Missing runs:", style="bold red"))
        for line in missing:
            con.print(Text(f"  {line}"), soft_wrap=True)
    for note in analysis.notes:
        con.print(Text(note, style="dim"), soft_wrap=True)


# --------------------------------------------------------------------------- Markdown


def _md_escape(text: str) -> str:
    # "<" before a letter, "/", "!" or "?" could open raw HTML in a Markdown viewer
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
    return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", text)


def _md_table(header: list[str], body: list[list[str]], left: int = 2) -> list[str]:
    lines = ["| " + " | ".join(_md_escape(h) for h in header) + " |"]
    lines.append("|" + "|".join(":--" if i < left or h == "Note" else "--:" for i, h in enumerate(header)) + "|")
    lines += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in body]
    return lines


def render_markdown(analysis: StudyAnalysis) -> str:
    """The analysis as GitHub-flavoured Markdown (tables, effects, missing runs, notes)."""
    a = analysis
    out = [f"## {_md_escape(title(a))}", ""]
    out.append(f"Primary metric: **{_md_escape(a.primary)}**; seeds: {', '.join(map(str, a.seeds))}; "
               f"code version `{a.code_version}`.")
    out.append("")
    header, body = main_table(a)
    out += _md_table(header, body, left_columns(header))
    sec = secondary_table(a)
    if sec:
        out += ["", "Other metrics:", "", *_md_table(*sec, left=1)]
    for metric, lines in effect_lines(a):
        out += ["", f"### Grid effects on {_md_escape(metric)}", ""]
        out += [f"- {kind}: {_md_escape(name)}: `{arith}`" + (f" ({extra})" if extra else "") for kind, name, arith, extra in lines]
    missing = missing_lines(a)
    if missing:
        out += ["", "### Missing runs", ""] + [f"- {_md_escape(line)}" for line in missing]
    out += ["", *(f"> {_md_escape(n)}  " for n in a.notes)]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- LaTeX


def render_latex(analysis: StudyAnalysis) -> str:
    """A booktabs table like Table 3 (mean ± sd per metric, Δ and p of the primary),
    followed by a table of the grid effects with their arithmetic."""
    from evalab.report.latex import latex_table, latex_text

    header, body = main_table(analysis)
    keep = [i for i, h in enumerate(header) if h not in ("Note",)]
    left = left_columns(header)
    flagged = [r[0] for r in body if r[header.index("Note")]]
    cap = f"{title(analysis)}. Mean ± sd over seeds; Δ to the base with a Welch CI."
    if left == 3:
        cap += " Rows at eval: not retrained; Δ to the trained row they evaluate, paired by seed (paired t CI)."
    if flagged:
        cap += " Too few seeds to separate Δ from seed noise: " + ", ".join(flagged) + "."
    text = latex_table(
        [header[i] for i in keep], [[row[i] for i in keep] for row in body], cap,
        columns="l" * left + "r" * (len(keep) - left), small=True, cell=latex_text,
    )
    effects = effect_lines(analysis)
    if effects:
        rows = [[metric, name, arith] for metric, ls in effects for _kind, name, arith, _extra in ls]
        text += "\n" + latex_table(
            ["Metric", "Effect", "Arithmetic"], rows, "Grid effects of " + analysis.study,
            columns="lll", small=True, cell=latex_text,
        )
    return text


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
    """The full analysis as JSON (NaN and infinities become null)."""
    return json.dumps(_clean(analysis.to_dict()), indent=2, ensure_ascii=False) + "\n"
