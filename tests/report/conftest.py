"""Analyses for the renderer tests: a real synthetic study (runs, failures, a grid, a
reference column, hostile labels), and the same analysis with the test-set fields of
every row filled in (what a study with per-example data gives), built with
``dataclasses.replace`` so the renderers are tested apart from the statistics."""

from __future__ import annotations

import dataclasses

import pytest

from ablation.synth import write_study
from evalab.ablation import analyze, load_study, run_study
from evalab.ablation.analysis.analyze import StudyAnalysis

EVIL = "<script>alert('x')</script>"
DISPLAY = """
[display]
columns = { shift = "Δ_shift", double_shift = "2·shift", a = "component a" }
derived = { double_shift = "shift * 2" }
values = { mode = { raise = "raises!" } }
"""


@pytest.fixture(scope="session")
def analysis(tmp_path_factory) -> StudyAnalysis:
    folder = tmp_path_factory.mktemp("study")
    path = write_study(
        folder,
        seeds=[0, 1, 2],
        variants=[
            (EVIL, "desc with <b>tags</b> & ampersand_underscore", {"shift": -3.0}),
            ("(R)", "raises", {"mode": "raise"}),
        ],
        grid={"a": [False, True], "b": [False, True]},
        reference={"acc (paper)": {"base": 80.0, EVIL: 77.0}},
    )
    path.write_text(path.read_text(encoding="utf-8") + DISPLAY, encoding="utf-8")
    study = load_study(path)
    run_study(study, folder / "s.db", jobs=2, progress=False)
    return analyze(study, folder / "s.db", aso=True)


def with_test_set(a: StudyAnalysis, n_examples: int = 500) -> StudyAnalysis:
    """``a`` with every row's test-set fields filled: intervals around its mean and Δ
    (the two-level one wider), a two-level and a Holm p-value, one row negligible."""
    rows = []
    for j, r in enumerate(a.rows):
        metrics = {}
        for name, m in r.metrics.items():
            if not m.n:
                metrics[name] = m
                continue
            level = {
                "n_examples": n_examples,
                "mean_examples_low": m.mean - 0.4,
                "mean_examples_high": m.mean + 0.4,
            }
            if m.delta is not None:
                level |= {
                    "examples_low": m.delta - 0.5,
                    "examples_high": m.delta + 0.5,
                    "both_low": m.delta - 1.5,
                    "both_high": m.delta + 1.5,
                    "p_both": 0.01 * j,
                    "p_holm": min(1.0, 0.03 * j),
                    "negligible": r.label == "a=false, b=true",
                }
            metrics[name] = dataclasses.replace(m, **level)
        rows.append(dataclasses.replace(r, metrics=metrics))
    return dataclasses.replace(a, rows=rows)


@pytest.fixture(scope="session")
def analysis_with_test_set(analysis) -> StudyAnalysis:
    return with_test_set(analysis)
