"""The study file's ``[display]`` table (evalab.ablation.study.display): parsed, validated with
one clear line naming the key, and derived columns computed honestly."""

from __future__ import annotations

import pytest

from ablation.synth import write_study
from evalab.ablation import load_study
from evalab.ablation.study.display import Display, derive
from evalab.errors import SettingsError


def study_with(tmp_path, display: str):
    path = write_study(tmp_path, seeds=[0], variants=[("(A)", "shifted", {"shift": -1.0})])
    path.write_text(
        path.read_text(encoding="utf-8") + "\n[display]\n" + display + "\n", encoding="utf-8"
    )
    return path


def test_display_is_parsed(tmp_path):
    s = load_study(
        study_with(
            tmp_path,
            'columns = { shift = "Δ", twice = "2x" }\nderived = { twice = "shift * 2" }\n'
            'values = { mode = { ok = "fine" } }',
        )
    )
    assert s.display == Display(
        {"shift": "Δ", "twice": "2x"}, {"twice": "shift * 2"}, {"mode": {"ok": "fine"}}
    )
    assert (
        s.display.value("twice", {"shift": -1.5}) == -3 and s.display.text("mode", "ok") == "fine"
    )
    assert s.display.text("shift", None) == "–" and s.display.name("other") == "other"


def test_a_study_without_display_has_an_empty_one(tmp_path):
    path = write_study(tmp_path, seeds=[0])
    assert load_study(path).display == Display()


@pytest.mark.parametrize(
    ("display", "message"),
    [
        ('colour = "red"', "[display] key 'colour': unknown; known keys: columns, derived, values"),
        ('columns = { nope = "x" }', "[display] columns nope: is neither a configuration key"),
        ("columns = { shift = 3 }", '[display] columns: must be a table of key = "non-empty text"'),
        ('derived = { shift = "noise * 2" }', "[display] derived shift: is a configuration key"),
        ('derived = { d = "noise ** 2" }', "[display] derived d: 'noise ** 2' is not KEY op KEY"),
        ('derived = { d = "nope / 2" }', "[display] derived d: 'nope / 2' is not KEY op KEY"),
        ('derived = { d = "2 / 2" }', "at least one key"),
        ('values = { nope = { a = "b" } }', "[display] values nope: is neither"),
        ("values = 3", "[display] values: must be a table"),
    ],
)
def test_bad_display_is_refused_with_one_line(tmp_path, display, message):
    with pytest.raises(SettingsError) as err:
        load_study(study_with(tmp_path, display))
    text = str(err.value)
    assert message in text and "\n" not in text and "study.toml" in text


@pytest.mark.parametrize(
    ("expr", "config", "value"),
    [
        ("d_model / heads", {"d_model": 32, "heads": 4}, 8),
        ("d_model / heads", {"d_model": 32, "heads": 3}, 32 / 3),
        ("a - b", {"a": 1.5, "b": 0.5}, 1),
        ("a + 1", {"a": 2}, 3),
        ("a / b", {"a": 1, "b": 0}, None),
        ("a / b", {"a": 1}, None),
        ("a * b", {"a": "x", "b": 2}, None),
        ("a * b", {"a": True, "b": 2}, None),
    ],
)
def test_derive(expr, config, value):
    assert derive(expr, config) == value


def test_the_configurations_display_is_checked_against_are_the_reports():
    # spec builds them itself (plan imports spec): they must equal plan.study_rows' configurations
    from dataclasses import replace
    from pathlib import Path

    import evalab.examples.sort_digits as demo
    from evalab.ablation.plan.runs import study_rows
    from evalab.ablation.study.variants import shown_configs

    study = load_study(Path(demo.__file__).parent / "study.toml", check_entry=False)
    gridded = {"heads": [1, 4], "dropout": [0.0, 0.1]}
    for grid in ({}, gridded):
        s = replace(study, grid=grid)
        report = [(r.label, {**s.evaluation, **r.config}) for r in study_rows(s)]
        assert sorted(
            shown_configs(s.base, s.evaluation, list(s.variants), s.grid), key=str
        ) == sorted(report, key=str)
