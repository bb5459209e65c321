"""``evalab semsim --layout wide``: systems x (P, R, F1 ± half-width) on WMT22, every format."""

from __future__ import annotations

import json

import pytest
from tests.conftest import wmt_systems, write_wmt_subset

from models.semantic_helpers import make_tiny_bert

from .refusal import assert_refused

PAIR = "en-de"


@pytest.fixture(scope="module")
def wmt(tmp_path_factory):
    folder = tmp_path_factory.mktemp("semsim-wide")
    ref, hyps = write_wmt_subset(folder, PAIR, wmt_systems(PAIR)[:3], 30)
    return folder, ref, hyps, str(make_tiny_bert(folder / "tiny-bert"))


def args(wmt, *extra):
    _, ref, hyps, model = wmt
    return ["semsim", "-r", ref, "-i", *hyps, "--model", model, "-q", "--ci", "-n", "100", *extra]


def rows(markdown):
    lines = [line for line in markdown.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines]


def test_wide_cells_are_the_json_scores_best_in_bold(run_cli, wmt):
    data = json.loads(run_cli(*args(wmt, "-f", "json")).stdout)
    res = run_cli(*args(wmt, "-f", "markdown"))  # several systems: wide by default
    assert res.exit_code == 0, res.stderr
    table = rows(res.stdout)
    assert table[0] == ["system", "P ↑", "R ↑", "F1 ↑"] and len(table) == 1 + len(data)
    for j, key in enumerate(("precision", "recall", "fmeasure"), start=1):
        shown = []
        for row, r in zip(table[1:], data, strict=True):
            assert row[0] == r["system"]
            want = f"{r[key]:.4f}" + (f" ± {r['half_width']:.4f}" if key == "fmeasure" else "")
            assert row[j].strip("*") == want
            shown.append(round(r[key], 4))
        assert [row[j].startswith("**") for row in table[1:]] == [v == max(shown) for v in shown]
    assert "±: half-width of the 95% bootstrap confidence interval." in res.stdout


def test_long_layout_and_terminal_table(run_cli, wmt):
    long = run_cli(*args(wmt, "-f", "markdown", "--layout", "long"))
    assert rows(long.stdout)[0] == ["system", "P", "R", "F1"] and " (0." in long.stdout
    table = run_cli(*args(wmt, "--layout", "wide"))
    assert table.exit_code == 0 and "F1 ↑" in table.stdout


@pytest.mark.parametrize("extra", [(), ("--latex-split",), ("--latex-fragment",)])
def test_wide_latex_compiles(run_cli, wmt, tmp_path, extra):
    from tests.report.test_latex import NEEDS_PDFLATEX, compile_latex, in_float

    res = run_cli(*args(wmt, "-f", "latex", *extra))
    assert res.exit_code == 0 and r"F1 $\uparrow$" in res.stdout and res.stdout.isascii()
    if NEEDS_PDFLATEX.args[0]:
        pytest.skip(NEEDS_PDFLATEX.kwargs["reason"])
    fragment = extra == ("--latex-fragment",)
    compile_latex(in_float(res.stdout) if fragment else res.stdout, tmp_path)


def test_layout_with_json_is_refused(wmt):
    folder = wmt[0]
    assert_refused(
        tuple(args(wmt, "-f", "json", "--layout", "wide")), "--layout applies", watch=(folder,)
    )
