"""The one number formatter: decimals, signs (never ``-0.0``) and the one no-value symbol."""

from __future__ import annotations

import ast
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import REPO

from evalab.report.numbers import (
    NO_VALUE,
    count,
    interval,
    number,
    p_value,
    plus_minus,
    scale_decimals,
)

finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12)
decimals = st.integers(min_value=0, max_value=6)


@given(finite, decimals, st.booleans())
def test_no_negative_zero_and_the_value_round_trips(x, d, signed):
    text = number(x, d, signed=signed)
    assert not re.fullmatch(r"[-+]0(\.0*)?", text)  # never -0.0 nor +0.0
    assert abs(float(text) - x) <= 0.5 * 10**-d * (1 + 1e-9) + abs(x) * 1e-15
    assert text.startswith("+") == (signed and float(text) > 0)


@given(st.sampled_from([None, math.nan, math.inf, -math.inf]), decimals, st.booleans())
def test_every_missing_value_is_the_one_symbol(x, d, signed):
    assert number(x, d, signed=signed) == NO_VALUE
    assert interval(x, 1.0, d) == interval(0.0, x, d) == NO_VALUE
    assert p_value(x) == NO_VALUE and plus_minus(x, 0.5, d) == NO_VALUE


@given(finite, finite, decimals)
def test_an_interval_is_its_two_bounds(low, high, d):
    text = interval(low, high, d)
    assert text == f"[{number(low, d)}, {number(high, d)}]"


@pytest.mark.parametrize(
    ("p", "d", "text"), [(0.0004, 3, "<0.001"), (0.001, 3, "0.001"), (0.5, 5, "0.50000")]
)
def test_p_values_below_what_the_decimals_show_are_bounded(p, d, text):
    assert p_value(p, d) == text


def test_plus_minus_count_and_scale_decimals():
    assert plus_minus(36.61, 0.94, 1) == "36.6 ± 0.9"
    assert plus_minus(36.61, None, 1) == plus_minus(36.61, math.nan, 1) == "36.6"
    assert count(None) == NO_VALUE and count(3) == "3"
    assert (scale_decimals(100), scale_decimals(1.0), scale_decimals(100, 2)) == (1, 4, 2)
    assert number(2.5e16, 4, scientific_from=1e6) == "2.5000e+16"


def no_value_literals(source: str) -> list[int]:
    """Lines where ``"-"``, ``"n/a"`` or ``"–"`` is written as a value (returned, a branch of
    ``x if c else y``, an element of a list or tuple): a cell for "no value"."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        values = (
            [node.value]
            if isinstance(node, ast.Return)
            else [node.body, node.orelse]
            if isinstance(node, ast.IfExp)
            else list(node.elts)
            if isinstance(node, ast.List | ast.Tuple)
            else []
        )
        lines += [
            v.lineno for v in values if isinstance(v, ast.Constant) and v.value in ("-", "n/a", "–")
        ]
    return lines


def test_no_other_no_value_symbol_is_left_in_the_table_code():
    files = [
        *(REPO / "src" / "evalab" / "cli").glob("*.py"),
        *(REPO / "src" / "evalab" / "report").glob("*.py"),
    ]
    found = {
        p.name: lines
        for p in files
        if p.name != "numbers.py" and (lines := no_value_literals(p.read_text(encoding="utf-8")))
    }
    assert not found, found
    # the check can fail
    assert no_value_literals('def f(x):\n    return "-" if x is None else str(x)\n') == [2]
