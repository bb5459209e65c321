"""``evalab ablate run|status|report`` end to end on a synthetic study."""

from __future__ import annotations

import json

from ablation.synth import write_study


def test_run_status_report(run_cli, tmp_path):
    base = {"a": True, "b": True, "shift": 0.0, "noise": 0.0, "mode": "ok", "sleep": 0.0}
    study = write_study(tmp_path, seeds=[0, 1], base=base, grid={"a": [False, True], "b": [False, True]},
                        variants=[("(R)", "raises", {"mode": "raise"})])
    db = tmp_path / "runs.db"
    r = run_cli("ablate", "run", study, "--db", db, "-j", "2")
    assert r.exit_code == 1, r.stderr  # runs failed
    assert "10 runs planned, 0 already finished, 8 ok, 2 failed" in r.stderr
    r = run_cli("ablate", "run", study, "--db", db, "--quiet")
    assert r.exit_code == 1 and "run 1/" not in r.stderr
    assert "10 runs planned, 8 already finished, 0 ok, 2 failed" in r.stderr
    r = run_cli("ablate", "status", study, "--db", db)
    assert r.exit_code == 0 and "8/10 ok, 2 failed, 0 pending" in r.stdout
    assert "failed: (R) seed 0: RuntimeError: boom" in r.stdout
    check_status_formats(run_cli, study, db, tmp_path)
    r = run_cli("ablate", "report", study, "--db", db)
    assert r.exit_code == 0
    assert "80 - 80 - 80 + 70 = -10" in r.stdout and "80 - 70 = +10" in r.stdout and "80 - 80 = 0" in r.stdout
    r = run_cli("ablate", "report", study, "--db", db, "--format", "json")
    data = json.loads(r.stdout)
    assert [c["arithmetic"] for c in data["contrasts"]["acc"] if c["kind"] == "interaction"] == ["80 - 80 - 80 + 70 = -10"]
    for fmt, marker in [("markdown", "## Ablation study"), ("latex", r"\begin{tabular}"), ("html", "<!DOCTYPE html>"), ("table", "Grid effects on acc")]:
        out = tmp_path / f"report.{fmt}"
        r = run_cli("ablate", "report", study, "--db", db, "-f", fmt, "-o", out)
        assert r.exit_code == 0 and r.stdout == "" and marker in out.read_text(encoding="utf-8")
    r = run_cli("ablate", "report", study, "--db", db, "--aso", "-f", "markdown")
    assert "ASO ε_min" in r.stdout


def test_bad_study_file_fails_before_anything_runs(run_cli, tmp_path):
    study = write_study(tmp_path, variants=[("(A)", "bad", {"heads": 1})])
    db = tmp_path / "runs.db"
    r = run_cli("ablate", "run", study, "--db", db)
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and "[base] has no key 'heads'" in r.stderr
    assert not db.exists()


def test_report_without_database(run_cli, tmp_path):
    study = write_study(tmp_path)
    r = run_cli("ablate", "report", study, "--db", tmp_path / "none.db")
    assert r.exit_code == 2 and "no run database here" in r.stderr
    assert not (tmp_path / "none.db").exists()
    r = run_cli("ablate", "report", study, "--db", tmp_path / "none.db", "-f", "pdf")
    assert r.exit_code == 2 and "unknown format 'pdf'" in r.stderr


def test_unknown_executor(run_cli, tmp_path):
    study = write_study(tmp_path, seeds=[0])
    r = run_cli("ablate", "run", study, "--db", tmp_path / "x.db", "--executor", "slurm")
    assert r.exit_code == 2 and "unknown executor 'slurm'" in r.stderr


def test_plain_progress_lines_without_a_terminal(run_cli, tmp_path):
    study = write_study(tmp_path, seeds=[0, 1], variants=[("(R)", "raises", {"mode": "raise"})])
    r = run_cli("ablate", "run", study, "--db", tmp_path / "runs.db")
    assert r.exit_code == 1
    lines = r.stderr.splitlines()
    assert sum(ln.startswith("run ") and " ok: base seed " in ln and "acc=" in ln and ln.endswith(" s)") for ln in lines) == 2
    assert sum(ln.startswith("run ") and " FAILED: (R) seed " in ln and "RuntimeError: boom" in ln for ln in lines) == 2


def test_status_and_run_announce_superseded_runs_and_gc_removes_them(run_cli, tmp_path):
    study = write_study(tmp_path, seeds=[0, 1])
    db = tmp_path / "runs.db"
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 0
    entry = tmp_path / "synth_entry.py"
    entry.write_text(entry.read_text().replace("70.0 + 10.0", "69.0 + 10.0"))
    r = run_cli("ablate", "run", study, "--db", db, "-q")
    assert r.exit_code == 0
    assert "2 stored runs belong to an older code version (" in r.stderr and "changed: synth_entry.py)" in r.stderr
    r = run_cli("ablate", "status", study, "--db", db)
    assert "2/2 ok" in r.stdout and "changed: synth_entry.py" in r.stdout and "code version " in r.stdout
    r = run_cli("ablate", "gc", study, "--db", db, "--dry-run")
    assert r.exit_code == 0 and r.stderr.startswith("would remove 2 superseded runs")
    r = run_cli("ablate", "gc", study, "--db", db)
    assert r.exit_code == 0 and r.stderr.startswith("removed 2 superseded runs")
    r = run_cli("ablate", "status", study, "--db", db)
    assert "older code version" not in r.stdout and "2/2 ok" in r.stdout


def test_a_db_that_is_not_an_evalab_store_gets_one_line(run_cli, tmp_path):
    import sqlite3

    study = write_study(tmp_path, seeds=[0])
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE runs (id INTEGER)")
    con.commit()
    con.close()
    for cmd in ("run", "status", "report"):
        r = run_cli("ablate", cmd, study, "--db", db)
        assert r.exit_code == 2 and r.stderr.count("\n") == 1, (cmd, r.stderr)
        assert "other.db: an SQLite database but not an evalab run store" in r.stderr
    assert not (tmp_path / "runs").exists()


def test_a_study_file_that_is_not_utf8_gets_one_line(run_cli, tmp_path):
    study = write_study(tmp_path, seeds=[0])
    study.write_bytes(study.read_bytes().replace(b'name = "synth"', b'name = "synth"\ndescription = "caf\xe9"'))
    r = run_cli("ablate", "run", study, "--db", tmp_path / "x.db")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert "not valid UTF-8 (byte 0xe9 on line 3)" in r.stderr and not (tmp_path / "x.db").exists()


def check_status_formats(run_cli, study, db, tmp_path):
    """``ablate status`` speaks the shared formats: JSON counts, Markdown and LaTeX tables, a file."""
    data = json.loads(run_cli("ablate", "status", study, "--db", db, "-f", "json").stdout)
    assert (data["planned"], data["ok"], data["failed"], data["pending"]) == (10, 8, 2, 0)
    assert {"row": "(R)", "planned": 2, "ok": 0, "failed": 2, "pending": 0} in data["rows"]
    assert data["errors"][0]["error"].startswith("RuntimeError: boom")
    md = run_cli("ablate", "status", study, "--db", db, "-f", "markdown").stdout
    assert md.startswith("| Row | Planned | OK | Failed | Pending |") and "| (R) | 2 | 0 | 2 | 0 |" in md
    assert r"\begin{tabular}" in run_cli("ablate", "status", study, "--db", db, "-f", "latex").stdout
    out = tmp_path / "status.txt"
    r = run_cli("ablate", "status", study, "--db", db, "-o", out)
    assert r.exit_code == 0 and r.stdout == "" and out.read_text(encoding="utf-8").startswith("Row\tPlanned")
    r = run_cli("ablate", "status", study, "--db", db, "-f", "pdf")
    assert r.exit_code == 2 and "unknown format 'pdf'" in r.stderr


def test_import_through_the_installed_entry_point(tmp_path):
    """`evalab ablate import` as a user runs it: a subprocess of the console script."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    exe = shutil.which("evalab", path=str(Path(sys.executable).parent)) or shutil.which("evalab")
    assert exe is not None
    study = write_study(tmp_path, seeds=[0], variants=[("(A)", "no a", {"a": False})])
    runs = tmp_path / "runs.csv"
    runs.write_text("row,seed,acc,loss\nbase,0,80.5,0.195\n(A),0,79.0,0.21\n", encoding="utf-8")
    db = tmp_path / "s.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(Path(__file__).parents[2] / "src"),
                                                                  os.environ.get("PYTHONPATH", "")) if p)}

    def evalab(*args):
        return subprocess.run([exe, *map(str, args)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)

    r = evalab("ablate", "import", runs, "--study", study, "--db", db)
    assert r.returncode == 0 and r.stderr.endswith(f"imported 2 runs of study 'synth' from {runs} into {db}\n")
    r = evalab("ablate", "report", study, "--db", db, "-f", "json")
    rows = {row["label"]: row for row in json.loads(r.stdout)["rows"]}
    assert rows["base"]["metrics"]["acc"]["mean"] == 80.5 and rows["(A)"]["metrics"]["acc"]["mean"] == 79.0
    r = evalab("ablate", "import", runs, "--study", study, "--db", db)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "row base seed 0 is already stored as ok" in r.stderr and "Traceback" not in r.stderr
