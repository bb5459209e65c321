"""The values the analysis hands to the report carry no sentences: every text in a
``StudyAnalysis`` is a code, something the study file or the runs wrote (labels,
descriptions, configuration values, a run's error line), a path, or one of the few fields
listed below. The AST rule of ``tests/test_words.py`` checks how text is built; this
checks what arrives, however it was built."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from typing import Any

from evalab.ablation import analyze, load_study, run_study
from evalab.ablation.analysis.note_kinds import note_dict
from evalab.ablation.plan.runs import plan_runs
from evalab.report.tables import decimals_for

from ..synth import write_study

#: a code: lower-case words joined by underscores ("no_seed_spread", "needed_to_learn")
CODE = re.compile(r"[a-z][a-z0-9_]*")
#: fields whose text is not a code nor the study's: why each may hold words
FIELDS = {
    "error": "a failed run's error line (its exception's message)",
    "description": "a row's free text from the study file (base and grid cells: their configuration)",
    "path": "the study file",
    "db_path": "the run database",
    "text": "a metric's definition: a signature, or the study's own words",
    "name": "a grid effect's name (stats/effects.py; listed in tests/test_words.py ALLOWED)",
    "arithmetic": "a grid effect's arithmetic (stats/effects.py; idem)",
}


def texts(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every str inside ``value`` (dataclasses, dicts, lists), with its field path."""
    if isinstance(value, str):
        yield path, value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from texts(getattr(value, f.name), f"{path}.{f.name}")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from texts(k, f"{path}{{}}")
            yield from texts(v, f"{path}[{k!r}]")
    elif isinstance(value, list | tuple):
        for v in value:
            yield from texts(v, f"{path}[]")


def sentences(a: Any, own: str) -> list[str]:
    """The texts of analysis ``a`` that are none of: a code, the study file's (``own``), a
    row label, one word, or a field of FIELDS."""
    labels = {x for r in a.rows for x in r.labels}  # grid cells: "a=false, b=true"
    found = []
    for where, text in [*texts(a), *texts([note_dict(n) for n in a.notes], ".notes")]:
        field = re.sub(r"\[.*?\]|\{\}", "", where).rpartition(".")[2]
        if field in FIELDS or CODE.fullmatch(text) or text in own or text in labels:
            continue
        if " " in text:
            found.append(f"{where} = {text!r}")
    return found


def test_every_text_of_an_analysis_is_a_code_or_the_studys_own(tmp_path):
    path = write_study(
        tmp_path,
        seeds=[0, 1],
        variants=[
            ("(A)", "shift down by three", {"shift": -3.0}),
            ("(R)", "raises on every seed", {"mode": "raise"}),
            ("(Z)", "no noise", {"noise": 0.0}),
        ],
        grid={"a": [False, True], "b": [False, True]},
        extra_study="bounds = { acc = [0, 100] }\nmin_effect = { acc = 0.5 }\n",
    )
    study = load_study(path)
    run_study(study, tmp_path / "s.db", jobs=2, progress=False)
    a = analyze(study, tmp_path / "s.db", aso=True, holm=True, resamples=50)
    own = path.read_text(encoding="utf-8")
    found = sentences(a, own)
    assert not found, (
        "sentences in the analysis (make them codes; words go in report/):\n" + "\n".join(found)
    )
    planted = dataclasses.replace(a.rows[1], kind="a variant of the base")
    assert sentences(dataclasses.replace(a, rows=[a.rows[0], planted, *a.rows[2:]]), own) == [
        ".rows[].kind = 'a variant of the base'"
    ]
    assert {n.code for n in a.notes} >= {"seeds", "delta", "grid", "missing_runs", "holm"}


def test_planned_counts_and_largest_means_match_a_count_over_every_run(tmp_path):
    """Each row's planned runs (counted once over the plan) and each metric's largest |mean|
    (read once per analysis) are those of a direct count over every planned run and row."""
    path = write_study(
        tmp_path,
        seeds=[0, 1, 2],
        variants=[
            ("(A)", "shift down by three", {"shift": -3.0}),
            ("(R)", "raises on every seed", {"mode": "raise"}),
        ],
        grid={"a": [False, True], "b": [False, True]},  # the (False, False) cell is the base
    )
    study = load_study(path)
    run_study(study, tmp_path / "s.db", jobs=2, progress=False)
    a = analyze(study, tmp_path / "s.db")
    plan = plan_runs(study)
    assert any(r.aliases for r in a.rows)
    for r in a.rows:
        assert r.planned == sum(1 for run in plan if r.label in run.rows) == 3
    for m in a.metrics:
        means = [abs(r.metrics[m].mean) for r in a.rows if r.metrics[m].n]
        assert a.largest_mean[m] == max(means)
    assert a.rows[[r.label for r in a.rows].index("(R)")].metrics["acc"].n == 0
    assert (decimals_for(a, "acc"), decimals_for(a, "loss")) == (2, 4)
