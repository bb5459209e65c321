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
