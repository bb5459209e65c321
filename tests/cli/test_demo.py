"""`evalab demo` option checks (the full run is in tests/test_demo_browser.py)."""

from __future__ import annotations


def test_demo_refuses_bad_options(run_cli, tmp_path):
    bad = run_cli("demo", "--quick", "--out-dir", tmp_path / "d", "--jobs", "0")
    assert bad.exit_code == 2 and "--jobs must be >= 1" in bad.stderr
    assert not (tmp_path / "d").exists()
    a_file = tmp_path / "file"
    a_file.write_text("x")
    bad = run_cli("demo", "--quick", "--out-dir", a_file)
    assert bad.exit_code == 2 and "is not a folder" in bad.stderr


def test_demo_help_names_the_outputs(run_cli):
    res = run_cli("demo", "--help")
    assert res.exit_code == 0
    for word in ("--out", "--jobs", "--quick", "report.html"):
        assert word in res.stdout


def test_demo_refuses_a_folder_holding_the_users_files(tmp_path):
    # was: the user's report.md and report.html replaced without a word (exit 0)
    from .refusal import assert_refused

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.md").write_text("my notes\n", encoding="utf-8")
    (mine / "report.html").write_text("<p>mine</p>\n", encoding="utf-8")
    assert_refused(
        ("demo", "--quick", "--out-dir", mine),
        "holds files the demo did not write (report.html, report.md)",
        watch=(tmp_path,),
    )
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "studies.db").write_bytes(b"someone's store")
    assert_refused(
        ("demo", "--quick", "--out-dir", tmp_path / "db"),
        "holds files the demo did not write (studies.db)",
        watch=(tmp_path,),
    )


def test_demo_replaces_only_its_own_unchanged_outputs(tmp_path):
    import pytest

    from evalab.cli.demo import check_demo_folder, write_manifest
    from evalab.errors import SettingsError

    out = tmp_path / "demo"
    out.mkdir()
    check_demo_folder(str(out))  # empty: the demo's
    for name in ("report.html", "report.md", "studies.db"):
        (out / name).write_text(f"{name} as the demo wrote it\n", encoding="utf-8")
    (out / "runs").mkdir()
    write_manifest(out, ("report.html", "report.md"))
    check_demo_folder(str(out))  # its own earlier outputs: replaced on the next run
    (out / "report.md").write_text("edited by the user\n", encoding="utf-8")
    with pytest.raises(
        SettingsError, match=r"report.md \(changed since the demo wrote it\) would be replaced"
    ):
        check_demo_folder(str(out))
    (out / "report.md").write_text("report.md as the demo wrote it\n", encoding="utf-8")
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    with pytest.raises(
        SettingsError, match=r"notes.txt \(not written by the demo\) would be replaced"
    ):
        check_demo_folder(str(out))
