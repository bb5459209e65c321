"""The built-in study's report layout: Table 3's columns (h, d_k, P_drop, ε_ls, positional)
from the shipped study file's ``[display]``, without running the study (its rows and
configurations come from the engine's planner; the statistics are placeholders here, the
real ones are in tests/test_demo_browser.py)."""

from __future__ import annotations

from evalab.ablation import load_study
from evalab.ablation.analysis.analyze import MetricStats, RowAnalysis, StudyAnalysis
from evalab.ablation.plan.runs import study_rows
from evalab.examples.sort_digits import study_path
from evalab.report.table import table_data
from evalab.report.tables import main_table, report_notes


def texts(table):
    """The table's cells as every format shows them."""
    return table_data(table)["body"]


def layout_of_shipped_study() -> StudyAnalysis:
    s = load_study(study_path(), check_entry=False)
    rows = []
    for r in study_rows(s):
        stats = {m: MetricStats(m, 3, [1.0, 2.0, 3.0], 2.0, 1.0, 0.5, 3.5) for m in s.metrics}
        rows.append(
            RowAnalysis(
                r.label,
                r.description,
                r.kind,
                r.changes,
                3,
                3,
                stats,
                [],
                {},
                r.stage,
                r.parent,
                {**s.evaluation, **r.config},
            )
        )
    return StudyAnalysis(
        s.name,
        s.description,
        str(s.path),
        "",
        s.code_version,
        list(s.metrics),
        s.primary,
        dict(s.higher_is_better),
        list(s.seeds),
        rows,
        {},
        [],
        {},
        {"confidence": 0.95},
        [],
        s.display,
    )


def test_demo_table_has_the_papers_columns():
    a = layout_of_shipped_study()
    t = main_table(a)
    assert t.header[:9] == [
        "Row",
        "Stage",
        "h",
        "d_k",
        "P_drop",
        "ε_ls",
        "positional",
        "heads at eval",
        "positions at eval",
    ]
    rows = {r[0]: r[2:9] for r in texts(t)}
    assert rows["base"] == ["4", "8", "0.1", "0.1", "sinusoid", "all", "kept"]
    assert rows["(A) h=1"] == ["1", "32", "", "", "", "", ""]  # d_k follows h at fixed d_model
    assert rows["(A) h=8"] == ["8", "4", "", "", "", "", ""]
    assert rows["(D) P_drop=0"] == ["", "", "0.0", "", "", "", ""]
    assert rows["(D) eps_ls=0"] == ["", "", "", "0.0", "", "", ""]
    assert rows["(E) none"] == ["", "", "", "", "none", "", ""]
    assert rows["(A') 1 of 4 heads at eval"] == ["", "", "", "", "", "1", ""]
    assert rows["(E') positions removed at eval"] == ["", "", "", "", "", "", "removed"]
    assert "Description" not in t.header
    assert "d_k = d_model / heads (derived from each row's configuration)" in report_notes(a)[0]
