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
