"""``evalab semsim --ci`` and ``--segments`` give what ``evalab score -m bertscore`` gives with
the same model and settings (one set of flags for the semantic score)."""

from __future__ import annotations

import json

from tests.conftest import REPO

from .refusal import assert_refused

SEMSIM = REPO / "examples" / "semsim"
TABLE = SEMSIM / "vi_seed001_table.tsv"


def test_semsim_ci_and_segments_equal_score_bertscore(run_cli, tmp_path):
    ref, hyp = SEMSIM / "seed.ref.vi", SEMSIM / "seed.hyp.vi"
    semsim = run_cli(
        "semsim",
        "-r",
        ref,
        "-i",
        hyp,
        "--model",
        TABLE,
        "--ci",
        "-n",
        "200",
        "--seed",
        "7",
        "--segments",
        tmp_path / "a.jsonl",
        "-f",
        "json",
        "-q",
    )
    score = run_cli(
        "score",
        "-r",
        ref,
        "-i",
        hyp,
        "-m",
        "bertscore",
        "--model",
        TABLE,
        "--ci",
        "-n",
        "200",
        "--seed",
        "7",
        "--segments",
        tmp_path / "b.jsonl",
        "-f",
        "json",
        "-q",
    )
    assert semsim.exit_code == 0 and score.exit_code == 0, semsim.stderr + score.stderr
    ours, theirs = json.loads(semsim.stdout)[0], json.loads(score.stdout)[0]
    for key in ("score", "ci_low", "ci_high", "mean", "half_width", "signature"):
        assert ours[key] == theirs[key], key
    assert (tmp_path / "a.jsonl").read_text(encoding="utf-8") == (tmp_path / "b.jsonl").read_text(
        encoding="utf-8"
    )


def test_semsim_ci_refusals(tmp_path):
    ref, hyp = SEMSIM / "seed.ref.vi", SEMSIM / "seed.hyp.vi"
    assert_refused(
        ("semsim", "-r", ref, "-i", hyp, "--model", TABLE, "--ci", "-n", "0"),
        "--n-samples",
        watch=(tmp_path,),
        cwd=tmp_path,
    )
    assert_refused(
        ("semsim", "-r", ref, "-i", hyp, "--model", TABLE, "--segments", hyp),
        "--segments",
        watch=(tmp_path, SEMSIM),
        cwd=tmp_path,
    )
