"""The ``meta-eval -f html`` page of WMT21 (10 systems, BLEU and chrF) in headless Chromium at
1400 and 900 px: no table cell or figure off-screen, no text clipped by its figure, and the
scatter plots' point names, measured as the browser draws them, clear of each other and of
the points. Uses the DevTools client of tests/test_demo_browser.py."""

from __future__ import annotations

import json

import pytest
from tests.metaeval.conftest import MQM, mqm_args
from tests.report.test_html import page_facts
from tests.test_demo_browser import DevTools, _chromium

pytestmark = pytest.mark.browser

#: per scatter plot: the drawn boxes of its point names and of its dots
NAMES_JS = """
JSON.stringify(Array.from(document.querySelectorAll('figure svg')).filter(svg =>
    svg.querySelector('text.point-name')).map(svg => ({
  names: Array.from(svg.querySelectorAll('text.point-name')).map(t => {
    const r = t.getBBox(); return [r.x, r.y, r.x + r.width, r.y + r.height]; }),
  dots: Array.from(svg.querySelectorAll('g.panel circle')).map(c => {
    const r = c.getBBox(); return [r.x, r.y, r.x + r.width, r.y + r.height]; }),
})))
"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    _chromium()
    if not (MQM / "human" / "mqm_newstest2021_ende.avg_seg_scores.tsv").exists():
        pytest.skip(f"WMT21 MQM data not found at {MQM}")
    from tests.cli.refusal import evalab

    refs = [str(MQM / "references" / f"newstest2021.en-de.ref.{k}.de") for k in "CD"]
    args = mqm_args(MQM)
    cut = args.index("--name-map")
    args = [*args[:cut], *refs, *args[cut:], "ref-C=ref.C", "ref-D=ref.D"]
    path = tmp_path_factory.mktemp("metaeval-page") / "meta-eval.html"
    run = evalab(
        "meta-eval", *args, "-m", "bleu", "chrf", "-n", "20", "--permutations", "20", "-q",
        "-f", "html", "-o", path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return path


@pytest.mark.parametrize("width", [1400, 900])
def test_nothing_is_off_screen(page, tmp_path, width):
    facts, errors = page_facts(page, tmp_path / "profile", width)
    assert errors == [] and facts["tables"] == 1 and facts["cells"] > 100, (errors, facts)
    assert facts["offscreen"] == [] and facts["figures"] == 0, facts
    assert facts["scrolled"] == [] and facts["clipped"] == [], facts
    assert facts["scrollWidth"] <= facts["width"], facts


def overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_point_names_as_drawn_do_not_overlap(page, tmp_path):
    tools = DevTools(_chromium(), tmp_path / "profile")
    try:
        session = tools.open_page(page, 1400, 900)
        reply = tools.call(
            "Runtime.evaluate", {"expression": NAMES_JS, "returnByValue": True}, session=session
        )
    finally:
        tools.close()
    plots = json.loads(reply["result"]["value"])
    assert len(plots) == 2  # a scatter per metric
    for plot in plots:
        names = plot["names"]
        assert len(names) == 10
        assert not [(a, b) for i, a in enumerate(names) for b in names[i + 1 :] if overlap(a, b)]
        assert not [(a, d) for a in names for d in plot["dots"] if overlap(a, d)]
