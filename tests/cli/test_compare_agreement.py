"""``evalab compare --agreement``: the share of human judges beside each Δ, equal to the
``mt-thresholds`` package; marked outside the calibrated range; refused where it has no Δ."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.cli.refusal import assert_refused
from tests.conftest import write_wmt_subset

from evalab.stats.thresholds import CALIBRATIONS

mt_thresholds = pytest.importorskip("mt_thresholds")

SYSTEMS = ["Online-B", "Online-A", "Lan-Bridge"]


@pytest.fixture
def files(wmt22, tmp_path):
    """Reference and three systems (first 150 en-de segments), Online-B first (baseline)."""
    return write_wmt_subset(tmp_path, "en-de", SYSTEMS, 150)


def test_against_the_baseline_equals_mt_thresholds(run_cli, files):
    ref, paths = files
    args = ["compare", "-r", ref, "-i", *paths, "-m", "bleu", "chrf", "ter", "-n", "100"]
    res = run_cli(*args, "--agreement", "-f", "json")
    assert res.exit_code == 0, res.stderr
    rows = json.loads(res.stdout)
    for r in rows:
        a = r["human_agreement"]
        if r["baseline"]:
            assert a is None
        elif r["metric"] == "ter":  # no published calibration: no number
            assert a["status"] == "not-calibrated" and a["share"] is None
        else:
            assert a["status"] == "calibrated" and a["calibration"] == r["metric"]
            assert a["delta"] == pytest.approx(abs(r["delta"]), abs=1e-12)
            assert a["delta"] <= a["max_delta"]
            expected = mt_thresholds.accuracy(abs(r["delta"]), r["metric"]) / 100
            assert a["share"] == pytest.approx(expected, abs=1e-9)
    table = run_cli(*args, "--agreement").stdout
    assert "humans agree" in table and "Kocmi et al. 2024" in table
    assert "calibrated for |Δ| ≤ 4.63" in table  # bleu's range named in the footer
    assert "humans agree (ter): –, no published calibration" in table
    # without the option: the table and JSON of before
    plain = run_cli(*args, "-f", "json").stdout
    assert "human_agreement" not in plain and "humans agree" not in run_cli(*args).stdout


def test_outside_the_calibrated_range_no_number(run_cli, files, tmp_path):
    ref, paths = files
    # every segment of the reference but the words of the last line: BLEU far above the
    # baseline's, a Δ beyond the calibrated 4.63 points
    lines = Path(ref).read_text(encoding="utf-8").splitlines()
    copy = tmp_path / "near-copy.de"
    copy.write_text("\n".join([*lines[:-1], "x"]) + "\n", encoding="utf-8")
    args = ["compare", "-r", ref, "-i", paths[0], copy, "-m", "bleu", "-n", "100", "--agreement"]
    rows = json.loads(run_cli(*args, "-f", "json").stdout)
    a = rows[1]["human_agreement"]
    assert rows[1]["delta"] > CALIBRATIONS["bleu"].max_delta
    assert a["status"] == "outside-range" and a["share"] is None
    markdown = run_cli(*args, "-f", "markdown").stdout
    row = next(line for line in markdown.splitlines() if line.startswith("| near-copy"))
    assert "| ≥ 0.87 |" in row  # the fit's ceiling (88.3%) less a point: no finer claim


def test_the_paper_formats_keep_the_column(run_cli, files):
    # markdown's default is the wide table (systems x metrics) where it fits: no Δ column
    ref, paths = files
    args = ["compare", "-r", ref, "-i", *paths, "-m", "bleu", "chrf", "-n", "100", "-f", "markdown"]
    assert "| humans agree |" not in run_cli(*args).stdout
    assert "| humans agree |" in run_cli(*args, "--agreement").stdout


def test_rank_shows_every_pair_with_its_agreement(run_cli, files):
    ref, paths = files
    res = run_cli(
        "compare", "-r", ref, "-i", *paths, "-m", "chrf", "--rank", "--agreement", "-n", "200",
        "-f", "json",
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert len(data["pairs"]) == 3  # --agreement with --rank lists the pairs, where the Δs are
    for p in data["pairs"]:
        expected = mt_thresholds.accuracy(abs(p["delta"]), "chrf") / 100
        assert p["human_agreement"]["share"] == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("-m", "exact_match", "--test", "mcnemar"), "--agreement applies to the Δ of --test bs"),
        (("-f", "html"), "--agreement applies to the Δ of --test bs and ar in tables and JSON, not -f html"),
        (("--layout", "wide"), "not --layout wide (it has no Δ column)"),
    ],
)  # fmt: skip
def test_refused_where_there_is_no_delta(files, extra, message):
    ref, paths = files
    args = ("compare", "-r", ref, "-i", *paths, "--agreement", *extra)
    assert_refused(args, message, watch=(Path(paths[0]).parent,))


def test_refused_with_per_item_scores(tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"{name}.csv").write_text("id,score\n1,1\n2,0\n")
    args = ("compare", "--scores", tmp_path / "a.csv", tmp_path / "b.csv", "--agreement")
    assert_refused(args, "--agreement", watch=(tmp_path,))
