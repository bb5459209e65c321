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

from evalab.report.latex import MATH_SYMBOLS, latex_table, latex_text

N = 40


@given(st.text(max_size=40))
def test_latex_text_is_plain_ascii_whatever_the_input(text):
    assert latex_text(text).isascii()


@pytest.mark.parametrize(
    ("raw", "tex"),
    [("μ ± hw", r"$\mu$ $\pm$ hw"), ("Δ baseline", r"$\Delta$ baseline"), ("Kendall τ_b", r"Kendall $\tau_b$"),
     ("Müller", r'M\"{u}ller'), ("café", r"caf\'{e}"), ("中", "[U+4E2D]"), ("a_b & 5%", r"a\_b \& 5\%")],
)
def test_symbols_the_tables_print_are_escaped(raw, tex):
    assert latex_text(raw) == tex


def test_every_math_symbol_maps_to_ascii():
    assert all(v.isascii() for v in MATH_SYMBOLS.values())


def test_table_cells_and_caption_are_escaped_by_default():
    text = latex_table(["system", "score (μ ± hw)", "Δ"], [["Online-Ä_1", "1.0 ± 0.2", "+0.1"]], caption="p < 0.05")
    assert text.isascii() and r"$\mu$ $\pm$ hw" in text and r"\"{A}" in text and "$<$" in text


# -- compiling the real output ---------------------------------------------------------------
PREAMBLE = "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n"


def compile_latex(tables: str, tmp_path) -> None:
    """Compile ``tables`` in a minimal article with booktabs; fail with pdflatex's errors."""
    doc = tmp_path / "doc.tex"
    doc.write_text(PREAMBLE + tables + "\n\\end{document}\n", encoding="utf-8")
    res = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120,
    )
    errors = [line for line in res.stdout.splitlines() if line.startswith("!") or "Missing character" in line]
    assert res.returncode == 0 and (tmp_path / "doc.pdf").exists(), "\n".join(errors) or res.stdout[-2000:]
    log = (tmp_path / "doc.log").read_text(encoding="utf-8", errors="replace")
    assert "Missing character" not in log  # a glyph the font lacks is dropped with only a warning


@pytest.fixture
def systems(wmt22, tmp_path):
    """WMT22 en-de reference A and two systems (first N segments) under non-ASCII names."""
    ref = tmp_path / "ref.de"
    ref.write_text("\n".join(read_lines(wmt_file("ref", "en-de", "A"))[:N]) + "\n", encoding="utf-8")
    hyps = []
    for system, name in (("Online-A", "Müller_μ-base.de"), ("Online-B", "Δ-sys_2 (50%).de")):
        p = tmp_path / name
        p.write_text("\n".join(read_lines(wmt_file("hyp", "en-de", system))[:N]) + "\n", encoding="utf-8")
        hyps.append(p)
    return ref, hyps


def meta_eval_inputs(folder):
    """Three systems, a human TSV and precomputed scores: enough for every statistic."""
    rng = np.random.default_rng(0)
    names = ["sys-α", "sys_b", "sys-c"]
    (folder / "ref.txt").write_text("".join(f"ref {i}\n" for i in range(N)), encoding="utf-8")
    human, scores = [], []
    for s, name in enumerate(names):
        (folder / f"{name}.txt").write_text("".join(f"hyp {s} {i}\n" for i in range(N)), encoding="utf-8")
        quality = -s + rng.normal(0, 1, N)
        human += [f"{name}\t{i + 1}\t{q:.6f}" for i, q in enumerate(quality)]
        scores += [f"oracle\t{name}\t{i + 1}\t{q * 2 + 1:.6f}" for i, q in enumerate(quality)]
    (folder / "human.tsv").write_text("\n".join(human) + "\n", encoding="utf-8")
    (folder / "scores.tsv").write_text("\n".join(scores) + "\n", encoding="utf-8")
    return ["--human", folder / "human.tsv", "-r", folder / "ref.txt", "-i", *(folder / f"{n}.txt" for n in names),
            "--scores", folder / "scores.tsv", "-n", "50", "--permutations", "20", "-q"]


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed (Debian: texlive-latex-base texlive-latex-recommended)")
def test_latex_of_every_command_compiles_with_pdflatex(run_cli, systems, tmp_path, monkeypatch):
    ref, hyps = systems
    runs = [
        ("score", "-r", ref, "-i", *hyps, "-m", "bleu", "chrf", "--ci", "-n", "50", "-f", "latex"),
        ("compare", "-r", ref, "-i", *hyps, "-m", "bleu", "chrf", "-n", "50", "--correct", "holm", "-q", "-f", "latex"),
        ("meta-eval", *meta_eval_inputs(tmp_path), "-f", "latex"),
        ("metrics", "-f", "latex"),
    ]
    monkeypatch.syspath_prepend(str(REPO / "examples" / "toy_study"))
    study, db = REPO / "examples" / "toy_study" / "study.toml", tmp_path / "toy.db"
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 0
    runs += [("ablate", "report", study, "--db", db, "-f", "latex"), ("ablate", "status", study, "--db", db, "-f", "latex")]
    tables = []
    for args in runs:
        res = run_cli(*args)
        assert res.exit_code == 0, (args[0], res.stderr)
        assert res.stdout.isascii(), args[0]
        tables.append(f"% evalab {args[0]}\n{res.stdout}\\clearpage\n")
    compile_latex("\n".join(tables), tmp_path)


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed (Debian: texlive-latex-base texlive-latex-recommended)")
def test_ablation_report_with_test_set_intervals_compiles(analysis_with_test_set, tmp_path):
    from evalab.report import render_latex

    compile_latex(render_latex(analysis_with_test_set), tmp_path)
