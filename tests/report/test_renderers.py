"""Renderers of a study analysis: terminal, Markdown, LaTeX, JSON and the HTML page.

The central test reads every format back (Markdown and terminal tables split on their
separators, LaTeX tabulars on ``&``, the HTML with an HTML parser, JSON as data) and checks
that each carries the same tables (rows, columns, Δs, intervals: cell for cell) and the
same notes as the table model."""

from __future__ import annotations

import dataclasses
import html
import io
import json
import re
from html.parser import HTMLParser

import pytest
from rich.console import Console
from tests.report.conftest import EVIL

from evalab.report import render_html, render_json, render_latex, render_markdown, render_table
from evalab.report.figures import Figure, figure_svg, interval_panel
from evalab.report.latex import LatexLayout, latex_paragraph, latex_text
from evalab.report.markdown import md_escape
from evalab.report.plots import Intervals
from evalab.report.table import table_data
from evalab.report.tables import (
    effect_lines,
    missing_lines,
    report_notes,
    report_tables,
    row_notes,
)

FORMATS = ("terminal", "markdown", "latex", "html", "json")


def texts(table):
    """The table's cells as every format shows them."""
    return table_data(table)["body"]


def terminal_text(a, width: int = 400) -> str:
    buf = io.StringIO()
    render_table(a, Console(file=buf, width=width, soft_wrap=False))
    return buf.getvalue()


def render(a, fmt: str) -> str:
    return {
        "terminal": terminal_text,
        "markdown": render_markdown,
        "latex": render_latex,
        "html": render_html,
        "json": render_json,
    }[fmt](a)


# -- reading each format's tables back ------------------------------------------------------
def _md_unescape(cell: str) -> str:
    text = re.sub(r"\\(.)", r"\1", cell.strip())
    return text.replace("&lt;", "<").replace("&amp;", "&")


def markdown_tables(text: str) -> list[list[list[str]]]:
    tables, current = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            if not re.fullmatch(r"\|(:?--:?\|)+", line):
                current.append([_md_unescape(c) for c in re.split(r"(?<!\\)\|", line)[1:-1]])
        elif current:
            tables.append(current)
            current = []
    return tables


def terminal_tables(text: str) -> list[list[list[str]]]:
    tables, current = [], []
    for line in [*text.splitlines(), ""]:
        sep = "┃" if "┃" in line else "│" if "│" in line else None
        if sep:
            current.append([c.strip() for c in line.split(sep)[1:-1]])
        elif current and line.startswith("└"):
            tables.append(current)
            current = []
    return tables


def latex_tables(text: str) -> list[list[list[str]]]:
    """The report's tables (one ``tabular`` each: written with ``--no-latex-split``), two-line
    headers on one line, the break points of wrapped cells removed."""
    tables = []
    for env in re.findall(r"\\begin\{table\*?\}.*?\\end\{table\*?\}", text, flags=re.S):
        assert "part 1 of" not in env
        block = re.search(r"\\toprule\n(.*?)\\bottomrule", env, flags=re.S)[1]
        block = re.sub(
            r"\\begin\{tabular\}\[b\]\{@\{\}[lr]@\{\}\}(.*?)\\end\{tabular\}",
            lambda m: m[1].replace(r"\\{}", " ").replace(r"\\", " "),
            block,
        ).replace(r"\allowbreak{}", "")
        # a row that starts with "[" or "*" is guarded by "{}" (not an optional argument)
        lines = [
            ln.removesuffix(r" \\").removeprefix("{}")
            for ln in block.splitlines()
            if ln != r"\midrule"
        ]
        tables.append([re.split(r" (?<!\\)& ", ln) for ln in lines])
    return tables


class _HTMLTables(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self._cell: list[str] | None = None
        self._where = ""

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append(("", []))
        elif tag == "tr":
            self.tables[-1][1].append([])
        elif tag in ("td", "th", "caption"):
            self._cell, self._where = [], tag

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][1][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "caption" and self._cell is not None:
            self.tables[-1] = ("".join(self._cell), self.tables[-1][1])
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def html_tables(text: str) -> list[tuple[str, list[list[str]]]]:
    parser = _HTMLTables()
    parser.feed(text)
    return parser.tables


@pytest.mark.parametrize("which", ["analysis_with_test_set", "analysis"])
def test_every_format_carries_the_same_tables_and_notes(which, request):
    a = request.getfixturevalue(which)
    model = report_tables(a)
    expected = [[t.header, *texts(t)] for t in model]
    assert len(model) == 1 + len(a.metrics)
    assert markdown_tables(render_markdown(a))[: len(model)] == expected
    assert terminal_tables(terminal_text(a)) == expected
    assert latex_tables(render_latex(a, LatexLayout(split=False)))[: len(model)] == [
        [[latex_text(c) for c in row] for row in t] for t in expected
    ]
    page = html_tables(render_html(a))
    assert page == [(t.caption, [t.header, *texts(t)]) for t in model]
    data = json.loads(render_json(a))
    assert data["report"]["tables"] == [table_data(t) for t in model]
    assert data["report"]["notes"] == report_notes(a) and data["report"]["row_notes"] == row_notes(
        a
    )
    notes = row_notes(a) + report_notes(a)
    assert len(notes) > 5
    md, tex, page_text, term = render_markdown(a), render_latex(a), render_html(a), terminal_text(a)
    for note in notes:
        assert md_escape(note) in md, note
        assert latex_paragraph(note) in tex, note
        assert html.escape(note) in page_text, note
        assert note in term, note
    effects, missing = effect_lines(a), missing_lines(a)
    assert effects and missing
    assert data["report"]["effects"] == [[m, [list(x) for x in ls]] for m, ls in effects]
    assert data["report"]["missing"] == missing
    for (
        _metric,
        lines,
    ) in effects:  # the grid effects: kind, name, arithmetic, CI and p, in every format
        for kind, name, arith, extra in lines:
            assert f"- {kind}: {md_escape(name)}: `{arith}` ({extra})" in md
            assert f"{kind:<11} {name}: {arith}  ({extra})" in term
            assert (
                f"<b>{html.escape(kind)}</b>: {html.escape(name)}" in page_text
                and html.escape(extra) in page_text
            )
            assert latex_paragraph(f"{kind}: {name}: {arith} ({extra})") in tex
    for line in missing:
        assert (
            f"- {line}" in md
            and line in term
            and html.escape(line) in page_text
            and latex_paragraph(line) in tex
        )


def test_the_delta_tables_show_every_interval_where_present(analysis_with_test_set, analysis):
    a = analysis_with_test_set
    acc = report_tables(a)[1]
    assert acc.header == [
        "Row",
        "mean 95% CI (seeds)",
        "mean 95% CI (test set)",
        "test examples",
        "Δ",
        "Δ 95% CI (seeds)",
        "Δ 95% CI (test set)",
        "Δ 95% CI (seeds + test set)",
        "p (t)",
        "p (perm)",
        "p (2-level)",
        "p (Holm)",
        "ASO ε_min",
        "Note",
    ]
    row = dict(zip(acc.header, texts(acc)[1], strict=True))
    m = a.rows[1].metrics["acc"]
    assert row["Δ"] == f"{m.delta:+.2f}" and row["test examples"] == "500"
    assert row["Δ 95% CI (seeds)"] == f"[{m.delta_low:.2f}, {m.delta_high:.2f}]"
    assert row["Δ 95% CI (test set)"] == f"[{m.delta - 0.5:.2f}, {m.delta + 0.5:.2f}]"
    assert row["Δ 95% CI (seeds + test set)"] == f"[{m.delta - 1.5:.2f}, {m.delta + 1.5:.2f}]"
    notes = {r[0]: r[-1] for r in texts(acc)}
    assert notes["a=false, b=true"] == "negligible" and notes["a=true, b=false"].startswith(
        "few seeds"
    )
    # without per-example data (every study before issue 15): no empty test-set columns
    plain = report_tables(analysis)
    for t in plain:
        assert not any("test" in h or "2-level" in h or "Holm" in h for h in t.header), t.header
    page = render_html(analysis)
    assert "test examples" not in page and "seeds and examples" not in page


def test_table3_layout_configuration_columns(analysis):
    main = report_tables(analysis)[0]
    # one column per key some row changes, named by [display], a derived one beside
    assert main.header[:6] == ["Row", "Δ_shift", "2·shift", "component a", "b", "mode"]
    rows = {
        name: dict(zip(main.header, r, strict=True))
        for r in texts(main)
        for name in r[0].split(" = ")
    }
    assert (
        rows["base"]["Δ_shift"] == "0.0"
        and rows["base"]["component a"] == "true"
        and rows["base"]["2·shift"] == "0"
    )
    assert (
        rows[EVIL]["Δ_shift"] == "-3.0" and rows[EVIL]["2·shift"] == "-6" and rows[EVIL]["b"] == ""
    )
    assert (
        rows["(R)"]["mode"] == "raises!" and rows["(R)"]["Δ_shift"] == ""
    )  # blank = as in the base
    assert (
        rows["a=false, b=true"]["component a"] == "false" and rows["a=true, b=true"]["b"] == "true"
    )
    # the grid cell that is the base's runs is the base row, labelled with both names
    assert rows["a=true, b=true"] == rows["base"] and rows["base"]["Row"] == "base = a=true, b=true"
    assert "Description" not in main.header
    notes = report_notes(analysis)
    assert "2·shift = shift * 2 (derived from each row's configuration)" in notes[0]
    assert f"{EVIL}: desc with <b>tags</b> & ampersand_underscore" in row_notes(analysis)


def test_html_escapes_labels_and_has_a_forest_and_a_level_plot_per_metric(analysis):
    page = render_html(analysis)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "<b>tags</b>" not in page and "&lt;b&gt;tags&lt;/b&gt;" in page
    # the summary, and for acc and loss a level plot, a forest plot (one panel, every row
    # once) and an interaction plot; a panel's title is its tooltip and its heading
    assert page.count("<svg") == 7 and page.count('<g class="panel">') == 7
    assert page.count("Δ acc to the base") >= 1 and "95% CI over seeds" in page
    assert "script-src" not in page and "default-src 'none'" in page  # CSP forbids scripts
    assert re.search(
        r"<b>interaction</b>: .*<code>[0-9.]+ - [0-9.]+ - [0-9.]+ \+ [0-9.]+ = -[0-9.]+</code>",
        page,
    )
    assert "Missing runs" in page and "RuntimeError: boom" in page
    assert not re.search(r"(src|href)=\"https?:", page)  # self-contained
    assert 'class="scroll"' not in page  # nothing hidden behind a horizontal scroll


def test_forest_plot_labels_each_kind_of_interval(analysis_with_test_set):
    page = render_html(analysis_with_test_set)
    for label in (
        "95% CI over seeds",
        "95% CI over test examples",
        "95% CI over seeds and examples",
    ):
        assert label in page, label


def _panel_svg(*args, **kwargs) -> str:
    return figure_svg(Figure("f", "f", (interval_panel(*args, **kwargs),)))


def test_interval_plot_escapes_text_and_fits_the_data():
    svg = _panel_svg(
        EVIL,
        ["base", EVIL, "$x$ & y"],
        [95.0, 96.0, float("nan")],
        [Intervals(EVIL, [94.0, 95.5, None], [96.0, 96.5, None])],
        xlabel="acc",
        reference=95.0,
    )
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "<script" not in svg.lower() and "&lt;script" in svg
    # accuracies of 94-96.5 fill the axis; a far zero is left out
    ticks = [float(t) for t in re.findall(r'text-anchor="middle">(-?[0-9.e+-]+)</text>', svg)]
    assert 93 <= min(ticks) < max(ticks) <= 97 and len(ticks) >= 3
    kept = _panel_svg("t", ["a"], [95.0], [], zero="always")
    ticks = [float(t) for t in re.findall(r'text-anchor="middle">(-?[0-9.e+-]+)</text>', kept)]
    assert min(ticks) == 0 and max(ticks) >= 80


def test_interval_plot_refuses_ragged_input():
    with pytest.raises(ValueError, match="one value per row"):
        interval_panel("t", ["a", "b"], [1.0], [])


def test_markdown(analysis):
    md = render_markdown(analysis)
    assert md.startswith("## Ablation study 'synth'")
    assert "| Row | Δ_shift | 2·shift | component a | b | mode | Seeds |" in md
    assert "&lt;script>" in md and "<script" not in md
    assert "acc (paper)" in md and "77.00" in md
    assert "`80" in md and "interaction" in md
    assert "| (R) |  |  |  |  | raises! | 0/3 ! |" in md
    assert "- (R) seed 0: failed after 1 attempt(s): RuntimeError: boom" in md
    assert "α = 0.05" in md and "power = 0.8" in md


def test_latex(analysis):
    tex = render_latex(analysis, LatexLayout(split=False))
    assert len(latex_tables(tex)) == 3  # results, Δ of acc, Δ of loss
    assert r"\paragraph{Grid effects on acc}" in tex
    assert r"ampersand\_\allowbreak{}underscore" in tex and r"\&" in tex
    assert r"$\pm$" in tex and tex.isascii()  # pdflatex's default fonts: no Unicode symbols
    assert "<" not in tex.replace("$<$", "")  # "<" alone prints as an inverted "!"
    assert r"\paragraph{Notes}" in tex and "few seeds" in tex  # notes and flags are not dropped


def test_json_is_valid_and_complete(analysis):
    data = json.loads(render_json(analysis))
    assert data["study"] == "synth" and data["primary"] == "acc"
    rows = {r["label"]: r for r in data["rows"]}
    assert (
        rows["(R)"]["failed"] == 3 and rows["(R)"]["metrics"]["acc"]["mean"] is None
    )  # NaN -> null
    assert rows[EVIL]["metrics"]["acc"]["delta"] == pytest.approx(-3.0, abs=1.5)
    assert rows[EVIL]["reference"] == {"acc (paper)": 77.0}
    assert rows[EVIL]["config"]["shift"] == -3.0 and data["display"]["derived"] == {
        "double_shift": "shift * 2"
    }
    inter = next(c for c in data["contrasts"]["acc"] if c["kind"] == "interaction")
    assert inter["arithmetic"].count(" - ") == 2 and inter["value"] == pytest.approx(-10, abs=2)


def test_terminal_table(analysis):
    text = terminal_text(analysis)
    assert "Ablation study 'synth'" in text and EVIL in text  # rich Text: shown literally
    assert "Grid effects on acc" in text and "interaction" in text
    assert "Missing runs" in text
    assert "mean 95% CI (seeds)" in text  # the CI column the terminal used to leave out


def test_an_analysis_without_configurations_still_renders(analysis):
    # analyses built before rows carried their configuration: the changes give the columns
    old = dataclasses.replace(
        analysis, rows=[dataclasses.replace(r, config={}) for r in analysis.rows]
    )
    main = report_tables(old)[0]
    rows = {
        name: dict(zip(main.header, r, strict=True))
        for r in texts(main)
        for name in r[0].split(" = ")
    }
    assert rows[EVIL]["Δ_shift"] == "-3.0" and rows["base"]["Δ_shift"] == ""


# -- hostile strings: every format shows them as written, none can run or format anything ------
HOSTILE = "<script>x</script> a&b|c *s* _u_ ~~k~~ `t` [l](javascript:alert(1)) 50% #1 \\x $y$ {z} ^w [red]r[/red] &lt;"
HOSTILE_METRIC = "acc_%#&<i>|"


def _rename(mapping: dict, old: str, new: str) -> dict:
    return {(new if k == old else k): v for k, v in mapping.items()}


@pytest.fixture(scope="module")
def hostile(analysis_with_test_set):
    """The test-set analysis with hostile row labels, descriptions, [display] names and
    values, a reference column and the primary metric's name."""
    a = analysis_with_test_set
    rows = []
    for r in a.rows:
        metrics = {
            (HOSTILE_METRIC if k == "acc" else k): dataclasses.replace(
                m, metric=HOSTILE_METRIC if k == "acc" else k
            )
            for k, m in r.metrics.items()
        }
        label = "L " + HOSTILE if r.label == "(R)" else r.label
        rows.append(
            dataclasses.replace(
                r,
                label=label,
                description=r.description and "D " + HOSTILE,
                metrics=metrics,
                reference=_rename(r.reference, "acc (paper)", "R " + HOSTILE),
            )
        )
    display = dataclasses.replace(
        a.display,
        columns={**a.display.columns, "shift": "C " + HOSTILE},
        values={"mode": {"raise": "V " + HOSTILE}},
    )
    return dataclasses.replace(
        a,
        rows=rows,
        display=display,
        metrics=[HOSTILE_METRIC if m == "acc" else m for m in a.metrics],
        primary=HOSTILE_METRIC,
        higher_is_better=_rename(a.higher_is_better, "acc", HOSTILE_METRIC),
        contrasts=_rename(a.contrasts, "acc", HOSTILE_METRIC),
        reference_columns=["R " + HOSTILE],
        description="S " + HOSTILE,
    )


def test_hostile_strings_are_shown_as_written_in_every_format(hostile, tmp_path):
    from markdown_it import MarkdownIt

    a = hostile
    model = [[t.header, *texts(t)] for t in report_tables(a)]
    cells = {c for t in model for row in t for c in row}
    for prefix in ("L ", "C ", "V ", "R "):  # row label, [display] name and value, reference column
        assert prefix + HOSTILE in cells, prefix
    assert any(HOSTILE_METRIC in c for c in cells) and f"D {HOSTILE}" in " ".join(row_notes(a))
    # HTML: parsed back cell for cell; nothing but the page's own tags
    page = render_html(a)
    assert [t for _, t in html_tables(page)] == model
    assert (
        "<script" not in page.lower()
        and "<i>" not in page
        and "javascript:alert" not in page.replace("[l](javascript:alert(1))", "")
    )
    # Markdown, rendered by a CommonMark + GFM-tables renderer that passes raw HTML through
    rendered = (
        MarkdownIt("commonmark", {"html": True})
        .enable(["table", "strikethrough"])
        .render(render_markdown(a))
    )
    for tag in ("<script", "<i>", "<em>", "<s>", "<a ", "<code>t</code>"):
        assert tag not in rendered, tag  # before: *s*, _u_, ~~k~~ and `t` were formatted
    assert [t for _, t in html_tables(rendered)] == model
    assert markdown_tables(render_markdown(a)) == model
    # terminal: rich markup in a label is text, not style
    assert terminal_tables(terminal_text(a, width=3000)) == model
    # LaTeX: every special character escaped (and the document compiles, where pdflatex is)
    tex = render_latex(a, LatexLayout(split=False))
    assert latex_tables(tex) == [[[latex_text(c) for c in row] for row in t] for t in model]
    assert tex.isascii() and "\\x" not in tex.replace(r"\textbackslash{}x", "")
    import shutil

    if shutil.which("pdflatex"):
        from tests.report.test_latex import compile_latex

        compile_latex(tex, tmp_path)
    assert json.loads(render_json(a))["report"]["tables"] == [
        table_data(t) for t in report_tables(a)
    ]


def test_a_row_without_any_interval_says_so_in_the_plots(analysis):
    # one seed, or no seed spread: a dot alone would read as a precise value (before: unmarked)
    rows = [
        dataclasses.replace(
            r,
            metrics={
                k: dataclasses.replace(
                    m,
                    delta_low=float("nan"),
                    delta_high=float("nan"),
                    ci_low=float("nan"),
                    ci_high=float("nan"),
                )
                for k, m in r.metrics.items()
            },
        )
        if r.label == EVIL
        else r
        for r in analysis.rows
    ]
    page = render_html(dataclasses.replace(analysis, rows=rows))
    svgs = [f for f in page.split('<figure id="figure-')[1:] if not f.startswith("interaction")]
    # a forest plot (one panel or more) + a level plot, acc + loss; the label is the row's
    # label and the start of its description
    assert len(svgs) >= 4 and all(
        f"{html.escape(EVIL)} desc with" in svg and "(no interval)" in svg for svg in svgs
    )
    assert "(no interval)" not in render_html(analysis)
