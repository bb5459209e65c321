"""The one key table of the study file: the parsers, their refusals and the docs agree with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalab.ablation import load_study
from evalab.ablation.contract import keys
from evalab.ablation.contract.template import ARGS_STYLES
from evalab.errors import SettingsError

from ..synth import write_study

DOCS = Path(__file__).resolve().parents[3] / "docs"


def doc_table(page: str, heading: str) -> list[list[str]]:
    """The rows (cells without backquotes) of the first table under ``heading``."""
    text = (DOCS / page).read_text(encoding="utf-8")
    after = text[text.index(heading) :]
    lines = after.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("|"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip().strip("`") for c in line.strip("|").split("|")])
    return rows


def test_every_key_is_declared_once_with_its_type_and_help():
    seen = [(k.table, k.name) for k in keys.KEYS]
    assert len(seen) == len(set(seen))
    assert all(k.kind and k.help for k in keys.KEYS)
    assert keys.keys_of("study.resources")["cpus"].default == 1
    assert ARGS_STYLES == ("hydra", "argparse") == keys.keys_of("study")["args_style"].allowed


def test_the_docs_list_the_keys_of_metrics_tables_in_their_order():
    rows = doc_table("ablation-outputs.md", "## Metrics computed from the runs' outputs")
    assert [r[0] for r in rows] == list(keys.names("metrics.NAME"))


def test_the_docs_report_keys_are_study_keys_with_their_defaults():
    def shown(value):
        if value is None or value == {} or value == []:
            return "none"
        return "false" if value is False else repr(value)

    rows = doc_table("ablation-outputs.md", "## Study keys for the report")
    study = keys.keys_of("study")
    assert rows and all(r[0] in study for r in rows)
    for name, _what, default in rows:
        assert default == shown(study[name].default), name


def test_an_unknown_key_is_refused_with_the_declared_keys_in_order(tmp_path):
    path = write_study(tmp_path, extra_study="colour = 1")
    known = ", ".join(keys.names("study"))
    with pytest.raises(SettingsError, match=re.escape(f"unknown; known keys: {known}")):
        load_study(path)


def test_a_missing_required_key_is_refused_with_its_help(tmp_path):
    path = write_study(tmp_path)
    text = path.read_text(encoding="utf-8")
    path.write_text(re.sub(r"(?m)^seeds = .*$", "", text), encoding="utf-8")
    with pytest.raises(SettingsError, match=r"\[study\] seeds: missing \(list of integer seeds\)"):
        load_study(path)


def test_defaults_are_fresh_copies_and_checks_run_in_order():
    def refuse(key, why, missing):
        return ValueError(key.name, why, missing)

    first = keys.checked_values("study", {"name": "s", "seeds": [0]}, refuse)
    first["inputs"].append("x")
    again = keys.checked_values("study", {"name": "s", "seeds": [0]}, refuse)
    assert again["inputs"] == [] and again["retries"] == 0 and again["paired_seeds"] is False
    with pytest.raises(ValueError) as info:
        keys.checked_values("study", {"name": "s", "seeds": [0, 0], "retries": -1}, refuse)
    assert info.value.args == ("seeds", "has duplicates: [0, 0]", False)
