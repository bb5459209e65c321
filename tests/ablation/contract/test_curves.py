"""Per-step curves: logged by entry points and commands, selected and stopped by the study's
rules, stored compactly, refused when malformed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.cli.refusal import assert_refused

from evalab.ablation import load_study
from evalab.ablation.contract.curves import Curve, decode, encode, load_curves
from evalab.ablation.store.run_store import RunStore

ENTRY = """
import math
import random

from evalab.ablation import log


def run(config, seed):
    rng = random.Random(seed * 1000 + config["hidden"])
    for step in range(config["steps"]):
        loss = 2.0 * math.exp(-step / (0.5 * config["hidden"] * 10)) + 0.1 + rng.gauss(0, 0.01)
        val_loss = loss + 0.0002 * max(0, step - 300)  # overfits after step 300
        if log(step=step, loss=loss, val_loss=val_loss):
            break
    return {"acc": 1.0 - val_loss}
"""


def write_curve_study(
    folder: Path, curves: str = 'select = "min:val_loss"', steps: int = 1000
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "curve_entry.py").write_text(ENTRY, encoding="utf-8")
    (folder / "study.toml").write_text(
        f"""[study]
name = "curves"
entry = "curve_entry:run"
seeds = [0, 1, 2]
metrics = ["acc", "val_loss"]
higher_is_better = {{ val_loss = false }}

[curves]
{curves}

[base]
hidden = 8
steps = {steps}

[[variant]]
label = "(H)"
description = "hidden 16"
set = {{ hidden = 16 }}
""",
        encoding="utf-8",
    )
    return folder / "study.toml"


def logged(run_dir: Path) -> dict[str, tuple[list[int], list[float]]]:
    """The run's metrics.jsonl read directly."""
    out: dict[str, tuple[list[int], list[float]]] = {}
    for line in (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        for name, value in rec.items():
            if name != "step":
                out.setdefault(name, ([], []))
                out[name][0].append(rec["step"])
                out[name][1].append(value)
    return out


@pytest.fixture(scope="module")
def two_by_three(tmp_path_factory):
    """The 2-row x 3-seed study, 1000 steps a run, run by evalab."""
    from evalab.cli import main

    folder = tmp_path_factory.mktemp("curves")
    study = write_curve_study(folder)
    db = folder / "s.db"
    assert main(["ablate", "run", str(study), "--db", str(db), "-q", "--jobs", "2"]) == 0
    return study, db


def test_curves_are_stored_and_the_declared_step_gives_the_values(two_by_three):
    study, db = two_by_three
    s = load_study(study, check_entry=False)
    with RunStore(db, create=False) as store:
        runs = store.runs(s.name)
        stored = load_curves(store.conn, s.name, list(runs))
        n_blobs = store.conn.execute("SELECT COUNT(*), SUM(steps) FROM curves").fetchone()
    assert len(runs) == 6 and n_blobs == (12, 12000)  # 6 runs x (loss, val_loss), 1000 steps each
    for key, run in runs.items():
        direct = logged(Path(run.artifacts.dir))
        for metric in ("loss", "val_loss"):
            steps, values = direct[metric]
            assert (
                stored[key][metric].steps.tolist() == steps
                and stored[key][metric].values.tolist() == values
            )
        steps, values = direct["val_loss"]
        best = int(np.argmin(values))
        assert run.metrics["val_loss"] == values[best]  # select = "min:val_loss"
        assert run.artifacts.curves.selected_step == steps[best] and 250 < steps[best] < 500
        assert run.metrics["acc"] == 1.0 - values[-1]  # acc is not logged: the returned value


def test_the_report_says_how_the_values_were_picked(two_by_three, run_cli):
    study, db = two_by_three
    r = run_cli("ablate", "report", study, "--db", db, "-f", "markdown")
    assert r.exit_code == 0, r.stderr
    assert (
        "Curves: 2 rows logged loss, val_loss; each logged metric's value is the one at the step of the lowest "
        'val_loss of the run (select = "min:val_loss")'
    ) in r.stdout
    r = run_cli("ablate", "report", study, "--db", db, "-f", "html")
    assert (
        r.exit_code == 0
        and r.stdout.count("<polyline") == 4
        and "<h2>Learning curves</h2>" in r.stdout
    )


def test_early_stopping_stops_the_run_and_records_the_step(tmp_path, run_cli):
    study = write_curve_study(tmp_path, 'stop_when = "val_loss not decreasing for 20 logs"')
    db = tmp_path / "s.db"
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 0
    with RunStore(db, create=False) as store:
        runs = list(store.runs("curves").values())
    for run in runs:
        steps, values = logged(Path(run.artifacts.dir))["val_loss"]
        best, waited, expected = values[0], 0, None
        for step, value in zip(steps[1:], values[1:], strict=True):  # the rule, computed here
            if value < best:
                best, waited = value, 0
            else:
                waited += 1
                if waited == 20:
                    expected = step
                    break
        assert expected is not None and run.artifacts.curves.stopped_at == expected
        assert steps[-1] == expected  # the entry point stopped there
        assert run.metrics["val_loss"] == values[-1]  # no select rule: the last logged value


COMMAND = """
import json, os, sys
config = json.load(open(sys.argv[1]))
seed, out = int(sys.argv[2]), sys.argv[3]
if config["k"] != 3:  # (N) logs nothing
    with open(os.path.join(os.path.dirname(out), "metrics.jsonl"), "w") as fh:
        for step in range(0, 50, 5):
            fh.write(json.dumps({"step": step, "loss": 1.0 / (1 + step + seed + config["k"])}) + "\\n")
        if config["k"] == 2:
            fh.write(json.dumps({"step": 10, "loss": 0.5}) + "\\n")  # a step logged twice
json.dump({"acc": 0.5, "loss": 0.25}, open(out, "w"))
"""


def test_a_command_writes_metrics_jsonl_beside_its_out_file(tmp_path, run_cli):
    (tmp_path / "train.py").write_text(COMMAND, encoding="utf-8")
    (tmp_path / "study.toml").write_text(
        """[study]
name = "cmd"
command = "python train.py {config} {seed} {out}"
seeds = [0, 1]
metrics = ["acc", "loss"]

[curves]
select = "last"

[base]
k = 1

[[variant]]
label = "(K)"
set = { k = 2 }

[[variant]]
label = "(N)"
set = { k = 3 }
""",
        encoding="utf-8",
    )
    db = tmp_path / "s.db"
    r = run_cli("ablate", "run", tmp_path / "study.toml", "--db", db, "-q")
    assert (
        r.exit_code == 1
    )  # the (K) runs logged step 10 after step 45; the (N) runs logged nothing
    with RunStore(db, create=False) as store:
        runs = list(store.runs("cmd").values())
    ok = [x for x in runs if x.status == "ok"]
    assert len(ok) == 2 and all(
        x.metrics["loss"] == 1.0 / (1 + 45 + x.seed + 1) for x in ok
    )  # not the returned 0.25
    errors = sorted(x.error for x in runs if x.status == "failed")
    assert (
        errors
        == [
            '[curves] select = "last" but the run logged no values (evalab.ablation.log, or metrics.jsonl '
            "in its run folder)"
        ]
        * 2
        + ["metrics.jsonl:11: loss at step 10 after step 45; steps of a metric increase"] * 2
    )


@pytest.mark.parametrize(
    ("curves", "needle"),
    [
        (
            'select = "median:val_loss"',
            "[curves] select: 'median:val_loss' is not a selection rule",
        ),
        (
            'stop_when = "val_loss stops"',
            "[curves] stop_when: 'val_loss stops' is not a stopping rule",
        ),
        ("plot = true", "[curves] plot: unknown key; known: select, stop_when"),
    ],
)
def test_bad_curve_rules_are_refused_with_file_and_line(tmp_path, curves, needle):
    study = write_curve_study(tmp_path, curves)
    assert_refused(
        ("ablate", "run", study, "--db", tmp_path / "s.db"),
        f"study.toml:9: {needle}",
        watch=(tmp_path,),
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 10**6), st.floats(allow_nan=False, allow_infinity=False)),
        min_size=1,
        max_size=300,
    )
)
def test_encoding_is_lossless(pairs):
    steps = np.cumsum([p[0] for p in pairs]).astype(np.int64)
    values = np.array([p[1] for p in pairs], dtype=np.float64)
    back = decode(encode(Curve(steps, values)))
    assert back.steps.tolist() == steps.tolist()
    assert back.values.tobytes() == values.tobytes()  # bit for bit (-0.0, subnormals)


def test_a_store_made_before_curves_gains_the_table_and_keeps_its_runs(two_by_three, tmp_path):
    _, db = two_by_three
    old = tmp_path / "old.db"
    sqlite3.connect(db).backup(target := sqlite3.connect(old))
    target.execute("DROP TABLE curves")
    target.commit()
    target.close()
    with RunStore(old) as store:
        assert len(store.runs("curves")) == 6
        assert store.conn.execute("SELECT COUNT(*) FROM curves").fetchone() == (0,)


def test_gc_removes_the_curves_of_superseded_runs(tmp_path, run_cli):
    study = write_curve_study(tmp_path, steps=50)
    db = tmp_path / "s.db"
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 0
    with (tmp_path / "curve_entry.py").open("a", encoding="utf-8") as fh:
        fh.write("\nVERSION = 2\n")  # a new code version: the stored runs are superseded
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 0

    def blobs() -> tuple[int, int]:
        con = sqlite3.connect(db)
        try:
            return con.execute("SELECT COUNT(*), COUNT(DISTINCT run_key) FROM curves").fetchone()
        finally:
            con.close()

    assert blobs() == (24, 12)
    assert run_cli("ablate", "gc", study, "--db", db).exit_code == 0
    assert blobs() == (12, 6)
    con = sqlite3.connect(db)
    assert con.execute(
        "SELECT COUNT(*) FROM curves WHERE run_key NOT IN (SELECT run_key FROM runs)"
    ).fetchone() == (0,)
    con.close()
