"""``evalab score -m bleu chrf``: output, JSON fields, --jobs, bad input."""

from __future__ import annotations

import json

import pytest
from tests.conftest import read_lines, wmt_file, wmt_systems

from evalab.metrics.bleu import BLEU
from evalab.metrics.chrf import CHRF


@pytest.fixture
def small_corpus(tmp_path, wmt22):
    """300 lines of en-de (two references, two systems) written to tmp files."""
    n = 300
    paths = {}
    for kind, name in [("ref", "A"), ("ref", "B"), *[("hyp", s) for s in wmt_systems("en-de")[:2]]]:
        p = tmp_path / f"{kind}.{name}.de"
        p.write_text(
            "\n".join(read_lines(wmt_file(kind, "en-de", name))[:n]) + "\n", encoding="utf-8"
        )
        paths[f"{kind}.{name}"] = p
    return paths


def _args(paths, *extra):
    refs = [str(p) for k, p in paths.items() if k.startswith("ref.")]
    hyps = [str(p) for k, p in paths.items() if k.startswith("hyp.")]
    return ["score", "-r", refs[0], "-r", refs[1], "-i", *hyps, *extra]


def test_table_output_has_score_verbose_line_and_signatures(run_cli, small_corpus) -> None:
    res = run_cli(*_args(small_corpus, "-m", "bleu", "chrf"))
    assert res.exit_code == 0, res.stderr
    hyps = [read_lines(p) for k, p in small_corpus.items() if k.startswith("hyp.")]
    refs = [read_lines(small_corpus["ref.A"]), read_lines(small_corpus["ref.B"])]
    bleu = BLEU().corpus_score(hyps[0], refs)
    assert f"{bleu.score:.1f}" in res.stdout
    assert "BP =" in res.stdout and "hyp_len" in res.stdout
    assert "bleu|nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:" in res.stdout
    assert "chrf|nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:" in res.stdout
    assert f"{CHRF().corpus_score(hyps[1], refs).score:.1f}" in res.stdout


def test_json_carries_everything_and_jobs_give_the_same_numbers(run_cli, small_corpus) -> None:
    one = run_cli(*_args(small_corpus, "-m", "bleu", "chrf", "chrf++", "-f", "json"))
    assert one.exit_code == 0, one.stderr
    rows = json.loads(one.stdout)
    assert [r["metric"] for r in rows] == ["bleu", "chrf", "chrf++"] * 2
    b = rows[0]
    for field in (
        "score",
        "signature",
        "verbose",
        "precisions",
        "bp",
        "sys_len",
        "ref_len",
        "ratio",
        "counts",
        "totals",
    ):
        assert field in b
    assert b["verbose"].startswith("/".join(f"{p:.1f}" for p in b["precisions"]))
    three = run_cli(
        *_args(small_corpus, "-m", "bleu", "chrf", "chrf++", "-f", "json", "--jobs", "3")
    )
    assert three.exit_code == 0, three.stderr
    assert json.loads(three.stdout) == rows


def test_settings_reach_the_metric(run_cli, small_corpus) -> None:
    res = run_cli(
        *_args(
            small_corpus, "-m", "bleu", "-s", "tokenize=intl", "-s", "lowercase=true", "-f", "json"
        )
    )
    assert res.exit_code == 0, res.stderr
    assert "case:lc|eff:no|tok:intl" in json.loads(res.stdout)[0]["signature"]


def test_reference_files_with_different_line_counts_exit_2(run_cli, small_corpus, tmp_path) -> None:
    short = tmp_path / "short.de"
    short.write_text("\n".join(read_lines(small_corpus["ref.B"])[:-1]) + "\n", encoding="utf-8")
    res = run_cli(
        "score",
        "-r",
        str(small_corpus["ref.A"]),
        "-r",
        str(short),
        "-i",
        str(small_corpus["ref.A"]),
        "-m",
        "bleu",
    )
    assert res.exit_code == 2
    assert "short.de" in res.stderr
    assert res.stdout == ""


def test_crlf_and_empty_lines_from_files(run_cli, tmp_path) -> None:
    (tmp_path / "ref.txt").write_bytes(b"The cat sat on the mat.\r\n\r\nA dog.\r\n")
    (tmp_path / "hyp.txt").write_bytes(b"The cat sat on a mat.\n\nA dog.\n")
    res = run_cli(
        "score",
        "-r",
        str(tmp_path / "ref.txt"),
        "-i",
        str(tmp_path / "hyp.txt"),
        "-m",
        "bleu",
        "chrf",
        "-f",
        "json",
    )
    assert res.exit_code == 0, res.stderr
    bleu, chrf = json.loads(res.stdout)
    expected = BLEU().corpus_score(
        ["The cat sat on a mat.", "", "A dog."], [["The cat sat on the mat.", "", "A dog."]]
    )
    assert bleu["score"] == expected.score
    assert 0 < chrf["score"] < 100


def test_unknown_tokenizer_is_a_one_line_error(run_cli, tmp_path) -> None:
    (tmp_path / "a.txt").write_text("x\n", encoding="utf-8")
    res = run_cli(
        "score",
        "-r",
        str(tmp_path / "a.txt"),
        "-i",
        str(tmp_path / "a.txt"),
        "-m",
        "bleu",
        "-s",
        "tokenize=moses",
    )
    assert res.exit_code == 2
    assert "unknown tokenizer 'moses'" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
