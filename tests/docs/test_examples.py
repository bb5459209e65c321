"""Every ```console example of README.md and docs/*.md runs as shown (see tests/docs/examples.py
for the conventions a page follows). One test per page: its commands run in order, from a
scratch copy of the repository root, with ``evalab`` on the PATH.

A command that is one plain ``evalab ARGS`` (no pipe, redirection, glob, substitution or
environment prefix; the page's ``$NAME`` variables allowed) runs in this process
(:func:`in_process_argv`): ``evalab.cli.main`` with the same environment, folder and
stdin-less input, its stdout and stderr (file descriptors 1 and 2, so what its children and
C code write too) into one file in the order written, as ``exec 2>&1`` gives a shell. Its
exit code and output are checked exactly as a shell's; the page's torch and model imports
are then paid once per session instead of once per command. Every other command runs in
bash, as before; ``IN_PROCESS`` counts both (tests/test_budget.py)."""

from __future__ import annotations

import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest
import typer.main
from tests.conftest import REPO, SHARED
from tests.docs.examples import Block, Command, output_matches, parse_blocks, variables_before

import budget_ledger
import evalab
from evalab.cli.app import _register_commands, app

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
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


#: how many commands ran in this process and how many in bash, this session
IN_PROCESS: Counter[str] = Counter()
#: what bash alone can do with a command line: pipes, redirections, lists, globs, braces,
#: substitutions, comments, escapes, history; a `$` not naming a page variable
SHELL_SYNTAX = re.compile(r"[|;&<>`(){}\[\]*?~!#\\]|\$(?![A-Za-z_]\w*\b)")


def in_process_argv(script: str, variables: list[str]) -> list[str] | None:
    """``evalab``'s arguments when ``script`` is one plain ``evalab ARGS`` command line
    whose words mean the same to bash and to :func:`shlex.split` once the page's variables
    are put in (else ``None``: bash runs it)."""
    script = script.replace("\\\n", " ")  # a continued line is one line to bash
    if not script.startswith("evalab ") or SHELL_SYNTAX.search(script):
        return None
    if "$" in script and "'" in script:  # bash expands no variable inside single quotes
        return None
    values: dict[str, str] = {}
    for assignment in variables:  # in order: a value may use the variables above it
        name, value = assignment.split("=", 1)
        expanded = _expand(value, values)
        if expanded is None or SHELL_SYNTAX.search(expanded) or "'" in value or '"' in value:
            return None
        values[name] = expanded
    expanded = _expand(script, values)
    return None if expanded is None else shlex.split(expanded)[1:]


def _expand(text: str, values: dict[str, str]) -> str | None:
    """``text`` with each ``$NAME`` replaced by its value (``None``: a name has none)."""
    names = re.findall(r"\$([A-Za-z_]\w*)", text)
    if any(n not in values for n in names):
        return None
    return re.sub(r"\$([A-Za-z_]\w*)", lambda m: values[m[1]], text)


def run_in_process(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """``evalab ARGV`` in this process from ``cwd``, with the bash commands' environment
    and no stdin; stdout and stderr (descriptors 1 and 2) into one stream, in order."""
    from evalab.cli import main

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    saved_fds = (os.dup(1), os.dup(2))
    with tempfile.TemporaryFile() as out:
        stream = io.TextIOWrapper(
            io.FileIO(os.dup(out.fileno()), "w"), encoding="utf-8", write_through=True
        )
        try:
            os.environ.clear()
            os.environ.update(environment())
            os.chdir(cwd)
            os.dup2(out.fileno(), 1)
            os.dup2(out.fileno(), 2)
            sys.stdin = io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8")
            sys.stdout = sys.stderr = stream
            code = main(argv)
        except SystemExit as exc:  # as the console script: a bare exit is 0
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        finally:
            stream.flush()
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            os.dup2(saved_fds[0], 1)
            os.dup2(saved_fds[1], 2)
            os.close(saved_fds[0])
            os.close(saved_fds[1])
            stream.close()
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
        out.seek(0)
        return code, out.read().decode("utf-8", errors="replace"), ""


def run_in_bash(script: str, timeout: float, cwd: Path) -> tuple[int, str, str]:
    # exec 2>&1: the stderr of every command of a pipeline goes where a terminal shows it
    res = subprocess.run(
        ["bash", "-c", "\n".join(["exec 2>&1", script])],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return res.returncode, res.stdout, res.stderr


def run_command(blocks: list[Block], block: Block, command: Command, cwd: Path) -> None:
    variables = [*variables_before(blocks, command)]
    argv = in_process_argv(command.script, variables)
    if argv is not None:
        IN_PROCESS["in process"] += 1
        budget_ledger.record("docs", "in process")
        code, output, errors = run_in_process(argv, cwd)
    else:
        IN_PROCESS["bash"] += 1
        budget_ledger.record("docs", "bash")
        timeout = SLOW_COMMAND_TIMEOUT_S if "slow" in block.modes else COMMAND_TIMEOUT_S
        code, output, errors = run_in_bash("\n".join([*variables, command.script]), timeout, cwd)
    where = f"{page_id(block.path)}:{command.line}: $ {command.script}"
    assert code == command.expected_exit, (
        f"{where}\nexit code {code}, the page implies {command.expected_exit}\n{output}{errors}"
    )
    if "exit-code" in block.modes:
        return
    actual = output.splitlines()
    assert output_matches(command.expected, actual), (
        f"{where}\n--- the page shows:\n"
        + "\n".join(command.expected)
        + "\n--- the command printed:\n"
        + output
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
