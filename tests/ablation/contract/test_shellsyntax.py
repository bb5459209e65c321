"""No value ever becomes code: hostile values thrown at every place a template can put one.

Settings (for the closing note): the in-process property renders every context of
:data:`CONTEXTS` (12: bare, single-quoted, double-quoted, nested ``"$( "..." )"``,
backticks, a pipe, ``sh -c '...'`` with the value inside, ``sh -c '... "$1"' sh {v}``, a
heredoc, ``{args}`` in both styles, a Hydra override) for 300 hostile values
(``max_examples=300``); the run property executes one drawn (context, value) per example
for 80 examples (``max_examples=80``), each a real process (the argv or ``/bin/sh``,
with the values in its environment); ``--set`` goes through ``evalab ablate run`` with
six fixed hostile values. Values are built from ``$( )``, backticks, both quotes, ``;``,
``|``, ``&``, newlines, NUL, ``%``, ``{}``, unicode quotes, ``\\``, ``$HOME``, globs, a
heredoc's delimiter and arbitrary text, plus 200 000 characters. Each run checks: the
canary file no payload may create does not exist, and the program received exactly the
value (its argv and stdin, written as JSON) -- or the template was refused with a line
(a value in code that is not plain; NUL; too long).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalab.ablation.contract.shellsyntax import PLAIN
from evalab.ablation.contract.template import (
    ARG_LIMIT,
    TemplateError,
    config_args,
    hydra_value,
    parse_template,
)

PROBE = """
import json, sys
data = {"argv": sys.argv[2:], "stdin": sys.stdin.read() if "stdin" in sys.argv[2:3] else None}
with open("probe.json", "w", encoding="utf-8", errors="surrogateescape") as fh:
    json.dump(data, fh)
"""

Expect = Callable[[str], list[str]]


def _same(v: str) -> list[str]:
    return [v]


def _tagged(v: str) -> list[str]:
    return ["tag=" + v]


def _substituted(v: str) -> list[str]:
    return ["tag=" + v.rstrip("\n")]  # $( ) and backticks drop trailing newlines


#: context -> (template with P for the probe program, args_style, in code?, expected argv)
CONTEXTS: dict[str, tuple[str, str, bool, Expect]] = {
    "bare": ("P {v}", "argparse", False, _same),
    "single-quoted": ("P '{v}'", "argparse", False, _same),
    "double-quoted": ('P "tag={v}"', "argparse", False, _tagged),
    "nested": ('P "tag=$(printf %s "{v}")"', "argparse", False, _substituted),
    "backticks": ('P "tag=`printf %s "{v}"`"', "argparse", False, _substituted),
    "pipe": ("true | P {v} && true", "argparse", False, _same),
    "sh -c inside": ("sh -c 'P {v}'", "argparse", True, _same),
    "sh -c positional": ("sh -c 'P \"$1\"' sh {v}", "argparse", False, _same),
    "heredoc": ("P stdin <<EOF\n{v}\nEOF\n", "argparse", True, lambda v: ["stdin"]),
    "args argparse": ("P {args}", "argparse", False, lambda v: config_args({"v": v}, "argparse")),
    "args hydra": ("P {args}", "hydra", False, lambda v: ["v=" + hydra_value(v)]),
    "hydra override": ("P v={v}", "hydra", False, lambda v: ["v=" + hydra_value(v)]),
}


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    (folder / "probe.py").write_text(PROBE, encoding="utf-8")
    return folder


def _fragments(canary: str) -> st.SearchStrategy[str]:
    payloads = [
        f"$(touch {canary})",
        f"`touch {canary}`",
        f";touch {canary};",
        f"|touch {canary}",
        f"&& touch {canary} #",
        f"\ntouch {canary}\n",
        f"'$(touch {canary})'",
        f'"; touch {canary}; "',
        f"\\$(touch {canary})",
        f"EOF\ntouch {canary}\nEOF",
        "'", '"', "\\", "%s", "%", "{}", "{v}", "{{", "}}", "‘’“”", "$HOME", "${HOME}",
        "*", "~", "#", "-x", "--", " ", "\t", "\n", "é", "\0", "$1", "!", "=", ",",
    ]  # fmt: skip
    return st.one_of(st.sampled_from(payloads), st.text(max_size=6))


def _values(canary: str) -> st.SearchStrategy[str]:
    return st.lists(_fragments(canary), max_size=5).map("".join)


def _template(context: str, place: Path) -> tuple[str, str, bool, Expect]:
    text, style, code, expect = CONTEXTS[context]
    program = f"{shlex.quote(sys.executable)} -S {shlex.quote(str(place / 'probe.py'))}"
    return text.replace("P ", program + " {out} ", 1), style, code, expect


def _refusal(value: str, code: bool) -> str | None:
    """What a refusal must say for this value here (None: it must run)."""
    words = [value]
    if "\0" in value:
        return "holds a NUL character"
    if len(os.fsencode(value)) > ARG_LIMIT:
        return "more than one program argument carries"
    if code and not all(PLAIN.fullmatch(w) for w in words):
        return "stands in text a program reads as code"
    return None


def _render(context: str, place: Path, value: str):  # type: ignore[no-untyped-def]
    text, style, _, _ = _template(context, place)
    return parse_template(text, style).render({"v": value}, 0, "c.json", "m.json")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_value_is_never_in_the_text_a_shell_runs(place, data):
    context = data.draw(st.sampled_from(sorted(CONTEXTS)))
    value = data.draw(_values(str(place / "CANARY")))
    _, _, code, _ = _template(context, place)
    refusal = _refusal(value, code)
    if refusal is not None:
        with pytest.raises(TemplateError, match=refusal) as info:
            _render(context, place, value)
        assert "\n" not in str(info.value).replace(repr(value)[1:-1], "")  # one line
        return
    line = _render(context, place, value)
    if line.argv[:2] == ("/bin/sh", "-c") and not code:
        # the script is the same text whatever the value: the value reaches it only by name
        assert line.argv == _render(context, place, "x").argv
    if line.argv[:2] != ("/bin/sh", "-c"):
        assert not line.env  # no shell: the argv carries the values as they are


def _hydra_reads(word: str) -> str:
    """What Hydra's override grammar reads from a value ``hydra_value`` wrote: a quoted
    value's backslash runs before a quote (or the end) halved, an odd one quoting it."""
    if not (len(word) >= 2 and word[0] == word[-1] == "'"):
        return word
    return re.sub(
        r"(\\+)('|\Z)",
        lambda m: "\\" * (len(m.group(1)) // 2) + ("'" if len(m.group(1)) % 2 else ""),
        word[1:-1],
    )


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_hydra_reads_back_exactly_the_value_written(value):
    assert _hydra_reads(hydra_value(value)) == value


def test_a_very_long_value_or_a_lone_surrogate_is_refused_with_a_line_in_every_context(place):
    for context in CONTEXTS:
        with pytest.raises(TemplateError, match="bytes, more than one program argument carries"):
            _render(context, place, "a" * 200_000)
        with pytest.raises(
            TemplateError, match=r"no program argument can carry \(a lone surrogate"
        ):
            _render(context, place, "a\ud800b")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_program_receives_exactly_the_value_and_nothing_runs(place, data):
    canary = place / "CANARY"
    context = data.draw(st.sampled_from(sorted(CONTEXTS)))
    value = data.draw(_values(str(canary)))
    _, _, code, expect = _template(context, place)
    if _refusal(value, code) is not None:
        return  # held by the in-process property above
    line = _render(context, place, value)
    (place / "probe.json").unlink(missing_ok=True)
    subprocess.run(
        line.argv,
        cwd=place,
        env={**os.environ, **dict(line.env)},
        stdin=subprocess.DEVNULL,
        check=True,
        timeout=60,
    )
    assert not canary.exists(), (context, value)
    got = json.loads((place / "probe.json").read_text(encoding="utf-8", errors="surrogateescape"))
    assert got["argv"] == expect(value), (context, value, line.argv)
    if context == "heredoc":
        assert got["stdin"] == value + "\n"


HOSTILE = [  # the run's folder is the study's: CANARY lands beside study.toml
    "$(touch CANARY)",
    "`touch CANARY`",
    "a'b\"c; touch CANARY | x",
    "\ntouch CANARY\n",
    "‘quoted’ “value” %s {{}}",
    "x" * 5000,
]


@pytest.mark.parametrize("value", HOSTILE)
def test_set_values_reach_a_nested_substitution_exactly_through_ablate_run(
    run_cli, tmp_path, value
):
    (tmp_path / "job.py").write_text(
        "import json, sys\n"
        "args = dict(a.split('=', 1) for a in sys.argv[1:])\n"
        "open(args['out'], 'w').write(json.dumps({'acc': 1.0}))\n"
        "open(args['out'] + '.tag', 'w').write(json.dumps(args['tag']))\n",
        encoding="utf-8",
    )
    study = tmp_path / "study.toml"
    study.write_text(
        '[study]\nname = "hostile"\nargs_style = "argparse"\n'
        "command = '''python job.py tag=\"$(basename \"{name}\")\" seed={seed} out={out}'''\n"
        'seeds = [0]\nmetrics = ["acc"]\n\n[base]\nname = "adam"\n',
        encoding="utf-8",
    )
    r = run_cli("ablate", "run", study, "--db", tmp_path / "s.db", "-q", "--set", f"name={value}")
    assert r.exit_code == 0, r.stderr
    assert not (tmp_path / "CANARY").exists()
    (tag,) = tmp_path.glob("runs/*/hostile/*/metrics.json.tag")
    assert json.loads(tag.read_text()) == value.rstrip("\n")  # $( ) drops trailing newlines
