"""The one LaTeX writer: every table the CLI prints as ``-f latex`` compiles with pdflatex.

The escaping itself is checked everywhere (a property: the output is plain ASCII, which
pdflatex's default fonts can typeset); the compile test needs ``pdflatex`` with booktabs
(Debian: texlive-latex-base texlive-latex-recommended, installed by .ci/run) and is
skipped, with the reason, where it is missing.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from tests.conftest import REPO, read_lines, wmt_file, wmt_systems, write_wmt_subset

from evalab.report.latex import (
    COLUMN_PT,
    MATH_SYMBOLS,
    PAGE_PT,
    Fit,
    LatexLayout,
    Placement,
    fit_table,
    latex_table,
    latex_tables,
    latex_text,
    needs_line,
)
from evalab.report.markdown import md_escape
from evalab.report.table import Group, NumberText, Table

N = 40
FILES_ITEMS = [REPO / "examples" / "item-scores" / f"model-{m}.csv" for m in "abc"]

#: a cell that starts like a number (a digit, a sign, the no-value dash, an interval)
NUMBER_LIKE = re.compile(r"[-+–\d\[<]")


def table(header, body, caption="", notes=()):
    """A table of text cells, those after the first column that read as numbers as numbers."""
    cells = [
        [c if j == 0 or not NUMBER_LIKE.match(c) else NumberText(c) for j, c in enumerate(row)]
        for row in body
    ]
    return Table(header, cells, notes, caption)


@given(st.text(max_size=40))
def test_latex_text_is_plain_ascii_whatever_the_input(text):
    assert latex_text(text).isascii()


@pytest.mark.parametrize(
    ("raw", "tex"),
    [
        ("μ ± hw", r"$\mu$ $\pm$ hw"),
        ("Δ baseline", r"$\Delta$ baseline"),
        ("Kendall τ_b", r"Kendall $\tau_b$"),
        ("Müller", r"M\"{u}ller"),
        ("café", r"caf\'{e}"),
        ("中", "[U+4E2D]"),
        ("a_b & 5%", r"a\_b \& 5\%"),
        # pdflatex's default (OT1) font prints a bare "|" as an em dash: bleu—nrefs:1
        ("bleu|nrefs:1", r"bleu\textbar{}nrefs:1"),
    ],
)
def test_symbols_the_tables_print_are_escaped(raw, tex):
    assert latex_text(raw) == tex


def test_every_math_symbol_maps_to_ascii():
    assert all(v.isascii() for v in MATH_SYMBOLS.values())


def test_table_cells_and_caption_are_escaped_by_default():
    text = latex_table(
        table(["system", "score (μ ± hw)", "Δ"], [["Online-Ä_1", "1.0 ± 0.2", "+0.1"]], "p < 0.05")
    )
    assert text.isascii() and r"$\mu$ $\pm$ hw" in text and r"\"{A}" in text and "$<$" in text


# -- fitting the page -------------------------------------------------------------------------
#: the demo's results table (docs/demo.md): 16 columns, long row labels and stage names
DEMO_HEADER = [
    "Row",
    "Stage",
    "h",
    "d_k",
    "P_drop",
    "ε_ls",
    "positional",
    "heads at eval",
    "positions at eval",
    "Seeds",
    "seq_acc ↑ (mean ± sd)",
    "digit_acc ↑ (mean ± sd)",
    "xent ↓ (mean ± sd)",
    "ppl ↓ (mean ± sd)",
    "one-seed seq_acc %",
    "paper BLEU (Table 3)",
]
DEMO_BODY = [
    [
        "base",
        "trained",
        "4",
        "8",
        "0.1",
        "0.1",
        "sinusoid",
        "all",
        "kept",
        "3/3",
        "96.03 ± 0.87",
        "99.08 ± 0.24",
        "0.145 ± 0.005",
        "1.156 ± 0.006",
        "93.50",
        "25.50",
    ],
    [
        "(A') 1 of 4 heads at eval",
        "at eval of base (paired Δ)",
        "",
        "",
        "",
        "",
        "",
        "1",
        "",
        "3/3",
        "0.50 ± 0.26",
        "40.76 ± 0.94",
        "1.029 ± 0.052",
        "2.800 ± 0.145",
        "–",
        "–",
    ],
    [
        "(E') positions removed at eval",
        "at eval of base (paired Δ)",
        "",
        "",
        "",
        "",
        "",
        "",
        "removed",
        "3/3",
        "93.00 ± 1.82",
        "98.34 ± 0.57",
        "0.153 ± 0.006",
        "1.166 ± 0.007",
        "–",
        "–",
    ],
]


def test_a_table_wider_than_both_columns_is_split_by_column_into_table_star_parts():
    t = table(DEMO_HEADER, DEMO_BODY, "Results")
    fit = fit_table(t)
    n = len(fit.parts)
    assert fit.placement is Placement.PAGE and fit.size == "footnotesize" and n > 1
    # the label columns (Row, Stage) in every part, every other column in exactly one
    assert all(p[:2] == [0, 1] for p in fit.parts)
    assert sorted(j for p in fit.parts for j in p[2:]) == list(range(2, len(DEMO_HEADER)))
    tex = latex_table(t)
    assert tex.count(r"\begin{table*}") == n and f"(part {n} of {n})" in tex
    assert f"both columns (table*), \\footnotesize, split by columns into {n} parts" in tex
    assert tex.count(r"\label{tab:evalab-1") == n  # one label per float
    # --no-latex-split: one table*; --latex-split: one-column parts
    one = latex_table(t, LatexLayout(split=False))
    assert one.count(r"\begin{table*}") == 1 and "part 1" not in one
    column = fit_table(t, split=True)
    assert column.placement is Placement.COLUMN and len(column.parts) > n


def test_a_header_group_stays_in_one_part():
    metrics = ["BLEU", "chrF", "TER", "COMET"]
    header = ["system", *(f"{m} {k}" for m in metrics for k in ("score", "Δ", "p"))]
    body = [[f"system-{i}", *("12.34 ± 0.56", "+1.23", "0.0123") * 4] for i in range(3)]
    t = Table(
        header,
        [[r[0], *(NumberText(c) for c in r[1:])] for r in body],
        groups=[Group("", 1), *(Group(m, 3) for m in metrics)],
    )
    parts = fit_table(t).parts
    assert len(parts) > 1
    for part in parts:
        assert (len(part) - 1) % 3 == 0 and all(part[k] % 3 == 1 for k in range(1, len(part), 3))


def test_a_narrow_table_goes_in_one_column_in_small_type():
    fit = fit_table(table(["system", "BLEU", "chrF"], [["Online-B", "38.4 ± 1.0", "64.6 ± 0.6"]]))
    assert fit == Fit(Placement.COLUMN, "small", [[0, 1, 2]])


def test_long_labels_are_wrapped_and_signatures_are_comments_below_the_table():
    tex = latex_table(
        table(DEMO_HEADER, DEMO_BODY, "Results", ["bleu|nrefs:1|case:mixed|version:2.4.0"]),
        LatexLayout(split=False),
    )
    # the Row and Stage columns hold text longer than WRAP_CHARS: p{} columns, not long lines
    assert len(re.findall(r"p\{\d+pt\}", tex)) == 2 and "array" in tex.splitlines()[0]
    caption, comment = tex.split(r"\end{table*}")
    assert "nrefs" not in caption and comment == "\n% bleu|nrefs:1|case:mixed|version:2.4.0\n"


def test_notes_go_into_the_caption_and_the_options_set_caption_and_label():
    t = table(["system", "BLEU"], [["a", "1.0"]], "", ["± : half-width", "bleu|nrefs:1"])
    tex = latex_table(t, LatexLayout(caption="WMT22 en-de", label="tab:main"))
    assert r"\caption{WMT22 en-de. $\pm$ : half-width.}" in tex and r"\label{tab:main}" in tex
    assert tex.endswith("% bleu|nrefs:1\n")
    two = latex_tables([t, t], LatexLayout(label="tab:main"))
    assert r"\label{tab:main}" in two and r"\label{tab:main-2}" in two
    assert two.count("% needs:") == 1


def test_metric_names_as_papers_write_them_and_a_bracket_opening_a_cell_is_guarded():
    t = Table(["system", "metric", "score"], [["[eval] a", "chrf", NumberText("1.0")]])
    tex = latex_table(
        Table(["system", "bleu ↑", "rougeL"], [["x", NumberText("1"), NumberText("2")]])
    )
    assert r"system & BLEU $\uparrow$ & ROUGE-L \\" in tex
    assert r"{}[eval] a & chrF & 1.0 \\" in latex_table(t)


def test_a_fragment_is_the_tabular_alone():
    tex = latex_table(table(["system", "BLEU"], [["a", "1.0"]], "c"), LatexLayout(fragment=True))
    needs, rest = tex.split("\n", 1)
    assert needs == r"% needs: booktabs (\usepackage{booktabs})"
    assert rest.startswith(r"\begin{tabular}{lr}") and rest.endswith("\\end{tabular}\n")
    assert r"\begin{table}" not in tex and r"\caption" not in tex


# -- compiling the real output ---------------------------------------------------------------
#: a word set in \footnotesize at the top of every compiled document: its rendered height is
#: the threshold no table text may fall below (measured, not assumed)
REFERENCE_WORD = "Footnotesizereference"
_NEEDS = re.compile(r"^% needs: (.*?)(?: \(|$)", re.M)


def needed_packages(tex: str) -> list[str]:
    """The packages the ``% needs:`` lines of ``tex`` name (one output's, or several's)."""
    names = [n.strip() for line in _NEEDS.findall(tex) for n in line.split(",")]
    return list(dict.fromkeys(n for n in names if n and n != "no package"))


def document(tex: str) -> str:
    """``tex`` in a two-column article whose preamble loads exactly the packages it names,
    after the reference word in \footnotesize."""
    packages = needed_packages(tex)
    preamble = f"\\usepackage{{{','.join(packages)}}}\n" if packages else ""
    return (
        "\\documentclass[twocolumn]{article}\n"
        + preamble
        + f"\\begin{{document}}\n{{\\footnotesize {REFERENCE_WORD}}}\\par\n"
        + tex
        + "\n\\end{document}\n"
    )


def compile_latex(tables: str, tmp_path) -> str:
    """Compile ``tables`` in a two-column article with exactly the packages they name (one
    pdflatex run); fail with pdflatex's errors, or on any box wider than its column or page
    (pdflatex only warns); the log."""
    assert tables.startswith("% needs: "), tables[:200]  # the first comment line
    doc = tmp_path / "doc.tex"
    doc.write_text(document(tables), encoding="utf-8")
    res = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    errors = [
        line
        for line in res.stdout.splitlines()
        if line.startswith("!") or "Missing character" in line
    ]
    assert res.returncode == 0 and (tmp_path / "doc.pdf").exists(), (
        "\n".join(errors) or res.stdout[-2000:]
    )
    log = (tmp_path / "doc.log").read_text(encoding="utf-8", errors="replace")
    assert "Missing character" not in log  # a glyph the font lacks is dropped with only a warning
    overfull = [line for line in log.splitlines() if line.startswith("Overfull \\hbox")]
    assert not overfull, overfull  # wider than the page: cut off in the PDF
    assert "Float too large" not in log  # taller than the page: cut off in the PDF
    return log


NEEDS_PDFLATEX = pytest.mark.skipif(
    shutil.which("pdflatex") is None,
    reason="pdflatex is not installed (Debian: texlive-latex-base texlive-latex-recommended)",
)
NEEDS_PDFTOTEXT = pytest.mark.skipif(
    shutil.which("pdftotext") is None, reason="pdftotext is not installed (Debian: poppler-utils)"
)
_WORD = re.compile(
    r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>'
)


def word_heights(pdf) -> list[tuple[float, str]]:
    """Every word of the PDF with its rendered height (pt), as ``pdftotext -bbox`` boxes it;
    a one-letter index set apart from the word it follows (the ``b`` of Kendall's τ_b: a
    subscript of the notation, not text) is left out."""
    res = subprocess.run(
        ["pdftotext", "-bbox", pdf, "-"], capture_output=True, text=True, check=True, timeout=60
    )
    out, previous_end = [], -1.0
    for x0, y0, x1, y1, word in _WORD.findall(res.stdout):
        attached = abs(float(x0) - previous_end) < 0.5
        previous_end = float(x1)
        if not (len(word) == 1 and word.isalpha() and attached):
            out.append((float(y1) - float(y0), word))
    return out


def smallest_text(pdf) -> tuple[float, float, str]:
    """The reference word's height (\footnotesize), and the smallest other word's height and text."""
    words = word_heights(pdf)
    reference = [h for h, w in words if w == REFERENCE_WORD]
    assert len(reference) == 1, words[:5]
    height, word = min((h, w) for h, w in words if w != REFERENCE_WORD)
    return reference[0], height, word


def test_needed_packages_are_read_from_the_first_line():
    tex = latex_table(table(["system", "BLEU"], [["a", "1.0"]], "c"))
    assert tex.splitlines()[0] == r"% needs: booktabs, graphicx (\usepackage{booktabs,graphicx})"
    assert needed_packages(tex) == ["booktabs", "graphicx"]


@NEEDS_PDFLATEX
def test_the_demo_sized_table_fits_the_page(tmp_path):
    log = compile_latex(latex_table(table(DEMO_HEADER, DEMO_BODY, "Results")), tmp_path)
    assert "Output written" in log


@NEEDS_PDFLATEX
def test_the_compile_check_fails_on_a_table_wider_than_the_page(tmp_path):
    # the check itself can fail: the same table as one unsplit, unshrunk tabular overflows
    row = " & ".join(latex_text(c) for c in DEMO_BODY[2])
    wide = "% needs: booktabs\n" + rf"\begin{{tabular}}{{{'l' * len(DEMO_HEADER)}}}" + row
    wide += r" \\ \end{tabular}"
    with pytest.raises(AssertionError, match="Overfull"):
        compile_latex(wide, tmp_path)


@NEEDS_PDFLATEX
def test_the_split_alone_fits_without_shrinking(tmp_path):
    # with --latex-split the parts fit at their natural size (readable, not shrunk)
    tex = latex_table(table(DEMO_HEADER, DEMO_BODY, "Results"), LatexLayout(split=True))
    compile_latex(natural_size(tex), tmp_path)


def in_float(fragment: str) -> str:
    """A ``--latex-fragment`` output ``\\input`` in a float of one's own (both columns, shrunk
    to the text width where wider: the float's packages are the user's, graphicx here)."""
    needs, tabular = fragment.split("\n", 1)
    assert needs.startswith("% needs: ")
    return (
        f"{needs}\n% needs: graphicx\n\\begin{{table*}}\n"
        + "\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%\n"
        + f"{tabular}}}\n\\end{{table*}}\n"
    )


def natural_size(tex: str) -> str:
    """``tex`` without the \\resizebox safety net: each tabular at its natural width."""
    natural = tex.replace(
        r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%" + "\n", ""
    )
    natural = natural.replace(r"\end{tabular}}", r"\end{tabular}")
    assert r"\resizebox" not in natural
    return natural


def systems(folder):
    """WMT22 en-de reference A and two systems (first N segments) under non-ASCII names."""
    ref = folder / "ref.de"
    ref.write_text(
        "\n".join(read_lines(wmt_file("ref", "en-de", "A"))[:N]) + "\n", encoding="utf-8"
    )
    hyps = []
    for system, name in (("Online-A", "Müller_μ-base.de"), ("Online-B", "Δ-sys_2 (50%).de")):
        p = folder / name
        p.write_text(
            "\n".join(read_lines(wmt_file("hyp", "en-de", system))[:N]) + "\n", encoding="utf-8"
        )
        hyps.append(p)
    return ref, hyps


def meta_eval_inputs(folder):
    """Three systems, a human TSV and precomputed scores: enough for every statistic."""
    rng = np.random.default_rng(0)
    names = ["sys-α", "sys_b", "sys-c"]
    (folder / "ref.txt").write_text("".join(f"ref {i}\n" for i in range(N)), encoding="utf-8")
    human, scores = [], []
    for s, name in enumerate(names):
        (folder / f"{name}.txt").write_text(
            "".join(f"hyp {s} {i}\n" for i in range(N)), encoding="utf-8"
        )
        quality = -s + rng.normal(0, 1, N)
        human += [f"{name}\t{i + 1}\t{q:.6f}" for i, q in enumerate(quality)]
        scores += [f"oracle\t{name}\t{i + 1}\t{q * 2 + 1:.6f}" for i, q in enumerate(quality)]
    (folder / "human.tsv").write_text("\n".join(human) + "\n", encoding="utf-8")
    (folder / "scores.tsv").write_text("\n".join(scores) + "\n", encoding="utf-8")
    return [
        "--human",
        folder / "human.tsv",
        "-r",
        folder / "ref.txt",
        "-i",
        *(folder / f"{n}.txt" for n in names),
        "--scores",
        folder / "scores.tsv",
        "-n",
        "50",
        "--permutations",
        "20",
        "-q",
    ]


def score_files(folder, models=6, items=300):
    """Per-item score files of ``models`` models, four metrics each (exact match, F1,
    ROUGE-L, BLEU on 0-100): what ``compare --scores`` reads."""
    rng = np.random.default_rng(1)
    paths = []
    for m in range(models):
        p = folder / f"model-{m}.csv"
        rows = [
            f"q{i},{int(rng.random() < 0.5 + 0.03 * m)},{rng.random():.4f},{rng.random():.4f},"
            f"{rng.random() * 100:.2f}"
            for i in range(items)
        ]
        p.write_text("id,exact_match,f1,rougeL,bleu\n" + "\n".join(rows) + "\n", encoding="utf-8")
        paths.append(p)
    return paths


def _cli(*args) -> str:
    """``evalab ARGS`` in-process, its stdout (session fixtures have no ``capsys``)."""
    from evalab.cli import main

    with contextlib.redirect_stdout(io.StringIO()) as out:
        code = main([str(a) for a in args])
    assert code == 0, args
    return out.getvalue()


@pytest.fixture(scope="session")
def command_latex(wmt22, tmp_path_factory) -> dict[str, str]:
    """Each command's ``-f latex`` output, made once: WMT22 systems (non-ASCII names), the
    en-de ranking of nine systems with every pair, per-item score files, meta-eval, the toy
    study's report and status, and the demo-sized results table."""
    folder = tmp_path_factory.mktemp("latex")
    ref, hyps = systems(folder)
    (folder / "en-de").mkdir()
    de_ref, de_hyps = write_wmt_subset(folder / "en-de", "en-de", wmt_systems("en-de")[:9], 300)
    scores = score_files(folder)
    latex = ("-f", "latex")
    outs = {
        "score": _cli(
            "score", "-r", ref, "-i", *hyps, "-m", "bleu", "chrf", "--ci", "-n", "50", *latex
        ),
        "compare": _cli(
            "compare",
            "-r",
            ref,
            "-i",
            *hyps,
            "-m",
            "bleu",
            "chrf",
            "-n",
            "50",
            "--correct",
            "holm",
            "-q",
            *latex,
        ),
        "compare --rank": _cli(
            "compare",
            "-r",
            de_ref,
            "-i",
            *de_hyps,
            "-m",
            "bleu",
            "chrf",
            "ter",
            "--rank",
            "-q",
            *latex,
            "--latex-caption",
            "WMT22 en-de, first 300 segments, against reference A",
            "--latex-label",
            "tab:wmt22-ende",
        ),
        "compare --all-pairs": _cli(
            "compare",
            "-r",
            de_ref,
            "-i",
            *de_hyps,
            "-m",
            "chrf",
            "--all-pairs",
            "-n",
            "200",
            "-q",
            *latex,
        ),
        "compare --scores": _cli(
            "compare",
            "--scores",
            *scores,
            "--score-column",
            "exact_match",
            "f1",
            "rougeL",
            "bleu",
            "-q",
            *latex,
        ),
        "compare --scores (long)": _cli(
            "compare",
            "--scores",
            *FILES_ITEMS,
            "--score-column",
            "correct",
            "--cluster-column",
            "passage",
            "-q",
            *latex,
        ),
        "meta-eval": _cli("meta-eval", *meta_eval_inputs(folder), *latex),
    }
    sys.path.insert(0, str(REPO / "examples" / "toy_study"))
    try:
        from evalab.cli import main

        study, db = REPO / "examples" / "toy_study" / "study.toml", folder / "toy.db"
        assert main(["ablate", "run", str(study), "--db", str(db), "-q"]) == 0
        outs["ablate report"] = _cli("ablate", "report", study, "--db", db, *latex)
        outs["ablate status"] = _cli("ablate", "status", study, "--db", db, *latex)
    finally:
        sys.path.remove(str(REPO / "examples" / "toy_study"))
    outs["demo results table"] = latex_table(table(DEMO_HEADER, DEMO_BODY, "Results"))
    return outs


COMMANDS = [
    "score",
    "compare",
    "compare --rank",
    "compare --all-pairs",
    "compare --scores",
    "compare --scores (long)",
    "meta-eval",
    "ablate report",
    "ablate status",
    "demo results table",
]
#: the smallest rendered table text of each command's LaTeX, for the record (pt)
SMALLEST: dict[str, tuple[float, float, str]] = {}


@NEEDS_PDFLATEX
@NEEDS_PDFTOTEXT
@pytest.mark.parametrize("command", COMMANDS)
def test_latex_of_every_command_compiles_and_prints_no_smaller_than_footnotesize(
    command_latex, command, tmp_path
):
    """Compiled in a two-column article with exactly the packages the output names: no
    error, no overfull box, and no word rendered smaller than a \\footnotesize word of the same
    document (pdftotext -bbox); every table has a caption and a label; every row reads back."""
    tex = command_latex[command]
    assert tex.isascii(), command
    floats = len(re.findall(r"\\begin\{table\*?\}", tex))
    assert floats and tex.count(r"\caption{") == floats == tex.count(r"\label{")
    compile_latex(tex, tmp_path)
    reference, height, word = smallest_text(tmp_path / "doc.pdf")
    SMALLEST[command] = (reference, height, word)
    # for the record (pytest -s): the smallest word's box, and its type size against 8pt
    print(
        f"\n{command}: smallest word {word!r} {height:.2f}pt high (\\footnotesize reference "
        f"{reference:.2f}pt): {8 * height / reference:.1f}pt type"
    )
    assert height >= reference * 0.99, (command, word, height, reference)
    assert_rows_read_back(tex, pdf_text(tmp_path))


@NEEDS_PDFLATEX
@NEEDS_PDFTOTEXT
def test_a_report_item_opening_with_a_bracket_is_text_not_the_items_label(tmp_path):
    # the ablation report's "[evaluation] defaults ..." line: with "\item [evaluation]" LaTeX
    # takes the word as the item's label (in the margin, the bullet gone)
    from evalab.report.tables import _latex_list

    items = ["[evaluation] defaults (every trained row is evaluated with them): zero_feature = -1"]
    compile_latex(needs_line(()) + _latex_list("Settings", items), tmp_path)
    # the bullet (poppler reads OT1's as U+0088), then the bracketed words
    assert any(re.search(r"^\s*\S\s+\[evaluation\] defaults", ln) for ln in pdf_text(tmp_path))


@NEEDS_PDFLATEX
@NEEDS_PDFTOTEXT
def test_the_height_check_fails_on_a_shrunk_table(tmp_path):
    # the check itself can fail: the demo table shrunk into one column prints at 3-5pt
    tex = latex_table(table(DEMO_HEADER, DEMO_BODY, "Results"), LatexLayout(split=False))
    compile_latex(
        tex.replace(r"\begin{table*}", r"\begin{table}").replace(r"\end{table*}", r"\end{table}"),
        tmp_path,
    )
    reference, height, _ = smallest_text(tmp_path / "doc.pdf")
    assert height < 0.7 * reference


@NEEDS_PDFLATEX
def test_ablation_report_with_test_set_intervals_compiles(analysis_with_test_set, tmp_path):
    from evalab.report import render_latex

    compile_latex(render_latex(analysis_with_test_set), tmp_path)


# -- reading the compiled PDF back (pdftotext -layout) ---------------------------------------
_NUMBER = re.compile(r"-?\d+\.\d+")


def pdf_text(tmp_path) -> list[str]:
    """The lines of the compiled doc.pdf as ``pdftotext -layout`` lays them out."""
    res = subprocess.run(
        ["pdftotext", "-layout", "doc.pdf", "-"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    # the OT1 font's tilde and circumflex accents, and its "_" (a rule: read as a space)
    return [ln.replace("˜", "~").replace("ˆ", "^") for ln in res.stdout.splitlines()]


def body_rows(tex: str) -> list[list[str]]:
    """The body rows (source cells) of every tabular in ``tex``."""
    return [row for _, rows in tabulars(tex) for row in rows]


def tabulars(tex: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every tabular's column specs (``l``, ``r``, or a wrapped ``p{}`` column) and body rows."""
    out = []
    for spec, block in re.findall(
        r"\\begin\{tabular\}\{((?:>\{[^}]*\}p\{[^}]*\}|[lrc])+)\}.*?\\midrule\n(.*?)\\bottomrule",
        tex,
        flags=re.S,
    ):
        cols = re.findall(r">\{[^}]*\}p\{[^}]*\}|[lrc]", spec)
        rows = [re.split(r" (?<!\\)& ", ln.removesuffix(r" \\")) for ln in block.splitlines()]
        out.append((cols, rows))
    return out


def assert_rows_read_back(tex: str, lines: list[str]) -> None:
    """Every body row's label (its first word) and the numbers of its number (``r``) columns,
    in order, on one PDF line (a wrapped text column may run over several lines)."""
    tables = tabulars(tex)
    assert tables
    for cols, rows in tables:
        for row in rows:
            label = re.search(r"[A-Za-z0-9]+", re.sub(r"\\[A-Za-z]+|\\.", " ", row[0]))
            numbers = [
                n
                for c, col in zip(row[1:], cols[1:], strict=True)
                if col == "r"
                for n in _NUMBER.findall(c)
            ]
            pattern = re.compile(
                ".*".join([re.escape(label[0]) if label else "", *map(re.escape, numbers)])
            )
            assert any(pattern.search(ln) for ln in lines), (row, lines)


@NEEDS_PDFLATEX
@NEEDS_PDFTOTEXT
def test_the_demo_table_reads_back_with_labels_beside_numbers_in_every_part(tmp_path):
    tex = latex_table(table(DEMO_HEADER, DEMO_BODY, "Results"))
    compile_latex(tex, tmp_path)
    lines = pdf_text(tmp_path)
    assert_rows_read_back(tex, lines)
    # each part's rows read back with their label: configuration (h=4, d_k=8) in the first,
    # the metrics in the second
    assert any(re.search(r"base .*\b4\b.*\b8\b", ln) for ln in lines)
    assert any(re.search(r"base .*96\.03.*99\.08", ln) for ln in lines)


@NEEDS_PDFLATEX
@NEEDS_PDFTOTEXT
def test_the_read_back_check_fails_when_a_row_loses_its_numbers(tmp_path):
    tex = latex_table(table(["system", "BLEU"], [["sys-a", "31.25"]], "c"))
    compile_latex(tex.replace("31.25", "--"), tmp_path)
    with pytest.raises(AssertionError):
        assert_rows_read_back(tex, pdf_text(tmp_path))


@NEEDS_PDFLATEX
@NEEDS_PDFTOTEXT
def test_a_12_system_by_4_metric_table_fits_the_page_at_its_natural_size(tmp_path):
    rng = np.random.default_rng(0)
    header = ["system", "BLEU", "chrF", "TER", "COMET"]
    body = [
        [f"Online-{chr(65 + i)}.de-en", *(f"{v:.1f} ± {w:.1f}" for v, w in rng.random((4, 2)) * 50)]
        for i in range(12)
    ]
    tex = latex_table(table(header, body, "Twelve systems", ["bleu|nrefs:1"]))
    compile_latex(natural_size(tex), tmp_path)  # no Overfull box without the \resizebox
    assert_rows_read_back(tex, pdf_text(tmp_path))


# -- hostile strings round-trip through the one escaper per format ---------------------------
HOSTILE = ["*bold*", "<script>", r"\input{x}", "%", "&", "_", "|", "~", "^", "#", "$", "{", "}"]
hostile_text = st.lists(
    st.sampled_from([*HOSTILE, "a", "b1", " ", "x_y", "`", "[l](u)", "&lt;"]), max_size=8
).map("".join)

#: what latex_text writes for each ASCII special (the inverse of the escaper, written out here)
_LATEX_BACK = {
    r"\textbackslash{}": "\\",
    r"\textbar{}": "|",
    r"\textasciitilde{}": "~",
    r"\textasciicircum{}": "^",
    "$<$": "<",
    "$>$": ">",
    **{"\\" + c: c for c in "&%$#_{}"},
}


def latex_back(tex: str) -> str:
    keys = sorted(_LATEX_BACK, key=len, reverse=True)
    pattern = re.compile("|".join(map(re.escape, keys)))
    rest = pattern.sub("", tex)
    # nothing LaTeX would act on is left unescaped
    assert not re.search(r"[\\&%$#_{}~^<>]", rest), (tex, rest)
    return pattern.sub(lambda m: _LATEX_BACK[m[0]], tex)


def markdown_back(md: str) -> str:
    # nothing a Markdown viewer would format is left unescaped: * ` | ~ \, a "_" at a word's
    # edge, "<" opening a tag, "](" opening a link, an entity
    bare = re.sub(r"\\[\\`*~|_(]|&lt;|&amp;", "\0", md)  # a gap no pattern matches across
    assert not re.search(r"[\\`*~|]|(?<!\w)_|_(?!\w)|<[A-Za-z/!?]|\]\(|&#?\w+;", bare)
    text = re.sub(r"\\([\\`*~|_(])", r"\1", md)
    return text.replace("&lt;", "<").replace("&amp;", "&")


@given(hostile_text)
def test_hostile_strings_round_trip_through_the_latex_escaper(text):
    assert latex_back(latex_text(text)) == text


@given(hostile_text)
@example("___")  # a run of underscores: none of them may open emphasis
def test_hostile_strings_round_trip_through_the_markdown_escaper(text):
    assert markdown_back(md_escape(text)) == text


def test_the_round_trip_checks_can_fail():
    with pytest.raises(AssertionError):
        markdown_back("*bold*")
    with pytest.raises(AssertionError):
        latex_back("50% & a_b")


@NEEDS_PDFLATEX
@NEEDS_PDFTOTEXT
def test_hostile_names_print_as_written_in_the_pdf(tmp_path):
    names = ["*bold*", "<script>x</script>", r"\input{x}", "50% & a|b ~^#$"]
    body = [[n, f"{i}.25"] for i, n in enumerate(names)]
    compile_latex(latex_table(table(["system", "BLEU"], body, "c")), tmp_path)
    lines = pdf_text(tmp_path)
    for name, score in body:
        assert any(re.search(re.escape(name) + r"\s+" + re.escape(score), ln) for ln in lines)


# -- the wide layout from the CLI: 12 systems x 4 metrics, and the docs' pictures ------------
def twelve_systems_wide(folder) -> str:
    """``score -f latex`` of WMT22 cs-en: 11 systems and reference C against reference B,
    4 metrics with --ci, on the first 200 segments (the default layout: wide)."""
    ref, paths = write_wmt_subset(folder, "cs-en", wmt_systems("cs-en"), 200, ref="B")
    ref_c = folder / "ref-C.en"
    ref_c.write_text("\n".join(read_lines(wmt_file("ref", "cs-en", "C"))[:200]) + "\n")
    metrics = ("bleu", "chrf", "chrf++", "ter")
    return _cli(
        "score",
        "-r",
        ref,
        "-i",
        *paths,
        ref_c,
        "-m",
        *metrics,
        "--ci",
        "-n",
        "200",
        "-q",
        "-f",
        "latex",
        "--latex-caption",
        "WMT22 cs-en, first 200 segments, against reference B",
        "--latex-label",
        "tab:wmt22-csen",
    )


@pytest.fixture(scope="session")
def docs_latex(command_latex, tmp_path_factory) -> dict[str, str]:
    """The LaTeX of the docs' pictures: the 12-system score table, the demo's results table,
    the WMT22 en-de ranking and a harness comparison (two lm-eval runs)."""
    runs = REPO / "examples" / "item-scores" / "lm-eval"
    return {
        "latex-wide-table": twelve_systems_wide(tmp_path_factory.mktemp("cs-en")),
        "latex-demo-table": command_latex["demo results table"],
        "latex-wmt22-ranking": command_latex["compare --rank"],
        "latex-harness-comparison": _cli(
            "compare",
            "--scores",
            runs / "base",
            runs / "tuned",
            "-q",
            "-f",
            "latex",
            "--latex-caption",
            "ARC-Easy, lm-eval per-item scores",
            "--latex-label",
            "tab:arc",
        ),
    }


@NEEDS_PDFLATEX
@NEEDS_PDFTOTEXT
def test_a_12_system_by_4_metric_wide_table_from_the_cli_fits_and_reads_back(docs_latex, tmp_path):
    tex = docs_latex["latex-wide-table"]
    assert tex.count(r"\begin{table*}") == 1 and len(body_rows(tex)) == 12
    assert (
        r"system & BLEU $\uparrow$ & chrF $\uparrow$ & chrF++ $\uparrow$ & TER $\downarrow$" in tex
    )
    assert r"\caption{WMT22 cs-en,\allowbreak{} first 200 segments,\allowbreak{} against" in tex
    assert r"\label{tab:wmt22-csen}" in tex
    assert tex.count(r"\textbf{") >= 4  # the best of each column
    compile_latex(natural_size(tex), tmp_path)  # fits the page unshrunk
    lines = pdf_text(tmp_path)
    assert_rows_read_back(tex, lines)
    # one line per system: its name, then four "score ± half-width" cells
    cells = r"\s+".join([r"\d+\.\d ± \d+\.\d"] * 4)
    assert sum(bool(re.search(r"[A-Za-z][\w.-]*\s+" + cells, ln)) for ln in lines) == 12


def pdf_page_text(pdf) -> str:
    """``pdftotext -layout`` of a PDF, each line's runs of spaces made one (poppler versions
    differ in the padding, not in what stands beside what)."""
    res = subprocess.run(
        ["pdftotext", "-layout", pdf, "-"], capture_output=True, text=True, check=True, timeout=60
    )
    lines = [" ".join(ln.split()) for ln in res.stdout.splitlines()]
    return "\n".join(ln for ln in lines if ln) + "\n"


def image_document(tex: str) -> str:
    """``tex`` on a page as wide as its placement (one column of a two-column paper, or both
    for a ``table*``) with a 15pt margin, with exactly the packages it names (and geometry for
    the page); every float on the one page."""
    width = PAGE_PT if r"\begin{table*}" in tex else COLUMN_PT
    packages = ",".join(needed_packages(tex))
    return (
        "\\documentclass{article}\n"
        + f"\\usepackage{{{packages}}}\n"
        + f"\\usepackage[paperwidth={width + 30:g}pt,paperheight=900pt,margin=15pt]{{geometry}}\n"
        + "\\setcounter{topnumber}{9}\\setcounter{totalnumber}{9}"
        + "\\renewcommand{\\topfraction}{1}\\renewcommand{\\textfraction}{0}\n"
        + "\\makeatletter\\setlength{\\@fptop}{0pt}\\setlength{\\@fpsep}{18pt}"
        + "\\setlength{\\@fpbot}{0pt plus 1fil}\\makeatother\n"
        + "\\pagestyle{empty}\n\\begin{document}\n"
        + tex
        + "\n\\end{document}\n"
    )


def write_png(pdf, png) -> None:
    """The PDF's page as a PNG (``pdftoppm -r 110``), cut to its content plus 12 pixels."""
    from PIL import Image, ImageChops

    subprocess.run(
        ["pdftoppm", "-png", "-r", "110", "-singlefile", pdf, png.with_suffix("")],
        check=True,
        timeout=60,
    )
    image = Image.open(png).convert("RGB")
    box = ImageChops.difference(image, Image.new("RGB", image.size, "white")).getbbox()
    assert box is not None
    _, top, _, bottom = box
    image.crop((0, max(top - 12, 0), image.width, min(bottom + 12, image.height))).save(
        png, optimize=True
    )


DOCS_IMAGES = [
    "latex-wide-table",
    "latex-demo-table",
    "latex-wmt22-ranking",
    "latex-harness-comparison",
]


@NEEDS_PDFLATEX
@NEEDS_PDFTOTEXT
@pytest.mark.parametrize("name", DOCS_IMAGES)
def test_the_docs_images_show_the_tables_the_cli_prints(docs_latex, name, tmp_path):
    """docs/images/NAME.png (and .pdf) is the table compiled on a page as wide as its
    placement; NAME.txt beside it is what pdftotext reads in the freshly compiled table.
    EVALAB_UPDATE_DOCS_IMAGES=1 rewrites all three (the PNG by ``pdftoppm -png -r 110``)."""
    image = REPO / "docs" / "images" / f"{name}.png"
    doc = tmp_path / "image.tex"
    doc.write_text(image_document(docs_latex[name]), encoding="utf-8")
    res = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout[-2000:]
    log = (tmp_path / "image.log").read_text(encoding="utf-8", errors="replace")
    assert "Overfull" not in log and "Output written on image.pdf (1 page" in log
    text = pdf_page_text(tmp_path / "image.pdf")
    if os.environ.get("EVALAB_UPDATE_DOCS_IMAGES"):
        image.with_suffix(".txt").write_text(text, encoding="utf-8")
        shutil.copyfile(tmp_path / "image.pdf", image.with_suffix(".pdf"))
        write_png(tmp_path / "image.pdf", image)
    assert text == image.with_suffix(".txt").read_text(encoding="utf-8")
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
