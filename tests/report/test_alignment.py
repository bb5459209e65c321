"""The token alignments of ``compare -f html`` (BERTScore) are the ones ``semsim --explain-html``
draws: the same tokens, the same greedy best match of every token, the same cosines."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "semsim"
REF, SYSTEMS = EXAMPLES / "ref.A.de", [EXAMPLES / "JDExploreAcademy.de", EXAMPLES / "Online-B.de"]


def page_data(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    return json.loads(
        re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S).group(1)
    )


def semsim_arrows(path: Path) -> dict[str, list[list[tuple[str, str, str]]]]:
    """segment title -> [precision arrows, recall arrows] as (token, best match, cosine) text."""
    text = path.read_text(encoding="utf-8")
    out = {}
    for section in text.split("<h2>")[1:]:
        title = html.unescape(section.split("</h2>", 1)[0])
        lists = re.findall(r"<ul class=arrows>(.*?)</ul>", section, re.S)
        out[title] = [
            [
                tuple(html.unescape(x) for x in m)
                for m in re.findall(r"<li>(.*?) &rarr; (.*?) <b>([0-9.-]+)</b></li>", ul)
            ]
            for ul in lists
        ]
    return out


def test_the_page_embeds_the_alignments_semsim_draws(run_cli, tmp_path):
    page, explained = tmp_path / "compare.html", tmp_path / "semsim.html"
    res = run_cli(
        "compare",
        "-r",
        REF,
        "-i",
        *SYSTEMS,
        "-m",
        "bertscore",
        "-n",
        "50",
        "-q",
        "-f",
        "html",
        "-o",
        page,
    )
    assert res.exit_code == 0, res.stderr
    res = run_cli(
        "semsim",
        "-r",
        REF,
        "-i",
        SYSTEMS[1],
        "--explain-html",
        explained,
        "--explain-limit",
        "0",
        "-q",
    )
    assert res.exit_code == 0, res.stderr
    data, arrows = page_data(page), semsim_arrows(explained)
    strings, align = data["strings"], data["align"]
    assert align["metric"] == "bertscore" and data["systems"][1] == "Online-B"
    embedded = align["sys"][1]
    assert sorted(map(int, embedded)) == list(range(30))  # 30 segments: every one is embedded
    for segment in (0, 7, 29):
        hyp, ref, prec, rec = embedded[str(segment)]
        expected = arrows[f"{SYSTEMS[1].name}, segment {segment + 1}"]
        got = [
            [
                (strings[src[flat[k]]], strings[dst[flat[k + 1]]], f"{flat[k + 2]:.3f}")
                for k in range(0, len(flat), 3)
            ]
            for flat, src, dst in ((prec, hyp, ref), (rec, ref, hyp))
        ]
        assert got == expected and len(got[0]) > 3


def test_beyond_50_segments_the_largest_differences_are_embedded(run_cli, tmp_path):
    """60 segments (the 30 twice, B copying A in the second half): the 50 segments of largest
    |Δ bertscore| get alignments, the others none."""
    ref, a, b = (p.read_text(encoding="utf-8").splitlines() for p in (REF, *SYSTEMS))
    files = {}
    for name, lines in (("ref", ref + ref), ("a", a + a), ("b", b + a)):
        files[name] = tmp_path / f"{name}.txt"
        files[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    page = tmp_path / "compare.html"
    res = run_cli(
        "compare",
        "-r",
        files["ref"],
        "-i",
        files["a"],
        files["b"],
        "-m",
        "bertscore",
        "-n",
        "50",
        "-q",
        "-f",
        "html",
        "-o",
        page,
    )
    assert res.exit_code == 0, res.stderr
    data = page_data(page)
    assert data["align"]["limit"] == 50
    scores = data["seg"]["bertscore"]
    gap = [abs(x - y) for x, y in zip(scores[0], scores[1], strict=True)]
    shown = [set(map(int, per)) for per in data["align"]["sys"]]
    assert shown[0] == shown[1] and len(shown[0]) == 50
    assert min(gap[i] for i in shown[0]) >= max(gap[i] for i in range(60) if i not in shown[0])
    assert all(
        gap[i] == 0 for i in range(30, 60)
    )  # the copied half: no difference, mostly left out


def test_a_missing_reference_is_left_out_of_that_segment_s_alignment(run_cli, tmp_path):
    """``--missing-ref empty-line``: segment 4 has only the first reference, segment 1 both."""
    from evalab.metrics.semantic import BERTScore
    from evalab.report.alignment import best_matches

    ref, hyp = (p.read_text(encoding="utf-8").splitlines() for p in (REF, SYSTEMS[0]))
    second = (
        SYSTEMS[1].read_text(encoding="utf-8").splitlines()
    )  # another system's output as a second reference
    second[3] = ""
    ref2 = tmp_path / "ref2.txt"
    ref2.write_text("\n".join(second) + "\n", encoding="utf-8")
    page = tmp_path / "compare.html"
    res = run_cli(
        "compare",
        "-r",
        REF,
        "-r",
        ref2,
        "--missing-ref",
        "empty-line",
        "-i",
        *SYSTEMS,
        "-m",
        "bertscore",
        "-n",
        "50",
        "-q",
        "-f",
        "html",
        "-o",
        page,
    )
    assert res.exit_code == 0, res.stderr
    data = page_data(page)
    metric = BERTScore()
    for segment, refs in ((3, [[ref[3]]]), (0, [[ref[0]], [second[0]]])):
        (a,) = metric.explain([hyp[segment]], refs)
        _, ref_ids, prec, _ = data["align"]["sys"][0][str(segment)]
        assert [data["strings"][t] for t in ref_ids] == list(a.ref_tokens)
        assert prec == [v for i, j, cos, _ in best_matches(a) for v in (i, j, round(cos, 3))]
