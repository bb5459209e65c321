"""The one table value and its writers: hostile strings round-trip through every format, and
the CLI writes CSV and TSV that the csv module reads back (real WMT22 data)."""

from __future__ import annotations

import csv
import io
import json
import re
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import wmt_file

from evalab.report.delimited import delimited_table
from evalab.report.markdown import markdown_table
from evalab.report.page import html_table
from evalab.report.table import Interval, Number, Table, cell_text, numeric_columns, table_data

HOSTILE = ["*bold*", "<script>x</script>", r"\input{x}", "50%", "a & b", "d_model", "a|b", '"q", r']
#: text without control characters (a table cell is one line of printable text)
texts = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=20),
)


def sample(names: list[str]) -> Table:
    body = [[n, Number(i + 0.25, 2, spread=0.5, marker="*"), n] for i, n in enumerate(names)]
    return Table(["system", "bleu", "note"], body, [f"sig {n}" for n in names])


def read_csv(text: str, delimiter: str) -> list[list[str]]:
    quoting = csv.QUOTE_MINIMAL if delimiter == "," else csv.QUOTE_NONE
    return list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, quoting=quoting))


def md_cells(line: str) -> list[str]:
    """A Markdown table line's cells as a CommonMark viewer shows them: backslash escapes
    and the entities md_escape writes undone."""
    cells = re.split(r"(?<!\\)\|", line)[1:-1]
    return [
        re.sub(r"\\(.)", r"\1", c.strip()).replace("&lt;", "<").replace("&amp;", "&") for c in cells
    ]


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.rows[-1].append("")

    def handle_data(self, data):
        if self.rows and self.rows[-1]:
            self.rows[-1][-1] += data


@settings(max_examples=60, deadline=None)
@given(st.lists(texts, min_size=1, max_size=4))
def test_every_string_round_trips_through_every_writer(names):
    t = sample(names)
    expected = [[cell_text(c) for c in row] for row in t.body]
    # CSV: RFC 4180 quoting, read back by the csv module; the number split into its parts
    rows = read_csv(delimited_table(t, ","), ",")
    assert rows[0] == ["system", "bleu", "bleu ±", "bleu marker", "note"]
    assert [[r[0], r[4]] for r in rows[1 : 1 + len(names)]] == [[n, n] for n in names]
    assert rows[1][1:4] == ["0.25", "0.50", "*"] and rows[1 + len(names)] == []
    assert [r[0] for r in rows[2 + len(names) :]] == [f"# sig {n}" for n in names]
    # TSV: no quoting; a tab or a line break would be a space (none here)
    rows = read_csv(delimited_table(t, "\t"), "\t")
    assert [[r[0], r[4]] for r in rows[1 : 1 + len(names)]] == [[n, n] for n in names]
    # Markdown: every cell shows as written, but for spaces at its edges, which a table
    # cell's padding takes in every viewer (GitHub, CommonMark's table extension)
    lines = markdown_table(t).splitlines()
    shown = [[c.strip() for c in row] for row in expected]
    assert [md_cells(ln) for ln in lines[2 : 2 + len(names)]] == shown
    # HTML: the parser reads the text back
    parser = _Cells()
    parser.feed(html_table(t))
    assert parser.rows[1:] == expected
    # JSON
    assert json.loads(json.dumps(table_data(t)))["body"] == expected


def test_tsv_replaces_tabs_and_line_breaks_with_spaces():
    t = Table(["a"], [["x\ty\nz"]])
    assert read_csv(delimited_table(t, "\t"), "\t") == [["a"], ["x y z"]]
    assert read_csv(delimited_table(t, ","), ",") == [["a"], ["x\ty\nz"]]


def test_alignment_follows_the_cell_kind():
    t = Table(
        ["system", "metric", "score", "CI", "note"],
        [["a", "bleu", Number(1.0, 1), Interval(0.5, 1.5, 1), "negligible"]],
    )
    assert numeric_columns(t) == [False, False, True, True, False]
    assert markdown_table(t).splitlines()[1] == "|:--|:--|--:|--:|:--|"


def test_no_value_cells_are_empty_and_no_sign_on_zero_in_csv():
    t = Table(["s", "Δ", "p"], [["a", Number(-0.0001, 2, signed=True), Number(None, 3, p=True)]])
    assert read_csv(delimited_table(t, ","), ",")[1] == ["a", "0.00", ""]
    assert cell_text(t.body[0][1]) == "0.00"


@pytest.mark.usefixtures("wmt22")
@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_score_and_compare_write_csv_and_tsv(run_cli, fmt):
    ref = wmt_file("ref", "en-de", "A")
    hyps = [wmt_file("hyp", "en-de", s) for s in ("Online-A", "Online-B")]
    res = run_cli(
        "score", "-r", ref, "-i", *hyps, "-m", "bleu", "chrf", "--ci", "-n", "50", "-f", fmt
    )
    assert res.exit_code == 0, res.stderr
    rows = read_csv(res.stdout, "," if fmt == "csv" else "\t")
    assert rows[0] == ["system", "metric", "score", "score mean", "score mean ±", "details"]
    assert [r[:2] for r in rows[1:5]] == [
        ["Online-A", "bleu"],
        ["Online-A", "chrf"],
        ["Online-B", "bleu"],
        ["Online-B", "chrf"],
    ]
    assert all(float(r[2]) > 0 and float(r[4]) > 0 for r in rows[1:5])
    assert rows[5] == [] and rows[6][0].startswith("# bleu|nrefs:1")
    res = run_cli("compare", "-r", ref, "-i", *hyps, "-m", "bleu", "-n", "50", "-q", "-f", fmt)
    assert res.exit_code == 0, res.stderr
    rows = read_csv(res.stdout, "," if fmt == "csv" else "\t")
    assert rows[0][:3] == ["system", "metric", "score (μ ± hw)"] and "95% CI low" in rows[0]
    assert rows[1][rows[0].index("Δ baseline")] == "baseline"
    assert float(rows[2][rows[0].index("p-value")]) <= 1


def test_an_unknown_format_is_refused(run_cli):
    res = run_cli("metrics", "-f", "xlsx")
    assert res.exit_code == 2 and "csv, tsv" in res.stderr and "Traceback" not in res.stderr
