"""One CLI grammar: the same option means the same thing in every command.

Walks the real click command tree (every command and sub-command) and checks the
conventions: ``-f/--format`` with the shared choices wherever a table is printed, ``-o`` a
file and ``--out-dir`` a folder (``--figures DIR`` the folder of a report's figures), ``-q/--quiet`` wherever a progress bar can appear,
``-n/--n-samples`` for resampling, and one long name per short flag.
"""

from __future__ import annotations

import csv
import inspect
import io
import json
from collections import defaultdict

import click
import pytest

from evalab.cli.output import PAGE_FORMATS, TABLE_FORMATS, format_option

#: commands that print no table: they write a file, a folder or progress lines
NO_TABLE = {
    ("ablate", "run"): "prints progress and a summary line on stderr",
    ("ablate", "gc"): "prints one line on stderr",
    ("ablate", "import"): "prints one line on stderr",
    ("semsim", "baseline"): "writes a baseline file (-o is required)",
    ("demo",): "writes report.html and report.md into --out-dir; the table on stdout is a preview",
}
#: commands that write a self-contained page as well as the table formats
PAGES = {("ablate", "report"), ("compare",), ("meta-eval",), ("arena",), ("winrate",)}


def commands() -> dict[tuple[str, ...], click.Command]:
    """Every command and sub-command of the app by path (``("ablate", "run")`` ...)."""
    import typer.main

    from evalab.cli.app import _register_commands, app

    _register_commands()
    found: dict[tuple[str, ...], click.Command] = {}

    def walk(group: click.Group, prefix: tuple[str, ...]) -> None:
        for name, command in group.commands.items():
            found[(*prefix, name)] = command
            if isinstance(command, click.Group):
                walk(command, (*prefix, name))

    walk(typer.main.get_command(app), ())  # type: ignore[arg-type]
    return dict(sorted(found.items()))


def command_paths() -> list[tuple[str, ...]]:
    return list(commands())


COMMANDS = commands()
LEAVES = {
    p: c for p, c in COMMANDS.items() if not isinstance(c, click.Group) or c.invoke_without_command
}
OPTIONS = [(p, o) for p, c in LEAVES.items() for o in c.params if isinstance(o, click.Option)]


def option(path: tuple[str, ...], long: str) -> click.Option | None:
    return next(
        (o for o in LEAVES[path].params if isinstance(o, click.Option) and long in o.opts), None
    )


def test_the_walk_finds_every_command():
    assert {"score", "compare", "ppl", "semsim", "metrics", "meta-eval", "demo"} <= {
        p[0] for p in LEAVES
    }
    assert {("ablate", s) for s in ("run", "status", "report", "gc")} | {
        ("semsim", "baseline")
    } <= set(LEAVES)


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_every_table_has_the_shared_format_choices(path):
    fmt = option(path, "--format")
    if path in NO_TABLE:
        assert fmt is None, f"{path} has --format but is listed as printing no table"
        return
    assert fmt is not None, f"evalab {' '.join(path)} prints a table but has no -f/--format"
    shared = format_option(PAGE_FORMATS if path in PAGES else TABLE_FORMATS)
    assert fmt.opts == ["-f", "--format"] and fmt.default == "table"
    assert (fmt.metavar, fmt.help) == (shared.metavar, shared.help)


def test_the_shared_choices():
    assert TABLE_FORMATS == ("table", "json", "markdown", "latex", "csv", "tsv")
    assert (*TABLE_FORMATS, "html") == PAGE_FORMATS


@pytest.mark.parametrize("fmt", TABLE_FORMATS)
def test_metrics_prints_every_format(run_cli, fmt):
    res = run_cli("metrics", "-f", fmt)
    assert res.exit_code == 0, res.stderr
    assert "bleu" in res.stdout
    {
        "json": json.loads,
        "markdown": lambda s: s.startswith("| metric |") or pytest.fail(s[:80]),
        "latex": lambda s: "\\begin{tabular}" in s or pytest.fail(s[:80]),
        "table": len,
        "csv": lambda s: next(csv.reader(io.StringIO(s)))[0] == "metric" or pytest.fail(s[:80]),
        "tsv": lambda s: s.split("\t", 1)[0] == "metric" or pytest.fail(s[:80]),
    }[fmt](res.stdout)


@pytest.mark.parametrize("path", sorted(p for p in LEAVES if p not in NO_TABLE), ids=" ".join)
def test_help_lists_the_format_choices(run_cli, path):
    res = run_cli(*path, "--help")
    assert res.exit_code == 0
    listed = PAGE_FORMATS if path in PAGES else TABLE_FORMATS
    assert all(f in res.stdout for f in listed)


def test_unknown_format_is_one_line_listing_the_choices(run_cli):
    res = run_cli("metrics", "-f", "pdf")
    assert res.exit_code == 2 and len(res.stderr.splitlines()) == 1
    assert "'pdf'" in res.stderr and ", ".join(TABLE_FORMATS) in res.stderr


def test_out_is_always_a_file_and_out_dir_a_folder():
    for path, o in OPTIONS:
        where = f"evalab {' '.join(path)} {'/'.join(o.opts)}"
        if "-o" in o.opts or "--out" in o.opts:
            assert o.opts == ["-o", "--out"], where
            assert "file" in (o.help or "") and "folder" not in (o.help or "").lower(), where
        if "--out-dir" in o.opts:
            assert o.opts == ["--out-dir"] and "folder" in (o.help or "").lower(), where
        if "--figures" in o.opts:  # the report's figures, beside its -o: one spelling everywhere
            assert o.opts == ["--figures"] and o.metavar == "DIR", where
            assert "folder" in (o.help or "").lower(), where
        elif "folder" in (o.help or "").lower() and "write" in (o.help or "").lower():
            assert "--out-dir" in o.opts, f"{where} writes a folder: call it --out-dir"


def test_same_short_flag_same_long_names_everywhere():
    longs: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    shorts: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for _, o in OPTIONS:
        short = tuple(s for s in o.opts if not s.startswith("--"))
        long = tuple(s for s in o.opts if s.startswith("--"))
        for s in short:
            longs[s].add(long)
        for name in long:
            shorts[name].add(short)
    assert {s: v for s, v in longs.items() if len(v) > 1} == {}
    assert {n: v for n, v in shorts.items() if len(v) > 1} == {}


def test_text_inputs_are_dash_i_everywhere():
    for path in LEAVES:
        args = [p for p in LEAVES[path].params if isinstance(p, click.Argument) and not p.hidden]
        readers = [a.name for a in args if "text" in (a.name or "").lower()]
        assert readers == [], f"evalab {' '.join(path)} takes text as an argument: use -i/--input"
    assert option(("ppl",), "--input").opts == ["-i", "--input"]


def test_resampling_counts_are_n_samples():
    for path, o in OPTIONS:
        where = f"evalab {' '.join(path)} {'/'.join(o.opts)}"
        if "-n" in o.opts:
            assert o.opts == ["-n", "--n-samples"], where
        assert not {"--n", "--bootstrap", "--samples", "--n-bootstrap", "--resamples"} & set(
            o.opts
        ), where
    for path in LEAVES:
        text = " ".join(o.help or "" for p, o in OPTIONS if p == path).lower()
        if "resample" in text or "bootstrap" in text:
            assert option(path, "--n-samples") is not None, (
                f"evalab {' '.join(path)} resamples without -n/--n-samples"
            )


def _may_show_progress(command: click.Command) -> bool:
    """The command's code asks for a progress bar (directly or through its metrics)."""
    source = inspect.getsource(command.callback)  # type: ignore[arg-type]
    return "progress" in source


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_every_progress_bar_can_be_silenced_with_q(path):
    quiet = option(path, "--quiet")
    if _may_show_progress(LEAVES[path]):
        assert quiet is not None and quiet.opts == ["-q", "--quiet"], (
            f"evalab {' '.join(path)} shows progress without -q"
        )
    assert quiet is None or quiet.is_flag


def test_score_has_q_for_model_metrics():
    assert _may_show_progress(LEAVES[("score",)]) and option(("score",), "--quiet") is not None


@pytest.mark.parametrize("quiet", [False, True])
def test_score_shows_a_model_metrics_bar_on_a_terminal_unless_q(
    run_cli, monkeypatch, tmp_path, quiet
):
    import sys

    from tests.conftest import REPO

    pytest.importorskip("torch")
    text = tmp_path / "news.de"
    text.write_text(
        "".join(
            (REPO / "examples" / "texts" / "news.de")
            .read_text(encoding="utf-8")
            .splitlines(True)[:3]
        ),
        encoding="utf-8",
    )
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # stderr is a terminal
    res = run_cli(
        "score",
        "-m",
        "perplexity",
        "-s",
        f"model={REPO / 'examples' / 'tiny-lm-de'}",
        "-r",
        text,
        "-i",
        text,
        "-f",
        "json",
        *(["-q"] if quiet else []),
    )
    assert res.exit_code == 0, res.stderr
    assert (
        "language model" in res.stderr and "tokens" in res.stderr
    ) is not quiet  # the bar counts tokens
    assert json.loads(res.stdout)[0]["metric"] == "perplexity"
