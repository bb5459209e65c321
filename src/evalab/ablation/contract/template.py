"""Command templates: a study's ``command`` with its placeholders, parsed once, filled per run.

A template is checked before anything runs, so it cannot silently pass a placeholder
through to the command (every run would then train the same configuration):

- ``{config}``, ``{seed}``, ``{out}``: the run's JSON configuration file, its seed, and the
  JSON metrics file it writes;
- ``{key}``: the value of a configuration key; ``{optim.lr}`` reaches into a nested table;
- ``{args}``: the whole configuration as command-line arguments, in the study's
  ``args_style`` (:data:`ARGS_STYLES`);
- ``{{`` and ``}}``: a literal ``{`` and ``}``. Any other brace is an error.

No value ever becomes shell text (:mod:`evalab.ablation.contract.shellsyntax` says where each
placeholder stands). A template that is one simple command (words, quotes, backslashes)
runs with no shell: its argv is built word by word from the template's own words, each
value put in as it is. A template that needs ``/bin/sh`` (pipes, ``&&``, redirections,
``$( )``...) is run with each value in an environment variable, the script naming it
(``"${EVALAB_VALUE_1}"``). A placeholder standing in text a program reads as code (the
quoted script of ``sh -c '...'``, an awk program, ``$(( ))``, a heredoc) takes only a plain
value (letters, digits, ``_@%+=:,./-``); any other is refused with the safe spelling, and so
is a value no argument can carry (a NUL character, over :data:`ARG_LIMIT` bytes). How
values are written:

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

import dataclasses
import difflib
import math
import os
import re
import shlex
from dataclasses import dataclass
from typing import Any

from evalab.ablation.contract import keys
from evalab.ablation.contract.shellsyntax import PLAIN, Slot, SyntaxProblem, Token, Word, layout
from evalab.errors import SettingsError

#: how ``{args}`` writes a configuration (declared with ``[study] args_style``)
ARGS_STYLES: tuple[str, ...] = keys.keys_of("study")["args_style"].allowed
#: placeholders the runner fills; every other name is a configuration key
RUNNER_NAMES = ("config", "seed", "out", "args")
_NAME = re.compile(r"\{([A-Za-z0-9_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_][A-Za-z0-9_-]*)*)\}")
_HYDRA_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_\-./]*")
_UNPLACED = Slot(code=True)  # until the layout says where it stands
_HYDRA_WORDS = {"true", "false", "null", "none", "inf", "nan"}


class TemplateError(SettingsError):
    """A problem of a command template at character ``offset`` of its text."""

    def __init__(self, offset: int, message: str) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True)
class Placeholder:
    """``{name}`` at ``offset`` of the template, and where it stands (:class:`Slot`)."""

    name: str
    offset: int
    slot: Slot


@dataclass(frozen=True)
class CommandLine:
    """One run's command: what is executed (``argv``, with ``env`` added to the
    environment), the same as one shell line for people (``text``: shown and stored, never
    run), and the configuration values that went into it."""

    text: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    values: tuple[tuple[str, str], ...]  # (placeholder, the text shown for it), in order

    def words(self) -> list[str]:
        """The shown command split as the shell splits it."""
        return shlex.split(self.text)


@dataclass(frozen=True)
class CommandTemplate:
    """A parsed ``command``: literal text and placeholders, in order; ``words`` are the
    argv words when the template needs no shell (None: it runs under ``/bin/sh``)."""

    text: str
    parts: tuple[str | Placeholder, ...]
    style: str = "hydra"
    words: tuple[Word, ...] | None = None

    @property
    def placeholders(self) -> tuple[Placeholder, ...]:
        return tuple(p for p in self.parts if isinstance(p, Placeholder))

    @property
    def needs_shell(self) -> bool:
        return self.words is None

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
        """The command of one run (:class:`TemplateError` for a value that cannot be
        given where its placeholder stands)."""
        filled: list[list[str]] = []
        for p in self.placeholders:
            try:
                words = self._words(p.name, config, seed, config_path, out_path)
                _check_value(p, words)
            except TemplateError as exc:  # a value {args} or {key} cannot write: here
                raise TemplateError(p.offset, str(exc)) from None
            filled.append(words)
        shown = iter([_shown(w, p.slot) for p, w in zip(self.placeholders, filled, strict=True)])
        text = "".join(part if isinstance(part, str) else next(shown) for part in self.parts)
        shown = iter([_shown(w, p.slot) for p, w in zip(self.placeholders, filled, strict=True)])
        values = tuple((p.name, t) for p, t in zip(self.placeholders, shown, strict=True))
        if self.words is not None:
            return CommandLine(text, _argv(self.words, filled), (), values)
        script, env = self._script(filled)
        return CommandLine(text, ("/bin/sh", "-c", script), env, values)

    def _script(self, filled: list[list[str]]) -> tuple[str, tuple[tuple[str, str], ...]]:
        """The shell script (placeholders as references to environment variables, or a
        plain value in code) and those variables."""
        pieces: list[str] = []
        env: list[tuple[str, str]] = []
        n = 0
        for part in self.parts:
            if isinstance(part, str):
                pieces.append(part)
                continue
            words = filled[n]
            n += 1
            if part.slot.code:
                pieces.append(" ".join(words))
                continue
            if part.slot.quote or len(words) == 1:
                names = [f"EVALAB_VALUE_{n}"]
                env.append((names[0], " ".join(words)))
            else:
                names = [f"EVALAB_VALUE_{n}_{k}" for k in range(1, len(words) + 1)]
                env += zip(names, words, strict=True)
            refs = " ".join(f'"${{{name}}}"' for name in names)
            pieces.append(
                {"": refs, '"': f"${{{names[0]}}}", "'": f"'\"${{{names[0]}}}\"'"}[part.slot.quote]
            )
        return "".join(pieces), tuple(env)

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


#: the longest value one program argument (or environment variable) carries on Linux
#: (MAX_ARG_STRLEN is 128 KiB, with the variable's name)
ARG_LIMIT = 131_072 - 64


def _check_value(p: Placeholder, words: list[str]) -> None:
    """Refuse a value no argument can carry (NUL, too long), and one that would be code."""
    for w in words:
        if "\0" in w:
            raise TemplateError(
                p.offset,
                f"{{{p.name}}}'s value {_short(w)} holds a NUL character, which no program "
                "argument can carry; give such a value to the script through {config}",
            )
        try:
            size = len(os.fsencode(w))
        except UnicodeEncodeError:  # a lone surrogate: no bytes stand for it
            raise TemplateError(
                p.offset,
                f"{{{p.name}}}'s value {_short(w)} holds a character no program argument can "
                "carry (a lone surrogate); give such a value to the script through {config}",
            ) from None
        if size > ARG_LIMIT:
            raise TemplateError(
                p.offset,
                f"{{{p.name}}}'s value is {size} bytes, more than one program argument carries "
                f"({ARG_LIMIT}); give it to the script through {{config}}",
            )
    if p.slot.code and not all(PLAIN.fullmatch(w) for w in words):
        raise TemplateError(
            p.offset,
            f"{{{p.name}}} stands in text a program reads as code (a quoted script such as "
            "sh -c '...', $( ) or backticks with other words, ${ }, arithmetic, a heredoc), "
            f"and its value {_short(' '.join(words))} is not plain (letters, digits, "
            "_@%+=:,./-); give it as an argument of its own: sh -c '... \"$1\"' sh "
            f"{{{p.name}}}",
        )


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:60] + "...")


def _shown(words: list[str], slot: Slot) -> str:
    """The value as it would be written at its place in one shell line (for people)."""
    if slot.code:
        return " ".join(words)
    if slot.quote == '"':
        return re.sub(r'([\\$`"])', r"\\\1", " ".join(words))
    if slot.quote == "'":
        return " ".join(words).replace("'", "'\\''")
    return " ".join(shlex.quote(w) for w in words)


def _argv(words: tuple[Word, ...], filled: list[list[str]]) -> tuple[str, ...]:
    """The argv of a template that needs no shell: each word's literal text and values
    (a value outside quotes is as many words as it has; inside quotes, one)."""
    argv: list[str] = []
    for word in words:
        current, present = "", False
        for seg in word:
            if isinstance(seg, str):
                current, present = current + seg, True
                continue
            index, quoted = seg
            values = filled[index]
            if quoted:
                current, present = current + " ".join(values), True
            elif values:
                *first, last = values
                for i, v in enumerate(first):
                    argv.append(current + v if i == 0 else v)
                current = last if first else current + last
                present = True
        if present:
            argv.append(current)
    return tuple(argv)


def parse_template(text: str, style: str = "hydra") -> CommandTemplate:
    """Split a template into literal text and placeholders; :class:`TemplateError` for a
    brace that is neither ``{name}`` nor escaped as ``{{`` / ``}}``, or a quote never closed.

    >>> [p.name for p in parse_template("awk '{{print $1}}' {config} > {out}").placeholders]
    ['config', 'out']
    """
    parts: list[str | Placeholder] = []
    tokens: list[Token] = []
    literal: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if text.startswith(("{{", "}}"), i):
            literal.append(c)
            tokens.append((i, c))
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
            tokens.append((i, sum(isinstance(q, Placeholder) for q in parts)))
            parts += ["".join(literal), Placeholder(m.group(1), i, _UNPLACED)]
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
        tokens.append((i, c))
        i += 1
    parts.append("".join(literal))
    return _laid_out(text, [p for p in parts if p != ""], tokens, style)


def _laid_out(
    text: str, parts: list[str | Placeholder], tokens: list[Token], style: str
) -> CommandTemplate:
    """The template with each placeholder's slot, as the shell reads the text."""
    try:
        lay = layout(tokens)
    except SyntaxProblem as exc:
        raise TemplateError(exc.offset, str(exc)) from None
    slots = iter(lay.slots)
    placed = tuple(
        p if isinstance(p, str) else dataclasses.replace(p, slot=next(slots)) for p in parts
    )
    return CommandTemplate(text, placed, style, lay.words)


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
    r"""A value in Hydra's override grammar. In a quoted value Hydra reads ``\'`` as a
    quote and a run of backslashes before a quote (or the closing one) as half as many, so
    those runs are doubled; other backslashes stay as they are.

    >>> hydra_value("adam"), hydra_value("3"), hydra_value("a b"), hydra_value([1, "x", True])
    ('adam', "'3'", "'a b'", '[1,x,true]')
    >>> print(hydra_value("it's"), hydra_value("C:\\dir\\"), hydra_value("a\\b"))
    'it\'s' 'C:\dir\\' 'a\b'
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
    quoted = re.sub(r"(\\*)'", lambda m: m.group(1) * 2 + "\\'", text)
    return "'" + re.sub(r"(\\+)\Z", r"\1\1", quoted) + "'"
