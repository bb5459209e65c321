"""The figures as typed values (report/figures.py, report/ablation_figures.py) and their two
renderers: what each figure of the ablation report shows, decided once, drawn the same by
the page's SVG writer and by matplotlib."""

from __future__ import annotations

import html
import math

import pytest

from evalab.report.ablation_figures import (
    BETTER,
    UNCLEAR,
    WORSE,
    interaction_figure,
    report_figures,
    summary_figure,
)
from evalab.report.figures import (
    Figure,
    IntervalPanel,
    Series,
    XYPanel,
    figure_svg,
    interval_panel,
    layout,
    legend,
    xy_panel,
)
from evalab.report.plots import Intervals


def test_the_interaction_plot_draws_every_cell_of_the_grid(analysis):
    fig = interaction_figure(analysis, "acc")
    assert fig is not None and len(fig.panels) == 1  # two factors: one pair
    (panel,) = fig.panels
    assert isinstance(panel, XYPanel) and panel.style == "bars"
    assert panel.x_names == ("false", "true") and panel.x.label == "a"
    assert [s.label for s in panel.series] == ["b=false", "b=true"]
    for s, b in zip(panel.series, ("false", "true"), strict=True):
        for k, a in enumerate(("false", "true")):
            row = next(r for r in analysis.rows if f"a={a}, b={b}" in r.labels)
            m = row.metrics["acc"]
            assert (s.ys[k], s.lows[k], s.highs[k]) == (m.mean, m.ci_low, m.ci_high)
    # the panel names the interaction contrast the grid effects list
    (c,) = [c for c in analysis.contrasts["acc"] if c.kind == "interaction"]
    assert panel.note.startswith("interaction ") and f"{c.value:+.2f}" in panel.note
    ys = [v for s in panel.series for v in (*s.lows, *s.highs) if v is not None]
    assert panel.y.lo < min(ys) and max(ys) < panel.y.hi  # every interval inside the axis
    assert panel.y.lo > 0 or min(ys) < 10  # an axis that fits the data, not one from zero


def test_no_interaction_plot_without_two_factors(analysis):
    import dataclasses

    one = dataclasses.replace(analysis, grid={"a": [False, True]})
    assert interaction_figure(one, "acc") is None


def test_the_summary_colours_each_row_by_its_verdict_and_writes_its_numbers(analysis):
    fig = summary_figure(analysis)
    assert fig is not None and fig.name == "summary"
    compared = [r for r in analysis.rows if r.metrics["acc"].delta is not None]
    for panel in fig.panels:
        assert isinstance(panel, IntervalPanel) and len(panel.labels) == len(compared)
        for i, r in enumerate(compared):
            m = r.metrics["acc"]
            lo, hi = m.delta_low, m.delta_high
            group = panel.group_of(i)
            assert group == (BETTER if lo > 0 else WORSE if hi < 0 else UNCLEAR), r.label
            assert panel.values[i].startswith(f"{m.delta:+.2f} [")
    # the study's order: the rows as the tables list them
    assert fig.panels[0].labels[0].startswith(compared[0].label)


def test_every_figure_draws_as_svg_with_its_legend(analysis_with_test_set):
    figures = report_figures(analysis_with_test_set)
    assert [f.name for f in figures][:3] == ["summary", "forest-acc", "level-acc"]
    for fig in figures:
        svg = figure_svg(fig)
        assert svg.count('<g class="panel">') == len(fig.panels)
        for entry in legend(fig):
            assert html.escape(entry.label) in svg, (fig.name, entry)


def test_a_panel_axis_keeps_zero_only_when_asked_or_near():
    far = interval_panel("t", ["a"], [93.0], [Intervals("ci", [92.0], [94.0])])
    assert far.x.lo > 90 and all(r.at != 0.0 for r in far.rules)
    kept = interval_panel(
        "t", ["a"], [0.5], [Intervals("ci", [0.2], [0.8])], reference=0.0, zero="always"
    )
    assert kept.x.lo < 0 < kept.x.hi and [r.at for r in kept.rules] == [0.0]


def test_curves_and_category_axes():
    s = Series("r", (0.0, 10.0, 20.0), (1.0, 0.5, None), (0.9, 0.4, None), (1.1, 0.6, None))
    band = xy_panel("c", [s], xlabel="step", ylabel="loss")
    assert band.x.lo == 0 and band.x.hi == 20 and band.y.lo < 0.4 and band.y.hi > 1.1
    svg = figure_svg(Figure("c", "c", (band,)))
    assert svg.count("<polygon") == 1 and svg.count("<polyline") == 1
    with pytest.raises(ValueError, match="band, bars or points"):
        xy_panel("c", [s], xlabel="x", ylabel="y", style="pie")


def test_matplotlib_draws_the_same_axes(analysis):
    pytest.importorskip("matplotlib")
    from evalab.report.figure_files import draw

    fig = next(f for f in report_figures(analysis) if f.name == "forest-acc")
    drawn = draw(fig)
    axes = drawn.axes
    assert len(axes) == len(fig.panels)
    lay = layout(fig)
    width, height = drawn.get_size_inches() * 100
    assert (round(width), round(height)) == (round(lay.width), round(lay.height))
    for ax, panel, box in zip(axes, fig.panels, lay.boxes, strict=True):
        # the page's plot area, at 100 px an inch
        x0, y0, w, h = ax.get_position().bounds
        assert math.isclose(x0 * width, box.left) and math.isclose(w * width, box.right - box.left)
        assert math.isclose((1 - y0 - h) * height, box.top, abs_tol=1e-6)
        assert isinstance(panel, IntervalPanel)
        assert all(
            math.isclose(a, b) for a, b in zip(ax.get_xlim(), (panel.x.lo, panel.x.hi), strict=True)
        )
        # every row's label once, whole, in the lines the layout wrapped it into
        texts = [t.get_text() for t in ax.get_yticklabels()]
        assert texts == ["\n".join(row.lines) for row in box.rows]
        assert [" ".join(t.split()) for t in texts] == [
            " ".join(lab.split()) for lab in panel.labels
        ]
        assert list(ax.get_xticks()) == list(box.ticks)
        assert set(box.ticks) <= set(panel.x.ticks)


@pytest.fixture(scope="module")
def larger_grid(tmp_path_factory):
    from ablation.synth import write_study
    from evalab.ablation import analyze, load_study, run_study

    folder = tmp_path_factory.mktemp("grid3")
    path = write_study(
        folder,
        seeds=[0, 1],
        grid={"a": [False, True], "b": [False, True], "shift": [-1.0, 0.0, 1.0]},
    )
    study = load_study(path)
    run_study(study, folder / "s.db", jobs=2, progress=False)
    return analyze(study, folder / "s.db")


def test_a_larger_grid_gets_a_panel_per_pair_of_factors(larger_grid):
    fig = interaction_figure(larger_grid, "acc")
    assert fig is not None
    titles = [p.title for p in fig.panels]
    # the third factor at the base's level in each panel's title
    assert titles == [
        "acc: a × b (shift=0.0)",
        "acc: a × shift (b=true)",
        "acc: b × shift (a=true)",
    ]
    by_title = dict(zip(titles, fig.panels, strict=True))
    three = by_title["acc: a × shift (b=true)"]
    assert isinstance(three, XYPanel) and [s.label for s in three.series] == [
        "shift=-1.0",
        "shift=0.0",
        "shift=1.0",
    ]
    assert all(y is not None for s in three.series for y in s.ys)  # every cell has runs
    # two ablated levels of shift: two interaction contrasts, named, not drawn as one
    assert three.note == "2 interaction contrasts (listed under the grid effects)"
    assert by_title["acc: a × b (shift=0.0)"].note.startswith("interaction ")
    svg = figure_svg(fig)
    assert svg.count('<g class="panel">') == 3 and svg.count("<polyline") == 2 + 3 + 3
