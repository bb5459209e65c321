"""Runners you can trust: one execution per run across runners, nothing lost to a busy
store, no command-template run outliving its runner, escaped braces kept, plain progress."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time

from evalab.ablation import RunStore, load_study, plan_runs, run_study

from ..synth import ENTRY, process_cmdlines, write_command_study, write_study

# every execution appends one line to a side-effect file in the study folder (the run's cwd)
COUNTING_ENTRY = ENTRY.replace(
    "def run(config, seed, out_dir=None):\n",
    "def run(config, seed, out_dir=None):\n"
    "    with open('executions.log', 'a') as fh:\n"
    "        fh.write(f'{seed} {config[\"shift\"]}\\n')\n",
)


def _runner(path, db, *extra):
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evalab",
            "ablate",
            "run",
            str(path),
            "--db",
            str(db),
            "-q",
            *map(str, extra),
        ],
        cwd=path.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def test_two_runners_on_one_store_execute_each_run_exactly_once(tmp_path):
    path = write_study(
        tmp_path,
        seeds=list(range(6)),
        entry_source=COUNTING_ENTRY,
        base={"a": True, "b": True, "shift": 0.0, "noise": 0.5, "mode": "ok", "sleep": 0.2},
        variants=[("(C)", "shift", {"shift": -3.0})],
    )
    db = tmp_path / "s.db"
    runners = [_runner(path, db, "-j", "2") for _ in range(2)]
    errors = [r.communicate(timeout=120)[1].decode() for r in runners]
    assert [r.returncode for r in runners] == [0, 0], errors
    executions = (tmp_path / "executions.log").read_text().splitlines()
    assert len(executions) == len(set(executions)) == 12
    with RunStore(db) as store:
        runs = store.runs("synth")
        assert store.integrity_check() == "ok"
    assert len(runs) == 12 and {r.status for r in runs.values()} == {"ok"}
    assert {r.attempts for r in runs.values()} == {1}
    # the two runners together account for every run once
    ok = [int(e.split(" ok,")[0].rsplit(" ", 1)[1]) for e in errors]
    assert sum(ok) == 12


def test_a_finished_ok_run_is_never_overwritten(tmp_path):
    path = write_study(tmp_path, seeds=[0])
    db = tmp_path / "s.db"
    run_study(load_study(path), db, progress=False)
    from evalab.ablation.store.run_store import Outcome, RunResult

    (run,) = plan_runs(load_study(path))
    failed = Outcome(
        "synth",
        run.rows,
        run.config,
        run.seed,
        load_study(path).code_version,
        None,
        None,
        RunResult(run.key, "failed", error="late duplicate"),
    )
    with RunStore(db) as store:
        assert store.record(failed) is False
        assert store.runs("synth")[run.key].status == "ok"


def _leases(db) -> int:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    except sqlite3.OperationalError:  # not created yet
        return 0
    try:
        return con.execute("SELECT COUNT(*) FROM leases").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def test_a_store_locked_longer_than_the_wait_loses_no_finished_run(tmp_path, run_cli):
    path = write_study(
        tmp_path,
        seeds=[0, 1],
        base={"a": True, "b": True, "shift": 0.0, "noise": 0.5, "mode": "ok", "sleep": 1.0},
    )
    db = tmp_path / "s.db"
    proc = _runner(path, db, "-j", "2", "--wait-db", "0.5")
    deadline = time.monotonic() + 60
    while _leases(db) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock for 4 s
    try:
        _, err = proc.communicate(timeout=60)
        time.sleep(max(0.0, 4.0 - 1.0))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    err = err.decode()
    assert proc.returncode == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "stayed locked" in err and "kept in their run folders" in err
    assert len(list(tmp_path.glob("runs/*/synth/*/unstored-result.json"))) == 2
    # the next command stores them: no finished run was lost, none runs again
    r = run_cli("ablate", "status", path, "--db", db)
    assert r.exit_code == 0 and "2/2 ok" in r.stdout, r.stdout + r.stderr
    assert not list(tmp_path.glob("runs/*/synth/*/unstored-result.json"))
    assert run_study(load_study(path), db, progress=False).skipped == 2


def test_a_command_template_run_dies_with_its_killed_runner(tmp_path):
    marker = "evalab-orphan-check"
    command = (
        f'{sys.executable} -c "import time, sys; time.sleep(60)" {marker} {{config}} '
        f"&& echo '{{{{\"acc\": 1}}}}' > {{out}}"
    )
    path = write_command_study(tmp_path, command)
    db = tmp_path / "s.db"
    proc = _runner(path, db)
    deadline = time.monotonic() + 60
    while not [
        c for c in process_cmdlines() if marker in c and "time.sleep" in c and "/bin/sh" not in c
    ]:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    time.sleep(2.0)
    assert not [c for c in process_cmdlines() if marker in c]


def test_command_templates_write_escaped_braces_as_literal_braces(tmp_path):
    # a Python dict and an awk program keep their braces written as {{ }}; {seed} and {out} are filled in
    command = (
        'awk \'BEGIN {{ printf "{{\\"acc\\": %d}}", {seed} + 1 }}\' > {out} '
        "&& python3 -c \"d = {{'k': 1}}; assert d['k'] == 1\""
    )
    path = write_command_study(tmp_path, command, seeds=[4])
    summary = run_study(load_study(path), tmp_path / "s.db", progress=False)
    assert (summary.ok, summary.failed) == (1, 0)
    with RunStore(tmp_path / "s.db") as store:
        assert [r.metrics for r in store.runs("cmd").values()] == [{"acc": 5.0}]


def test_run_folders_belong_to_one_store(tmp_path):
    path = write_study(tmp_path, seeds=[0])
    run_study(load_study(path), tmp_path / "a.db", progress=False)
    run_study(load_study(path), tmp_path / "b.db", progress=False)
    with RunStore(tmp_path / "a.db") as a, RunStore(tmp_path / "b.db") as b:
        assert a.id != b.id
        folders = {a.runs_root, b.runs_root}
    assert {p.parent for p in folders} == {tmp_path / "runs"}
    for root in folders:
        assert [p.name for p in (root / "synth").iterdir()] == [plan_runs(load_study(path))[0].key]
