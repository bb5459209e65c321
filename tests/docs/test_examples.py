"""Every ```console example of README.md and docs/*.md runs as shown (see tests/docs/examples.py
for the conventions a page follows). One test per page: its commands run in order, from a
scratch copy of the repository root, with ``evalab`` on the PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from tests.conftest import REPO
from tests.docs.examples import Block, Command, output_matches, parse_blocks, variables_before

import evalab
from evalab.cli.app import _register_commands, app

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHARED = REPO.parent / "shared"
COMMAND_TIMEOUT_S = 600
#: a block marked slow (the full demo trains 24 models: ~200 s on a quiet 2-core machine,
#: over 600 s when it shares the cores with other test sessions)
SLOW_COMMAND_TIMEOUT_S = 2400


def page_id(path: Path) -> str:
    return str(path.relative_to(REPO))


@pytest.fixture
def scratch_repo(tmp_path: Path) -> Path:
    """A folder that looks like the repository root: ``examples/`` copied (a page may write
    beside its inputs), everything else linked, and ``../shared`` beside it."""
    root = tmp_path / "repo"
    root.mkdir()
    for entry in REPO.iterdir():
        if entry.name == "examples":
            shutil.copytree(entry, root / entry.name, ignore=shutil.ignore_patterns("__pycache__"))
        elif not entry.name.startswith(".") and entry.name not in ("build",):
            (root / entry.name).symlink_to(entry)
    if SHARED.exists():
        (tmp_path / "shared").symlink_to(SHARED)
    return root


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    src = str(Path(evalab.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    env.pop("COLUMNS", None)
    # transformers draws a "Loading weights" bar on stderr even when it is not a terminal
    # (`evalab ppl` does not silence it yet); a page cannot show a bar's redraws
    env["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    # evalab's own progress lines in a log depend on the machine's speed (one per 10 s of
    # work, a model's loading lines after 10 s): a page cannot show them either
    env["EVALAB_PROGRESS_INTERVAL"] = "1e9"
    return env


def run_command(blocks: list[Block], block: Block, command: Command, cwd: Path) -> None:
    # exec 2>&1: the stderr of every command of a pipeline goes where a terminal shows it
    script = "\n".join(["exec 2>&1", *variables_before(blocks, command), command.script])
    res = subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=SLOW_COMMAND_TIMEOUT_S if "slow" in block.modes else COMMAND_TIMEOUT_S,
        check=False,
    )
    where = f"{page_id(block.path)}:{command.line}: $ {command.script}"
    assert res.returncode == command.expected_exit, (
        f"{where}\nexit code {res.returncode}, the page implies {command.expected_exit}\n{res.stdout}{res.stderr}"
    )
    if "exit-code" in block.modes:
        return
    actual = res.stdout.splitlines()
    assert output_matches(command.expected, actual), (
        f"{where}\n--- the page shows:\n"
        + "\n".join(command.expected)
        + "\n--- the command printed:\n"
        + res.stdout
    )


def run_page(path: Path, cwd: Path, *, slow: bool) -> int:
    blocks = parse_blocks(path)
    runnable = [b for b in blocks if "skip" not in b.modes and (slow or "slow" not in b.modes)]
    if any("../shared" in c.script for b in runnable for c in b.commands) and not SHARED.exists():
        pytest.skip(f"{SHARED} (the WMT22 data the page uses) is not there")
    for block in runnable:
        for command in block.commands:
            run_command(blocks, block, command, cwd)
    return sum(len(b.commands) for b in runnable)


@pytest.mark.parametrize("path", PAGES, ids=page_id)
def test_console_examples_run_as_shown(path, scratch_repo):
    run_page(path, scratch_repo, slow=False)


SLOW_PAGES = [p for p in PAGES if any("slow" in b.modes for b in parse_blocks(p))]


@pytest.mark.slow
@pytest.mark.timeout(3 * 3600)  # docs/demo.md trains the built-in study's 24 models
@pytest.mark.parametrize("path", SLOW_PAGES, ids=page_id)
def test_console_examples_run_as_shown_with_the_slow_ones(path, scratch_repo):
    run_page(path, scratch_repo, slow=True)


def test_every_page_is_listed_in_the_index():
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    missing = [p.name for p in PAGES[1:] if p.name != "index.md" and f"({p.name})" not in index]
    assert not missing, f"docs/index.md does not link {missing}"


def test_readme_is_a_front_door():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert 150 <= len(lines) <= 250, f"README.md has {len(lines)} lines; keep it 150-250"
    commands = [c.script for b in parse_blocks(REPO / "README.md") for c in b.commands]
    for job in (
        "evalab score",
        "evalab compare",
        "evalab semsim",
        "evalab ppl",
        "evalab ablate run",
        "evalab ablate report",
    ):
        assert any(c.startswith(job) for c in commands), f"README.md quickstart lacks `{job}`"


def registered_commands() -> list[str]:
    _register_commands()
    group = typer.main.get_command(app)
    return sorted(group.commands)  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", registered_commands())
def test_every_command_has_a_user_page(command):
    pages = [p for p in PAGES if p.name != "cli.md"]
    assert any(f"evalab {command}" in p.read_text(encoding="utf-8") for p in pages), (
        f"no page of README.md or docs/ (besides the generated cli.md) shows `evalab {command}`"
    )
