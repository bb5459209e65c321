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


def test_a_pilot_whose_differences_do_not_vary_is_refused(tmp_path: Path, run_cli) -> None:
    """Two identical pilots (a file and its copy) once gave "paired sd 0.0000, items needed
    2"; a paired plan from them is refused, the unpaired one still made."""
    copy = tmp_path / "copy-of-a.csv"
    copy.write_bytes((EXAMPLE / "model-a.csv").read_bytes())
    pilot = ("power", "--scores", EXAMPLE / "model-a.csv", copy, "--score-column", "correct")
    for extra in ((), ("--delta", "0.05"), ("--design", "paired", "--items", "500")):
        assert_refused(
            (*pilot, *extra),
            "the pilot's per-item differences have no variance",
            watch=(tmp_path, EXAMPLE),
        )
    res = run_cli(*pilot, "--design", "unpaired", "--delta", "0.05", "-f", "json")
    assert res.exit_code == 0 and json.loads(res.stdout)[0]["items_needed"] > 2


def test_an_assumed_design_without_spread_is_refused(tmp_path: Path) -> None:
    assert_refused(
        ("power", "--sd", "0.5", "--correlation", "1", "--delta", "0.1", "--design", "paired"),
        "the per-item differences have no variance",
        watch=(tmp_path,),
    )


def with_deciles(folder: Path, name: str) -> Path:
    """An example file with a column ``decile``: its passages in 10 clusters."""
    lines = (EXAMPLE / name).read_text(encoding="utf-8").splitlines()
    out = folder / name
    out.write_text(
        "\n".join(
            [lines[0] + ",decile"] + [f"{ln},{int(ln.split(',')[1][1:]) % 10}" for ln in lines[1:]]
        )
        + "\n",
        encoding="utf-8",
    )
    return out


def test_a_pilot_with_few_clusters_warns(tmp_path: Path, run_cli) -> None:
    """200 passages of 5 questions: no warning; the same items in 10 clusters: a warning
    in the table's notes (issue 45: a clustered SE from 5 clusters gave none)."""
    files = [with_deciles(tmp_path, "model-a.csv"), with_deciles(tmp_path, "model-c.csv")]
    args = ("power", "--scores", *files, "--score-column", "correct", "--delta", "0.05")
    many = run_cli(*args, "--cluster-column", "passage")
    assert many.exit_code == 0 and "warning" not in many.stdout
    few = run_cli(*args, "--cluster-column", "decile")
    assert few.exit_code == 0, few.stderr
    assert "warning: clustered standard errors from 10 clusters" in few.stdout
