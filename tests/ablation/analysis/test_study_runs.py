"""A study's run keys as the analysis reads them: hashed once per study row, and the same
keys the plan gives (a row that is not the study's own is hashed as it is)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from evalab.ablation import load_study
from evalab.ablation.analysis.study_runs import StudyRuns
from evalab.ablation.plan.runs import Row, study_rows, study_run_key

STUDY = """[study]
name = "keys"
entry = "entry:run"
seeds = [0, 1, 2]
metrics = ["acc"]

[base]
lr = 0.1
depth = 2

[grid]
depth = [2, 4]

[[variant]]
label = "(A)"
set = { lr = 0.2 }
"""


def test_keys_are_the_plans_keys_for_every_row_and_any_other_row(tmp_path: Path) -> None:
    (tmp_path / "entry.py").write_text("def run(config, seed):\n    return {}\n", "utf-8")
    (tmp_path / "study.toml").write_text(STUDY, "utf-8")
    study = load_study(tmp_path / "study.toml", check_entry=False)
    runs = StudyRuns(study, {}, {})
    rows = study_rows(study)
    assert len(rows) == 4
    for row in rows:
        assert runs.keys(row) == {s: study_run_key(study, row, s) for s in study.seeds}
    # a row under a study row's label but another configuration is not given that row's keys
    other = replace(rows[1], config={**rows[1].config, "lr": 0.3})
    assert runs.keys(other) == {s: study_run_key(study, other, s) for s in study.seeds}
    assert runs.keys(other) != runs.keys(rows[1])
    loose = Row("", "", "grid", {"lr": 0.1, "depth": 2}, {}, {})
    assert runs.keys(loose) == runs.keys(rows[0])
