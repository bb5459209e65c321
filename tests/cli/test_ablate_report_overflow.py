"""Values near the float limit through ``ablate import`` and ``ablate report``: identical
rows are never reported as different (the statistics are computed on a rescaled copy)."""

from __future__ import annotations

import json

from tests.ablation.synth import write_study
from tests.cli.refusal import evalab


def test_identical_imported_rows_at_1e308_have_p_1_and_no_warning(tmp_path):
    study = write_study(tmp_path, seeds=[0, 1, 2, 3], variants=[("(A)", "no a", {"a": False})])
    rows = ["row,seed,acc,loss"] + [
        f"{row},{s},1.5e308,0.1" for row in ("base", "(A)") for s in range(4)
    ]
    (tmp_path / "runs.csv").write_text("\n".join(rows) + "\n")
    db = tmp_path / "s.db"
    assert (
        evalab("ablate", "import", tmp_path / "runs.csv", "--study", study, "--db", db).returncode
        == 0
    )
    report = evalab("ablate", "report", study, "--db", db, "--format", "json")
    assert report.returncode == 0 and report.stderr == "", report.stderr
    (row,) = [r for r in json.loads(report.stdout)["rows"] if r["label"] == "(A)"]
    acc = row["metrics"]["acc"]
    assert acc["mean"] == 1.5e308 and acc["delta"] == 0.0
    assert acc["p_perm"] == 1.0
    table = evalab("ablate", "report", study, "--db", db)
    assert table.returncode == 0 and "< 0.001" not in table.stdout and "warning" not in table.stderr
