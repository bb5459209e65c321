"""The report's learning curves: the note in every format, and the plot as a reader sees it
in headless Chromium."""

from __future__ import annotations

import pytest
from tests.ablation.contract.test_curves import write_curve_study

from evalab.ablation import analyze, load_study
from evalab.ablation.analysis.curve_bands import study_curves, thinned
from evalab.report import render_html
from evalab.report.curves import POINTS

#: per curve plot: its polylines (one per row), bands, legend labels and size as drawn
CURVES_JS = """
JSON.stringify(Array.from(document.querySelectorAll('figure')).filter(f => (f.textContent || '').includes('per step'))
  .map(f => {
    const svg = f.querySelector('svg'); const r = svg.getBoundingClientRect();
    const line = svg.querySelector('polyline'); const box = line.getBBox();
    return {width: r.width, height: r.height, lines: svg.querySelectorAll('polyline').length,
            bands: svg.querySelectorAll('polygon').length, points: line.points.numberOfItems,
            lineWidth: box.width, lineHeight: box.height, text: f.textContent};
  }))
"""


@pytest.fixture(scope="module")
def curve_study(tmp_path_factory):
    from evalab.cli import main

    folder = tmp_path_factory.mktemp("curve-report")
    study = write_curve_study(folder, steps=1000)
    db = folder / "s.db"
    assert main(["ablate", "run", str(study), "--db", str(db), "-q", "--jobs", "2"]) == 0
    return load_study(study, check_entry=False), db


def test_bands_are_the_mean_and_range_over_seeds(curve_study):
    study, db = curve_study
    sc = study_curves(study, db)
    assert [r.labels for r in sc.rows] == [("base",), ("(H)",)] and all(
        r.seeds == 3 for r in sc.rows
    )
    from evalab.ablation.contract.curves import load_curves
    from evalab.ablation.plan.runs import plan_runs
    from evalab.ablation.store.run_store import RunStore

    keys = [r.key for r in plan_runs(study) if r.rows == ("base",)]
    with RunStore(db, create=False) as store:
        raw = load_curves(store.conn, study.name, keys)
    stacked = [raw[k]["loss"].values for k in keys]
    b = sc.rows[0].bands["loss"]
    assert b.mean.tolist() == pytest.approx(
        [sum(v) / 3 for v in zip(*stacked, strict=True)], rel=1e-12
    )
    assert b.low.tolist() == [min(v) for v in zip(*stacked, strict=True)]
    t = thinned(b, POINTS)
    assert len(t.steps) == POINTS and t.steps[-1] == 999 and t.low.min() == b.low.min()


@pytest.mark.browser
def test_curve_plot_in_headless_chromium(curve_study, tmp_path):
    pytest.importorskip("PIL")
    from tests.test_demo_browser import DevTools, _chromium, _console_errors

    study, db = curve_study
    page = tmp_path / "report.html"
    page.write_text(
        render_html(analyze(study, db), curves=study_curves(study, db)), encoding="utf-8"
    )
    tools = DevTools(_chromium(), tmp_path / "profile")
    try:
        session = tools.open_page(page, 1280, 1000)
        import json

        got = tools.call(
            "Runtime.evaluate", {"expression": CURVES_JS, "returnByValue": True}, session=session
        )
        plots = json.loads(got["result"]["value"])
        errors = _console_errors(tools.events)
    finally:
        tools.close()
    assert errors == []
    assert (
        len(plots) == 2
        and plots[0]["text"].strip().startswith("loss per step")
        and "val_loss per step" in plots[1]["text"]
    )
    for p in plots:
        assert p["width"] > 400 and p["height"] > 200, p
        assert p["lines"] == 2 and p["bands"] == 2 and p["points"] == POINTS, (
            p
        )  # one line and band per row
        assert p["lineWidth"] > 300 and p["lineHeight"] > 100, (
            p
        )  # drawn across the plot, not collapsed
        assert (
            "base (3 seeds; values at step " in p["text"]
            and "(H) (3 seeds; values at step " in p["text"]
        )
