"""``evalab compare -f html`` in headless Chromium at 1400 px: the ranking and forest plot,
sorting segments by Δ, switching the pair, the bucket charts, the n-gram tables, no
horizontal scroll, no console error (a CSP violation is one), hostile names and segments
shown as text. Uses the DevTools client of tests/test_demo_browser.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.report.test_html import OFFSCREEN_JS
from tests.test_demo_browser import DevTools, _chromium, _console_errors

pytestmark = pytest.mark.browser

HOSTILE_NAME = '<img src=x onerror="window.pwned=1">'
HOSTILE_SEGMENT = "</script><script>window.pwned=2</script> & <b>bold</b>"
REF = [
    "the cat sat on the mat today",
    "a dog barked at the postman",
    "it rains in the north",
    HOSTILE_SEGMENT,
    "the quick brown fox jumps over the lazy dog",
    "we will meet again next week",
] * 20
A = [
    "the cat sat on the mat today",
    "a dog barked at a postman",
    "it rains in north",
    HOSTILE_SEGMENT,
    "the quick brown fox jumps over the lazy dog",
    "we meet again next week",
] * 20
B = [
    "a cat sat on mat",
    "the dog barks",
    "it is raining in the north",
    "</script> & bold",
    "quick fox jumps over dog",
    "we will meet again next week",
] * 20
C = ["cat mat", "dog", "rain north", "bold", "fox dog", "meet week"] * 20


def _write_page(run_cli, tmp_path: Path, *extra: object) -> Path:
    _chromium()
    files = {}
    for name, lines in (
        ("ref", REF),
        ("a", A),
        ("b", B),
        ("c", C),
        ("src", [f"source {i}" for i in range(len(REF))]),
    ):
        files[name] = tmp_path / f"{name}.txt"
        files[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "compare.html"
    res = run_cli(
        "compare",
        "-r",
        files["ref"],
        "-i",
        f"{HOSTILE_NAME}={files['a']}",
        f"sys-B={files['b']}",
        f"sys-C={files['c']}",
        "--source",
        files["src"],
        "-m",
        "chrf",
        "bleu",
        "-n",
        "300",
        "-q",
        "-f",
        "html",
        "-o",
        out,
        *extra,
    )
    assert res.exit_code == 0, res.stderr
    return out


@pytest.fixture
def page(run_cli, tmp_path) -> Path:
    return _write_page(run_cli, tmp_path)


class Page:
    def __init__(self, path: Path, profile: Path) -> None:
        self.tools = DevTools(_chromium(), profile)
        self.session = self.tools.open_page(path, 1400, 900)

    def js(self, expression: str) -> Any:
        reply = self.tools.call(
            "Runtime.evaluate",
            {"expression": f"JSON.stringify((() => {{{expression}}})())", "returnByValue": True},
            session=self.session,
        )
        assert "exceptionDetails" not in reply, reply
        return json.loads(reply["result"]["value"])

    def settle(self) -> None:
        """Wait for the work the page queued (the buckets and n-grams after the segments)."""
        for _ in range(100):
            self.tools.call(
                "Runtime.evaluate",
                {"expression": "new Promise(r => setTimeout(() => r(1), 0))", "awaitPromise": True},
                session=self.session,
            )
            if self.js("return typeof window.evalabRendered") == "number":
                return
        raise AssertionError("the page never finished rendering")

    def close(self) -> list[str]:
        self.js("return 1")
        errors = _console_errors(self.tools.events)
        self.tools.close()
        return errors


#: the dots of the visible forest plots (each dot of a row carries a tooltip; the legend's do not)
FOREST_DOTS = "return Array.from(document.querySelectorAll('#forest .forest:not([hidden])')).map(f => f.querySelectorAll('circle > title').length);"
FOREST_TITLE = (
    "return document.querySelector('#forest .forest:not([hidden]) svg > title').textContent;"
)
DELTAS = "return Array.from(document.querySelectorAll('#segments tr[data-segment] td:nth-child(2)')).map(td => td.textContent);"


def _numbers(cells: list[str]) -> list[float]:
    return [float(c) for c in cells if c != "-"]


def test_the_page_works_in_headless_chromium(page, tmp_path):
    text = page.read_text(encoding="utf-8")
    assert "<img" not in text and "<b>bold" not in text and "</script><script>window" not in text
    assert re.search(r"script-src 'sha256-[A-Za-z0-9+/=]+'", text) and "default-src 'none'" in text
    p = Page(page, tmp_path / "profile")
    try:
        p.settle()
        facts = p.js(f"return {OFFSCREEN_JS.strip()[len('JSON.stringify(') : -1]};")
        assert facts["scrollWidth"] <= facts["width"] <= 1400 and facts["offscreen"] == [], facts
        # ranking: three systems, the hostile name as text, a forest plot with a dot per system
        ranking = p.js(
            "return Array.from(document.querySelectorAll('#ranking tr')).slice(1).map(r => r.children[2].textContent);"
        )
        assert sorted(ranking) == sorted([HOSTILE_NAME, "sys-B", "sys-C"])
        assert p.js(FOREST_DOTS) == [3]  # the chosen metric's plot alone, a dot per system
        p.js(
            "const s = document.getElementById('rank-metric'); s.value = '1'; s.dispatchEvent(new Event('change')); return 1;"
        )
        assert p.js(FOREST_DOTS) == [3] and "bleu" in p.js(FOREST_TITLE)
        p.js(
            "const s = document.getElementById('rank-metric'); s.value = '0'; s.dispatchEvent(new Event('change')); return 1;"
        )
        assert "chrf" in p.js(FOREST_TITLE)
        assert p.js(
            "return [document.querySelectorAll('img').length, window.pwned === undefined];"
        ) == [0, True]
        # sorting by Δ: ascending, then descending on a second click
        p.js("document.querySelector('th[data-sort=delta]').click(); return 1;")
        down = _numbers(p.js(DELTAS))
        assert down == sorted(down, reverse=True) and len(down) == 50
        p.js("document.querySelector('th[data-sort=delta]').click(); return 1;")
        up = _numbers(p.js(DELTAS))
        assert up == sorted(up) and up[0] < 0 < down[0]
        # in input order (the # column), a hostile segment is shown as text in the segment table
        p.js("document.querySelector('th[data-sort=id]').click(); return 1;")
        assert (
            p.js("return document.querySelector('#segments tr[data-segment]').dataset.segment;")
            == "1"
        )
        cells = p.js(
            "return Array.from(document.querySelectorAll('#segments td')).map(td => td.textContent);"
        )
        assert HOSTILE_SEGMENT in cells
        # buckets: two charts with bars
        bars = p.js(
            "return Array.from(document.querySelectorAll('svg.bucket-chart')).map(s => s.querySelectorAll('rect > title').length);"
        )
        assert len(bars) == 2 and all(
            b >= 2 for b in bars
        )  # a bar per system and bucket (tooltips)
        # n-grams: both tables have rows
        rows = p.js(
            "return Array.from(document.querySelectorAll('table.ngram-table')).map(t => t.querySelectorAll('tr').length - 1);"
        )
        assert len(rows) == 2 and all(r > 0 for r in rows)
        # switching the pair: B becomes sys-C, the headers, n-gram captions and Δs follow
        before = p.js(DELTAS)
        p.js(
            "const s = document.getElementById('sys-b'); s.value = String(2); s.dispatchEvent(new Event('change')); return 1;"
        )
        p.settle()
        heads = p.js(
            "return Array.from(document.querySelectorAll('#segments th')).map(th => th.textContent);"
        )
        assert any(h == "B: sys-C" for h in heads)
        captions = p.js(
            "return Array.from(document.querySelectorAll('table.ngram-table caption')).map(c => c.textContent);"
        )
        assert captions[1] == "matched more often by B: sys-C"
        assert p.js(DELTAS) != before
        facts = p.js(f"return {OFFSCREEN_JS.strip()[len('JSON.stringify(') : -1]};")
        assert facts["scrollWidth"] <= facts["width"], facts
    finally:
        errors = p.close()
    assert errors == [], errors


def test_the_page_and_its_forest_plot_fit_a_900_px_window(page, tmp_path):
    tools = DevTools(_chromium(), tmp_path / "profile")
    try:
        session = tools.open_page(page, 900, 900)
        reply = tools.call(
            "Runtime.evaluate",
            {"expression": FOREST_JS, "returnByValue": True},
            session=session,
        )
        facts = json.loads(reply["result"]["value"])
        errors = _console_errors(tools.events)
    finally:
        tools.close()
    assert errors == [], errors
    assert facts["scrollWidth"] <= facts["width"] <= 900, facts
    # every system's row: its label inside the window, its interval drawn and named
    assert len(facts["labels"]) == 3 and all(x >= 0 for x in facts["labelLeft"]), facts
    assert facts["right"] <= facts["width"], facts
    assert sorted(t.split(": ")[0].split(". ", 1)[1] for t in facts["intervals"]) == sorted(
        [HOSTILE_NAME, "sys-B", "sys-C"]
    )


FOREST_JS = """
JSON.stringify((() => {
  const f = document.querySelector('#forest .forest:not([hidden])');
  const labels = Array.from(f.querySelectorAll('g.panel text[text-anchor="end"]'));
  return {
    width: document.documentElement.clientWidth,
    scrollWidth: document.documentElement.scrollWidth,
    right: f.querySelector('svg').getBoundingClientRect().right,
    labels: labels.map(t => t.textContent),
    labelLeft: labels.map(t => t.getBoundingClientRect().left),
    intervals: Array.from(f.querySelectorAll('line > title')).map(t => t.textContent),
  };
})())
"""


def test_a_training_file_sets_the_frequency_buckets(run_cli, tmp_path):
    train = tmp_path / "train.txt"
    train.write_text("the cat the dog the fox\nthe mat a dog\n", encoding="utf-8")
    page = _write_page(run_cli, tmp_path, "--train", train)
    p = Page(page, tmp_path / "profile")
    try:
        p.settle()
        chart = p.js(
            "return Array.from(document.querySelectorAll('#freq-chart text')).map(t => t.textContent);"
        )
        assert chart[0] == "word F-measure by frequency in the training file (95% bootstrap CI)"
        assert (
            "0" in chart and "<1" not in chart
        )  # reference words the training file lacks: bucket 0
    finally:
        errors = p.close()
    assert errors == [], errors


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "semsim"
ALIGNMENT_ROWS = """return Array.from(document.querySelectorAll('#alignment section.align-system')).map(s => [s.dataset.system,
  s.querySelector('h4').textContent, Array.from(s.querySelectorAll('table.matches')).map(t =>
  Array.from(t.querySelectorAll('tr')).map(r => Array.from(r.children).map(c => c.textContent)))]);"""


def test_selecting_a_segment_shows_both_token_alignments(run_cli, tmp_path):
    """bertscore over 30 WMT22 segments, one system output made hostile: the selected segment's
    token alignments of A and B are the greedy best matches BERTScore computes, as text."""
    from evalab.metrics.semantic import BERTScore
    from evalab.report.alignment import alignment_rows

    _chromium()
    ref = (EXAMPLES / "ref.A.de").read_text(encoding="utf-8").splitlines()
    outputs = {
        name: (EXAMPLES / f"{name}.de").read_text(encoding="utf-8").splitlines()
        for name in ("Online-B", "OpenNMT")
    }
    outputs["OpenNMT"][4] = HOSTILE_SEGMENT
    paths = []
    for name, lines in outputs.items():
        paths.append(tmp_path / f"{name}.txt")
        paths[-1].write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "compare.html"
    res = run_cli(
        "compare",
        "-r",
        EXAMPLES / "ref.A.de",
        "-i",
        f"Online-B={paths[0]}",
        f"{HOSTILE_NAME}={paths[1]}",
        "-m",
        "bertscore",
        "-n",
        "50",
        "-q",
        "-f",
        "html",
        "-o",
        out,
    )
    assert res.exit_code == 0, res.stderr
    assert "<b>bold" not in out.read_text(encoding="utf-8")
    metric = BERTScore()
    p = Page(out, tmp_path / "profile")
    try:
        p.settle()
        assert (
            p.js("return document.querySelectorAll('#alignment table.matches').length;") == 0
        )  # nothing selected yet
        p.js("document.querySelector('th[data-sort=id]').click(); return 1;")  # input order
        p.js("document.querySelector('#segments tr[data-segment=\"5\"]').click(); return 1;")
        assert (
            p.js("return document.querySelector('#alignment h3').textContent;")
            == "Token alignments (bertscore): segment 5"
        )
        assert (
            p.js("return document.querySelector('#segments tr.selected').dataset.segment;") == "5"
        )
        shown = p.js(ALIGNMENT_ROWS)
        assert [label for label, _, _ in shown] == ["A", "B"]
        assert sorted(head.split(": ", 1)[1] for _, head, _ in shown) == sorted(
            ["Online-B", HOSTILE_NAME]
        )
        for label, head, tables in shown:
            system = head.split(": ", 1)[1]
            hyp = outputs["OpenNMT" if system == HOSTILE_NAME else "Online-B"][4]
            (a,) = metric.explain([hyp], [[ref[4]]])
            expected = [
                [[src, "→", dst, f"{cos:.3f}"] for src, dst, cos, _ in alignment_rows(a, d)]
                for d in ("precision", "recall")
            ]
            assert tables == expected, label
            if system == HOSTILE_NAME:
                assert "<" in [row[0] for row in tables[0]] and "script" in [
                    row[0] for row in tables[0]
                ]
        assert p.js(
            "return [document.querySelectorAll('#alignment b, img').length, window.pwned === undefined];"
        ) == [0, True]
        # switching system B keeps the segment and shows the other system's alignment
        p.js(
            "const s = document.getElementById('sys-b'); s.value = document.getElementById('sys-a').value; "
            "s.dispatchEvent(new Event('change')); return 1;"
        )
        p.settle()
        heads = [head for _, head, _ in p.js(ALIGNMENT_ROWS)]
        assert heads[0].split(": ", 1)[1] == heads[1].split(": ", 1)[1]
        facts = p.js(f"return {OFFSCREEN_JS.strip()[len('JSON.stringify(') : -1]};")
        assert facts["scrollWidth"] <= facts["width"], facts
    finally:
        errors = p.close()
    assert errors == [], errors
