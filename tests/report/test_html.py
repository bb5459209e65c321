"""The HTML report in headless Chromium at a 1400 px wide window: every table cell and
every plot is inside the window (nothing hidden behind a horizontal scroll), for the
widest report the renderers make (test-set intervals, Holm, ASO, a derived column,
reference columns, hostile labels). Uses the DevTools client of tests/test_demo_browser.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.test_demo_browser import DevTools, _chromium, _console_errors

from evalab.report import render_html

pytestmark = pytest.mark.browser

#: what is outside the window: cells, figures and any element wider than the page
OFFSCREEN_JS = """
JSON.stringify((() => {
  const width = document.documentElement.clientWidth;
  const out = el => { const r = el.getBoundingClientRect(); return r.left < -0.5 || r.right > width + 0.5; };
  const cells = Array.from(document.querySelectorAll('th, td'));
  return {
    width: width,
    scrollWidth: document.documentElement.scrollWidth,
    cells: cells.length,
    tables: document.querySelectorAll('table').length,
    offscreen: cells.filter(out).map(c => c.textContent).slice(0, 10),
    figures: Array.from(document.querySelectorAll('figure')).filter(out).length,
    // texts of a figure cut by its own edge (a label longer than the room left for it)
    clipped: Array.from(document.querySelectorAll('figure svg')).flatMap(svg => {
      const b = svg.getBoundingClientRect();
      return Array.from(svg.querySelectorAll('text')).filter(t => {
        const r = t.getBoundingClientRect();
        return r.left < b.left - 0.5 || r.right > b.right + 0.5 || r.top < b.top - 0.5 || r.bottom > b.bottom + 0.5;
      }).map(t => t.textContent);
    }).slice(0, 10),
    scrolled: Array.from(document.querySelectorAll('body *')).filter(el => el.scrollWidth > el.clientWidth + 1
      && getComputedStyle(el).overflowX !== 'visible').map(el => el.tagName).slice(0, 10),
  };
})())
"""


def page_facts(
    html_path: Path, profile: Path, width: int = 1400
) -> tuple[dict[str, Any], list[str]]:
    """Open ``html_path`` in a ``width`` px window; (what OFFSCREEN_JS reports, console errors)."""
    tools = DevTools(_chromium(), profile)
    try:
        session = tools.open_page(html_path, width, 900)
        facts = tools.call(
            "Runtime.evaluate", {"expression": OFFSCREEN_JS, "returnByValue": True}, session=session
        )
        return json.loads(facts["result"]["value"]), _console_errors(tools.events)
    finally:
        tools.close()


def check_fits(html_path: Path, profile: Path, width: int = 1400) -> dict[str, Any]:
    """Assert that no table column or plot of the page is off-screen at ``width`` px."""
    facts, errors = page_facts(html_path, profile, width)
    assert errors == [], errors
    assert facts["width"] <= width and facts["tables"] >= 2 and facts["cells"] > 50, facts
    assert facts["offscreen"] == [], facts
    assert facts["figures"] == 0 and facts["scrolled"] == [] and facts["clipped"] == [], facts
    assert facts["scrollWidth"] <= facts["width"], facts
    return facts


@pytest.mark.parametrize("width", [1400, 900])
def test_widest_report_fits_the_window(analysis_with_test_set, tmp_path, width):
    _chromium()
    page = tmp_path / "report.html"
    page.write_text(render_html(analysis_with_test_set), encoding="utf-8")
    check_fits(page, tmp_path / "profile", width)


#: per panel of a plot of Δ (the forest plots and the summary): its title, its row labels
#: and the drawn width of each interval (every interval line carries a "<row label>: <kind>
#: [low, high]" tooltip)
FOREST_JS = """
JSON.stringify(Array.from(document.querySelectorAll('figure svg g.panel')).filter(g =>
    g.querySelector('title').textContent.includes('Δ')).map(g => ({
  title: g.querySelector('title').textContent,
  labels: Array.from(g.querySelectorAll('text[text-anchor="end"]')).map(t =>
    Array.from(t.querySelectorAll('tspan')).map(s => s.textContent).join(' ')),
  intervals: Array.from(g.querySelectorAll('line')).filter(l => l.querySelector('title')).map(l =>
    ({title: l.querySelector('title').textContent, width: l.getBoundingClientRect().width})),
})))
"""


def forest_facts(html_path: Path, profile: Path, width: int) -> list[dict[str, Any]]:
    tools = DevTools(_chromium(), profile)
    try:
        session = tools.open_page(html_path, width, 900)
        facts = tools.call(
            "Runtime.evaluate", {"expression": FOREST_JS, "returnByValue": True}, session=session
        )
        return json.loads(facts["result"]["value"])
    finally:
        tools.close()


@pytest.mark.parametrize("width", [1400, 900])
def test_every_forest_row_is_drawn_once_and_readable(analysis, tmp_path, width):
    # the study's a=b=false row has an effect ten times the others: still one panel per
    # metric, every row on it once, every interval wide enough to read
    _chromium()
    page = tmp_path / "report.html"
    page.write_text(render_html(analysis), encoding="utf-8")
    panels = forest_facts(page, tmp_path / "profile", width)
    # the summary (acc) and the forest plots of acc and loss, one panel each
    assert len(panels) == 3 and sum(p["title"].startswith("Summary") for p in panels) == 1, panels
    assert check_forest_rows(panels) >= 3 * 3  # not vacuous: the rows near zero were measured


def _ends(title: str) -> tuple[float, float]:
    """An interval line's ends, from its tooltip ``<row>: <kind> [low, high]``."""
    low, high = title.rsplit("[", 1)[1].rstrip("]").split(", ")
    return float(low), float(high)


#: the least drawn width of the widest interval of a row near zero, on the page (px)
READABLE_PX = 20


def check_forest_rows(panels: list[dict[str, Any]]) -> int:
    """Assert that every row of every panel (``forest_facts``) is labelled once and, where
    its interval lies near zero (:func:`evalab.report.plots.near_rows`: a row far from zero
    reads as a dot), its widest interval drawn at least READABLE_PX wide; how many rows
    were measured."""
    from evalab.report.plots import FAR

    measured = 0
    for panel in panels:
        assert len(set(panel["labels"])) == len(panel["labels"]), panel["labels"]
        for label in panel["labels"]:
            if "(no interval)" in label:
                continue
            titles = [iv for iv in panel["intervals"] if iv["title"].startswith(label + ": ")]
            ends = [_ends(iv["title"]) for iv in titles]
            width = max((hi - lo for lo, hi in ends), default=0.0)
            if width == 0:
                continue  # every seed gave the same value: a point is the truth, no axis widens it
            if min(abs(lo + hi) / 2 for lo, hi in ends) >= FAR * width:
                continue  # far from zero: the axis is not chosen to widen it
            widths = [iv["width"] for iv in titles]
            assert max(widths) >= READABLE_PX, (label, widths, panel)
            measured += 1
    return measured


def test_the_check_sees_a_column_off_screen(analysis_with_test_set, tmp_path):
    # the same page with wrapping switched off: the check must fail (it is not vacuous)
    _chromium()
    page = tmp_path / "report.html"
    text = render_html(analysis_with_test_set)
    page.write_text(
        text.replace(
            "</style>", "th,td,td.l,th.l,td.flag{white-space:nowrap;padding:0 3em}</style>"
        ),
        encoding="utf-8",
    )
    facts, _ = page_facts(page, tmp_path / "profile")
    assert facts["offscreen"] or facts["scrollWidth"] > facts["width"], facts


def test_the_report_prints_no_absolute_path(analysis):
    page = render_html(analysis)
    study = Path(analysis.path)
    assert str(study.parent) not in page and str(Path(analysis.db_path).parent) not in page
    assert f"<code>{study.name}</code>" in page  # relative to the run database's folder


def test_every_page_has_the_one_shell_and_its_policy(analysis):
    import numpy as np

    from evalab.metrics.semantic import Alignment
    from evalab.report.alignment import render_alignment_html
    from evalab.report.page import CSP

    a = Alignment(
        ("x",), ("y",), np.array([[0.9]]), np.array([1.0]), np.array([1.0]), 0.9, 0.9, 0.9
    )
    for page in (render_alignment_html([("seg", a)]), render_html(analysis)):
        assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in page
        assert "<script" not in page.lower()


LONG_SYSTEMS = [f"generaltest2022.de-en.system-{k}-with-a-long-name" for k in range(7)] + ["B"]


def meta_eval_page(run_cli, folder: Path) -> Path:
    """``meta-eval -f html`` over eight systems with long names, two metrics of different quality."""
    import numpy as np

    rng = np.random.default_rng(0)
    n = 40
    (folder / "ref.txt").write_text("".join(f"ref {i}\n" for i in range(n)), encoding="utf-8")
    human, scores = [], []
    for s, name in enumerate(LONG_SYSTEMS):
        (folder / f"{s}.txt").write_text(
            "".join(f"hyp {s} {i}\n" for i in range(n)), encoding="utf-8"
        )
        quality = -s / 2 + rng.normal(0, 1, n)
        human += [f"{name}\t{i + 1}\t{q:.6f}" for i, q in enumerate(quality)]
        scores += [f"oracle\t{name}\t{i + 1}\t{q * 2 + 1:.6f}" for i, q in enumerate(quality)]
        noisy = quality + rng.normal(0, 3, n)
        scores += [f"noisy\t{name}\t{i + 1}\t{q:.6f}" for i, q in enumerate(noisy)]
    (folder / "human.tsv").write_text("\n".join(human) + "\n", encoding="utf-8")
    (folder / "scores.tsv").write_text("\n".join(scores) + "\n", encoding="utf-8")
    inputs = [f"{name}={folder / f'{s}.txt'}" for s, name in enumerate(LONG_SYSTEMS)]
    page = folder / "meta.html"
    res = run_cli(
        "meta-eval", "--human", folder / "human.tsv", "-r", folder / "ref.txt", "-i", *inputs,
        "--scores", folder / "scores.tsv", "-n", "100", "-q", "-f", "html", "-o", page,
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    return page


#: per figure of the meta-eval page: its title and the colours of its dots
META_JS = """
JSON.stringify(Array.from(document.querySelectorAll('figure svg')).map(svg => ({
  title: svg.querySelector('title').textContent,
  colours: Array.from(new Set(Array.from(svg.querySelectorAll('circle')).filter(c => c.querySelector('title'))
    .map(c => c.getAttribute('fill')))),
  names: Array.from(svg.querySelectorAll('text > title')).map(t => t.textContent),
})))
"""


@pytest.mark.parametrize("width", [1400, 900])
def test_meta_eval_page_fits_and_names_every_system(run_cli, tmp_path, width):
    _chromium()
    page = meta_eval_page(run_cli, tmp_path)
    facts, errors = page_facts(page, tmp_path / "profile", width)
    assert errors == [], errors
    assert facts["offscreen"] == [] and facts["figures"] == 0 and facts["clipped"] == [], facts
    assert facts["scrollWidth"] <= facts["width"], facts
    tools = DevTools(_chromium(), tmp_path / "profile-figures")
    try:
        session = tools.open_page(page, width, 900)
        reply = tools.call(
            "Runtime.evaluate", {"expression": META_JS, "returnByValue": True}, session=session
        )
        figures = json.loads(reply["result"]["value"])
    finally:
        tools.close()
    scatters = [f for f in figures if "(" in f["title"] and ":" not in f["title"]]
    assert len(scatters) == 2, figures
    for f in scatters:  # every system named beside its point (the whole name in its tooltip)
        assert sorted(f["names"]) == sorted(LONG_SYSTEMS), f
    rankings = [f for f in figures if f not in scatters]
    # the oracle and the noisy metric: at least one statistic tells them apart, in two colours
    assert rankings and any(len(f["colours"]) == 2 for f in rankings), rankings
