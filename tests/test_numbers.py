"""One grammar for every number a user gives: each reader accepts exactly the texts
:func:`evalab.numbers.parse_number` accepts, with the same value, and refuses the rest with
its own error (never an ``OverflowError``, never Python's ``float()`` reading ``1_0`` as ten).

The readers: ``compare --scores`` CSV cells and JSONL strings and numbers, human score files,
``ablate import`` CSV cells, ``--set`` values of a study and of a metric, numeric options,
a run's metrics file and its logged curves; JSON numbers through :func:`evalab.numbers.loads`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path

import click
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.ablation.synth import write_study

from evalab import numbers
from evalab.ablation.contract.curves import read_log
from evalab.ablation.execution.attempt import check_metrics
from evalab.ablation.importing.importer import check_records, load_records
from evalab.ablation.study.load import load_study
from evalab.ablation.study.overrides import with_overrides
from evalab.cli.options import STRICT_TYPES
from evalab.errors import EvalabError
from evalab.items import read_scores
from evalab.metaeval.human import read_human_scores
from evalab.metrics.bleu import BLEUSettings

#: decimal literals, among them ones too long, too large or too small for a float
DECIMALS = st.from_regex(
    r"\A[+-]?(?:[0-9]{1,25}(?:\.[0-9]{0,20})?|\.[0-9]{1,20})(?:[eE][+-]?[0-9]{1,4})?\Z"
)
#: what Python reads as a number and the grammar may not: underscores, words, hex, digits
#: of other scripts, stray signs and points, spaces around
LOOSE = st.text(alphabet="0123456789+-.eE_xXabfinINFty٣ \t", max_size=12)
CORNERS = st.sampled_from(
    [
        "1_0", "7_5", "0x10", "1e400", "-1e400", "1e-400", "4.9e-324", "1.7976931348623157e308",
        "NaN", "nan", "Infinity", "-inf", "inf", "9007199254740992", "9007199254740993",
        "-9007199254740992", "9" * 400, " 0.5", "0.5\t", ".5", "5.", "+1", "-0", "", " ", "٣",
    ]
)  # fmt: skip
TEXTS = st.one_of(
    DECIMALS,
    LOOSE,
    CORNERS,
    st.integers(-(10**400), 10**400).map(str),
    st.floats().map(repr),
)
#: the JSON number syntax: what a JSON file can hold as a number (a huge one too)
JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
JSON_TEXTS = st.one_of(
    st.from_regex(r"\A-?(?:0|[1-9][0-9]{0,25})(?:\.[0-9]{1,20})?(?:[eE][+-]?[0-9]{1,4})?\Z"),
    st.integers(-(10**400), 10**400).map(str),
    CORNERS.filter(JSON_NUMBER.fullmatch),
)
SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

#: a reader's refusal: an EvalabError (InputError, SettingsError, RunError), a click
#: BadParameter for an option; never anything else
REFUSALS = (EvalabError, click.BadParameter)


def grammar(text: str) -> float | None:
    """The value :func:`evalab.numbers.parse_number` gives ``text`` (None: refused)."""
    try:
        return float(numbers.parse_number(text))
    except numbers.NumberError:
        return None


def read_with(reader: Callable[[str], float], text: str) -> float | None:
    try:
        return float(reader(text))
    except REFUSALS:
        return None


def holds(reader: Callable[[str], float], text: str, *expected: float | None) -> None:
    want = expected[0] if expected else grammar(text)
    got = read_with(reader, text)
    assert got == want, (text, got, want)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("numbers")


@pytest.fixture(scope="module")
def study(folder: Path):
    return load_study(write_study(folder / "study", seeds=[0]))


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def csv_score(folder: Path) -> Callable[[str], float]:
    def read(text: str) -> float:
        path = _write(folder, "s.csv", f"id,score\na,{text}\n")
        return float(read_scores(str(path))[0].values[0])

    return read


def jsonl_score(folder: Path, as_string: bool) -> Callable[[str], float]:
    def read(text: str) -> float:
        value = json.dumps(text) if as_string else text
        path = _write(folder, "s.jsonl", f'{{"id": "a", "score": {value}}}\n')
        return float(read_scores(str(path))[0].values[0])

    return read


def human_score(folder: Path) -> Callable[[str], float]:
    def read(text: str) -> float:
        path = _write(folder, "h.tsv", f"A\t1\t{text}\n")
        return float(read_human_scores(str(path), 1, "tsv").scores["A"][0])

    return read


def imported_metric(folder: Path, study) -> Callable[[str], float]:
    def read(text: str) -> float:
        path = _write(folder, "runs.csv", f"row,seed,acc,loss\nbase,0,{text},0.5\n")
        _, records, _ = load_records(study, path)
        (run,), _ = check_records(study, records)
        return run.metrics["acc"]

    return read


def study_setting(study) -> Callable[[str], float]:
    def read(text: str) -> float:
        return float(with_overrides(study, [f"shift={text}"]).variants[-1].settings["shift"])

    return read


def metric_setting(text: str) -> float:
    value = BLEUSettings.parse_value("smooth_value", text)
    if value is None:  # an optional setting's "", none or null: no value, not a number
        raise EvalabError(f"{text!r}: no value")
    return float(value)


def option(text: str) -> float:
    return float(STRICT_TYPES[click.FLOAT].convert(text, None, None))


def run_metrics(text: str) -> float:
    return check_metrics(numbers.loads(f'{{"acc": {text}}}'), ("acc",))["acc"]


def logged_curve(folder: Path) -> Callable[[str], float]:
    def read(text: str) -> float:
        path = _write(folder, "metrics.jsonl", f'{{"step": 0, "acc": {text}}}\n')
        try:
            return float(read_log(path)["acc"].values[0])
        except ValueError as exc:  # read_log's refusal names FILE:LINE
            raise EvalabError(str(exc)) from None

    return read


def json_number(text: str) -> float:
    value = numbers.loads(text)
    if isinstance(value, numbers.Refused):
        raise EvalabError(str(value.error))
    return float(value)


@SETTINGS
@given(TEXTS)
@example("1_0")
@example("9" * 400)
def test_text_readers_follow_the_grammar(folder: Path, study, text: str) -> None:
    """Every reader of a number written as text: CSV cells, JSON strings, human scores,
    imported metrics, --set of a study and of a metric, numeric options."""
    for reader in (
        csv_score(folder),
        jsonl_score(folder, as_string=True),
        imported_metric(folder, study),
        study_setting(study),
        metric_setting,
        option,
    ):
        holds(reader, text)
    # a human score file splits its columns at whitespace; "" and None mean unrated
    cell = text.strip(" \t")
    if cell.lower() not in ("", "none"):
        holds(human_score(folder), cell)


@SETTINGS
@given(JSON_TEXTS)
@example("9" * 400)
@example("1e400")
def test_json_readers_follow_the_grammar(folder: Path, text: str) -> None:
    """Every reader of a JSON number: JSONL score files, a run's metrics file, its logged
    curves, and :func:`evalab.numbers.loads` (never an OverflowError, never infinity)."""
    for reader in (
        jsonl_score(folder, as_string=False),
        run_metrics,
        logged_curve(folder),
        json_number,
    ):
        holds(reader, text)


def whole(text: str) -> float | None:
    """The value :func:`evalab.numbers.parse_int` gives ``text`` (None: refused)."""
    try:
        return float(numbers.parse_int(text))
    except numbers.NumberError:
        return None


@SETTINGS
@given(TEXTS)
def test_integer_readers_follow_the_grammar(text: str) -> None:
    """Integer options and integer metric settings take :func:`evalab.numbers.parse_int`'s
    texts (``int()`` takes ``1_0`` and ``٣``)."""
    for reader in (
        lambda t: STRICT_TYPES[click.INT].convert(t, None, None),
        lambda t: BLEUSettings.parse_value("max_ngram_order", t),
    ):
        holds(reader, text, whole(text))


def test_the_grammar_by_example() -> None:
    assert grammar("0.25") == 0.25 and grammar(" -3 ") == -3.0 and grammar(".5") == 0.5
    assert grammar("9007199254740992") == 2.0**53
    for refused in ("1_0", "0x10", "1e400", "1e-400", "nan", "inf", "9007199254740993", "٣"):
        assert grammar(refused) is None, refused
    assert math.isclose(grammar("1.7976931348623157e308") or 0.0, 1.7976931348623157e308)
