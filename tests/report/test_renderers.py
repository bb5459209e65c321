"""Renderers of a study analysis: terminal, Markdown, LaTeX, JSON and the HTML page."""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.console import Console

from ablation.synth import write_study
from evalab.ablation import analyze, load_study, run_study
from evalab.report import render_html, render_json, render_latex, render_markdown, render_table
from evalab.report.plots import bar_chart_svg

EVIL = "<script>alert('x')</script>"


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    folder = tmp_path_factory.mktemp("study")
    path = write_study(
        folder, seeds=[0, 1, 2],
        variants=[(EVIL, "desc with <b>tags</b> & ampersand_underscore", {"shift": -3.0}),
                  ("(R)", "raises", {"mode": "raise"})],
        grid={"a": [False, True], "b": [False, True]},
        reference={"acc (paper)": {"base": 80.0, EVIL: 77.0}},
    )
    study = load_study(path)
    run_study(study, folder / "s.db", jobs=2, progress=False)
    return analyze(study, folder / "s.db", aso=True)


def test_html_escapes_labels_and_contains_a_plot_per_metric(analysis):
    page = render_html(analysis)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "<b>tags</b>" not in page and "&lt;b&gt;tags&lt;/b&gt;" in page
    assert page.count("<svg") == 2  # acc and loss
    assert "script-src" not in page and "default-src 'none'" in page  # CSP forbids scripts
    assert re.search(r"<b>interaction</b>: .*<code>[0-9.]+ - [0-9.]+ - [0-9.]+ \+ [0-9.]+ = -[0-9.]+</code>", page)
    assert "Missing runs" in page and "RuntimeError: boom" in page
    assert not re.search(r"(src|href)=\"https?:", page)  # self-contained


def test_html_fallback_svg_without_matplotlib(analysis):
    page = render_html(analysis, plot_engine="svg")
    assert page.count("<svg") == 2 and "<script" not in page.lower()
    assert "<rect" in page


@pytest.mark.parametrize("engine", ["svg", "matplotlib"])
def test_bar_chart_escapes_text(engine):
    if engine == "matplotlib":
        pytest.importorskip("matplotlib")
    svg = bar_chart_svg(["base", EVIL, "$x$ & y"], [1.0, 2.0, float("nan")], [0.5, 1.5, None],
                        [1.5, 2.5, None], title=EVIL, ylabel="acc", engine=engine)
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "<script" not in svg.lower() and "&lt;script" in svg


def test_markdown(analysis):
    md = render_markdown(analysis)
    assert md.startswith("## Ablation study 'synth'")
    assert "| Row | Description | Seeds |" in md
    assert "&lt;script>" in md and "<script" not in md
    assert "acc (paper)" in md and "77.00" in md
    assert "`80" in md and "interaction" in md
    assert "| (R) | raises | 0/3 ! |" in md
    assert "- (R) seed 0: failed after 1 attempt(s): RuntimeError: boom" in md
    assert "α = 0.05" in md and "power = 0.8" in md


def test_latex(analysis):
    tex = render_latex(analysis)
    assert tex.count(r"\begin{tabular}") == 2  # results and grid effects
    assert r"ampersand\_underscore" in tex and r"\&" in tex
    assert r"$\pm$" in tex and tex.isascii()  # pdflatex's default fonts: no Unicode symbols
    assert "<" not in tex.replace("$<$", "")  # "<" alone prints as an inverted "!"


def test_json_is_valid_and_complete(analysis):
    data = json.loads(render_json(analysis))
    assert data["study"] == "synth" and data["primary"] == "acc"
    rows = {r["label"]: r for r in data["rows"]}
    assert rows["(R)"]["failed"] == 3 and rows["(R)"]["metrics"]["acc"]["mean"] is None  # NaN -> null
    assert rows[EVIL]["metrics"]["acc"]["delta"] == pytest.approx(-3.0, abs=1.5)
    assert rows[EVIL]["reference"] == {"acc (paper)": 77.0}
    inter = next(c for c in data["contrasts"]["acc"] if c["kind"] == "interaction")
    assert inter["arithmetic"].count(" - ") == 2 and inter["value"] == pytest.approx(-10, abs=2)


def test_terminal_table(analysis):
    buf = io.StringIO()
    render_table(analysis, Console(file=buf, width=250))
    text = buf.getvalue()
    assert "Ablation study 'synth'" in text and EVIL in text  # rich Text: shown literally
    assert "Grid effects on acc" in text and "interaction" in text
    assert "Missing runs" in text
