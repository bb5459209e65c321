"""Refusals that name settings: the library's words and a caller's (errors.Setting)."""

from __future__ import annotations

import pickle

import pytest

from evalab.errors import (
    InputError,
    MissingExtraError,
    OutOfRangeError,
    RunError,
    Setting,
    SettingsError,
    SettingValueError,
)


def option(name: str) -> str:
    return {"systems": "-i"}.get(name, "--" + name.replace("_", "-"))


def test_a_setting_is_the_librarys_name_and_the_callers_option():
    exc = InputError(Setting("name_map"), " a=b: 'b' is not one of the ", Setting("systems"), " x")
    assert str(exc) == "name_map a=b: 'b' is not one of the systems x"
    assert exc.worded(option) == "--name-map a=b: 'b' is not one of the -i x"
    assert exc.worded() == str(exc)


def test_said_words_a_setting_for_the_library_and_an_aside_for_the_caller_only():
    said = SettingsError("not one of the ", Setting("systems", said="given"), " systems")
    assert (str(said), said.worded(option)) == (
        "not one of the given systems",
        "not one of the -i systems",
    )
    bos = SettingsError("use bos=False", Setting("no_bos", aside=""))
    assert (str(bos), bos.worded(option)) == ("use bos=False", "use bos=False (--no-bos)")
    baseline = SettingsError("pass baseline=FILE", Setting("baseline", aside="FILE"))
    assert baseline.worded(option) == "pass baseline=FILE (--baseline FILE)"


def test_the_typed_refusals_word_their_setting():
    out = OutOfRangeError("jobs", 0, ">= 1")
    assert (str(out), out.worded(option)) == (
        "jobs must be >= 1, got 0",
        "--jobs must be >= 1, got 0",
    )
    value = SettingValueError("seed_column", "'x'", "no such column")
    assert value.worded(option) == "--seed-column 'x': no such column"
    whole = SettingValueError("rows", "", "none given")
    assert (str(whole), whole.worded(option)) == ("rows: none given", "--rows: none given")
    extra = MissingExtraError((Setting("executor"), " ray"), "ray", "ray")
    assert extra.worded(option).startswith("--executor ray needs the optional dependency (ray)")
    assert str(extra).startswith("executor ray needs")
    assert str(InputError("plain text")) == "plain text"


@pytest.mark.parametrize(
    "exc",
    [
        InputError(Setting("source"), ": missing"),
        OutOfRangeError("jobs", 0, ">= 1"),
        SettingValueError("maps", "'a'", "given twice"),
        MissingExtraError("COMET", "semantic"),
        RunError("it raised", "Traceback ..."),
    ],
)
def test_a_refusal_keeps_its_words_and_fields_across_processes(exc):
    # raised in a worker (a Ray actor, a shard process) and re-raised by the driver
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc)
    assert (str(back), back.worded(option)) == (str(exc), exc.worded(option))
    assert vars(back) == vars(exc)
