"""Point names of the meta-eval scatter plots: placed so that none overlaps another name, a
point or the panel's note, and none is clipped by the plot area, on the page (the layout's
boxes) and in the ``--figures`` files (matplotlib's own text extents)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from tests.metaeval.conftest import MQM, mqm_args

from evalab.report.figures import LABEL_ASCENT, Box, XYPanel, layout, place_labels, text_width
from evalab.report.metaeval_html import scatter_figure


def overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def check_labels(fig) -> list:
    """Every name placed, inside the plot area, clear of the others, the points and the note."""
    (panel,), (box,) = fig.panels, layout(fig).boxes
    assert isinstance(panel, XYPanel) and isinstance(box, Box)
    labels = place_labels(panel, box)
    assert sorted(lab.name for lab in labels) == sorted(panel.point_names)
    boxes = [lab.box() for lab in labels]
    for x0, y0, x1, y1 in boxes:
        assert box.left <= x0 and x1 <= box.right and box.top <= y0 and y1 <= box.bottom
    assert not [(a, b) for a, b in itertools.combinations(boxes, 2) if overlap(a, b)]
    dots = [(x - 3.5, y - 3.5, x + 3.5, y + 3.5) for x, y in (lab.point for lab in labels)]
    assert not [(a, d) for a in boxes for d in dots if overlap(a, d)]
    note = (
        box.left + 6,
        box.top + 14 - LABEL_ASCENT,
        box.left + 6 + text_width(panel.note),
        box.top + 17,
    )
    assert not [a for a in boxes if overlap(a, note)]
    return labels


@pytest.fixture(scope="module")
def wmt21_scatters():
    """The scatter figures of BLEU and chrF on the 8 WMT21 systems and the two human
    translations (10 points, several within a few pixels of each other)."""
    from tests.cli.refusal import evalab

    mqm = MQM
    if not (mqm / "human" / "mqm_newstest2021_ende.avg_seg_scores.tsv").exists():
        pytest.skip(f"WMT21 MQM data not found at {mqm}")

    refs = [str(mqm / "references" / f"newstest2021.en-de.ref.{k}.de") for k in "CD"]
    args = mqm_args(mqm)
    cut = args.index("--name-map")
    args = [*args[:cut], *refs, *args[cut:], "ref-C=ref.C", "ref-D=ref.D"]
    run = evalab(
        "meta-eval",
        *args,
        "-m",
        "bleu",
        "chrf",
        "-n",
        "10",
        "--permutations",
        "0",
        "-q",
        "-f",
        "json",
    )
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    names = data["systems"]
    human = [data["human_system_scores"][n] for n in names]
    return [
        scatter_figure(names, human, [m["system_scores"][n] for n in names], name, name)
        for name, m in data["metrics"].items()
    ]


def test_wmt21_names_do_not_overlap_on_the_page(wmt21_scatters):
    for fig in wmt21_scatters:
        labels = check_labels(fig)
        assert len(labels) == 10


def test_a_crowd_of_long_names_is_spread_with_leader_lines():
    rng = np.random.default_rng(3)
    names = [f"generaltest2022.de-en.system-{k:02d}" for k in range(12)]
    human = list(0.5 + rng.normal(0, 0.001, 12))
    human[0] = 0.0  # one far point: the rest crowd into a few pixels
    metric = list(30 + rng.normal(0, 0.01, 12))
    labels = check_labels(scatter_figure(names, human, metric, "t", "bleu"))
    assert any(lab.leader for lab in labels) and not all(lab.leader for lab in labels)


def test_the_figure_files_draw_names_where_they_fit(wmt21_scatters):
    """matplotlib's measured text boxes (DejaVu Sans, 100 px an inch) neither overlap nor
    leave the axes: the width estimate of the placement is an upper bound."""
    pytest.importorskip("matplotlib")
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from evalab.report.figure_files import RC, draw

    for fig in wmt21_scatters:
        with matplotlib.rc_context(RC):
            drawn = draw(fig)
            FigureCanvasAgg(drawn).draw()
            renderer = drawn.canvas.get_renderer()
            (ax,) = drawn.axes
            names = {lab.text for lab in place_labels(fig.panels[0], layout(fig).boxes[0])}
            texts = [t for t in ax.texts if t.get_text() in names]
            assert len(texts) == len(names) == 10
            boxes = [t.get_window_extent(renderer) for t in texts]
            frame = ax.get_window_extent(renderer)
        for b in boxes:
            assert frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1
        assert not [(a, b) for a, b in itertools.combinations(boxes, 2) if a.overlaps(b)]
