"""The one LaTeX writer: every table the CLI prints as ``-f latex`` compiles with pdflatex.

The escaping itself is checked everywhere (a property: the output is plain ASCII, which
pdflatex's default fonts can typeset); the compile test needs ``pdflatex`` with booktabs
(Debian: texlive-latex-base texlive-latex-recommended, installed by .ci/run) and is
skipped, with the reason, where it is missing.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import REPO, read_lines, wmt_file

from evalab.report.latex import (
    MATH_SYMBOLS,
    PREAMBLE,
    LatexLayout,
    latex_table,
    latex_text,
    split_columns,
)

N = 40


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
        ["system", "score (μ ± hw)", "Δ"], [["Online-Ä_1", "1.0 ± 0.2", "+0.1"]], caption="p < 0.05"
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


def test_a_wide_table_stays_one_table_unless_a_split_is_asked_for():
    # one float with every column: a paper's table is not cut into "part i of k" floats
    tex = latex_table(DEMO_HEADER, DEMO_BODY, "Results", layout=LatexLayout(small=True))
    assert tex.count(r"\begin{tabular}{") == 1 and "part" not in tex
    assert tex.count("positions removed at eval") == 1
    split = latex_table(DEMO_HEADER, DEMO_BODY, "Results", layout=LatexLayout(split=True))
    parts = split_columns(DEMO_HEADER, DEMO_BODY)
    assert len(parts) > 1 and all(p[0] == 0 for p in parts)
    assert sorted(j for p in parts for j in p[1:]) == list(range(1, len(DEMO_HEADER)))
    assert split.count(r"\begin{tabular}{") == len(parts)
    assert f"(part {len(parts)} of {len(parts)})" in split


def test_long_labels_are_wrapped_and_signatures_are_comments_below_the_table():
    tex = latex_table(
        DEMO_HEADER, DEMO_BODY, "Results", notes=["bleu|nrefs:1|case:mixed|version:2.4.0"]
    )
    # the Row column holds labels longer than WRAP_CHARS: a p{} column, not one long line
    assert tex.count(r"p{11em}") == 1
    caption, comment = tex.split(r"\end{table}")
    assert "nrefs" not in caption and comment == "\n% bleu|nrefs:1|case:mixed|version:2.4.0\n"


def test_a_fragment_is_the_tabular_alone():
    tex = latex_table(["system", "BLEU"], [["a", "1.0"]], "c", layout=LatexLayout(fragment=True))
    assert tex.startswith(r"\begin{tabular}{lr}") and tex.endswith("\\end{tabular}\n")
    assert r"\begin{table}" not in tex and r"\caption" not in tex


# -- compiling the real output ---------------------------------------------------------------
DOCUMENT = "\\documentclass{article}\n" + PREAMBLE + "\n\\begin{document}\n"


def compile_latex(tables: str, tmp_path) -> str:
    """Compile ``tables`` in a standard article with the documented preamble; fail with
    pdflatex's errors, or on any box wider than the text (pdflatex only warns); the log."""
    doc = tmp_path / "doc.tex"
    doc.write_text(DOCUMENT + tables + "\n\\end{document}\n", encoding="utf-8")
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
    return log


NEEDS_PDFLATEX = pytest.mark.skipif(
    shutil.which("pdflatex") is None,
    reason="pdflatex is not installed (Debian: texlive-latex-base texlive-latex-recommended)",
)


@NEEDS_PDFLATEX
def test_the_demo_sized_table_fits_the_page(tmp_path):
    log = compile_latex(
        latex_table(DEMO_HEADER, DEMO_BODY, "Results", layout=LatexLayout(small=True)), tmp_path
    )
    assert "Output written" in log


@NEEDS_PDFLATEX
def test_the_compile_check_fails_on_a_table_wider_than_the_page(tmp_path):
    # the check itself can fail: the same table as one unsplit, unshrunk tabular overflows
    row = " & ".join(latex_text(c) for c in DEMO_BODY[2])
    wide = rf"\begin{{tabular}}{{{'l' * len(DEMO_HEADER)}}}" + row + r" \\ \end{tabular}"
    with pytest.raises(AssertionError, match="Overfull"):
        compile_latex(wide, tmp_path)


@NEEDS_PDFLATEX
def test_the_split_alone_fits_without_shrinking(tmp_path):
    # with --latex-split the parts fit at their natural size (readable, not shrunk)
    tex = latex_table(DEMO_HEADER, DEMO_BODY, "Results", layout=LatexLayout(split=True))
    compile_latex(natural_size(tex), tmp_path)


def natural_size(tex: str) -> str:
    """``tex`` without the \\resizebox safety net: each tabular at its natural width."""
    natural = tex.replace(
        r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%" + "\n", ""
    )
    natural = natural.replace(r"\end{tabular}}", r"\end{tabular}")
    assert r"\resizebox" not in natural
    return natural


@pytest.fixture
def systems(wmt22, tmp_path):
    """WMT22 en-de reference A and two systems (first N segments) under non-ASCII names."""
    ref = tmp_path / "ref.de"
    ref.write_text(
        "\n".join(read_lines(wmt_file("ref", "en-de", "A"))[:N]) + "\n", encoding="utf-8"
    )
    hyps = []
    for system, name in (("Online-A", "Müller_μ-base.de"), ("Online-B", "Δ-sys_2 (50%).de")):
        p = tmp_path / name
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


@NEEDS_PDFLATEX
def test_latex_of_every_command_compiles_with_pdflatex(run_cli, systems, tmp_path, monkeypatch):
    ref, hyps = systems
    runs = [
        ("score", "-r", ref, "-i", *hyps, "-m", "bleu", "chrf", "--ci", "-n", "50", "-f", "latex"),
        (
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
            "-f",
            "latex",
        ),
        ("meta-eval", *meta_eval_inputs(tmp_path), "-f", "latex"),
        ("metrics", "-f", "latex"),
    ]
    monkeypatch.syspath_prepend(str(REPO / "examples" / "toy_study"))
    study, db = REPO / "examples" / "toy_study" / "study.toml", tmp_path / "toy.db"
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 0
    runs += [
        ("ablate", "report", study, "--db", db, "-f", "latex"),
        ("ablate", "status", study, "--db", db, "-f", "latex"),
    ]
    tables = []
    for args in runs:
        res = run_cli(*args)
        assert res.exit_code == 0, (args[0], res.stderr)
        assert res.stdout.isascii(), args[0]
        tables.append(f"% evalab {args[0]}\n{res.stdout}\\clearpage\n")
    compile_latex("\n".join(tables), tmp_path)


@NEEDS_PDFLATEX
def test_ablation_report_with_test_set_intervals_compiles(analysis_with_test_set, tmp_path):
    from evalab.report import render_latex

    compile_latex(render_latex(analysis_with_test_set), tmp_path)
