"""Shared options through the real entry point: ``--set`` given twice with two values is
refused; ``--layout``, ``--latex-split`` and ``--latex-fragment`` on every table command."""

from __future__ import annotations

import re

import pytest
from tests.cli.refusal import assert_refused, evalab
from tests.conftest import write_wmt_subset


@pytest.fixture
def work(tmp_path):
    (tmp_path / "ref.txt").write_text("The cat sat\na dog\n")
    (tmp_path / "hyp.txt").write_text("the cat sat\na dog\n")
    return tmp_path


@pytest.mark.parametrize(
    ("sets", "needle"),
    [
        # the last one used to win silently: the table said lowercase was off, the user asked for both
        (
            ["-s", "bleu.lowercase=true", "-s", "bleu.lowercase=false"],
            "bleu.lowercase is already set by --set 'bleu.lowercase=true'",
        ),
        (
            ["-s", "lowercase=true", "-s", "chrf.lowercase=false"],
            "chrf.lowercase is already set by --set 'lowercase=true'",
        ),
    ],
)
def test_a_setting_given_twice_with_two_values_is_refused(work, sets, needle):
    assert_refused(
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "-m", "bleu", "chrf", *sets),
        needle,
        watch=(work,),
        cwd=work,
    )


def test_the_same_value_twice_is_accepted(work):
    run = evalab(
        "score",
        "-r",
        "ref.txt",
        "-i",
        "hyp.txt",
        "-s",
        "bleu.lowercase=true",
        "-s",
        "lowercase=1",
        cwd=work,
    )
    assert run.returncode == 0, run.stderr
    assert "case:lc" in run.stdout


# -- --layout, --latex-split, --latex-fragment: one declaration, every command ---------------
#: system names every writer must show as written (Markdown, LaTeX and the terminal table)
HOSTILE_NAMES = ["*bold*", "<script>", r"\input{x}", "50%_&|"]


@pytest.fixture
def hostile(wmt22, tmp_path):
    """WMT22 de-en reference A and four systems (first 60 segments) under hostile names."""
    ref, paths = write_wmt_subset(
        tmp_path, "de-en", ["Online-A", "Online-B", "Online-W", "PROMT"], 60
    )
    return ref, [f"{name}={p}" for name, p in zip(HOSTILE_NAMES, paths, strict=True)]


def body_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("| ") or ln.endswith(r" \\")]


def test_score_is_wide_in_the_paper_formats_by_default_with_the_best_in_bold(run_cli, hostile):
    ref, systems = hostile
    args = ("score", "-r", ref, "-i", *systems, "-m", "bleu", "chrf", "ter")
    md = run_cli(*args, "-f", "markdown")
    assert md.exit_code == 0, md.stderr
    lines = body_lines(md.stdout)
    assert lines[0] == "| system | bleu ↑ | chrf ↑ | ter ↓ |" and len(lines) == 1 + 4
    assert [ln.split(" | ")[0] for ln in lines[1:]] == [
        r"| \*bold\*",
        "| &lt;script>",
        r"| \\input{x}",
        r"| 50%\_&\|",
    ]
    # one bold cell (or tied ones) per column, the lowest TER and the highest BLEU
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[1:]]
    cols = list(zip(*[r[-3:] for r in rows], strict=True))
    for col, higher in zip(cols, (True, True, False), strict=True):
        values = [float(c.strip("*")) for c in col]
        best = max(values) if higher else min(values)
        assert [c.startswith("**") for c in col] == [v == best for v in values]
    tex = run_cli(*args, "-f", "latex", "--ci", "-n", "50", "-q")
    assert tex.exit_code == 0, tex.stderr
    assert (
        r"\textbf{" in tex.stdout
        and r"$\pm$" in tex.stdout
        and len(re.findall(r"\\begin\{table\*?\}", tex.stdout)) == 1
    )
    assert r"\textbackslash{}input\{x\} & " in tex.stdout and r"50\%\_\&\textbar{} & " in tex.stdout
    long = run_cli(*args, "-f", "markdown", "--layout", "long")
    assert body_lines(long.stdout)[0] == "| system | metric | score | details |"
    assert len(body_lines(long.stdout)) == 1 + 12
    # the terminal keeps the long table (with BLEU's details) unless asked
    assert "details" in run_cli(*args).stdout
    terminal = run_cli(*args, "--layout", "wide").stdout
    assert "bleu ↑" in terminal
    assert all(f"│ {name} " in terminal for name in HOSTILE_NAMES)  # as written, no markup


def test_compare_wide_marks_the_significant_systems_and_a_fragment_is_the_tabular(run_cli, hostile):
    ref, systems = hostile
    args = ("compare", "-r", ref, "-i", *systems, "-m", "bleu", "chrf", "-n", "100", "-q")
    res = run_cli(*args, "-f", "latex", "--latex-fragment")
    assert res.exit_code == 0, res.stderr
    out = res.stdout
    needs, out = out.split("\n", 1)
    assert needs == r"% needs: booktabs (\usepackage{booktabs})"
    assert out.startswith(r"\begin{tabular}") and r"\begin{table}" not in out
    assert r"\resizebox" not in out and "% * p $<$ 0.05 against the baseline, *bold*." in out
    body = [ln for ln in out.splitlines() if ln.endswith(r" \\")][1:]
    # the baseline, never starred; a row opening with "*" guarded by "{}" (no \\* after \\\\)
    assert len(body) == 4 and body[0].startswith("{}*bold* & ")
    assert "*" not in body[0].removeprefix("{}*bold* & ")
    ranked = run_cli(*args, "-f", "markdown", "--rank")
    assert (
        ranked.exit_code == 0
        and " (1)" in ranked.stdout
        and "(k): the system's cluster" in ranked.stdout
    )


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (("--latex-split",), "--latex-split applies to -f latex only, not -f markdown"),
        (("--latex-fragment",), "--latex-fragment applies to -f latex only, not -f markdown"),
        (("--no-latex-split",), "--no-latex-split applies to -f latex only, not -f markdown"),
        (("--latex-caption", "c"), "--latex-caption applies to -f latex only, not -f markdown"),
        (("--latex-label", "t"), "--latex-label applies to -f latex only, not -f markdown"),
        (("--layout", "tall"), "--layout must be wide or long, got 'tall'"),
    ],
)
@pytest.mark.parametrize("command", ["score", "compare"])
def test_layout_options_that_do_not_apply_are_refused(work, command, extra, needle):
    assert_refused(
        (command, "-r", "ref.txt", "-i", "hyp.txt", "hyp.txt", "-f", "markdown", *extra),
        needle,
        watch=(work,),
        cwd=work,
    )


@pytest.mark.parametrize(
    "args",
    [
        ("metrics",),
        ("power", "--delta", "0.02", "--sd", "0.3"),
        ("compare", "--scores", "a.csv", "b.csv"),
    ],
)
def test_every_latex_command_takes_the_latex_options(work, args):
    (work / "a.csv").write_text("id,score\n1,0\n2,1\n3,1\n4,0\n")
    (work / "b.csv").write_text("id,score\n1,1\n2,1\n3,1\n4,0\n")
    run = evalab(*args, "-f", "latex", "--latex-fragment", "--latex-split", cwd=work)
    assert run.returncode == 0, run.stderr
    needs, tabular = run.stdout.split("\n", 1)
    assert needs.startswith("% needs: booktabs")
    assert tabular.startswith(r"\begin{tabular}") and r"\begin{table}" not in run.stdout
    labelled = evalab(
        *args, "-f", "latex", "--latex-caption", "Mine", "--latex-label", "t:x", cwd=work
    )
    assert labelled.returncode == 0, labelled.stderr
    assert r"\caption{Mine." in labelled.stdout and r"\label{t:x}" in labelled.stdout
    assert_refused(
        (*args, "--latex-split"), "--latex-split applies to -f latex only", watch=(work,), cwd=work
    )
