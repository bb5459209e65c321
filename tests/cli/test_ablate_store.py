"""Store faults and ``ablate gc`` through the real CLI: one line naming the file and the
cause, exit 2, no traceback, the store and every watched file unchanged."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from tests.ablation.synth import write_study
from tests.cli.refusal import SRC, assert_refused, evalab, snapshot


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALAB_CACHE_DIR", str(tmp_path / "cache"))


def _ran(folder: Path, **kw) -> tuple[Path, Path]:
    study = write_study(folder, seeds=[0, 1], **kw)
    db = folder / "s.db"
    assert evalab("ablate", "run", study, "--db", db, "-q").returncode == 0
    return study, db


def _supersede(folder: Path) -> None:
    entry = folder / "synth_entry.py"
    entry.write_text(entry.read_text().replace("70.0 + 10.0", "71.0 + 10.0"))


def test_gc_never_deletes_outside_the_run_folder_of_an_edited_store(tmp_path):
    study, db = _ran(tmp_path / "s")
    _supersede(tmp_path / "s")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    con = sqlite3.connect(db)
    key = con.execute("SELECT run_key FROM runs LIMIT 1").fetchone()[0]
    con.execute("UPDATE runs SET run_key=? WHERE run_key=?", ("../../../../victim", key))
    con.commit()
    con.close()
    assert_refused(
        ("ablate", "gc", study, "--db", db),
        "'../../../../victim', which is no run key",
        watch=(victim, tmp_path / "s"),
    )


def test_gc_of_a_second_study_file_with_the_same_name_deletes_nothing_of_the_first(tmp_path):
    a = write_study(tmp_path / "a", seeds=[0, 1])
    b = write_study(
        tmp_path / "b",
        seeds=[0, 1],
        base={"a": False, "b": True, "shift": 1.0, "noise": 0.5, "mode": "ok", "sleep": 0.0},
    )
    db = tmp_path / "s.db"
    assert evalab("ablate", "run", b, "--db", db, "-q").returncode == 0
    # a second file of the same name is refused by every command that would mix the two
    for cmd in ("run", "gc", "status"):
        assert_refused(
            ("ablate", cmd, a, "--db", db),
            "holds study 'synth' of another study file",
            watch=(tmp_path,),
        )
    # a study file that moved takes its name over
    moved = tmp_path / "moved"
    shutil.move(tmp_path / "b", moved)
    status = evalab("ablate", "status", moved / "study.toml", "--db", db)
    assert status.returncode == 0 and "2/2 ok" in status.stdout


def test_gc_keeps_every_ok_run_of_the_current_version(tmp_path):
    study, db = _ran(tmp_path)
    _supersede(tmp_path)
    assert evalab("ablate", "run", study, "--db", db, "-q").returncode == 0
    con = sqlite3.connect(db)
    version = con.execute(
        "SELECT code_version FROM runs ORDER BY finished_at DESC LIMIT 1"
    ).fetchone()[0]
    current = {
        r[0] for r in con.execute("SELECT run_key FROM runs WHERE code_version=?", (version,))
    }
    # an edited store: a current run's row claims an older code version
    con.execute("UPDATE runs SET code_version='old' WHERE run_key=?", (sorted(current)[0],))
    con.commit()
    con.close()
    assert_refused(
        ("ablate", "gc", study, "--db", db), "a run of the current plan", watch=(tmp_path,)
    )


def test_a_db_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    study = write_study(tmp_path, seeds=[0])
    fifo = tmp_path / "s.db"
    os.mkfifo(fifo)
    for cmd in ("run", "status", "report", "gc"):
        assert_refused(
            ("ablate", cmd, study, "--db", fifo),
            "s.db: is a FIFO (named pipe); expected a run database file",
            watch=(tmp_path,),
        )
    assert_refused(
        ("ablate", "run", study, "--db", "/dev/null"),
        "--db /dev/null: is a character device; expected a run database file",
        watch=(tmp_path,),
    )


def test_a_store_of_a_newer_schema_is_named_so(tmp_path):
    study, db = _ran(tmp_path)
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    con.execute("UPDATE meta SET value='7.1.0' WHERE key='evalab_version'")
    con.commit()
    con.close()
    line = assert_refused(
        ("ablate", "status", study, "--db", db),
        "a run store of schema 99, written by evalab 7.1.0",
        watch=(tmp_path,),
    )
    assert "open it with evalab 7.1.0 or later" in line


def test_a_truncated_examples_file_is_named(tmp_path):
    from tests.ablation.outsynth import write_outputs_study

    study = write_outputs_study(tmp_path, seeds=(0,))
    db = tmp_path / "s.db"
    assert evalab("ablate", "run", study, "--db", db, "-q").returncode == 0
    (npz,) = tmp_path.glob("runs/*/outs/*/examples.npz")
    npz.write_bytes(npz.read_bytes()[:100])
    before = snapshot(tmp_path)
    report = evalab(
        "ablate", "report", study, "--db", db
    )  # the run's intervals over examples are refused, by name
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr
    assert (
        "examples.npz: not a readable evalab examples file: truncated or not a zip archive"
        in report.stdout
    )
    assert snapshot(tmp_path) == before


def test_a_study_name_too_long_for_a_folder_is_refused_at_load(tmp_path):
    study = write_study(tmp_path, seeds=[0], name="n" * 300)
    assert_refused(
        ("ablate", "run", study, "--db", tmp_path / "s.db"),
        "is 300 characters long; it names the study's run folder, so at most 100",
        watch=(tmp_path,),
    )


def test_a_file_size_limit_under_the_store_is_one_line_and_keeps_the_store(tmp_path):
    study, db = _ran(tmp_path, variants=[("(C)", "more", {"shift": 2.0})])
    _supersede(tmp_path)
    before = snapshot(tmp_path)
    size = db.stat().st_size
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    # the store may not grow: the new runs' rows cannot be written
    proc = subprocess.run(
        [
            "/bin/sh",
            "-c",
            f'ulimit -f {size // 512}; exec "$@"',
            "sh",
            sys.executable,
            "-m",
            "evalab",
            "ablate",
            "run",
            str(study),
            "--db",
            str(db),
            "-q",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert (
        lines[0].startswith(f"evalab: error: {db}: cannot write the run database: ")
        and "ulimit -f" in lines[0]
    )
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert (
        con.execute("SELECT COUNT(*) FROM runs").fetchone()[0] >= 4
    )  # the runs it had (and any it could finish)
    con.close()
    assert set(snapshot(tmp_path)) >= set(before)


FULL_DISK = """
set -u
mount -t tmpfs -o size=1m tmpfs "$0" && cp -r "$1"/. "$0"/ && cd "$0" || exit 99
"$2" -m evalab ablate run study.toml --db s.db -q 2>/dev/null || exit 98
sed -i "s/70.0 + 10.0/71.0 + 10.0/" synth_entry.py
dd if=/dev/zero of=fill bs=4k 2>/dev/null
"$2" -m evalab ablate run study.toml --db s.db -q
echo "rc=$?"
rm fill
"$2" -c "import sqlite3; c = sqlite3.connect('s.db'); print(c.execute('PRAGMA integrity_check').fetchone()[0], \
c.execute('SELECT COUNT(*) FROM runs').fetchone()[0])"
"""


def test_a_full_disk_under_the_store_is_one_line_and_keeps_the_store(tmp_path):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a full disk is made with a small tmpfs in a private mount namespace (root)")
    write_study(tmp_path / "src", seeds=[0, 1])
    (tmp_path / "disk").mkdir()
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.run(
        [
            "unshare",
            "--mount",
            "sh",
            "-c",
            FULL_DISK,
            str(tmp_path / "disk"),
            str(tmp_path / "src"),
            sys.executable,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    if proc.returncode == 99:
        pytest.skip(f"no tmpfs mount here: {proc.stderr}")
    assert proc.returncode != 98, "the first run (before the disk was filled) failed"
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert (
        lines[0].startswith("evalab: error: s.db: cannot write the run database: ")
        and "full disk" in lines[0]
    )
    assert proc.stdout.split() == ["rc=2", "ok", "2"], (
        proc.stdout
    )  # the two runs it had, the file sound


def _read_only(folder: Path) -> list[str]:
    """A command prefix under which ``folder`` cannot be written: a read-only bind mount in
    a private mount namespace (root ignores file modes), or plain file modes otherwise."""
    if os.geteuid() != 0:
        for path in [*folder.rglob("*"), folder]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        return []
    prefix = [
        "unshare",
        "--mount",
        "sh",
        "-c",
        'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" && exec "$@"',
        str(folder),
    ]
    if (
        shutil.which("unshare") is None
        or subprocess.run([*prefix, "true"], capture_output=True).returncode != 0
    ):
        pytest.skip("root without mount namespaces: a read-only store cannot be made here")
    return prefix


def test_a_read_only_store_is_reported_and_its_status_shown(tmp_path):
    folder = tmp_path / "ro"
    study, db = _ran(folder)
    prefix = _read_only(folder)
    before = snapshot(folder)
    env = {**os.environ, "PYTHONPATH": str(SRC)}

    def cli(*args: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*prefix, sys.executable, "-m", "evalab", *map(str, args)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )

    try:
        status = cli("ablate", "status", study, "--db", db)
        assert status.returncode == 0, status.stderr
        assert f"synth: 2/2 ok, 0 failed, 0 pending ({db}, read-only)" in status.stdout
        report = cli("ablate", "report", study, "--db", db, "--format", "json")
        assert report.returncode == 0, report.stderr
        assert json.loads(report.stdout)["study"] == "synth"
        run = cli("ablate", "run", study, "--db", db, "-q")
        lines = run.stderr.splitlines()
        assert (
            run.returncode == 2
            and len(lines) == 1
            and "read-only" in lines[0]
            and "Traceback" not in run.stderr
        )
        assert snapshot(folder) == before
    finally:
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o755)


def test_a_schema_2_store_is_migrated_in_place(tmp_path):
    study, db = _ran(tmp_path)
    con = sqlite3.connect(db)  # back to schema 2: no inputs column, no evalab_version
    con.execute("ALTER TABLE runs DROP COLUMN inputs")
    con.execute("DELETE FROM meta WHERE key='evalab_version'")
    con.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    con.commit()
    con.close()
    status = evalab("ablate", "status", study, "--db", db)
    assert status.returncode == 0 and "2/2 ok" in status.stdout, status.stderr
    con = sqlite3.connect(db)
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "3"
    assert "inputs" in {r[1] for r in con.execute("PRAGMA table_info(runs)")}
    con.close()
