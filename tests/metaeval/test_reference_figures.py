"""The reference figures of ../shared/wmt21-mqm/README.md (mt-metrics-eval's statistics), to 1e-9."""

from __future__ import annotations

import json

import pytest
from tests.metaeval.conftest import mqm_args

# README.md of wmt21-mqm: metric -> (level, statistic) -> value
FIGURES = {
    "bleu": {
        ("system", "pearson"): 0.9387882828229728,
        ("system", "kendall"): 0.8571428571428571,
        ("system", "accuracy"): 0.9285714285714286,
        ("segment", "pearson"): 0.08703147350342981,
        ("segment", "kendall"): 0.0784507816056412,
        ("segment", "kendall_item"): 0.05624221345950001,
        ("segment", "acc_eq"): 0.4123635655616856,
        ("segment", "acc_eq_item"): 0.4657088641908385,
    },
    "chrf": {
        ("system", "pearson"): 0.8722411553507331,
        ("system", "kendall"): 0.7142857142857142,
        ("system", "accuracy"): 0.8571428571428571,
        ("segment", "pearson"): 0.09065362527475136,
        ("segment", "kendall"): 0.09448140807501476,
        ("segment", "kendall_item"): 0.06472890996413833,
        ("segment", "acc_eq"): 0.4124518019812678,
        ("segment", "acc_eq_item"): 0.4657088641908381,
    },
}


@pytest.fixture(scope="module")
def result(mqm, tmp_path_factory):
    """One meta-evaluation through the real entry point (few resamples: figures are points)."""
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("meta") / "result.json"
    cmd = [
        sys.executable,
        "-m",
        "evalab",
        "meta-eval",
        *mqm_args(mqm),
        "-m",
        "bleu",
        "chrf",
        "-n",
        "64",
        "--permutations",
        "20",
        "-q",
        "-f",
        "json",
        "-o",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("metric", "key"), [(m, k) for m, figs in FIGURES.items() for k in figs])
def test_reference_figure(result, metric, key):
    rows = {(r["metric"], r["level"], r["statistic"]): r for r in result["statistics"]}
    got = rows[(metric, *key)]["value"]
    assert got == pytest.approx(FIGURES[metric][key], abs=1e-9)


def test_rated_cells_and_intervals(result, mqm):
    lines = (
        (mqm / "human" / "mqm_newstest2021_ende.avg_seg_scores.tsv").read_text().splitlines()[1:]
    )
    rated = sum(
        1
        for line in lines
        if line.split()[0] in {*result["systems"], "Nemo"} and line.split()[1] != "None"
    )
    assert result["rated_segments"] == rated
    for r in result["statistics"]:
        if r["ci_low"] is not None:
            assert r["ci_low"] <= r["ci_high"]
