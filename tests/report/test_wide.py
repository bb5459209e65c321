"""The wide layout: systems x metrics, the best of each column in bold by its direction."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from evalab.report.latex import latex_table
from evalab.report.markdown import markdown_table
from evalab.report.numbers import NO_VALUE, number
from evalab.report.table import Table, cell_text
from evalab.report.wide import Cell, WideMetric, wide_table

scores = st.lists(
    st.one_of(st.none(), st.floats(min_value=-100, max_value=100, allow_nan=False)),
    min_size=1,
    max_size=8,
)


@given(scores, st.booleans(), st.integers(min_value=0, max_value=3))
def test_the_bold_cells_are_the_best_as_shown(values, higher, d):
    systems = [f"s{i}" for i in range(len(values))]
    cells = {(s, "m"): Cell(v) for s, v in zip(systems, values, strict=True) if v is not None}
    t = wide_table(systems, [WideMetric("m", higher, d)], cells)
    shown = [float(number(v, d)) for v in values if v is not None]
    best = (max if higher else min)(shown, default=None)
    expected = {
        (i, 1) for i, v in enumerate(values) if v is not None and float(number(v, d)) == best
    }
    assert t.bold == expected
    assert [cell_text(row[1]) for row in t.body] == [
        NO_VALUE if v is None else number(v, d) for v in values
    ]


def test_cells_markers_arrows_and_an_unknown_direction():
    t = wide_table(
        ["base", "sys"],
        [WideMetric("bleu", True, 1), WideMetric("ter", False, 1), WideMetric("acc", None, 2)],
        {
            ("base", "bleu"): Cell(30.04, 0.91),
            ("sys", "bleu"): Cell(31.0, 1.0, "*"),
            ("base", "ter"): Cell(50.0),
            ("sys", "ter"): Cell(None, None, "*"),
            ("base", "acc"): Cell(0.5),
        },
    )
    assert t.header == ["system", "bleu ↑", "ter ↓", "acc"]
    assert [[cell_text(c) for c in row] for row in t.body] == [
        ["base", "30.0 ± 0.9", "50.0", "0.50"],
        ["sys", "31.0 ± 1.0*", NO_VALUE, NO_VALUE],
    ]
    assert t.bold == {(1, 1), (0, 2)}  # no best for acc: its direction is not known


def test_the_writers_set_the_bold_cells_and_escape_the_names():
    t = wide_table(
        ["*bold*", r"\input{x}"],
        [WideMetric("bleu", True, 1)],
        {("*bold*", "bleu"): Cell(20.0), (r"\input{x}", "bleu"): Cell(21.0)},
    )
    md = markdown_table(Table(t.header, t.body, bold=t.bold))
    assert r"| \*bold\* | 20.0 |" in md and r"| \\input{x} | **21.0** |" in md
    tex = latex_table(Table(t.header, t.body, bold=t.bold))
    assert r"\textbackslash{}input\{x\} & \textbf{21.0} \\" in tex and "*bold* & 20.0" in tex
