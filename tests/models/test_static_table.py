"""Static word-vector tables: a NaN, an infinity or an overflowing number is refused with
the table's path and line number (through the real ``evalab semsim`` entry point)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from evalab.errors import InputError
from evalab.models.static_table import StaticTableEmbedder, read_table

GOOD = "# comment line\ncar\t1\t0\nauto\t0.9\t0.1\nred\t0\t1\tfunction\n"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def texts(tmp_path):
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("red car\n", encoding="utf-8")
    ref.write_text("red auto\n", encoding="utf-8")
    return hyp, ref


@pytest.mark.parametrize(
    ("row", "shown"),
    [
        ("auto\tnan\t0.1", "'nan'"),
        ("auto\t0.9\tNaN", "'NaN'"),
        ("auto\tinf\t0.1", "'inf'"),
        ("auto\t0.9\t-Infinity", "'-Infinity'"),
        ("auto\t1e400\t0.1", "'1e400'"),  # parses to inf
        ("auto 0.5 nan function", "'nan'"),  # space-separated, with a tag column
    ],
)
def test_cli_refuses_non_finite_table_entries_with_line_number(
    run_cli, texts, tmp_path, row, shown
):
    hyp, ref = texts
    table = tmp_path / "table.tsv"
    table.write_text(GOOD.replace("auto\t0.9\t0.1", row), encoding="utf-8")
    out = tmp_path / "scores.json"
    before = {p: _sha(p) for p in (hyp, ref, table)}
    res = run_cli("semsim", "-r", ref, "-i", hyp, "--model", table, "-f", "json", "-o", out)
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr
    assert (
        f"{table}, line 3: word 'auto'" in lines[0] and shown in lines[0] and "finite" in lines[0]
    )
    assert res.stdout == "" and not out.exists()
    assert before == {p: _sha(p) for p in (hyp, ref, table)}


@pytest.mark.parametrize("entry", ["1_0", "0x1", "٣"])
def test_entries_outside_the_number_grammar_are_refused_not_read(tmp_path, entry):
    # float() reads "1_0" as 10.0 and "٣" as 3.0: a table entry follows the one number grammar
    table = tmp_path / "t.tsv"
    table.write_text(f"car\t1\t0\nauto\t{entry}\t0.1\n", encoding="utf-8")
    with pytest.raises(InputError, match=f"line 2: word 'auto' has the entry '{entry}'"):
        read_table(table)


def test_numbers_too_large_to_normalise_are_refused(tmp_path):
    table = tmp_path / "big.tsv"
    table.write_text("car\t1\t0\nauto\t1e200\t1e200\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"line 2: word 'auto' has numbers too large"):
        StaticTableEmbedder(table)


def test_dimension_mismatch_names_the_first_row_line(tmp_path):
    table = tmp_path / "dims.tsv"
    table.write_text("# header\n\ncar\t1\t0\nauto\t1\t0\t2\n", encoding="utf-8")
    with pytest.raises(
        InputError, match=r"line 4: word 'auto' has 3 numbers, expected 2 like line 3"
    ):
        StaticTableEmbedder(table)


def test_finite_table_still_scores(run_cli, texts, tmp_path):
    hyp, ref = texts
    table = tmp_path / "table.tsv"
    table.write_text(GOOD, encoding="utf-8")
    res = run_cli("semsim", "-r", ref, "-i", hyp, "--model", table, "-f", "json")
    assert res.exit_code == 0, res.stderr
    emb = StaticTableEmbedder(table)
    assert emb.function_words() == {"red"} and emb.dim == 2
