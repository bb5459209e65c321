"""What a run read is part of its version: code hashed at claim and at finish, files and
modules observed in the run's process (``open()``, ``importlib``), declared inputs."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from evalab.ablation import RunStore, dry_run, load_study, run_study, study_status
from evalab.ablation.analysis.analyze import analyze

from ..synth import BASE, ENTRY, write_study

# the entry's result shows which code ran: MARK is 0 in the original, 1000 when edited
MARKED = ENTRY.replace("import time\n", "import time\n\nMARK = 0\n", 1).replace(
    'return {"acc": acc,', 'return {"acc": acc + MARK,'
)


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALAB_CACHE_DIR", str(tmp_path / "cache"))


def _stored(db: Path) -> int:
    if not db.exists():
        return 0
    con = sqlite3.connect(db)
    try:
        return int(con.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    except sqlite3.Error:
        return 0
    finally:
        con.close()


def _wait_for(db: Path, n: int, thread: threading.Thread) -> None:
    deadline = time.monotonic() + 60
    while _stored(db) < n and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _stored(db) >= n, "the runner stored fewer runs than expected"


def test_an_entry_edited_during_a_run_then_reverted_stores_no_run_of_the_edited_code(tmp_path):
    assert "acc + MARK" in MARKED
    path = write_study(
        tmp_path, seeds=list(range(8)), base={**BASE, "sleep": 0.4}, entry_source=MARKED
    )
    db = tmp_path / "s.db"
    entry = tmp_path / "synth_entry.py"
    original = entry.read_text()
    study = load_study(path)
    thread = threading.Thread(target=run_study, args=(study, db), kwargs={"progress": False})
    thread.start()
    _wait_for(db, 2, thread)
    entry.write_text(original.replace("MARK = 0", "MARK = 1000"))
    _wait_for(db, 5, thread)
    entry.write_text(original)
    thread.join(timeout=120)
    with RunStore(db) as store:
        runs = list(store.runs("synth").values())
    assert len(runs) == 8
    ok = [r for r in runs if r.status == "ok"]
    # no run that executed the edited code is stored as a result of the original version
    assert all(r.metrics["acc"] < 500 for r in ok), sorted(r.metrics["acc"] for r in ok)
    failed = [r for r in runs if r.status == "failed"]
    assert failed and all("code changed" in r.error and "synth_entry.py" in r.error for r in failed)
    # the failed runs are run again (with the code as it is now) by the next invocation
    again = run_study(load_study(path), db, progress=False)
    assert again.ok == len(failed) and study_status(load_study(path), db).ok == 8


OBSERVING = """
import importlib
import os


def run(config, seed, out_dir=None):
    with open(os.path.join("data", "train.txt")) as fh:
        n = len(fh.read().split())
    helper = importlib.import_module("plugins." + config["plugin"])
    return {"acc": float(n + helper.BONUS + seed), "loss": 0.0}
"""


def _observing_study(tmp_path: Path, extra: str = "") -> Path:
    path = write_study(
        tmp_path, seeds=[0, 1], base={"plugin": "extra"}, entry_source=OBSERVING, extra_study=extra
    )
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.txt").write_text("a b c\n")
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "__init__.py").write_text("")
    (tmp_path / "plugins" / "extra.py").write_text("BONUS = 10\n")
    return path


@pytest.mark.parametrize("edit", ["data/train.txt", "plugins/extra.py"])
def test_a_data_file_or_an_importlib_module_a_run_read_supersedes_it_when_edited(tmp_path, edit):
    path = _observing_study(tmp_path)
    db = tmp_path / "s.db"
    assert run_study(load_study(path), db, progress=False).ok == 2
    with RunStore(db) as store:
        inputs = next(iter(store.runs("synth").values())).inputs
    assert {"data/train.txt", "plugins/extra.py", "synth_entry.py"} <= set(inputs)
    target = tmp_path / edit
    target.write_text("a b c d e\n" if edit.endswith(".txt") else "BONUS = 20\n")
    study = load_study(path)
    st = study_status(study, db)
    assert st.ok == 0 and sorted(st.stale) and all(files == [edit] for files in st.stale.values())
    assert analyze(study, db).rows[0].ok == 0  # the stale numbers are not served
    planned = dry_run(study, db)  # what `ablate run --dry-run` shows: to run again, and why
    assert [(s.state, s.changed) for s in planned.steps] == [("stale", (edit,))] * 2
    rerun = run_study(load_study(path), db, progress=False)
    assert (rerun.skipped, rerun.ok) == (0, 2)
    with RunStore(db) as store:
        accs = sorted(r.metrics["acc"] for r in store.runs("synth").values())
    assert accs == ([15.0, 16.0] if edit.endswith(".txt") else [23.0, 24.0])
    assert study_status(load_study(path), db).ok == 2


def test_declared_inputs_are_in_the_code_version_and_named_when_changed(tmp_path):
    path = _observing_study(tmp_path, extra='inputs = ["data/*"]')
    db = tmp_path / "s.db"
    run_study(load_study(path), db, progress=False)
    (tmp_path / "data" / "train.txt").write_text("x\n")
    st = study_status(load_study(path), db)
    assert st.ok == 0 and [s.changed for s in st.superseded] == [["data/train.txt"]]


def test_declared_inputs_that_match_no_file_are_refused(tmp_path):
    from evalab.errors import SettingsError

    path = _observing_study(tmp_path, extra='inputs = ["dta/*"]')
    with pytest.raises(SettingsError, match=r"\[study\] inputs.*'dta/\*' matches no file"):
        load_study(path)


CACHING = """
import os


def run(config, seed, out_dir=None):
    # a cache the run writes in the study folder and reads back: its output, not an input
    with open("cache.txt", "w") as fh:
        fh.write(f"seed {seed}\\n")
    with open("cache.txt") as fh:
        n = len(fh.read())
    return {"acc": float(n), "loss": 0.0}
"""


def test_a_file_the_run_writes_itself_is_not_an_input(tmp_path):
    path = write_study(tmp_path, seeds=[0, 1], base={"x": 1}, entry_source=CACHING)
    db = tmp_path / "s.db"
    assert run_study(load_study(path), db, progress=False).ok == 2
    with RunStore(db) as store:
        assert all(set(r.inputs) == {"synth_entry.py"} for r in store.runs("synth").values())
    again = run_study(load_study(path), db, progress=False)
    assert (again.skipped, again.ok) == (2, 0)


BAD_OUTPUT = r"""
import json, sys
mode, out = sys.argv[1], sys.argv[2]
texts = {
    "ok": '{"acc": 0.5}',
    "huge": '{"acc": ' + "9" * 400 + "}",
    "infinite": '{"acc": Infinity}',
    "deep": "[" * 100000 + "]" * 100000,
    "artifact": '{"acc": 0.5, "artifacts": {"n": 1e999}}',
    "examples": '{"acc": 0.5, "per_example": {"acc": [1, "x", {}]}}',
    "list": "[1, 2]",
}
if mode == "latin1":
    open(out, "wb").write(b'{"acc": "\xff"}')
else:
    open(out, "w").write(texts[mode])
"""
#: each bad output, and what the failed run's error says
BAD_RUNS = {
    "huge": "metric 'acc' is '999999999999999999999999'... (400 characters): an integer beyond 2**53",
    "infinite": "metric 'acc' is 'Infinity': not a finite number",
    "deep": "metrics file is not valid JSON: nested too deeply",
    "artifact": "metrics file: artifacts.n: '1e999': beyond the range of a float",
    "examples": "per_example",
    "list": "run returned list, expected a dict of metrics",
    "latin1": "metrics file is not valid JSON",
}


def test_a_run_s_bad_output_fails_that_run_and_the_others_go_on(tmp_path, run_cli):
    """Through `evalab ablate run`: every bad metrics file fails its own run, with the reason,
    the good runs are stored, and `ablate status` counts the failed ones."""
    (tmp_path / "job.py").write_text(BAD_OUTPUT, encoding="utf-8")
    modes = ["ok", *BAD_RUNS]
    study = tmp_path / "study.toml"
    study.write_text(
        '[study]\nname = "bad"\ncommand = "python job.py {mode} {out}"\nseeds = [0, 1]\n'
        f'metrics = ["acc"]\n\n[base]\nmode = "ok"\n\n[grid]\nmode = {json.dumps(modes)}\n',
        encoding="utf-8",
    )
    db = tmp_path / "s.db"
    res = run_cli("ablate", "run", study, "--db", db, "-q", "-j", "2")
    assert res.exit_code == 1 and "Traceback" not in res.stderr
    with RunStore(db, create=False) as store:
        runs = list(store.runs("bad").values())
    by_mode: dict[str, list] = {}
    for r in runs:
        by_mode.setdefault(r.config["mode"], []).append(r)
    assert sorted(by_mode) == sorted(modes) and all(len(v) == 2 for v in by_mode.values())
    assert all(r.status == "ok" and r.metrics == {"acc": 0.5} for r in by_mode["ok"])
    for mode, reason in BAD_RUNS.items():
        assert all(r.status == "failed" and reason in r.error for r in by_mode[mode]), (
            mode,
            [r.error for r in by_mode[mode]],
        )
    status = run_cli("ablate", "status", study, "--db", db)
    assert status.exit_code == 0 and "14 failed" in status.stdout.replace("\n", " "), status.stdout
