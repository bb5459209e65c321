"""The typed values of a run cross each process boundary once, losslessly: a Ray task's job
and result as JSON, an unstored result as JSON, artifacts as the database's JSON."""

from __future__ import annotations

import pytest

from evalab.ablation import load_study, plan_runs
from evalab.ablation.execution.attempt import execute_json, make_job
from evalab.ablation.plan.jobs import AttemptResult, Job
from evalab.ablation.store.run_store import Outcome, RunResult

from ..outsynth import N_LINES, write_outputs_study


@pytest.fixture
def outputs_study(tmp_path, wmt22):
    return load_study(write_outputs_study(tmp_path, seeds=(0,)))


def test_a_job_with_computed_metrics_and_bounds_survives_json(outputs_study, tmp_path):
    run = plan_runs(outputs_study)[0]
    job = make_job(outputs_study, run, tmp_path / "run")
    assert job.computed and job.entry == "out_entry:run"
    assert Job.from_json(job.to_json()) == job


def test_a_ray_task_s_json_result_is_the_attempt_s(outputs_study, tmp_path):
    run = plan_runs(outputs_study)[0]
    job = make_job(outputs_study, run, tmp_path / "run")
    result = AttemptResult.from_json(execute_json(job.to_json()))
    assert result.status == "ok", result.error
    assert set(result.metrics) == {"acc", "bleu", "ter"} and result.attempts == 1
    art = result.artifacts
    assert art is not None and art.examples is not None
    assert set(art.examples.n) == {"acc", "bleu", "ter"}
    assert art.examples.n["bleu"] == art.examples.n["ter"] == N_LINES
    assert AttemptResult.from_json(result.to_json()) == result
    # the unstored-result file a busy database leaves holds the same artifacts
    outcome = Outcome(
        study=outputs_study.name,
        rows=run.rows,
        config=run.config,
        seed=run.seed,
        code_version=outputs_study.code_version,
        git_commit=None,
        git_dirty=None,
        result=RunResult(run.key, "ok", metrics=result.metrics, artifacts=art),
    )
    assert Outcome.from_json(outcome.to_json()) == outcome


def test_a_failed_attempt_keeps_its_error_and_traceback_tail(outputs_study, tmp_path):
    run = plan_runs(outputs_study)[0]
    job = make_job(outputs_study, run, tmp_path / "run")
    broken = Job.from_json(job.to_json().replace('"out_entry:run"', '"out_entry:missing"'))
    result = AttemptResult.from_json(execute_json(broken.to_json()))
    assert result.status == "failed" and result.metrics == {} and result.artifacts is None
    assert "AttributeError" in result.error and "Traceback" in result.traceback
