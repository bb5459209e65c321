"""The WER/CER alignment view of ``evalab compare -f html`` (report/word_alignment.js): the
embedded data, and in headless Chromium the selected segment of both systems in jiwer's
REF/HYP/marks layout, hostile text shown as text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.report.test_compare_page import HOSTILE_NAME, REF, A, B, Page
from tests.test_demo_browser import _chromium

from evalab.metrics.wer import CER, WER
from evalab.report.word_alignment import alignment_lines

N = 30  # under the page's limit: every segment's alignment is embedded


def _write(run_cli, tmp_path: Path, metric: str) -> Path:
    files = {}
    for name, lines in (("ref", REF[:N]), ("a", A[:N]), ("b", B[:N])):
        files[name] = tmp_path / f"{name}.txt"
        files[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "compare.html"
    res = run_cli(
        "compare", "-r", files["ref"], "-i", f"{HOSTILE_NAME}={files['a']}", f"sys-B={files['b']}",
        "-m", metric, "chrf", "-n", "50", "-q", "-f", "html", "-o", out,
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    return out


def _data(page: Path) -> dict:
    text = page.read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S)
    assert block is not None
    return json.loads(block.group(1))


@pytest.mark.parametrize(("name", "cls"), [("wer", WER), ("cer", CER)])
def test_page_embeds_the_alignments(run_cli, tmp_path, name, cls) -> None:
    data = _data(_write(run_cli, tmp_path, name))
    edits, strings = data["edits"], data["strings"]
    assert (edits["metric"], edits["spaced"]) == (name, name == "wer")
    for sys_index, hyps in enumerate((A[:N], B[:N])):
        found = cls().alignments(hyps, [REF[:N]], range(N))
        embedded = edits["sys"][sys_index]
        assert sorted(map(int, embedded)) == list(range(N))
        for a in found:
            ref, hyp, flat = embedded[str(a.segment)]
            assert [strings[t] for t in ref] == list(a.reference)
            assert [strings[t] for t in hyp] == list(a.hypothesis)
            assert flat == [int(v) for c in a.chunks for v in c]


def test_page_without_wer_has_no_alignments(run_cli, tmp_path) -> None:
    assert _data(_write(run_cli, tmp_path, "bleu"))["edits"] is None


EDIT_ROWS = """return Array.from(document.querySelectorAll('#edit-alignment section.edit-system')).map(s =>
  [s.dataset.system, s.querySelector('h4').textContent,
   Array.from(s.querySelectorAll('pre.edits > div')).map(d => d.textContent)]);"""


@pytest.mark.browser
def test_selecting_a_segment_shows_jiwers_layout(run_cli, tmp_path) -> None:
    _chromium()
    page = _write(run_cli, tmp_path, "wer")
    p = Page(page, tmp_path / "profile")
    try:
        p.settle()
        assert p.js("return document.querySelectorAll('#edit-alignment pre').length;") == 0
        p.js("document.querySelector('th[data-sort=id]').click(); return 1;")  # input order
        for segment in (2, 4):  # 4: the hostile segment
            p.js(
                f"document.querySelector('#segments tr[data-segment=\"{segment}\"]').click(); return 1;"
            )
            head = p.js("return document.querySelector('#edit-alignment h3').textContent;")
            assert head == f"Alignment (wer): segment {segment}"
            shown = p.js(EDIT_ROWS)
            assert [label for label, _, _ in shown] == ["A", "B"]
            for _, title, lines in shown:
                hyp = (A if title.split(": ", 1)[1] == HOSTILE_NAME else B)[segment - 1]
                (a,) = WER().alignments([hyp], [[REF[segment - 1]]], [0])
                assert lines == alignment_lines(a, spaced=True)
        assert p.js(
            "return [document.querySelectorAll('img, b').length, window.pwned === undefined];"
        ) == [0, True]
    finally:
        errors = p.close()
    assert errors == [], errors
