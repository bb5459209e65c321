"""Every command registered on the CLI is documented in README.md (as ``evalab <command>``)."""

from __future__ import annotations

import pytest
import typer.main
from tests.conftest import REPO

from evalab.cli import _register_commands, app


def registered_commands() -> list[str]:
    """Names of the commands registered on the typer app (sub-groups included)."""
    _register_commands()
    group = typer.main.get_command(app)
    return sorted(group.commands)  # type: ignore[attr-defined]


COMMANDS = registered_commands()


def test_the_foundation_commands_are_registered():
    assert {"score", "metrics"} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_command_is_documented_in_readme(command):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"evalab {command}" in readme, f"README.md does not document `evalab {command}`"
