"""Planning: rows, runs and run keys."""

from __future__ import annotations

from evalab.ablation import load_study, plan_runs, study_rows
from evalab.ablation.plan.runs import run_key

from ..synth import write_study


def test_rows_and_runs(tmp_path):
    s = load_study(
        write_study(
            tmp_path,
            seeds=[0, 1, 2],
            variants=[("(A)", "no a", {"a": False})],
            grid={"a": [False, True], "b": [False, True]},
        ),
        check_entry=False,
    )
    rows = study_rows(s)
    assert [r.label for r in rows] == [
        "base",
        "(A)",
        "a=false, b=false",
        "a=false, b=true",
        "a=true, b=false",
        "a=true, b=true",
    ]
    assert rows[-1].changes == {} and rows[1].changes == {"a": False}
    runs = plan_runs(s)
    # base == grid cell (true, true) and (A) == grid cell (false, true): 4 distinct configs x 3 seeds
    assert len(runs) == 12
    assert len({r.key for r in runs}) == 12
    shared = [r for r in runs if "base" in r.rows]
    assert all(r.rows == ("base", "a=true, b=true") for r in shared)


def test_run_key_depends_on_config_seed_and_code_version():
    k = run_key({"a": 1, "b": 2}, 0, "v1")
    assert k == run_key({"b": 2, "a": 1}, 0, "v1")  # key order does not matter
    assert k != run_key({"a": 1, "b": 3}, 0, "v1")
    assert k != run_key({"a": 1, "b": 2}, 1, "v1")
    assert k != run_key({"a": 1, "b": 2}, 0, "v2")


def test_a_subset_keeps_its_rows_and_seeds_and_the_trained_runs_its_eval_rows_need():
    from pathlib import Path

    import pytest

    from evalab.ablation import Subset
    from evalab.errors import SettingsError

    study = load_study(
        Path(__file__).parents[3] / "examples" / "eval_stage" / "study.toml", check_entry=False
    )
    plan = plan_runs(study)
    picked = Subset(rows=("(X') x1 at eval",), seeds=(study.seeds[0],)).select(plan)
    assert [(r.rows, r.stage, r.seed) for r in picked] == [
        (("base",), "train", study.seeds[0]),
        (("(X') x1 at eval",), "eval", study.seeds[0]),
    ]
    assert picked[1].parent_key == picked[0].key
    assert Subset().select(plan) == plan and not Subset()
    assert {r.seed for r in Subset(seeds=study.seeds[1:]).select(plan)} == set(study.seeds[1:])
    with pytest.raises(
        SettingsError, match=r"rows 'nope': the study .* has no such row; rows: base, \(X\) x1"
    ):
        Subset(rows=("nope",)).check(study)
    with pytest.raises(SettingsError, match="seeds 99: not a seed of the study"):
        Subset(seeds=(99,)).check(study)
