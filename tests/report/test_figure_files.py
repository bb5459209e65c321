"""The ``--figures`` files checked by looking at them: every figure of the reports is drawn
by matplotlib (Agg) at both paper widths and its rendered boxes measured. No two texts
overlap, every text lies inside the figure and outside every plot area it does not belong
to, every point, interval and line lies inside its plot area (nothing clipped), no two
series' error bars are drawn over each other, and each row label of a forest plot appears
once, whole. Each check is shown to fail on a figure that breaks it (not vacuous)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest

from evalab.report.ablation_figures import forest_figure, interaction_figure, report_figures
from evalab.report.compare_page import ranking_figures
from evalab.report.figures import Figure, IntervalPanel, interval_panel
from evalab.report.metaeval_html import ranking_figure, scatter_figure
from evalab.report.plots import Intervals

pytest.importorskip("matplotlib")

#: px of slack for antialiasing and the renderers' rounding
SLACK = 1.0


def _boxes(drawn: Any) -> tuple[Any, list[tuple[Any, Any, Any]]]:
    """The renderer, and every visible text with its box and the axes it belongs to (None
    for the figure's own texts and the axes' tick and axis labels)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(drawn).get_renderer()
    drawn.draw(renderer)
    texts: list[tuple[Any, Any, Any]] = [
        (t, t.get_window_extent(renderer), None) for t in drawn.texts
    ]
    for ax in drawn.axes:
        texts += [(t, t.get_window_extent(renderer), ax) for t in ax.texts]
        lo, hi = sorted(ax.get_xlim())
        ticks = [
            t for t, v in zip(ax.get_xticklabels(), ax.get_xticks(), strict=True) if lo <= v <= hi
        ]
        ticks += list(ax.get_yticklabels())
        ticks += [ax.xaxis.label, ax.yaxis.label]
        texts += [(t, t.get_window_extent(renderer), None) for t in ticks]
    return renderer, [(t, b, ax) for t, b, ax in texts if t.get_visible() and t.get_text()]


def _inside(inner: Any, outer: Any, slack: float = SLACK) -> bool:
    return (
        inner.x0 >= outer.x0 - slack
        and inner.x1 <= outer.x1 + slack
        and inner.y0 >= outer.y0 - slack
        and inner.y1 <= outer.y1 + slack
    )


def _overlap(a: Any, b: Any) -> bool:
    return (
        a.x0 < b.x1 - SLACK and b.x0 < a.x1 - SLACK and a.y0 < b.y1 - SLACK and b.y0 < a.y1 - SLACK
    )


Texts = list[tuple[Any, Any, Any]]


def _text_problems(drawn: Any, texts: Texts) -> list[str]:
    out = [
        f"{t.get_text()!r} outside the figure" for t, b, _ in texts if not _inside(b, drawn.bbox)
    ]
    for (t1, b1, _), (t2, b2, _) in itertools.combinations(texts, 2):
        if _overlap(b1, b2):
            out.append(f"{t1.get_text()!r} overlaps {t2.get_text()!r}")
    for t, b, own in texts:
        for ax in drawn.axes:
            # a text in a plot area is one of its own (a point's name), wholly inside it
            if _overlap(b, ax.bbox) and not (ax is own and _inside(b, ax.bbox, 0.0)):
                out.append(f"{t.get_text()!r} runs into a plot area")
    return out


def _vertical_bars(ax: Any) -> list[tuple[int, float, float, float]]:
    """``(series, x, y0, y1)`` in display px of every vertical segment of the axes' line
    collections (the error bars), each collection a series."""
    out = []
    for k, coll in enumerate(ax.collections):
        for seg in coll.get_segments():
            (x0, y0), (x1, y1) = ax.transData.transform(seg[:2])
            if math.isclose(x0, x1) and not math.isclose(y0, y1):
                out.append((k, x0, min(y0, y1), max(y0, y1)))
    return out


def _extent(mark: Any, ax: Any, renderer: Any) -> Any:
    """A mark's box in display px: a collection's from its segments' or paths' points (its
    own window extent is empty for line collections), a line's with its markers."""
    from matplotlib.transforms import Bbox

    if hasattr(mark, "get_segments"):
        points = [xy for seg in mark.get_segments() for xy in seg]
    elif hasattr(mark, "get_paths") and not hasattr(mark, "get_xydata"):
        points = [xy for path in mark.get_paths() for xy in path.vertices]
    else:
        return mark.get_window_extent(renderer)
    return (
        Bbox.null()
        if not points
        else Bbox.from_extents(
            *ax.transData.transform(points).min(axis=0), *ax.transData.transform(points).max(axis=0)
        )
    )


def _mark_problems(drawn: Any, renderer: Any) -> list[str]:
    out = []
    for n, ax in enumerate(drawn.axes):
        marks = [*ax.lines, *ax.collections]
        for m in marks:
            if not _inside(_extent(m, ax, renderer), ax.bbox):
                out.append(f"panel {n}: a {type(m).__name__} is clipped by the plot area")
        for a, b in itertools.combinations(_vertical_bars(ax), 2):
            if a[0] != b[0] and abs(a[1] - b[1]) < 3 and a[2] < b[3] and b[2] < a[3]:
                out.append(f"panel {n}: two series' error bars drawn over each other")
    return out


def _label_problems(texts: Texts, fig: Figure) -> list[str]:
    """Each interval panel's row labels drawn once, whole (wrapped lines joined; the row's
    numbers its last line where they do not fit right of the plot)."""
    shown = ["".join(t.get_text().split()) for t, _, _ in texts]
    out = []
    for p in fig.panels:
        if isinstance(p, IntervalPanel):
            for i, lab in enumerate(p.labels):
                whole = "".join(lab.split())  # a word too long for the column is split
                value = "".join(p.values[i].split()) if p.values else ""
                found = sum(t in (whole, whole + value) for t in shown)
                if found != 1:
                    out.append(f"{whole!r} drawn {found} times")
    return out


def problems(fig: Figure, width_in: float) -> list[str]:
    """Everything wrong with ``fig`` drawn ``width_in`` inches wide."""
    import matplotlib

    from evalab.report.figure_files import RC, draw

    with matplotlib.rc_context(RC):
        drawn = draw(fig, width_in)
        renderer, texts = _boxes(drawn)
        return (
            _text_problems(drawn, texts)
            + _mark_problems(drawn, renderer)
            + _label_problems(texts, fig)
        )


def _signed_log_forest() -> Figure:
    """A forest plot with a large effect and small ones (the axis goes signed-log), long
    labels and a lower-is-better metric."""
    from evalab.report.ablation_figures import _delta_panel

    labels = [
        "no-attn = attention=none\nreplace attention by a mean over the sequence (the large loss)",
        "lr-high\nlearning rate 3e-3",
        "(C) = dropout=0.3, warmup=0\nmore dropout and no warmup at all in the schedule",
        "tiny",
    ]
    panel = _delta_panel(
        "Δ TER to the base (lower is better)",
        labels,
        [-9.0, 0.3, -0.2, 0.05],
        [Intervals("95% CI over seeds", [-12.0, 0.1, -0.5, -0.2], [-6.0, 0.5, 0.1, 0.3])],
        "Δ TER ↓ (lower is better)",
    )
    return Figure("forest-ter", "Δ TER", (panel,))


#: the demo's seq_acc row by row as docs/demo.md's real run prints them: label, description,
#: Δ, and its 95% CIs over seeds, over the test set and over both
DEMO_SEQ_ACC = [
    ("(A) h=1", "1 head, d_k = 32 (d_model fixed)", -29.70, (-31.51, -27.89), (-31.93, -27.57), (-32.85, -26.55)),
    ("(A) h=8", "8 heads, d_k = 4 (d_model fixed)", 1.10, (-0.88, 3.08), (0.40, 1.80), (-0.88, 3.08)),
    ("(A') 1 of 4 heads at eval (vs base, paired)", "trained base model; heads 2-4 zeroed in every attention layer at evaluation", -95.53, (-98.05, -93.02), (-96.40, -94.53), (-98.48, -92.58)),
    ("(D) P_drop=0", "no dropout", 3.63, (1.51, 5.75), (2.83, 4.53), (1.16, 6.11)),
    ("(D) P_drop=0.3", "dropout 0.3", -82.53, (-84.40, -80.67), (-84.33, -80.80), (-85.20, -79.87)),
    ("(D) eps_ls=0", "no label smoothing", -0.37, (-3.50, 2.77), (-0.90, 0.17), (-3.50, 2.77)),
    ("(E) learned", "learned positional embedding", -0.50, (-2.48, 1.48), (-1.20, 0.20), (-2.48, 1.48)),
    ("(E) none", "no positional encoding", -0.73, (-5.13, 3.67), (-1.33, -0.13), (-5.13, 3.67)),
    ("(E') positions removed at eval (vs base, paired)", "trained base model (sinusoids); positional encoding removed at evaluation", -3.03, (-6.18, 0.11), (-3.73, -2.33), (-6.21, 0.14)),
]  # fmt: skip


def demo_forest() -> Figure:
    """The demo's forest plot of seq_acc, best row first, from its real run's numbers (a Δ of
    −95.5 beside Δs under 1 with test-set intervals 1.4 wide: the case that once took 4
    panels)."""
    from evalab.report.ablation_figures import _delta_panel

    rows = sorted(DEMO_SEQ_ACC, key=lambda r: -r[2])
    kinds = [
        Intervals(name, [r[k][0] for r in rows], [r[k][1] for r in rows])
        for name, k in (
            ("95% CI over seeds", 3),
            ("95% CI over test examples", 4),
            ("95% CI over seeds and examples", 5),
        )
    ]
    panel = _delta_panel(
        "Δ seq_acc to the base (higher is better)",
        [f"{r[0]}\n{r[1]}" for r in rows],
        [r[2] for r in rows],
        kinds,
        "Δ seq_acc ↑ (higher is better)",
    )
    return Figure("forest-seq_acc", "Δ seq_acc to the base", (panel,))


def _metaeval_figures() -> list[Figure]:
    names = [f"generaltest2022.de-en.system-{k}-with-a-long-name" for k in range(7)] + ["B"]
    human = [0.1 * k for k in range(8)]
    ter = [60.0 - 2.0 * k + (k % 3) for k in range(8)]
    return [
        scatter_figure(names, human, ter, "TER (corpus)", "TER ↓ (lower is better)"),
        ranking_figure(
            "system: Pearson r",
            ["chrF", "BLEU", "TER"],
            [0.93, 0.91, 0.85],
            [0.88, 0.85, 0.7],
            [0.97, 0.96, 0.93],
            [1, 1, 2],
        ),
    ]


def _compare_figures() -> list[Figure]:
    rows = [
        {
            "metric": "ter",
            "system": f"generaltest2022.uk-en.{name}",
            "score": v,
            "ci_low": v - 1.5,
            "ci_high": v + 1.5,
            "rank": k,
            "cluster": 1 + (k > 2),
            "confidence": 0.95,
        }
        for k, (name, v) in enumerate(
            [("Online-B", 40.0), ("JDExploreAcademy", 41.0), ("Lan-Bridge", 47.0)], 1
        )
    ]
    return ranking_figures(rows, {"ter": False})


@pytest.fixture(scope="module")
def every_figure(analysis, analysis_with_test_set) -> list[Figure]:
    return [
        *report_figures(analysis),
        forest_figure(analysis_with_test_set, "acc"),
        _signed_log_forest(),
        demo_forest(),
        *_metaeval_figures(),
        *_compare_figures(),
    ]


@pytest.mark.parametrize("width", ["single", "double"])
def test_every_figure_looks_right_at_both_paper_widths(every_figure, width):
    from evalab.report.figure_files import paper_width

    found = {fig.name: problems(fig, paper_width(width)) for fig in every_figure}
    assert {name: p for name, p in found.items() if p} == {}


def test_a_large_and_small_effects_share_one_signed_log_axis():
    fig = _signed_log_forest()
    (panel,) = fig.panels
    assert isinstance(panel, IntervalPanel) and panel.x.linear_width == 0.5
    assert "linear within ±0.5, log beyond" in panel.x.label
    assert panel.x.lo < -12.0 and panel.x.hi > 0.5 and 0.0 in panel.x.ticks


def test_the_checks_see_a_label_that_is_not_wrapped(monkeypatch):
    import evalab.report.figures as figures

    monkeypatch.setattr(figures, "wrap", lambda text, px: tuple(text.split("\n")))
    found = problems(_signed_log_forest(), 3.3)
    assert any("outside the figure" in p or "runs into a plot area" in p for p in found), found


def test_the_checks_see_error_bars_drawn_over_each_other(analysis, monkeypatch):
    import evalab.report.ablation_figures as ablation_figures

    monkeypatch.setattr(ablation_figures, "dodge", lambda j, count: 0.0)
    fig = interaction_figure(analysis, "acc")
    assert fig is not None
    assert any("error bars drawn over each other" in p for p in problems(fig, 6.9))


def test_the_checks_see_a_clipped_point_and_a_repeated_label():
    clipped = interval_panel("t", ["a", "b"], [1.0, 2.0], [Intervals("ci", [0.5, 1.5], [1.5, 2.5])])
    import dataclasses

    narrow = dataclasses.replace(clipped, x=dataclasses.replace(clipped.x, hi=1.8))
    found = problems(Figure("f", "f", (narrow,)), 6.9)
    assert any("clipped by the plot area" in p for p in found), found
    twice = Figure("f", "f", (clipped, clipped))
    assert any("drawn 2 times" in p for p in problems(twice, 6.9))


def test_the_files_are_pdf_svg_and_png_at_the_width_asked(tmp_path):
    from evalab.report.figure_files import PNG_DPI, write_figures

    written = write_figures([_signed_log_forest()], tmp_path, 3.3)
    assert [p.name for p in written] == ["forest-ter.pdf", "forest-ter.svg", "forest-ter.png"]
    png = (tmp_path / "forest-ter.png").read_bytes()
    width = int.from_bytes(png[16:20], "big")  # the IHDR chunk's width
    assert width == round(3.3 * PNG_DPI)
    assert b'width="237.6pt"' in (tmp_path / "forest-ter.svg").read_bytes()  # 3.3 in
