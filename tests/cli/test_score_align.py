"""``evalab score --align N`` and ``--errors K`` through the real entry point: jiwer's
alignments and error counts on WMT22 English-target outputs (random settings), the text
layout, the other formats, and the refusals."""

from __future__ import annotations

import json
import random
import re

import pytest
from tests.conftest import read_lines, wmt_file, wmt_systems
from tests.metrics.test_wer import ENGLISH, jiwer_transform
from tests.metrics.test_wer_alignments import jiwer_chunks, jiwer_ranked

from .refusal import assert_refused

jiwer = pytest.importorskip("jiwer")

REF = ["short one here", "quite a bit of longer sentence", "all right"]
HYP = ["shoe order one", "quite bit of an even longest sentence here", "all right"]


@pytest.fixture
def texts(tmp_path):
    def put(name: str, lines: list[str]) -> str:
        p = tmp_path / name
        p.write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
        return str(p)

    return put


def json_rows(text: str) -> list[dict]:
    return json.loads(text)


def _jiwer_errors(row: dict) -> tuple[list, list, list]:
    e = row["errors"]
    return (
        [(x["reference"], x["hypothesis"], x["count"]) for x in e["substitutions"]],
        [("", x["hypothesis"], x["count"]) for x in e["insertions"]],
        [(x["reference"], "", x["count"]) for x in e["deletions"]],
    )


def _chunks(entry: dict) -> list[tuple]:
    return [
        (c["type"], c["ref_start_idx"], c["ref_end_idx"], c["hyp_start_idx"], c["hyp_end_idx"])
        for c in entry["chunks"]
    ]


@pytest.mark.parametrize("pair", sorted(ENGLISH))
def test_wmt22_json_is_jiwers(run_cli, wmt22, pair, tmp_path) -> None:
    rng = random.Random(f"cli align {pair}")
    systems = rng.sample(wmt_systems(pair), 2)
    ref_path = wmt_file("ref", pair, rng.choice(ENGLISH[pair]))
    lowercase, punct = rng.random() < 0.5, rng.random() < 0.5
    ws, cs = rng.choice(["default", "any"]), rng.choice(["keep", "collapse", "remove"])
    n, k = rng.randint(1, 6), rng.randint(1, 8)
    res = run_cli(
        "score", "-r", ref_path, "-i", *(wmt_file("hyp", pair, s) for s in systems),
        "-m", "wer", "cer", "-f", "json", "--align", n, "--errors", k,
        "--set", f"lowercase={str(lowercase).lower()}",
        "--set", f"remove_punctuation={str(punct).lower()}",
        "--set", f"wer.whitespace={ws}", "--set", f"cer.whitespace={cs}",
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    ref = read_lines(ref_path)
    outputs = {(p := wmt_file("hyp", pair, s)).name: read_lines(p) for s in systems}
    for row in json_rows(res.stdout):
        unit = "word" if row["metric"] == "wer" else "char"
        tr = jiwer_transform(unit, lowercase, punct, ws if unit == "word" else cs)
        hyps = outputs[row["system"]]
        process = jiwer.process_words if unit == "word" else jiwer.process_characters
        out = process(ref, hyps, reference_transform=tr, hypothesis_transform=tr)
        rate = out.wer if unit == "word" else out.cer
        assert row["score"] == rate
        assert _jiwer_errors(row) == tuple(kind[:k] for kind in jiwer_ranked(out))
        shown = row["alignments"]
        assert len(shown) == n
        one = process(
            [ref[e["segment"] - 1] for e in shown],
            [hyps[e["segment"] - 1] for e in shown],
            reference_transform=tr,
            hypothesis_transform=tr,
        )
        for j, entry in enumerate(shown):
            assert _chunks(entry) == jiwer_chunks(one, j)
            assert entry["reference"] == list(one.references[j])
            single = process(
                ref[entry["segment"] - 1], hyps[entry["segment"] - 1],
                reference_transform=tr, hypothesis_transform=tr,
            )  # fmt: skip
            assert entry["score"] == (single.wer if unit == "word" else single.cer)
        scores = [e["score"] for e in shown]
        assert scores == sorted(scores, reverse=True)


def test_table_text_has_jiwers_blocks(run_cli, texts) -> None:
    ref, hyp = texts("ref.txt", REF), texts("hyp.txt", HYP)
    res = run_cli("score", "-r", ref, "-i", hyp, "-m", "wer", "--align", "5", "--errors", "2")
    assert res.exit_code == 0, res.stderr
    expected = jiwer.visualize_alignment(jiwer.process_words(REF, HYP), show_measures=False)
    blocks = re.sub(r"=== SENTENCE (\d+) ===", "", expected)
    ours = re.sub(r"=== SENTENCE (\d+) === wer \S+", "", res.stdout.split("with an error\n\n")[1])
    # sentence 1 (rate 1) before sentence 2 (rate 5/6), the correct third not shown
    assert ours.strip() == blocks.strip()
    assert "wer alignments of hyp.txt: the 2 worst segments with an error" in res.stdout
    assert re.search(r"substitution\s*│\s*short\s*│\s*order\s*│\s*1", res.stdout)


def test_out_file_gets_table_then_text(run_cli, texts, tmp_path) -> None:
    ref, hyp = texts("ref.txt", REF), texts("hyp.txt", HYP)
    out = tmp_path / "out.txt"
    res = run_cli("score", "-r", ref, "-i", hyp, "-m", "wer", "--align", "1", "-o", out)
    assert res.exit_code == 0 and res.stdout == ""
    text = out.read_text(encoding="utf-8")
    assert text.startswith("system\tmetric\tscore\tdetails\n")
    assert text.endswith(
        "REF: **** short one here\nHYP: shoe order one ****\n        I     S        D\n\n"
    )


@pytest.mark.parametrize("fmt", ["markdown", "latex", "csv", "tsv"])
def test_errors_in_every_table_format(run_cli, texts, fmt) -> None:
    ref, hyp = texts("ref.txt", REF), texts("hyp.txt", HYP)
    res = run_cli("score", "-r", ref, "-i", hyp, "-m", "wer", "cer", "--errors", "1", "-f", fmt)
    assert res.exit_code == 0, res.stderr
    assert "substitution" in res.stdout and "longest" not in res.stdout  # the first only
    assert "shoe" in res.stdout and "an even" not in res.stdout  # wer's first insertion only


def test_bleu_rows_have_no_alignment(run_cli, texts) -> None:
    ref, hyp = texts("ref.txt", REF), texts("hyp.txt", HYP)
    res = run_cli("score", "-r", ref, "-i", hyp, "-m", "bleu", "wer", "-f", "json", "--align", "1")
    assert res.exit_code == 0, res.stderr
    rows = {r["metric"]: r for r in json_rows(res.stdout)}
    assert "alignments" not in rows["bleu"] and len(rows["wer"]["alignments"]) == 1


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (("-m", "bleu", "--align", "2"), "--align shows the alignments of wer or cer"),
        (("-m", "mer", "--errors", "2"), "--errors shows the alignments of wer or cer"),
        (("-m", "wer", "--align", "-1"), "--align must be at least 1"),
        (("-m", "wer", "--errors", "0"), "--errors must be at least 1"),
        (("-m", "wer", "--align", "2", "-f", "latex"), "not -f latex"),
        (("-m", "wer", "--align", "2", "-b"), "does not combine with --align/--errors"),
        (
            ("-m", "wer", "--errors", "2", "--paired-bs"),
            "--errors is not available with --paired-bs",
        ),
    ],
)
def test_refusals(texts, tmp_path, extra, needle) -> None:
    ref, hyp = texts("ref.txt", REF), texts("hyp.txt", HYP)
    assert_refused(("score", "-r", ref, "-i", hyp, hyp, *extra), needle, watch=(tmp_path,))
