"""Command templates: a study's ``command`` with its placeholders, parsed once, filled per run.

A template is checked before anything runs, so it cannot silently pass a placeholder
through to the command (every run would then train the same configuration):

- ``{config}``, ``{seed}``, ``{out}``: the run's JSON configuration file, its seed, and the
  JSON metrics file it writes;
- ``{key}``: the value of a configuration key; ``{optim.lr}`` reaches into a nested table;
- ``{args}``: the whole configuration as command-line arguments, in the study's
  ``args_style`` (:data:`ARGS_STYLES`);
- ``{{`` and ``}}``: a literal ``{`` and ``}``. Any other brace is an error.

Every substituted word is shell-quoted. Inside quotes of the template a value is put in as
it is when it needs no quoting, and refused otherwise (quoting it would end the template's
own quotes). How values are written:

======================  ==============================  ==================================
value                   ``hydra`` (``key=value``)       ``argparse`` (``--key value``)
======================  ==============================  ==================================
string                  as is; quoted ``'...'`` when    as is (``--key=-x`` when it starts
                        Hydra would read it otherwise   with ``-``)
true / false            ``key=true`` / ``key=false``    ``--key`` / ``--no-key``
number                  ``key=0.001``, ``key=3``        ``--key 0.001``
list                    ``key=[1,2,3]``                 ``--key 1 2 3`` (``nargs``)
nested table            ``optim.lr=0.1``                ``--optim.lr 0.1``
======================  ==============================  ==================================

A ``{key}`` on its own writes the value alone: in the hydra style as Hydra reads it
(``hidden={hidden}`` -> ``hidden=32``, a string Hydra would misread quoted ``'...'``); in
the argparse style as it is (``--name {name}`` -> ``--name adam``; ``true``/``false``; a
list as separate words).
"""

from __future__ import annotations

import difflib
import math
import re
import shlex
from dataclasses import dataclass
from typing import Any

from evalab.ablation.study import keys
from evalab.errors import SettingsError

#: how ``{args}`` writes a configuration (declared with ``[study] args_style``)
ARGS_STYLES: tuple[str, ...] = keys.keys_of("study")["args_style"].allowed
#: placeholders the runner fills; every other name is a configuration key
RUNNER_NAMES = ("config", "seed", "out", "args")
_NAME = re.compile(r"\{([A-Za-z0-9_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_][A-Za-z0-9_-]*)*)\}")
_HYDRA_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_\-./]*")
_HYDRA_WORDS = {"true", "false", "null", "none", "inf", "nan"}


class TemplateError(SettingsError):
    """A problem of a command template at character ``offset`` of its text."""

    def __init__(self, offset: int, message: str) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True)
class Placeholder:
    """``{name}`` at ``offset`` of the template; ``quote`` is the shell quote it stands in
    (``"'"`` or ``'"'``; ``""`` outside quotes)."""

    name: str
    offset: int
    quote: str = ""


@dataclass(frozen=True)
class CommandLine:
    """One run's shell command, and the configuration values that went into it."""

    text: str
    values: tuple[tuple[str, str], ...]  # (placeholder, the text put in for it), in order

    def words(self) -> list[str]:
        """The command split as the shell splits it."""
        return shlex.split(self.text)


@dataclass(frozen=True)
class CommandTemplate:
    """A parsed ``command``: literal text and placeholders, in order."""

    text: str
    parts: tuple[str | Placeholder, ...]
    style: str = "hydra"

    @property
    def placeholders(self) -> tuple[Placeholder, ...]:
        return tuple(p for p in self.parts if isinstance(p, Placeholder))

    def names(self) -> set[str]:
        return {p.name for p in self.placeholders}

    def check_keys(self, config: dict[str, Any]) -> None:
        """Raise :class:`TemplateError` for a placeholder that names no key of ``config``,
        or names a table (a table has no one value)."""
        known = sorted(flat_keys(config))
        for p in self.placeholders:
            if p.name in RUNNER_NAMES:
                continue
            try:
                value = lookup(config, p.name)
            except KeyError:
                close = [k for k in known if k.split(".")[-1] == p.name.split(".")[-1]]
                close += difflib.get_close_matches(p.name, known, n=1)
                hint = f" (did you mean {{{close[0]}}}?)" if close else ""
                raise TemplateError(
                    p.offset,
                    f"{{{p.name}}} names no configuration key{hint}; keys: "
                    f"{', '.join(known)}; runner placeholders: "
                    f"{' '.join('{' + n + '}' for n in RUNNER_NAMES)}; write {{{{ and }}}} "
                    "for literal braces",
                ) from None
            if isinstance(value, dict):
                raise TemplateError(
                    p.offset,
                    f"{{{p.name}}} names a table; name one of its keys "
                    f"({', '.join('{' + k + '}' for k in sorted(flat_keys(value, p.name)))}) or "
                    "use {args}",
                )

    def render(
        self, config: dict[str, Any], seed: int, config_path: str, out_path: str
    ) -> CommandLine:
        """The shell command of one run (:class:`TemplateError` for a value that cannot be
        written where its placeholder stands)."""
        pieces: list[str] = []
        values: list[tuple[str, str]] = []
        for part in self.parts:
            if isinstance(part, str):
                pieces.append(part)
                continue
            try:
                words = self._words(part.name, config, seed, config_path, out_path)
            except (
                TemplateError
            ) as exc:  # a value {args} or {key} cannot write: at this placeholder
                raise TemplateError(part.offset, str(exc)) from None
            text = _place(words, part)
            pieces.append(text)
            values.append((part.name, text))
        return CommandLine("".join(pieces), tuple(values))

    def _words(
        self, name: str, config: dict[str, Any], seed: int, config_path: str, out_path: str
    ) -> list[str]:
        if name == "config":
            return [config_path]
        if name == "out":
            return [out_path]
        if name == "seed":
            return [str(seed)]
        if name == "args":
            return config_args(config, self.style)
        value = lookup(config, name)
        if self.style == "hydra":
            return [hydra_value(value, name)]
        return (
            [_scalar(v, name) for v in value] if isinstance(value, list) else [_scalar(value, name)]
        )


def _place(words: list[str], p: Placeholder) -> str:
    """The words as they go into the template: shell-quoted outside quotes; inside quotes
    as they are, when that needs no quoting."""
    if not p.quote:
        return " ".join(shlex.quote(w) for w in words)
    text = " ".join(words)
    if any(shlex.quote(w) != w for w in words):
        raise TemplateError(
            p.offset,
            f"{{{p.name}}} stands inside {p.quote} quotes, and its value {text!r} would "
            "need quoting there; write the placeholder outside quotes (evalab quotes each value)",
        )
    return text


def parse_template(text: str, style: str = "hydra") -> CommandTemplate:
    """Split a template into literal text and placeholders; :class:`TemplateError` for a
    brace that is neither ``{name}`` nor escaped as ``{{`` / ``}}``.

    >>> [p.name for p in parse_template("awk '{{print $1}}' {config} > {out}").placeholders]
    ['config', 'out']
    """
    parts: list[str | Placeholder] = []
    literal: list[str] = []
    quote = ""
    i = 0
    while i < len(text):
        c = text[i]
        if text.startswith(("{{", "}}"), i):
            literal.append(c)
            i += 2
            continue
        if c == "{":
            m = _NAME.match(text, i)
            if not m:
                raise TemplateError(
                    i,
                    f"the brace at {_excerpt(text, i)} is neither a placeholder nor escaped: "
                    "write {{ and }} for literal braces, or {key} for a configuration value",
                )
            parts += ["".join(literal), Placeholder(m.group(1), i, quote)]
            literal = []
            i = m.end()
            continue
        if c == "}":
            raise TemplateError(
                i,
                f"the brace at {_excerpt(text, i)} closes no placeholder: write }}}} for a "
                "literal brace",
            )
        literal.append(c)
        if c == "\\" and quote != "'" and i + 1 < len(text) and text[i + 1] not in "{}":
            literal.append(text[i + 1])  # an escaped character: no quote starts or ends here
            i += 1
        elif c in "'\"" and quote in ("", c):
            quote = "" if quote else c
        i += 1
    parts.append("".join(literal))
    return CommandTemplate(text, tuple(p for p in parts if p != ""), style)


def _excerpt(text: str, i: int) -> str:
    """Where the brace stands: its column in its line of the command, and the text from it."""
    column = i - (text.rfind("\n", 0, i) + 1) + 1
    line_end = text.find("\n", i)
    rest = text[i : line_end if line_end >= 0 else len(text)]
    return f"column {column}: {rest[:20] + ('...' if len(rest) > 20 else '')!r}"


def lookup(config: dict[str, Any], name: str) -> Any:
    """The value of ``name`` in ``config``: a key, or a dotted path into nested tables (a
    key that itself contains the dots wins). ``KeyError`` when there is none."""
    if name in config:
        return config[name]
    node: Any = config
    for part in name.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(name)
        node = node[part]
    return node


def flat_keys(config: dict[str, Any], prefix: str = "") -> list[str]:
    """Every leaf key of ``config`` as a dotted path (a table's keys, not the table).

    >>> flat_keys({"a": 1, "optim": {"lr": 0.1, "betas": [0.9, 0.99]}})
    ['a', 'optim.lr', 'optim.betas']
    """
    out: list[str] = []
    for key, value in config.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            out += flat_keys(value, path)
        else:
            out.append(path)
    return out


def _leaves(config: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in config.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        out += _leaves(value, path) if isinstance(value, dict) and value else [(path, value)]
    return out


def config_args(config: dict[str, Any], style: str) -> list[str]:
    """The configuration as command-line words (unquoted), in the order of its keys.

    >>> config_args({"hidden": 32, "optim": {"lr": 0.001}, "relu": True, "layers": [2, 3]}, "hydra")
    ['hidden=32', 'optim.lr=0.001', 'relu=true', 'layers=[2,3]']
    >>> config_args({"hidden": 32, "optim": {"lr": 0.001}, "relu": False, "layers": [2, 3]}, "argparse")
    ['--hidden', '32', '--optim.lr', '0.001', '--no-relu', '--layers', '2', '3']
    """
    words: list[str] = []
    for key, value in _leaves(config):
        if style == "hydra":
            words.append(f"{key}={hydra_value(value, key)}")
        elif isinstance(value, bool):
            words.append(f"--{key}" if value else f"--no-{key}")
        elif isinstance(value, list):
            words += [f"--{key}", *(_scalar(v, key) for v in value)]
        elif isinstance(value, dict):
            continue  # an empty table has no keys to give
        else:
            text = _scalar(value, key)
            words += (
                [f"--{key}={text}"]
                if text.startswith("-") and not _is_number(value)
                else [f"--{key}", text]
            )
    return words


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _number(value: int | float) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return repr(value)


def _scalar(value: Any, key: str) -> str:
    """A scalar as one argparse word; a list or table inside a list is refused."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_number(value):
        return _number(value)
    if isinstance(value, str):
        return value
    raise TemplateError(
        -1,
        f"{key} holds {value!r}, which argparse flags cannot write (a list of lists or of "
        "tables); give such a value to the script through {config}",
    )


def hydra_value(value: Any, key: str = "") -> str:
    """A value in Hydra's override grammar.

    >>> hydra_value("adam"), hydra_value("3"), hydra_value("a b"), hydra_value([1, "x", True])
    ('adam', "'3'", "'a b'", '[1,x,true]')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_number(value):
        return _number(value)
    if isinstance(value, list):
        return "[" + ",".join(hydra_value(v, key) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{hydra_value(v, key)}" for k, v in value.items()) + "}"
    text = str(value)
    if _HYDRA_BARE.fullmatch(text) and text.lower() not in _HYDRA_WORDS:
        return text
    return "'" + text.replace("'", "\\'") + "'"
