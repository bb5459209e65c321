"""``evalab score --ci``: bootstrap intervals next to each corpus score."""

from __future__ import annotations

import json

import pytest
from tests.conftest import read_lines, wmt_file

from evalab.metrics.chrf import CHRF
from evalab.stats import bootstrap_ci


@pytest.fixture
def files(wmt22, tmp_path):
    ref = tmp_path / "ref.de"
    ref.write_text(
        "\n".join(read_lines(wmt_file("ref", "en-de", "A"))[:200]) + "\n", encoding="utf-8"
    )
    hyp = tmp_path / "Online-A.de"
    hyp.write_text(
        "\n".join(read_lines(wmt_file("hyp", "en-de", "Online-A"))[:200]) + "\n", encoding="utf-8"
    )
    return str(ref), str(hyp)


def test_json_has_the_interval_of_the_api(run_cli, files):
    ref, hyp = files
    res = run_cli(
        "score",
        "-r",
        ref,
        "-i",
        hyp,
        "-m",
        "chrf",
        "--ci",
        "--n-samples",
        "300",
        "--seed",
        "0",
        "-f",
        "json",
    )
    assert res.exit_code == 0, res.stderr
    (row,) = json.loads(res.stdout)
    ci = bootstrap_ci(CHRF(), CHRF().stats(read_lines(hyp), [read_lines(ref)]), 300, seed=0)
    assert row["score"] == ci.score
    assert (row["mean"], row["ci_low"], row["ci_high"], row["half_width"]) == (
        ci.mean,
        ci.low,
        ci.high,
        ci.half_width,
    )
    assert (row["n_samples"], row["seed"], row["confidence"]) == (300, 0, 0.95)
    assert row["signature"].endswith("|bs:300|seed:0|conf:0.95")


def test_without_ci_nothing_changes(run_cli, files):
    ref, hyp = files
    (row,) = json.loads(run_cli("score", "-r", ref, "-i", hyp, "-f", "json").stdout)
    assert "ci_low" not in row and "|bs:" not in row["signature"]


def test_table_shows_mean_and_half_width(run_cli, files, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    ref, hyp = files
    res = run_cli(
        "score",
        "-r",
        ref,
        "-i",
        hyp,
        "-m",
        "bleu",
        "--ci",
        "--n-samples",
        "100",
        "--confidence",
        "0.9",
    )
    assert res.exit_code == 0, res.stderr
    assert " ± " in res.stdout and "|bs:100|seed:12345|conf:0.9" in res.stdout


@pytest.mark.parametrize(
    "extra, message",
    [
        (("--n-samples", "0"), "--n-samples must be at least 1"),
        (("--confidence", "0"), "confidence must be strictly between 0 and 1"),
        (("--seed", "-3"), "seed must be a non-negative integer"),
    ],
)
def test_bad_ci_options_exit_2(run_cli, files, extra, message):
    ref, hyp = files
    res = run_cli("score", "-r", ref, "-i", hyp, "--ci", *extra)
    assert res.exit_code == 2 and message in res.stderr
