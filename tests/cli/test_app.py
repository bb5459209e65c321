"""``evalab.cli.app.command``: a command is one request dataclass, its fields the options."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Annotated

import typer
from typer.testing import CliRunner

from evalab.cli.app import command
from evalab.cli.options import OutFile, Quiet, given_options


@dataclass(frozen=True)
class _Request:
    name: Annotated[str, typer.Option("--name", help="Who.")]
    count: Annotated[int, typer.Option("-c", "--count", help="How many.")] = 2
    tags: Annotated[list[str], typer.Option("--tag", help="Tags.")] = field(default_factory=list)
    out: OutFile = None
    quiet: Quiet = False


def test_a_request_dataclass_is_a_command_and_run_gets_one_typed_value():
    app = typer.Typer()
    got: list[_Request] = []

    @app.callback()
    def _root() -> None:
        pass

    @command(_Request, on=app.command("greet"))
    def greet(req: _Request) -> None:
        """Greet someone."""
        got.append(req)

    res = CliRunner().invoke(app, ["greet", "--name", "x", "--tag", "a", "--tag", "b", "-q"])
    assert res.exit_code == 0, res.output
    assert got == [_Request("x", 2, ["a", "b"], None, True)]
    # the command's name is a callable with the options as its signature (defaults included)
    params = inspect.signature(greet).parameters
    assert list(params) == ["name", "count", "tags", "out", "quiet"]
    assert params["count"].default == 2 and params["tags"].default == []
    # help: the run function's docstring and the shared options' one help text
    shown = CliRunner().invoke(app, ["greet", "--help"]).output
    assert "Greet someone." in shown and "Write the output to this file" in shown
    assert (
        inspect.getsource(greet).lstrip().startswith("@command")
    )  # source of run, not the wrapper


@dataclass(frozen=True)
class _Sizes:
    width: Annotated[int, typer.Option("--width", help="Width.")] = 3
    height: Annotated[int, typer.Option("--height", help="Height.")] = 4


@dataclass(frozen=True)
class _Grouped:
    name: Annotated[str, typer.Option("--name", help="Who.")]
    sizes: _Sizes = field(default_factory=_Sizes)
    quiet: Quiet = False


def test_a_dataclass_field_is_an_option_group_whose_options_stand_in_its_place():
    app = typer.Typer()
    got: list[_Grouped] = []

    @app.callback()
    def _root() -> None:
        pass

    @command(_Grouped, on=app.command("draw"))
    def draw(req: _Grouped) -> None:
        """Draw."""
        got.append(req)

    assert list(inspect.signature(draw).parameters) == ["name", "width", "height", "quiet"]
    res = CliRunner().invoke(app, ["draw", "--name", "x", "--height", "9", "-q"])
    assert res.exit_code == 0, res.output
    assert got == [_Grouped("x", _Sizes(3, 9), True)]
    shown = CliRunner().invoke(app, ["draw", "--help"]).output
    assert "--width" in shown and "--height" in shown and "--sizes" not in shown
    # the options the command line gave, a group's field named with a dot
    assert given_options(got[0], [("--width", "sizes.width"), ("--height", "sizes.height")]) == [
        "--height"
    ]


def test_a_sub_app_has_the_apps_help_flags_and_takes_its_own_settings(run_cli):
    res = run_cli("ablate", "-h")
    assert res.exit_code == 0 and "Ablation studies" in res.stdout
    res = run_cli("semsim", "-h")
    assert res.exit_code == 0 and "best reference" in res.stdout


def _settings_named_below_the_cli() -> dict[str, str]:
    """``setting -> module`` for every setting a library refusal names by a literal name:
    ``Setting("name")`` and the first argument of ``SettingValueError``/``OutOfRangeError``."""
    import ast
    from pathlib import Path

    import evalab

    src = Path(evalab.__file__).parent
    named: dict[str, str] = {}
    for path in sorted(src.rglob("*.py")):
        if path.relative_to(src).parts[0] == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("Setting", "SettingValueError", "OutOfRangeError")
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                named.setdefault(str(node.args[0].value), str(path.relative_to(src)))
    return named


def test_every_setting_a_library_refusal_names_is_worded_as_an_option_the_cli_has():
    # the library names its parameter (errors.Setting); the CLI's line names the option that
    # gives it (option_of): an option no command has would send the user nowhere
    import click

    from evalab.cli.app import OPTION_OF_SETTING, command_for, option_of
    from evalab.metrics.registry import metric_class

    def options(cmd: click.Command) -> set[str]:
        own = {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}
        subs = cmd.commands.values() if isinstance(cmd, click.Group) else ()
        return own.union(*(options(c) for c in subs))

    have = options(command_for([]))
    named = _settings_named_below_the_cli()
    assert {"name_map", "workers", "metricx.mode", "Columns.scores"} <= set(named)
    unknown = {
        f"{where}: {name} -> {option_of(name)}"
        for name, where in named.items()
        if option_of(name).split()[0] not in have
    }
    assert not unknown, "no command has these options: " + ", ".join(sorted(unknown))
    for name in {n for n in named if n not in OPTION_OF_SETTING and "." in n}:
        metric, _, key = name.partition(".")  # a --set item: the metric must have the setting
        assert key in metric_class(metric).settings_class.setting_names(), name
