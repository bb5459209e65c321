"""Evaluation-time ablation rows (stage = "eval") on a synthetic study: they never train,
evaluate the checkpoint their trained row left for the same seed, are redone exactly when
that trained run (or their evaluation) changes, and their Δ is the paired statistic."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from evalab.ablation import RunStore, analyze, load_study, plan_runs, run_study
from evalab.errors import SettingsError
from evalab.report import render_latex, render_markdown

from .evalsynth import ENTRY, calls, write_eval_study

ROWS = [
    {"label": "(A) a=0", "description": "retrained without a", "set": {"a": 0}},
    {"label": "(A') drop at eval", "stage": "eval", "set": {"drop": 1}},
    {"label": "(A'') drop on (A)", "stage": "eval", "from": "(A) a=0", "set": {"drop": 1}},
]


def _run(path, db):
    return run_study(load_study(path), db, jobs=2, progress=False)


def test_eval_rows_never_train_and_read_their_parents_checkpoint_per_seed(tmp_path):
    path = write_eval_study(tmp_path, rows=ROWS)
    study = load_study(path)
    db = tmp_path / "s.db"
    summary = _run(path, db)
    assert (summary.planned, summary.ok, summary.failed, summary.blocked) == (16, 16, 0, 0)
    log = calls(tmp_path)
    assert sorted(c[1] for c in log if c[0] == "train") == ["0", "0", "1", "1", "2", "2", "3", "3"]
    evals = [c for c in log if c[0] == "eval"]
    assert len(evals) == 8 and len(log) == 16
    plan = {r.key: r for r in plan_runs(study)}
    with RunStore(db) as store:
        stored = store.runs(study.name)
        for run in (r for r in plan.values() if r.stage == "eval"):
            parent = plan[run.parent_key]
            assert parent.stage == "train" and parent.seed == run.seed
            parent_dir = store.run_dir(study.name, parent.key)
            # the checkpoint stays in the trained run's folder, and the eval run read that one
            assert (parent_dir / "ckpt.json").is_file()
            assert ["eval", str(run.seed), str(parent_dir)] in evals
            assert stored[run.key].artifacts.checkpoint_dir == str(parent_dir)
            # the eval run got the parent's training configuration plus the evaluation keys
            assert json.loads((store.run_dir(study.name, run.key) / "config.json").read_text()) == {
                **parent.config,
                "drop": 1,
            }
    # resumable: a second invocation finds everything stored and calls nothing
    again = _run(path, db)
    assert (again.skipped, again.ok) == (16, 0) and len(calls(tmp_path)) == 16


def test_eval_runs_are_redone_when_the_trained_run_or_the_evaluation_changes(tmp_path):
    path = write_eval_study(tmp_path, rows=ROWS[:2])
    db = tmp_path / "s.db"
    _run(path, db)
    assert len(calls(tmp_path)) == 12
    # only the evaluation changes: the eval runs are redone, nothing is retrained
    write_eval_study(tmp_path, rows=[ROWS[0], {**ROWS[1], "set": {"drop": 2}}])
    s = _run(path, db)
    new = calls(tmp_path)[12:]
    assert s.ok == 4 and sorted(c[0] for c in new) == ["eval"] * 4
    # the parent's configuration changes: base and its eval rows are redone, (A) is kept
    write_eval_study(
        tmp_path, rows=[ROWS[0], {**ROWS[1], "set": {"drop": 2}}], base={"a": 1, "shift": 1.0}
    )
    s = _run(path, db)
    new = calls(tmp_path)[16:]
    assert (
        s.ok == 12 and sorted(c[0] for c in new) == ["eval"] * 4 + ["train"] * 8
    )  # (A) inherits shift too
    # the code changes: everything is retrained and re-evaluated (a new code version)
    n = len(calls(tmp_path))
    source = (tmp_path / "synth_entry.py").read_text()
    (tmp_path / "synth_entry.py").write_text(source.replace("70.0 +", "71.0 +"))
    s = _run(path, db)
    new = calls(tmp_path)[n:]
    assert s.ok == 12 and sorted(c[0] for c in new) == ["eval"] * 4 + ["train"] * 8


def test_paired_delta_equals_the_hand_computed_paired_statistics(tmp_path):
    stats = pytest.importorskip("scipy.stats")
    path = write_eval_study(tmp_path, rows=ROWS, seeds=[0, 1, 2, 3, 4])
    db = tmp_path / "s.db"
    _run(path, db)
    a = analyze(load_study(path), db)
    for label, parent in (("(A') drop at eval", "base"), ("(A'') drop on (A)", "(A) a=0")):
        row, par = a.row(label), a.row(parent)
        assert (row.stage, row.parent) == ("eval", parent)
        x, y = np.array(row.metrics["acc"].values), np.array(par.metrics["acc"].values)
        d = x - y
        m = row.metrics["acc"]
        t = d.mean() / (d.std(ddof=1) / math.sqrt(d.size))
        half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
        assert m.paired and m.vs == parent
        assert m.delta == pytest.approx(d.mean(), abs=1e-12)
        assert m.p_welch == pytest.approx(2 * stats.t.sf(abs(t), d.size - 1), rel=1e-8)
        assert (m.delta_low, m.delta_high) == pytest.approx(
            (d.mean() - half, d.mean() + half), rel=1e-9
        )
        flips = [abs(np.dot(s, d)) / d.size for s in itertools.product((1, -1), repeat=d.size)]
        assert m.perm_exact and m.p_perm == pytest.approx(
            np.mean([f >= abs(d.mean()) - 1e-9 for f in flips])
        )
        assert m.direction == "worse" and -12.5 < m.delta < -7.5  # 10 * drop, noise sd 1
    # a retrained row keeps the unpaired Welch comparison with the base
    assert not a.row("(A) a=0").metrics["acc"].paired
    md = render_markdown(a)
    assert "| Stage |" in md and "at eval of base (paired Δ)" in md and "PAIRED" in md
    assert "paired by seed" in render_latex(a)


def test_eval_runs_wait_for_a_failed_trained_run(tmp_path):
    rows = [
        {"label": "(B) broken", "set": {"shift": -1000.0}},
        {"label": "(B') at eval", "stage": "eval", "from": "(B) broken", "set": {"drop": 1}},
    ]
    source = ENTRY.replace(
        '    _log(f"train {seed}")',
        "    _log(f\"train {seed}\")\n    if config['shift'] < -100:\n        raise RuntimeError('diverged')",
    )
    path = write_eval_study(tmp_path, rows=rows, seeds=[0, 1], entry_source=source)
    db = tmp_path / "s.db"
    s = _run(path, db)
    assert (s.ok, s.failed, s.blocked) == (2, 2, 2)
    assert not [c for c in calls(tmp_path) if c[0] == "eval"]
    row = analyze(load_study(path), db).row("(B') at eval")
    assert row.ok == 0 and row.pending == 2 and row.metrics["acc"].n == 0


@pytest.mark.parametrize(
    ("rows", "kwargs", "message"),
    [
        (
            [ROWS[1]],
            {"evaluate": None},
            '[study] evaluate: missing: row "(A\') drop at eval" has stage = "eval"',
        ),
        ([{**ROWS[1], "from": "(Z)"}], {}, "'(Z)' is no row; trained rows: base"),
        (
            [ROWS[1], {**ROWS[2], "from": "(A') drop at eval"}],
            {},
            "is an eval row (eval rows evaluate trained rows only)",
        ),
        (
            [{"label": "(X)", "set": {"drop": 1}}],
            {},
            "'drop' is an evaluation-only key ([evaluation]); it cannot change training",
        ),
        (
            [{**ROWS[1], "set": {"a": 0}}],
            {},
            "[evaluation] has no key 'a' (it is a training setting of [base]",
        ),
        ([ROWS[1]], {"evaluation": {"a": 3}}, "[evaluation] a: is also a key of [base]"),
        ([{**ROWS[1], "stage": "test"}], {}, "stage: is 'test'; expected \"train\""),
        ([{**ROWS[0], "from": "base"}], {}, 'from: is only for stage = "eval" rows'),
        ([{**ROWS[1], "set": {"drop": "all"}}], {}, "is 'all' (str) but [base] drop is 0 (number)"),
    ],
)
def test_study_file_errors_name_the_problem(tmp_path, rows, kwargs, message):
    path = write_eval_study(tmp_path, rows=rows, **kwargs)
    with pytest.raises(SettingsError) as exc:
        load_study(path, check_entry=False)
    assert message in str(exc.value)


def test_an_evaluate_entry_that_does_not_import_is_refused_up_front(tmp_path):
    path = write_eval_study(tmp_path, rows=[ROWS[1]], evaluate="synth_entry:evaluat")
    with pytest.raises(
        SettingsError, match=r"\[study\] evaluate: module 'synth_entry' has no function 'evaluat'"
    ):
        load_study(path)


def test_cli_refuses_an_eval_row_without_evaluate_in_one_line(tmp_path, run_cli):
    path = write_eval_study(tmp_path, rows=[ROWS[1]], evaluate=None)
    res = run_cli("ablate", "run", str(path), "--db", str(tmp_path / "s.db"))
    assert res.exit_code == 2 and not (tmp_path / "s.db").exists()
    assert len(res.stderr.strip().splitlines()) == 1 and "evaluate" in res.stderr


def test_the_documented_tiny_pytorch_example(tmp_path, monkeypatch):
    # docs/ablation-eval-stage.md's worked example, its two entry points called in-process
    # (one torch import instead of a process per run): evaluate() reloads run()'s weights
    # and never trains; x1 zeroed at evaluation costs the base model accuracy, while a model
    # retrained without x1 recovers it from its noisy copy x2
    pytest.importorskip("torch")
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "examples" / "eval_stage"
    monkeypatch.syspath_prepend(str(folder))
    import tiny_entry

    study = load_study(folder / "study.toml", check_entry=False)
    base = dict(study.base)
    ckpt = tmp_path / "base"
    ckpt.mkdir()
    trained = tiny_entry.run(base, 0, str(ckpt))
    monkeypatch.setattr(tiny_entry.torch.optim, "Adam", None)  # any training now fails
    assert tiny_entry.evaluate({**base, **study.evaluation}, 0, str(ckpt)) == trained
    at_eval = tiny_entry.evaluate({**base, "zero_feature": 1}, 0, str(ckpt))
    monkeypatch.undo()
    retrained_dir = tmp_path / "x1"
    retrained_dir.mkdir()
    retrained = tiny_entry.run({**base, "drop_feature": 1}, 0, str(retrained_dir))
    assert at_eval["acc"] < retrained["acc"] - 3.0 < trained["acc"]


def test_eval_runs_are_claimed_like_training_runs(tmp_path):
    # another live runner holds the base run of seed 0: this runner leaves it, and the eval
    # run of seed 0 waits for it; an eval run held by another runner is left to it as well
    from evalab.ablation.store.leases import Owner

    path = write_eval_study(tmp_path, rows=[ROWS[1]], seeds=[0, 1, 2])
    study = load_study(path)
    db = tmp_path / "s.db"
    plan = plan_runs(study)
    base0 = next(r for r in plan if r.stage == "train" and r.seed == 0)
    eval1 = next(r for r in plan if r.stage == "eval" and r.seed == 1)
    other = Owner.here()  # a new id in this (live) process: another runner
    with RunStore(db) as store:
        store.register_study(study)
        assert store.claim(study.name, base0.key, other) == "claimed"
        assert store.claim(study.name, eval1.key, other) == "claimed"
    s = run_study(study, db, jobs=2, progress=False)
    # ok: base 1, 2 and eval 2; held: base 0 and eval 1; blocked: eval 0 (its trained run is held)
    assert (s.ok, s.held, s.blocked) == (3, 2, 1)
    assert sorted((c[0], c[1]) for c in calls(tmp_path)) == [
        ("eval", "2"),
        ("train", "1"),
        ("train", "2"),
    ]


TRAIN_READS_DATA = """
import json
import os


def run(config, seed, out_dir):
    with open("calls.log", "a", encoding="utf-8") as fh:
        fh.write(f"train {seed}\\n")
    with open("data/train.txt", encoding="utf-8") as fh:
        shift = float(fh.read())
    weight = 70.0 + 10.0 * config["a"] + shift + seed
    with open(os.path.join(out_dir, "ckpt.json"), "w", encoding="utf-8") as fh:
        json.dump({"weight": weight, "seed": seed}, fh)
    return {"acc": weight, "loss": 1.0 - weight / 100.0}
"""


def test_a_retrained_checkpoint_makes_its_eval_runs_pending_and_they_rerun(run_cli, tmp_path):
    # evaluate in its own module, no [study] inputs: the training data is observed by the
    # training runs only; editing it retrains them under the same keys, new checkpoints
    path = write_eval_study(
        tmp_path,
        rows=[{"label": "(D) drop at eval", "stage": "eval", "set": {"drop": 1}}],
        seeds=[0, 1],
        evaluate="eval_entry:evaluate",
        entry_source=TRAIN_READS_DATA,
    )
    (tmp_path / "eval_entry.py").write_text(ENTRY, encoding="utf-8")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.txt").write_text("0.0", encoding="utf-8")
    db = tmp_path / "s.db"

    def eval_acc() -> dict[str, float]:
        r = run_cli("ablate", "report", path, "--db", db, "-f", "json")
        assert r.exit_code == 0, r.stderr
        return {row["label"]: row["metrics"]["acc"]["mean"] for row in json.loads(r.stdout)["rows"]}

    assert run_cli("ablate", "run", path, "--db", db, "-q").exit_code == 0
    before = eval_acc()
    (tmp_path / "data" / "train.txt").write_text("5.0", encoding="utf-8")
    status = run_cli("ablate", "status", path, "--db", db)
    assert status.exit_code == 0 and "evalsynth: 0/4 ok, 0 failed, 4 pending" in status.stdout
    assert "2 stored runs read files that changed since they ran (data/train.txt)" in status.stdout
    assert (
        "2 stored eval runs evaluated a checkpoint their trained run has replaced" in status.stdout
    )
    n = len(calls(tmp_path))
    r = run_cli("ablate", "run", path, "--db", db, "-q")
    assert r.exit_code == 0, r.stderr
    again = calls(tmp_path)[n:]
    assert sorted(c[0] + c[1] for c in again) == ["eval0", "eval1", "train0", "train1"]
    after = eval_acc()
    # the eval row evaluated the retrained models: both rows moved by the data's shift
    assert after["base"] == pytest.approx(before["base"] + 5.0)
    assert after["(D) drop at eval"] == pytest.approx(before["(D) drop at eval"] + 5.0)
    assert "evalsynth: 4/4 ok" in run_cli("ablate", "status", path, "--db", db).stdout
