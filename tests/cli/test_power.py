"""``evalab power`` through the real CLI: from assumptions and from a pilot run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tests.cli.refusal import assert_refused

smp = pytest.importorskip("statsmodels.stats.power")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "item-scores"


def test_assumed_design_equals_statsmodels(run_cli) -> None:
    res = run_cli(
        "power",
        "--sd",
        "0.48",
        "--correlation",
        "0.5",
        "--delta",
        "0.03",
        "--items",
        "1000",
        "-f",
        "json",
    )
    assert res.exit_code == 0, res.stderr
    paired, unpaired = json.loads(res.stdout)
    assert paired["test_sd"] == pytest.approx(0.48)  # sqrt(2 sd^2 (1 - 0.5))
    need = smp.TTestPower().solve_power(effect_size=0.03 / 0.48, alpha=0.05, power=0.8)
    assert paired["items_needed"] == int(np.ceil(need))
    need = smp.TTestIndPower().solve_power(effect_size=0.03 / 0.48, alpha=0.05, power=0.8)
    assert unpaired["items_needed"] == int(np.ceil(need))
    assert smp.TTestPower().power(paired["detectable_delta"] / 0.48, 1000, 0.05) == pytest.approx(
        0.8, abs=1e-6
    )


def test_pilot_gives_spread_correlation_and_clustering(run_cli) -> None:
    files = [EXAMPLE / "model-a.csv", EXAMPLE / "model-c.csv"]
    res = run_cli(
        "power",
        "--scores",
        *files,
        "--score-column",
        "correct",
        "--cluster-column",
        "passage",
        "--design",
        "unpaired",
        "-f",
        "json",
    )
    assert res.exit_code == 0, res.stderr
    (row,) = json.loads(res.stdout)
    assert row["items"] == 1000 and row["cluster_size"] == 5 and row["design_effect"] > 1.5
    plain = json.loads(
        run_cli(
            "power",
            "--scores",
            *files,
            "--score-column",
            "correct",
            "--design",
            "unpaired",
            "-f",
            "json",
        ).stdout
    )[0]
    assert row["detectable_delta"] > plain["detectable_delta"]


def test_assumptions_beside_a_pilot_are_refused(tmp_path: Path) -> None:
    files = [EXAMPLE / "model-a.csv", EXAMPLE / "model-c.csv"]
    assert_refused(
        (
            "power",
            "--scores",
            *files,
            "--score-column",
            "correct",
            "--icc",
            "0.2",
            "--delta",
            "0.1",
        ),
        "--icc is an assumption for a plan without a pilot",
        watch=(tmp_path, EXAMPLE),
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--delta", "0.02"), "--scores A B) or the assumed spread"),
        (("--sd", "0.5"), "needs --delta"),
        (("--sd", "0.5", "--delta", "0"), "non-zero"),
        (
            ("--sd", "0.5", "--delta", "0.1", "--correlation", "2"),
            "correlation must lie in [-1, 1]",
        ),
        (("--sd", "0.5", "--delta", "0.1", "--power", "0.01"), "power must lie strictly between"),
        (
            ("--sd", "0.5", "--delta", "0.1", "--design", "crossed"),
            "--design must be paired or unpaired",
        ),
    ],
)
def test_bad_plans_are_refused(tmp_path: Path, args: tuple[str, ...], needle: str) -> None:
    assert_refused(("power", *args), needle, watch=(tmp_path,))
