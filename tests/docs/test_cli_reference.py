"""docs/cli.md is what the app generates (``python -m evalab.cli._reference --check``)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

from evalab.cli._reference import main, render_reference

PAGE = REPO / "docs" / "cli.md"
REGENERATE = "python -m evalab.cli._reference docs/cli.md"


def test_the_checked_in_reference_is_what_the_app_generates():
    assert PAGE.read_text(encoding="utf-8") == render_reference(), (
        f"docs/cli.md is out of date with the CLI; regenerate it with `{REGENERATE}`"
    )


def test_the_reference_lists_every_command_option_and_default():
    text = render_reference()
    for needle in (
        "## `evalab score`",
        "## `evalab ablate report`",
        "## `evalab semsim baseline`",
        "| `--segments` |",
        "| `-i`, `--input` | TEXT, greedy | required |",
        "| `--seed` | INTEGER | `12345` |",
        "| `--bos`, `--no-bos` | flag | `--no-bos` |",
    ):
        assert needle in text


def test_check_fails_with_the_command_that_regenerates(tmp_path, capsys):
    stale = tmp_path / "cli.md"
    stale.write_text(render_reference().replace("--segments", "--segs"), encoding="utf-8")
    assert main(["--check", str(stale)]) == 1
    assert "python -m evalab.cli._reference" in capsys.readouterr().err
    assert main([str(stale)]) == 0
    assert main(["--check", str(stale)]) == 0


def test_check_through_the_module_entry_point():
    res = subprocess.run(
        [sys.executable, "-m", "evalab.cli._reference", "--check", str(PAGE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
