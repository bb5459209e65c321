"""Running synthetic studies: known effects recovered, the 2x2 example, failures, retries."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from evalab.ablation import RunStore, analyze, load_study, plan_runs, run_study, study_status
from evalab.errors import OutOfRangeError

from .synth import write_study


def test_report_recovers_known_effects(tmp_path):
    path = write_study(
        tmp_path,
        seeds=list(range(6)),
        variants=[
            ("(A)", "no a (b still there)", {"a": False}),
            ("(C)", "shift -3", {"shift": -3.0}),
            ("(D)", "shift +0.1", {"shift": 0.1}),
        ],
    )
    study = load_study(path)
    db = tmp_path / "s.db"
    summary = run_study(study, db, jobs=2, progress=False)
    assert (summary.planned, summary.ok, summary.failed, summary.skipped) == (24, 24, 0, 0)
    a = analyze(study, db)
    base, ra, rc, rd = (a.row(x).metrics["acc"] for x in ("base", "(A)", "(C)", "(D)"))
    assert base.n == 6 and abs(base.mean - 80.0) < 1.0 and base.ci_low < 80.0 < base.ci_high
    # (A): true delta 0 (a and b are redundant): the CI covers 0 and nothing is claimed
    assert ra.delta_low < 0.0 < ra.delta_high and ra.p_welch > 0.05
    # (C): true delta -3 with noise sd 0.5: found, CI covers the truth, both tests agree
    assert rc.delta_low < -3.0 < rc.delta_high and rc.p_welch < 0.001 and rc.p_perm < 0.01
    assert rc.perm_exact and rc.direction == "worse" and not rc.too_few_seeds
    # (D): true delta 0.1, far below the seed noise: flagged, with a power-analysis seed count
    assert rd.too_few_seeds and (rd.seeds_needed is None or rd.seeds_needed > 6)
    # loss = 1 - acc/100: lower is better, so (C) is worse on loss too
    assert a.row("(C)").metrics["loss"].direction == "worse"


def test_two_by_two_example_from_seed_004(tmp_path):
    base = {"a": True, "b": True, "shift": 0.0, "noise": 0.0, "mode": "ok", "sleep": 0.0}
    path = write_study(
        tmp_path, seeds=[0, 1], base=base, grid={"a": [False, True], "b": [False, True]}
    )
    study = load_study(path)
    run_study(study, tmp_path / "s.db", jobs=2, progress=False)
    a = analyze(study, tmp_path / "s.db")
    effects = {
        (c.kind, c.name.split(" ")[2] if c.kind != "interaction" else "ab"): c
        for c in a.contrasts["acc"]
    }
    removal_a = next(c for c in a.contrasts["acc"] if c.kind == "removal" and "of a=" in c.name)
    addition_a = next(c for c in a.contrasts["acc"] if c.kind == "addition" and "of a=" in c.name)
    interaction = next(c for c in a.contrasts["acc"] if c.kind == "interaction")
    assert effects
    assert removal_a.value == 0 and removal_a.arithmetic == "80 - 80 = 0"
    assert addition_a.value == 10 and addition_a.arithmetic == "80 - 70 = +10"
    assert interaction.value == -10 and interaction.arithmetic == "80 - 80 - 80 + 70 = -10"
    from evalab.report import render_markdown

    md = render_markdown(a)
    assert "`80 - 80 - 80 + 70 = -10`" in md and "`80 - 70 = +10`" in md and "`80 - 80 = 0`" in md


def test_failures_are_recorded_and_the_study_finishes(tmp_path):
    path = write_study(
        tmp_path,
        seeds=[0, 1],
        timeout=1.5,
        variants=[
            ("(R)", "raises", {"mode": "raise"}),
            ("(H)", "hangs", {"mode": "hang"}),
            ("(N)", "non-number", {"mode": "nonnumber"}),
            ("(K)", "killed", {"mode": "killed"}),
            ("(C)", "fine", {"shift": -3.0}),
        ],
    )
    study = load_study(path)
    db = tmp_path / "s.db"
    summary = run_study(study, db, jobs=2, progress=False)
    assert (summary.ok, summary.failed) == (4, 8)
    with RunStore(db) as store:
        runs = store.runs("synth")
        assert store.integrity_check() == "ok"
    by_row = {}
    for r in runs.values():
        by_row.setdefault(r.rows[0], []).append(r)
    assert all(
        r.status == "failed" and "RuntimeError: boom" in r.error and "Traceback" in r.traceback
        for r in by_row["(R)"]
    )
    assert all(
        r.status == "failed" and r.error.startswith("timed out after 1.5 s") for r in by_row["(H)"]
    )
    assert all(r.status == "failed" and "metric 'acc' is 'high'" in r.error for r in by_row["(N)"])
    assert all(
        r.status == "failed" and r.error == "worker exited with code -9 without a result"
        for r in by_row["(K)"]
    )
    assert all(r.status == "ok" for r in by_row["(C)"] + by_row["base"])
    a = analyze(study, db)
    assert a.row("(R)").ok == 0 and a.row("(R)").failed == 2 and a.row("(R)").metrics["acc"].n == 0
    assert a.row("(C)").ok == 2
    from evalab.report import render_markdown

    md = render_markdown(a)
    assert "### Missing runs" in md
    assert "(H) seed 0: failed after 1 attempt(s): timed out after 1.5 s" in md
    assert (
        "| (R) |  | raise | 0/2 ! |" in md and "- (R): raises" in md
    )  # columns shift, mode; description a note
    st = study_status(study, db)
    assert (st.ok, st.failed, st.pending) == (4, 8, 0)


def test_retries(tmp_path):
    path = write_study(
        tmp_path, seeds=[0, 1], retries=1, variants=[("(F)", "flaky", {"mode": "flaky"})]
    )
    study = load_study(path)
    summary = run_study(study, tmp_path / "s.db", progress=False)
    assert (summary.ok, summary.failed) == (4, 0)
    with RunStore(tmp_path / "s.db") as store:
        attempts = sorted((r.rows[0], r.attempts) for r in store.runs("synth").values())
    assert attempts == [("(F)", 2), ("(F)", 2), ("base", 1), ("base", 1)]


def test_no_retries_left_records_the_failure_and_a_rerun_retries_it(tmp_path):
    path = write_study(
        tmp_path, seeds=[0], retries=0, variants=[("(F)", "flaky", {"mode": "flaky"})]
    )
    study = load_study(path)
    db = tmp_path / "s.db"
    first = run_study(study, db, progress=False)
    assert (first.ok, first.failed) == (1, 1)
    second = run_study(study, db, progress=False)  # the marker file exists now: succeeds
    assert (second.skipped, second.ok, second.failed) == (1, 1, 0)
    with RunStore(db) as store:
        flaky = [r for r in store.runs("synth").values() if r.rows == ("(F)",)]
    assert flaky[0].status == "ok" and flaky[0].attempts == 2


def test_command_template_runs(tmp_path):
    (tmp_path / "train.py").write_text(
        "import json, sys\n"
        "cfg = json.load(open(sys.argv[1])); seed = int(sys.argv[2])\n"
        "json.dump({'acc': 50.0 + cfg['x'] + seed, 'loss': 0.5}, open(sys.argv[3], 'w'))\n"
    )
    (tmp_path / "study.toml").write_text(
        '[study]\nname = "cmd"\ncommand = "python train.py {config} {seed} {out}"\nseeds = [0, 1]\n'
        'metrics = ["acc", "loss"]\n\n[base]\nx = 1.0\n\n[[variant]]\nlabel = "(X)"\nset = { x = 3.0 }\n'
    )
    study = load_study(tmp_path / "study.toml")
    summary = run_study(study, tmp_path / "s.db", progress=False)
    assert summary.ok == 4, study_status(study, tmp_path / "s.db").errors
    a = analyze(study, tmp_path / "s.db")
    assert a.row("base").metrics["acc"].values == [51.0, 52.0]
    assert a.row("(X)").metrics["acc"].delta == pytest.approx(2.0)


def test_store_is_wal_and_holds_the_documented_columns(tmp_path):
    study = load_study(write_study(tmp_path, seeds=[0]))
    run_study(study, tmp_path / "s.db", progress=False)
    con = sqlite3.connect(tmp_path / "s.db")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    row = con.execute(
        "SELECT study, run_key, config, seed, status, metrics, duration, host, attempts, "
        "started_at, finished_at, artifacts FROM runs"
    ).fetchone()
    assert (
        row[0] == "synth" and row[1] == plan_runs(study)[0].key and row[3] == 0 and row[4] == "ok"
    )
    assert json.loads(row[2])["noise"] == 0.5 and set(json.loads(row[5])) == {"acc", "loss"}
    assert row[6] > 0 and row[7] and row[8] == 1 and row[9] <= row[10]
    assert json.loads(row[11])["dir"].endswith(row[1])
    con.close()


def test_single_seed_has_no_fake_precision(tmp_path):
    study = load_study(
        write_study(tmp_path, seeds=[0], variants=[("(C)", "shift", {"shift": -3.0})])
    )
    run_study(study, tmp_path / "s.db", progress=False)
    m = analyze(study, tmp_path / "s.db").row("(C)").metrics["acc"]
    assert m.n == 1 and math.isnan(m.std) and m.ci_low is None and m.absent["mean_ci"] == "one_seed"
    assert m.p_welch is None and m.absent["p_t"] == "one_seed" and m.too_few_seeds


def test_bad_jobs_and_executor(tmp_path):
    from evalab.errors import SettingsError

    study = load_study(write_study(tmp_path, seeds=[0]))
    with pytest.raises(SettingsError, match="executor must be one of local, ray, got 'slurm'"):
        run_study(study, tmp_path / "s.db", executor="slurm")
    # typed: the setting, its value, what it must be (the CLI words it as its option)
    with pytest.raises(OutOfRangeError) as bad:
        run_study(study, tmp_path / "s.db", jobs=0)
    assert (bad.value.setting, bad.value.value, bad.value.expected) == ("jobs", 0, ">= 1")
    assert not (tmp_path / "s.db").exists()
