"""Resume: a runner killed with SIGKILL after k finished runs loses none of them, and the
next invocation runs exactly the missing runs."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from evalab.ablation import RunStore, load_study, plan_runs, run_study

from ..synth import BASE, process_cmdlines, write_study


def _ok_keys(db) -> set[str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return {r[0] for r in con.execute("SELECT run_key FROM runs WHERE status='ok'")}
    except sqlite3.OperationalError:  # tables not created yet
        return set()
    finally:
        con.close()


def _kill_after_finished(proc: subprocess.Popen, db, n: int) -> None:
    """SIGKILL the runner once ``n`` runs are stored (it must not end on its own first)."""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and not (db.exists() and len(_ok_keys(db)) >= n):
            if proc.poll() is not None:
                raise AssertionError(f"runner ended early: {proc.stderr.read().decode()}")
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)


def _wait_for_orphans_to_exit(runs: Path) -> None:
    """Until no worker of the killed runner is left (each notices within 0.5 s on a quiet
    machine; under load it may take longer, so wait for the fact rather than a fixed time)."""
    deadline = time.monotonic() + 60
    while [c for c in process_cmdlines() if str(runs) in c] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [c for c in process_cmdlines() if str(runs) in c]


def test_killed_runner_resumes_with_exactly_the_missing_runs(tmp_path):
    path = write_study(
        tmp_path,
        seeds=list(range(5)),
        base={**BASE, "sleep": 0.3},
        variants=[("(C)", "shift", {"shift": -3.0})],
    )
    db = tmp_path / "s.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalab", "ablate", "run", str(path), "--db", str(db), "-q"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _kill_after_finished(proc, db, 3)
    assert proc.returncode == -signal.SIGKILL
    finished_before = _ok_keys(db)
    k = len(finished_before)
    total = len(plan_runs(load_study(path)))
    assert total == 10 and 3 <= k < total
    with RunStore(db) as store:
        assert store.integrity_check() == "ok"
    _wait_for_orphans_to_exit(tmp_path / "runs")
    summary = run_study(load_study(path), db, progress=False)
    assert (summary.skipped, summary.ok, summary.failed) == (k, total - k, 0)
    with RunStore(db) as store:
        assert store.integrity_check() == "ok"
        runs = store.runs("synth")
    assert set(runs) == {r.key for r in plan_runs(load_study(path))}
    assert all(r.status == "ok" and r.attempts == 1 for r in runs.values())
    # the second invocation ran exactly the runs that had not finished: none twice
    rerun = {key for key, r in runs.items() if key not in finished_before}
    assert len(rerun) == total - k
    again = run_study(load_study(path), db, progress=False)
    assert (again.skipped, again.ok) == (total, 0)


def test_ctrl_c_keeps_finished_runs_and_kills_the_runs_in_flight(tmp_path):
    path = write_study(tmp_path, seeds=list(range(6)), base={**BASE, "sleep": 0.5})
    db = tmp_path / "s.db"
    proc = subprocess.Popen(
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
            "-j",
            "2",
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        # a shell's background job may inherit SIGINT as ignored; a user's Ctrl-C is not
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (db.exists() and len(_ok_keys(db)) >= 2):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "interrupted" in err.decode()
    done = _ok_keys(db)
    # the user is told what was kept and how to go on
    assert f"{len(done)} runs stored in this invocation" in err.decode()
    assert "run the same command again to resume" in err.decode()
    assert 2 <= len(done) < 6
    # the runs in flight were killed with their process groups: no worker of this study is left
    assert not [c for c in process_cmdlines() if str(tmp_path / "runs") in c]
    with RunStore(db) as store:
        assert store.integrity_check() == "ok"
    summary = run_study(load_study(path), db, progress=False)
    assert (summary.skipped, summary.ok) == (len(done), 6 - len(done))


PER_EXAMPLE_ENTRY = """
import os
import time

GATE = {gate!r}


def run(config, seed, out_dir=None):
    # the first 4 runs to start finish; the others wait for the gate, so the runner cannot
    # end before it is killed however slow or fast the machine (no race with the poll)
    slot = 0
    while True:
        try:
            os.close(os.open(os.path.join(GATE, "slot%d" % slot), os.O_CREAT | os.O_EXCL))
            break
        except FileExistsError:
            slot += 1
    while slot >= 4 and not os.path.exists(os.path.join(GATE, "open")):
        time.sleep(0.05)
    with open(os.path.join(out_dir, "hyp.txt"), "w", encoding="utf-8") as fh:
        fh.write("the cat sat\\na dog\\nhello world %d\\n" % seed)
    values = [1.0, 0.0, float(seed % 2), float(config["a"])]
    return {{"acc": sum(values) / len(values), "per_example": {{"acc": values}}}}
"""


def test_killed_runner_resumes_with_every_per_example_file_once(tmp_path):
    """SIGKILL mid-study, then resume: each run has its examples file (computed and
    returned per-example rows), giving back its stored values, and no run ran twice."""
    from evalab.ablation.store.per_example import EXAMPLES_FILE, load_example_stats

    (tmp_path / "ref.txt").write_text("the cat sat\na dog ran\nhello world\n", encoding="utf-8")
    gate = tmp_path / "gate"
    gate.mkdir()
    entry = PER_EXAMPLE_ENTRY.format(gate=str(gate))
    (tmp_path / "pe_entry.py").write_text(entry, encoding="utf-8")
    path = tmp_path / "study.toml"
    path.write_text(
        '[study]\nname = "pe"\nentry = "pe_entry:run"\nseeds = [0, 1, 2, 3]\nmetrics = ["acc"]\n\n'
        '[metrics.bleu]\nmetric = "bleu"\noutputs = "hyp.txt"\nreferences = ["ref.txt"]\n\n'
        '[base]\na = 1\n\n[[variant]]\nlabel = "A"\nset = { a = 0 }\n',
        encoding="utf-8",
    )
    db = tmp_path / "s.db"
    proc = subprocess.Popen(
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
            "-j",
            "2",
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _kill_after_finished(proc, db, 3)
    finished_before = _ok_keys(db)
    assert 3 <= len(finished_before) <= 4
    _wait_for_orphans_to_exit(tmp_path / "runs")
    (gate / "open").touch()
    study = load_study(path)
    summary = run_study(study, db, progress=False)
    assert (summary.skipped, summary.ok, summary.failed) == (
        len(finished_before),
        8 - len(finished_before),
        0,
    )
    with RunStore(db) as store:
        runs = store.runs("pe")
        assert len(runs) == 8 and all(r.status == "ok" and r.attempts == 1 for r in runs.values())
        for run in runs.values():
            folder = store.run_dir("pe", run.key)
            assert sorted(p.name for p in folder.glob("*.npz")) == [EXAMPLES_FILE]
            stats = load_example_stats(store, study, run)
            assert (
                sorted(stats) == ["acc", "bleu"]
                and stats["acc"].n_examples == 4
                and stats["bleu"].n_examples == 3
            )
