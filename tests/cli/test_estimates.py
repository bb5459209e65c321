"""The options the estimator commands share: ``-f latex`` with the ``--latex-*`` options of
``winrate``, ``arena``, ``agreement``, ``judge`` and ``passk`` compiles, legibly, as every
other command's LaTeX does (``tests/report/test_latex.py``'s checks), and is refused with
another format."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from tests.cli.refusal import assert_refused
from tests.conftest import REPO
from tests.report.test_latex import (
    NEEDS_PDFLATEX,
    NEEDS_PDFTOTEXT,
    assert_rows_read_back,
    compile_latex,
    pdf_text,
    smallest_text,
)

EXAMPLES = REPO / "examples" / "preferences"


def _latex(*args: object) -> str:
    from evalab.cli import main

    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main([str(a) for a in (*args, "-n", "20", "-f", "latex")]) == 0, args
    return out.getvalue()


@NEEDS_PDFLATEX
@NEEDS_PDFTOTEXT
def test_latex_of_every_estimator_compiles_no_smaller_than_footnotesize(
    alpaca_annotations: Path, tmp_path: Path
) -> None:
    a = alpaca_annotations
    outputs = [
        _latex("winrate", a / "claude-2.1.json", a / "gpt4_1106_preview.json"),
        _latex("arena", EXAMPLES / "battles.jsonl", "--latex-label", "tab:arena"),
        _latex(
            "agreement",
            EXAMPLES / "ratings.csv",
            "--item-column",
            "item",
            "--latex-label",
            "tab:alpha",
        ),
        _latex(
            "judge",
            EXAMPLES / "judge_pairs.jsonl",
            "--humans",
            EXAMPLES / "human_pairs.jsonl",
            "--latex-caption",
            "The judge, checked.",
            "--latex-label",
            "tab:judge",
        ),
        _latex(
            "passk",
            EXAMPLES / "coder-large.jsonl",
            EXAMPLES / "coder-small.jsonl",
            "--score-column",
            "pass",
            "--sample-column",
            "sample",
            "-k",
            "1",
            "-k",
            "5",
            "--latex-label",
            "tab:passk",
        ),
    ]
    tex = "\n".join(outputs)
    assert tex.isascii() and "[U+" not in tex
    assert r"\caption{The judge," in tex and r"\label{tab:judge-2}" in tex
    compile_latex(tex, tmp_path)
    reference, height, word = smallest_text(tmp_path / "doc.pdf")
    assert height >= reference * 0.99, (word, height, reference)
    assert_rows_read_back(tex, pdf_text(tmp_path))


@pytest.mark.parametrize("command", ["arena", "passk"])
def test_a_latex_option_without_latex_is_refused(command: str) -> None:
    args = {
        "arena": (EXAMPLES / "battles.jsonl",),
        "passk": (
            EXAMPLES / "coder-large.jsonl",
            "--score-column",
            "pass",
            "--sample-column",
            "sample",
        ),
    }[command]
    assert_refused(
        (command, *args, "--latex-caption", "x", "-f", "json"),
        "--latex-caption applies to -f latex only, not -f json",
        watch=(EXAMPLES,),
    )
