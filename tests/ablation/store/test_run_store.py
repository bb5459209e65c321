"""The run store: only evalab stores are opened, old stores migrate, leases and claims."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time

import pytest

from evalab.ablation import RunStore, load_study, run_study
from evalab.ablation.store.leases import Owner
from evalab.errors import InputError

from ..synth import write_study


def test_an_unrelated_sqlite_file_is_refused_and_left_unchanged(tmp_path):
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE runs (id INTEGER, name TEXT)")
    con.commit()
    con.close()
    before = db.read_bytes()
    with pytest.raises(
        InputError,
        match=r"other\.db: an SQLite database but not an evalab run store \(it has tables runs\)",
    ):
        RunStore(db)
    assert db.read_bytes() == before


def test_a_file_that_is_not_sqlite_is_refused(tmp_path):
    db = tmp_path / "notes.db"
    db.write_text("just text\n" * 100)
    with pytest.raises(InputError, match=r"notes\.db: not an SQLite database"):
        RunStore(db)
    assert db.read_text() == "just text\n" * 100


def test_a_schema_1_store_is_migrated_without_losing_runs(tmp_path):
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1');
        CREATE TABLE studies (name TEXT PRIMARY KEY, path TEXT NOT NULL, code_version TEXT NOT NULL,
            spec TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
        CREATE TABLE runs (study TEXT NOT NULL, run_key TEXT NOT NULL, rows TEXT NOT NULL, config TEXT NOT NULL,
            seed INTEGER NOT NULL, code_version TEXT NOT NULL, status TEXT NOT NULL, metrics TEXT, artifacts TEXT,
            duration REAL, host TEXT, error TEXT, traceback TEXT, attempts INTEGER NOT NULL, started_at TEXT,
            finished_at TEXT, PRIMARY KEY (study, run_key));
        INSERT INTO runs VALUES ('s', 'k1', '["base"]', '{}', 0, 'v1', 'ok', '{"acc": 1.0}', NULL, 1.0, 'h',
            NULL, NULL, 1, '', '');
    """)
    con.close()
    with RunStore(db) as store:
        run = store.runs("s")["k1"]
        assert run.metrics == {"acc": 1.0} and run.git_commit is None
        assert len(store.id) == 12


def test_claims_skip_live_leases_and_take_over_dead_ones(tmp_path):
    with RunStore(tmp_path / "s.db") as store:
        me = Owner.here()
        assert store.claim("s", "k", me) == "claimed"
        assert store.claim("s", "k", Owner.here()) == "held"  # this process is alive
        # an owner on this host whose process is gone: reclaimed at once
        dead = subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
        )
        ghost = Owner("ghost", me.host, int(dead.stdout))
        assert store.claim("s", "k2", ghost) == "claimed"
        assert store.claim("s", "k2", me) == "claimed"
        # an owner on another host: alive while its heartbeat is fresh
        remote = Owner("remote", "elsewhere.example", 1)
        assert store.claim("s", "k3", remote) == "claimed"
        assert store.claim("s", "k3", me) == "held"
        store.conn.execute(
            "UPDATE leases SET heartbeat=? WHERE owner='remote'", (time.time() - 3600,)
        )
        assert store.claim("s", "k3", me) == "claimed"


def test_gc_removes_only_superseded_runs_and_their_folders(tmp_path):
    path = write_study(tmp_path, seeds=[0, 1])
    db = tmp_path / "s.db"
    run_study(load_study(path), db, progress=False)
    entry = tmp_path / "synth_entry.py"
    entry.write_text(entry.read_text().replace("70.0 + 10.0", "71.0 + 10.0"))
    run_study(load_study(path), db, progress=False)
    from evalab.ablation import gc_study

    with RunStore(db) as store:
        root = store.runs_root / "synth"
    assert len(list(root.iterdir())) == 4
    assert [s.runs for s in gc_study(load_study(path), db, dry_run=True)] == [2]
    assert len(list(root.iterdir())) == 4
    assert [s.runs for s in gc_study(load_study(path), db)] == [2]
    assert len(list(root.iterdir())) == 2 and gc_study(load_study(path), db) == []
    assert run_study(load_study(path), db, progress=False).skipped == 2


def _open_and_check(path: str) -> str:
    with RunStore(path) as store:
        return store.integrity_check()


def test_runners_opening_one_new_store_at_once_all_get_in(tmp_path):
    # SQLite answers SQLITE_BUSY without waiting while another connection turns a new file
    # into WAL; before the open was retried, about 1 round in 3 refused one opener at once.
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        for i in range(25):
            db = str(tmp_path / f"s{i}.db")
            assert pool.map(_open_and_check, [db] * 4) == ["ok"] * 4
