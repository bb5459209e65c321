"""Parse the ```console examples of README.md and docs/*.md, run them, compare their output.

The conventions (docs/development.md, "Examples in the docs are tests", says the same for
writers of pages):

* Only fenced blocks opened with ```console are run; ```text, ```sh, ```python ... are not.
* In a console block, a line starting with ``$ `` is a command, run with bash from the
  repository root (a scratch copy of it, see ``scratch_repo``); a command line ending with
  ``\\`` continues on the next line. Every other line is the expected output of the command
  above it: stdout and stderr together, trailing spaces ignored.
* ``$ NAME=value`` defines a variable for every later command of the same page
  (``W=../shared/wmt22``).
* A command must exit 0, or 2 when its expected output has a line starting with
  ``evalab: error:``.
* In expected output, a line ``...`` stands for any number of lines (none included), and
  ``...`` inside a line for any text on that line: use it for what depends on the machine
  (timings, paths) and say so in the prose.
* An HTML comment on the line just before the opening fence changes how the block runs:
  ``<!-- docs-test: exit-code: why -->`` runs it and checks exit codes only (the prose says
  why the output differs between machines); ``<!-- docs-test: slow: why -->`` runs it only
  under ``pytest -m slow``; ``<!-- docs-test: skip: why -->`` never runs it. Words may be
  combined (``<!-- docs-test: slow exit-code: trains 24 models -->``); the text after the
  second colon is the reason, for readers of the Markdown source.
* The commands of one page run in order in one scratch folder, so a page may build a file
  in one block and use it in a later one. Files a page writes land in that folder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

MARKER = re.compile(r"^<!--\s*docs-test:\s*(?P<words>[a-z -]+?)\s*(?::.*)?-->\s*$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")
MODES = {"exit-code", "slow", "skip"}


@dataclass
class Command:
    """One ``$`` command of a console block and the output the page shows for it."""

    script: str
    expected: list[str]
    line: int

    @property
    def expected_exit(self) -> int:
        return 2 if any(x.startswith("evalab: error:") for x in self.expected) else 0


@dataclass
class Block:
    """A ```console block: where it is, how it runs, and its commands."""

    path: Path
    line: int
    modes: set[str] = field(default_factory=set)
    commands: list[Command] = field(default_factory=list)


def parse_blocks(path: Path) -> list[Block]:
    """Every ```console block of a Markdown file, with the modes its marker comment sets."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```console":
            if lines[i].startswith("```"):
                i = _skip_fence(lines, i)  # a fence of another kind: its body is not Markdown
            i += 1
            continue
        block = Block(path, i + 1, _modes(path, lines, i))
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            if lines[i].startswith("$ "):
                script, first = lines[i][2:], i + 1
                while script.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    script += "\n" + lines[i]
                block.commands.append(Command(script, [], first))
            elif block.commands:
                block.commands[-1].expected.append(lines[i].rstrip())
            else:
                raise ValueError(f"{path}:{i + 1}: output before the first $ command")
            i += 1
        blocks.append(block)
        i += 1
    return blocks


def _skip_fence(lines: list[str], start: int) -> int:
    i = start + 1
    while i < len(lines) and lines[i].strip() != "```":
        i += 1
    return i


def _modes(path: Path, lines: list[str], fence: int) -> set[str]:
    prev = lines[fence - 1].strip() if fence > 0 else ""
    if not prev.startswith("<!--"):
        return set()
    match = MARKER.match(prev)
    if not match:
        raise ValueError(f"{path}:{fence}: unreadable docs-test marker {prev!r}")
    modes = set(match["words"].split())
    if not modes <= MODES:
        raise ValueError(f"{path}:{fence}: unknown docs-test mode(s) {sorted(modes - MODES)}")
    return modes


def output_matches(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` lines match ``expected`` with ``...`` wildcards (see module doc)."""
    expected = _trim(expected)
    actual = _trim([a.rstrip() for a in actual])
    patterns = [None if e.strip() == "..." else _line_pattern(e) for e in expected]
    # reachable[j]: the patterns so far can consume exactly the first j actual lines
    reachable = [True] + [False] * len(actual)
    for pattern in patterns:
        nxt = [False] * (len(actual) + 1)
        for j, ok in enumerate(reachable):
            if not ok:
                continue
            if pattern is None:
                for k in range(j, len(actual) + 1):
                    nxt[k] = True
                break
            if j < len(actual) and pattern.fullmatch(actual[j]):
                nxt[j + 1] = True
        reachable = nxt
    return reachable[len(actual)]


def _line_pattern(line: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in line.split("...")))


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def variables_before(blocks: list[Block], command: Command) -> Iterator[str]:
    """The ``NAME=value`` commands of the page above ``command`` (the page's variables)."""
    for block in blocks:
        for c in block.commands:
            if c.line >= command.line:
                return
            if ASSIGNMENT.match(c.script):
                yield c.script
