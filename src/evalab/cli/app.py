"""The typer app of the ``evalab`` command line, and how a call runs on it.

Every command module registers itself on :data:`app`; :func:`run` imports only the module
of the command invoked, expands greedy options (``-i A B C`` means three inputs, as in
sacrebleu), runs the app, and turns every :class:`~evalab.errors.EvalabError` into a
one-line message on stderr with exit code 2 (never a traceback).
"""

# No ``from __future__ import annotations``: typer would compile the annotation strings
# of the root's options again on every start (see cli/score.py).

import dataclasses
import inspect
import sys
import typing
import warnings
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TextIO, TypeVar

import click
import typer

from evalab.cli.options import strict_numbers
from evalab.cli.version import version_line
from evalab.errors import EvalabError

#: the settings of the app and of its groups of subcommands (:func:`sub_app`)
APP_SETTINGS: dict[str, Any] = {
    "no_args_is_help": True,
    "add_completion": False,
    "pretty_exceptions_enable": False,
    "context_settings": {"help_option_names": ["-h", "--help"]},
}

app = typer.Typer(
    name="evalab",
    help="Metrics with signatures, CIs and paired tests; ablation studies reported like Table 3.",
    **APP_SETTINGS,
)


def sub_app(name: str, help: str, **settings: Any) -> typer.Typer:
    """A group of subcommands (``evalab ablate ...``) registered on :data:`app` as ``name``,
    with the app's settings (``settings`` override them)."""
    group = typer.Typer(name=name, help=help, **{**APP_SETTINGS, **settings})
    app.add_typer(group, name=name)
    return group


def _print_version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print evalab's version and exit.",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
) -> None:
    # A callback keeps ``app`` a command group even when only the invoked command's
    # module has been imported (typer would otherwise promote a lone command to the root).
    pass


Request = TypeVar("Request")


def command(
    request_type: type[Request],
    name: str | None = None,
    *,
    on: Callable[[Callable[..., None]], Any] | None = None,
) -> Callable[[Callable[[Request], None]], Callable[..., None]]:
    """Register ``run(request)`` as a command whose options are the fields of the dataclass
    ``request_type``: each field an ``Annotated`` option (declared once in
    :mod:`evalab.cli.options` where commands share it), in the order of the fields, with
    the field's default; a field whose type is itself such a dataclass is an option group
    (:class:`~evalab.cli.options.LatexOptions`): its options stand in its place. The
    command's help is ``run``'s docstring. The command builds one typed request value from
    the command line and hands it to ``run``. ``on``: how it is registered where not as
    ``app.command(name)`` (a group's callback, a sub-app's command). The decorated name is
    the command's callable, with the options as its signature."""
    parameters = _options(request_type)

    def register(run: Callable[[Request], None]) -> Callable[..., None]:
        def callback(**given: Any) -> None:
            run(_request(request_type, given))

        callback.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        callback.__annotations__ = {p.name: p.annotation for p in parameters}
        callback.__doc__ = run.__doc__
        callback.__name__ = run.__name__
        callback.__wrapped__ = run  # type: ignore[attr-defined]  # inspect.getsource shows run
        (on or app.command(name))(callback)
        return callback

    return register


def _groups(request_type: type[Any]) -> dict[str, type[Any]]:
    """The option groups among the fields of ``request_type``: field name -> group type."""
    hints = typing.get_type_hints(request_type)
    return {
        name: hint
        for name, hint in hints.items()
        if isinstance(hint, type) and dataclasses.is_dataclass(hint)
    }


def _options(request_type: type[Any]) -> list[inspect.Parameter]:
    """The command's options: the fields of ``request_type``, a group's fields in its place."""
    hints = typing.get_type_hints(request_type, include_extras=True)
    groups = _groups(request_type)
    parameters: list[inspect.Parameter] = []
    for f in dataclasses.fields(request_type):
        if f.name in groups:
            parameters += _options(groups[f.name])
            continue
        default = inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        parameters.append(
            inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hints[f.name]
            )
        )
    return parameters


def _request(request_type: type[Request], given: dict[str, Any]) -> Request:
    """The request value of the options ``given``, each group's options made its value."""
    values = dict(given)
    for name, group in _groups(request_type).items():
        values[name] = _request(
            group, {f.name: values.pop(f.name) for f in dataclasses.fields(group)}
        )
    return request_type(**values)


#: options that take several values after one flag (``-i sysA sysB``), per command path
GREEDY_OPTIONS: dict[str, set[str]] = {
    "score": {"-i", "--input", "-m", "--metrics", "-r", "--reference"},
    "compare": {
        "-i",
        "--input",
        "-m",
        "--metrics",
        "-r",
        "--reference",
        "--scores",
        "--score-column",
    },
    "power": {"--scores"},
    "judge": {"--lengths"},
    "semsim": {"-i", "--input", "-r", "--reference"},
    "meta-eval": {"-i", "--input", "-m", "--metrics", "--name-map"},
}


def expand_greedy(argv: Sequence[str]) -> list[str]:
    """Rewrite ``-i a b c`` as ``-i a -i b -i c`` for the greedy options of the command.

    Values run until the next token that starts with ``-`` (a lone ``-`` is stdin, a value).
    """
    args = list(argv)
    command = next((a for a in args if not a.startswith("-")), None)
    greedy = GREEDY_OPTIONS.get(command or "", set())
    if not greedy:
        return args
    out: list[str] = []
    i = 0
    while i < len(args):
        tok = args[i]
        out.append(tok)
        i += 1
        if tok in greedy:
            first = True
            while i < len(args) and (args[i] == "-" or not args[i].startswith("-")):
                if not first:
                    out.append(tok)
                out.append(args[i])
                first = False
                i += 1
    return out


#: command name -> the module that registers it
COMMAND_MODULES: dict[str, str] = {
    "score": "score",
    "metrics": "metrics_cmd",
    "compare": "compare",
    "semsim": "semsim",
    "ppl": "ppl",
    "ablate": "ablate",
    "demo": "demo",
    "meta-eval": "meta_eval",
    "power": "power",
    "winrate": "preferences",
    "arena": "preferences",
    "agreement": "preferences",
    "passk": "passk",
    "judge": "judge",
}


#: ``score`` flags that run ``compare`` (sacrebleu's paired mode)
PAIRED_FLAGS = frozenset({"--paired-bs", "--paired-ar", "-pbs", "-par"})


def _register_commands(argv: Sequence[str] | None = None) -> None:
    """Import the command modules (importing one registers its command on ``app``).

    When ``argv`` names a command, only that module is imported: start-up time is part of
    every scoring call from a shell loop. ``--help`` or an unknown name imports them all.
    """
    import importlib

    command = next((a for a in (argv or []) if not a.startswith("-")), None)
    modules = (
        [COMMAND_MODULES[command]] if command in COMMAND_MODULES else list(COMMAND_MODULES.values())
    )
    if command == "score" and PAIRED_FLAGS & set(argv or []):
        modules.append(COMMAND_MODULES["compare"])  # sacrebleu's paired mode runs compare
    for module in modules:
        importlib.import_module(f"evalab.cli.{module}")


def error(message: str) -> None:
    """Print a one-line error to stderr."""
    sys.stderr.write(f"evalab: error: {message}\n")


def usage_message(exc: click.ClickException) -> str:
    """click's error (a bad ``--seed abc``, a missing option) as one line with a help hint.

    click prints a usage block of three lines; one line like every other refusal keeps
    stderr parseable and names the command whose ``--help`` says what would be right.
    """
    message = " ".join(exc.format_message().split())
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, click.NoSuchOption):
        message = unknown_option_message(
            exc, ctx.command_path.removeprefix("evalab").strip() if ctx else ""
        )
    if ctx is not None:
        return f"{message} (see `{ctx.command_path} --help`)"
    return message


def unknown_option_message(exc: click.NoSuchOption, command: str) -> str:
    """An unknown option: the evalab spelling of a peer's option, or only close suggestions."""
    from evalab.cli.peers import peer_equivalent, relevant_suggestions

    peer = peer_equivalent(exc.option_name, command)
    if peer is not None:
        return f"No such option {exc.option_name!r}: {peer}."
    close = relevant_suggestions(exc.option_name, sorted(exc.possibilities or ()))
    hint = f" (Did you mean {' or '.join(map(repr, close))}?)" if close else ""
    return f"No such option {exc.option_name!r}.{hint}"


def _one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    # library warnings (e.g. ROUGE's "tokenizer erased N segments") as one line, without
    # the source location a user of the command line cannot act on
    sys.stderr.write(f"evalab: warning: {message}\n")


def command_for(args: Sequence[str]) -> click.Command:
    """The click command of the app with the command modules ``args`` need registered
    (the start-up of a call: :func:`run` builds it when it is not given)."""
    _register_commands(args)
    root = typer.main.get_command(app)
    strict_numbers(root)
    return root


def run(args: Sequence[str], root: click.Command | None = None) -> int:
    """Run the CLI on ``args`` (without the program name); return the exit code.

    ``root``: the app's click command from :func:`command_for` of the same ``args``.
    """
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warning
        return _run(list(args), root if root is not None else command_for(args))


def invoked_command(root: click.Command, args: Sequence[str]) -> tuple[str, set[str]]:
    """The command path ``args`` invoke (``ablate run``) and that command's option names."""
    command, path = root, []
    for tok in args:
        if (
            tok.startswith("-")
            or not isinstance(command, click.Group)
            or tok not in command.commands
        ):
            break
        command = command.commands[tok]
        path.append(tok)
    options = {name for param in command.params for name in (*param.opts, *param.secondary_opts)}
    return " ".join(path), options


#: the option that gives a library setting (:class:`~evalab.errors.Setting`), where it is not
#: ``--`` and the setting's name with hyphens (:func:`option_of`)
OPTION_OF_SETTING = {
    "rows": "--row",
    "seeds": "--seed",
    "layout": "--from",
    "seed_column": "--seed-from",
    "maps": "--map",
    "assignments": "--set",
    "db_path": "--db",
    "systems": "-i",
    "references": "-r",
    "workers": "-j",
    "ks": "-k",
    "common": "--common-items",
    "Columns.scores": "--score-column",
    "Columns.sample": "--sample-column",
}


def option_of(setting: str) -> str:
    """The option that gives the library's ``setting``: a metric's setting (``comet.model``)
    is a ``--set`` item, the others are :data:`OPTION_OF_SETTING`'s or ``--`` and the name."""
    if setting in OPTION_OF_SETTING:
        return OPTION_OF_SETTING[setting]
    if "." in setting:
        return f"--set {setting}"
    return "--" + setting.replace("_", "-")


def _worded(exc: EvalabError) -> str:
    """The error's line; a setting the library names is called by its option's name."""
    return exc.worded(option_of)


def _run(args: list[str], root: click.Command) -> int:
    from evalab.cli.peers import check_peer_habits, translate_peer_flags

    command, options = invoked_command(root, args)
    try:
        check_peer_habits(args, command, options)
        args = expand_greedy(translate_peer_flags(args, command))
        rv = root.main(args=args, prog_name="evalab", standalone_mode=False)
    except EvalabError as exc:
        error(_worded(exc))
        return 2
    except click.exceptions.NoArgsIsHelpError as exc:
        # click >= 8.2: `evalab` alone prints help through this exception
        exc.show()
        return 0
    except click.ClickException as exc:
        error(usage_message(exc))
        return 2
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.Abort:
        error("interrupted")
        return 130
    except KeyboardInterrupt:
        error("interrupted")
        return 130
    except BrokenPipeError:
        return 0
    # typer (standalone_mode=False) returns the code of a `typer.Exit` instead of raising
    # it, and turns Ctrl-C into Exit(130)
    if isinstance(rv, int) and not isinstance(rv, bool) and rv:
        if rv == 130:
            error("interrupted")
        return rv
    return 0
