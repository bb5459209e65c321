"""Where each placeholder of a command template stands, as the POSIX shell reads the text.

:func:`layout` walks a template (literal characters and placeholders) the way ``/bin/sh``
would read it, nesting included (quotes, ``$( )``, backticks, ``${ }``, ``$(( ))``,
heredocs, comments), and says:

- whether the template needs a shell at all: a simple command (words, quotes and
  backslashes only) runs as an argv, with no shell;
- for each placeholder, its :class:`Slot`: *data* when its value is (part of) a word of
  some command, so that the value reaches the program exactly, as an argument; *code* when
  it stands in text some program reads as code: a word that also carries spaces or shell
  syntax (the script of ``sh -c 'python t.py {x}'``, an awk program, ``"a $(b {x})"``), an
  arithmetic expansion, ``${...}``, a heredoc's body, or a word of ``eval``/``let``/``[[``.

A value never enters shell text: a data slot's value reaches the shell as an environment
variable (``"${EVALAB_VALUE_1}"``), a code slot takes only a plain value (:data:`PLAIN`:
letters, digits and ``_@%+=:,./-``, which no shell or common interpreter reads as code),
and anything else is refused by the template layer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

#: characters that are the same text in every shell context and in the usual interpreters
PLAIN = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
_PLAIN_CHAR = re.compile(r"[A-Za-z0-9_@%+=:,./-]")
_OPERATORS = frozenset("|&;<>()\n")
_GLOB = frozenset("*?[")
#: a first word that only a shell understands (reserved words, builtins without a program)
_SHELL_WORDS = frozenset(
    (
        "!",
        "{",
        "}",
        "[[",
        "]]",
        "((",
        "))",
        "case",
        "do",
        "done",
        "elif",
        "else",
        "esac",
        "fi",
        "for",
        "function",
        "if",
        "in",
        "select",
        "then",
        "time",
        "until",
        "while",
        ".",
        ":",
        "alias",
        "bg",
        "break",
        "cd",
        "command",
        "continue",
        "eval",
        "exec",
        "exit",
        "export",
        "fg",
        "getopts",
        "hash",
        "jobs",
        "let",
        "local",
        "read",
        "readonly",
        "return",
        "set",
        "shift",
        "source",
        "times",
        "trap",
        "type",
        "ulimit",
        "umask",
        "unalias",
        "unset",
        "wait",
    )
)
#: after these a new command starts (``if x; then y``)
_COMMAND_STARTERS = frozenset(
    ("!", "{", "if", "then", "else", "elif", "do", "while", "until", "time")
)
#: commands whose words are evaluated as code (arithmetic or shell text)
_CODE_COMMANDS = frozenset({"eval", "let", "[[", "(("})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")

Quote = Literal["", '"', "'"]


@dataclass(frozen=True)
class Slot:
    """Where one placeholder stands: in code (``code``), or as data in ``quote``."""

    code: bool
    quote: Quote = ""


#: a word of a simple command: literal text, or (placeholder index, whether it is quoted)
Word = tuple[str | tuple[int, bool], ...]


@dataclass(frozen=True)
class Layout:
    """The placeholders' slots (in order) and, when no shell is needed, the argv words."""

    slots: tuple[Slot, ...]
    words: tuple[Word, ...] | None


class SyntaxProblem(ValueError):
    """Text the shell cannot read (an unclosed quote), at ``offset`` of the template."""

    def __init__(self, offset: int, message: str) -> None:
        super().__init__(message)
        self.offset = offset


@dataclass
class _Word:
    loud: bool = False  # carries spaces or shell syntax: a script, not a value
    present: bool = False  # an argument even when empty ("" or a placeholder)
    text: list[str] = field(default_factory=list)  # its characters (placeholders left out)
    segments: list[str | tuple[int, bool]] = field(default_factory=list)


@dataclass
class _Frame:
    kind: Literal["cmd", "dq", "sq", "code"]
    start: int  # offset of what opened it
    closer: str = ""  # ")" for $( ), "`" for backticks, "}" for ${ }, "))" arithmetic
    depth: int = 0  # open parentheses inside $( ) / braces inside ${ }
    word: _Word = field(default_factory=_Word)
    index: int = 0  # words so far of the current simple command
    code_command: bool = False  # the current command is eval / let / [[


Token = tuple[int, str | int]  # (offset, a character or the index of a placeholder)


class _Lexer:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.i = 0
        self.stack = [_Frame("cmd", 0)]
        self.shell = False
        self.slots: dict[int, tuple[list[_Word], Quote] | None] = {}  # None: code
        self.words: list[Word] = []
        self.heredocs: list[tuple[str, bool]] = []  # delimiters waiting for their body
        self.want_delimiter: list[bool] = []  # strip tabs? for each << whose word comes next
        self.escaped = False  # a backslash stands right before the next placeholder

    # -- helpers
    def peek(self, k: int = 0) -> str | int | None:
        j = self.i + k
        return self.tokens[j][1] if j < len(self.tokens) else None

    def owner(self) -> _Frame:
        """The innermost command frame: the one whose word the current character belongs to."""
        return next(f for f in reversed(self.stack) if f.kind in ("cmd", "code"))

    def literal(self, c: str, quoted: bool) -> None:
        f = self.owner()
        f.word.present = True
        f.word.text.append(c)
        f.word.segments.append(c)
        if not _PLAIN_CHAR.fullmatch(c) and (quoted or c not in _GLOB):
            f.word.loud = True

    def end_word(self, f: _Frame) -> None:
        w = f.word
        if w.present:
            text = "".join(w.text)
            if f.index == 0 and (text in _SHELL_WORDS or _ASSIGNMENT.match(text)):
                self.shell = True
            if f.index == 0 and text in _CODE_COMMANDS:
                f.code_command = True
            if self.want_delimiter and f is self.stack[0]:
                self.heredocs.append((text, self.want_delimiter.pop()))
            if f is self.stack[0]:
                self.words.append(tuple(w.segments))
            f.index = 0 if f.index == 0 and text in _COMMAND_STARTERS else f.index + 1
        f.word = _Word(loud=f.code_command or f.kind == "code")

    def end_command(self, f: _Frame) -> None:
        self.end_word(f)
        f.index, f.code_command = 0, False
        f.word = _Word(loud=f.kind == "code")

    def push(self, kind: Literal["cmd", "dq", "sq", "code"], start: int, closer: str = "") -> None:
        self.owner().word.present = True
        frame = _Frame(kind, start, closer, depth=1 if closer in (")", "}", "))") else 0)
        frame.word = _Word(loud=kind == "code")
        self.stack.append(frame)

    def pop(self) -> None:
        f = self.stack.pop()
        if f.kind in ("cmd", "code"):
            self.end_word(f)

    # -- the walk
    def run(self) -> None:
        while self.i < len(self.tokens):
            offset, tok = self.tokens[self.i]
            self.i += 1
            if isinstance(tok, int):
                self.placeholder(tok)
                continue
            kind = self.stack[-1].kind
            if kind == "sq":
                self.in_single(tok)
            elif kind == "dq":
                self.in_double(offset, tok)
            elif kind == "code":
                self.in_code(offset, tok)
            else:
                self.in_command(offset, tok)
        if len(self.stack) > 1:
            f = self.stack[-1]
            opener = {"sq": "'", "dq": '"', "code": "${ or $((", "cmd": "$( or `"}[f.kind]
            raise SyntaxProblem(f.start, f"the {opener} at column {f.start + 1} is never closed")
        self.end_command(self.stack[0])

    def placeholder(self, index: int) -> None:
        top = self.stack[-1]
        escaped, self.escaped = self.escaped, False
        if top.kind == "code" or escaped:
            self.slots[index] = None
            return
        quote: Quote = "'" if top.kind == "sq" else '"' if top.kind == "dq" else ""
        words = [f.word for f in self.stack if f.kind == "cmd"]
        for w in words:
            w.present = True
        self.slots[index] = (words, quote)
        if self.owner() is self.stack[0]:
            self.stack[0].word.segments.append((index, bool(quote)))

    def in_single(self, c: str) -> None:
        if c == "'":
            self.stack.pop()
        else:
            self.literal(c, True)

    def in_double(self, offset: int, c: str) -> None:
        if c == '"':
            self.stack.pop()
        elif c == "\\" and isinstance(self.peek(), int):
            self.escaped = True
            self.literal(c, True)
        elif c == "\\" and self.peek() in ("$", "`", '"', "\\", "\n"):
            nxt = str(self.peek())
            self.i += 1
            if nxt != "\n":
                self.literal(nxt, True)
        elif c in "$`":
            self.dollar_or_backtick(offset, c)
        else:
            self.literal(c, True)

    def in_code(self, offset: int, c: str) -> None:
        f = self.stack[-1]
        opens, closes = ("{", "}") if f.closer == "}" else ("(", ")")
        if c == opens:
            f.depth += 1
        elif c == closes:
            f.depth -= 1
            if f.depth == 0:
                if f.closer == "))" and self.peek() == ")":
                    self.i += 1
                self.stack.pop()
        elif c in "$`":
            self.dollar_or_backtick(offset, c)

    def dollar_or_backtick(self, offset: int, c: str) -> None:
        self.shell = True
        if c == "`":
            top = self.stack[-1]
            if top.kind == "cmd" and top.closer == "`":
                self.pop()
            else:
                self.push("cmd", offset, "`")
            return
        if self.peek() == "(" and self.peek(1) == "(":
            self.i += 2
            self.push("code", offset, "))")
            self.stack[-1].depth = 1
        elif self.peek() == "(":
            self.i += 1
            self.push("cmd", offset, ")")
        elif self.peek() == "{":
            self.i += 1
            self.push("code", offset, "}")
        else:
            self.owner().word.present = True  # $VAR, $1, $?: expanded at run time

    def in_command(self, offset: int, c: str) -> None:
        f = self.stack[-1]
        if c in " \t":
            self.end_word(f)
        elif c == "#" and not f.word.present:
            self.shell = True
            while self.peek() not in (None, "\n"):
                tok = self.peek()
                if isinstance(tok, int):  # a placeholder in a comment: never read
                    self.slots[tok] = ([], "")
                self.i += 1
        elif c == "'":
            self.push("sq", offset)
        elif c == '"':
            self.push("dq", offset)
        elif c == "\\":
            nxt = self.peek()
            self.i += 1
            if isinstance(nxt, str) and nxt != "\n":
                self.literal(nxt, True)
            elif nxt is None:
                self.literal("\\", True)
            elif isinstance(nxt, int):
                self.i -= 1
                self.escaped = True
        elif c in "$`":
            self.dollar_or_backtick(offset, c)
        elif c == ")" and f.closer == ")" and f.depth == 1:
            self.pop()
        elif c in _OPERATORS:
            self.operator(f, c)
        else:
            if c in _GLOB or (c == "~" and not f.word.present):
                self.shell = True
            self.literal(c, False)

    def operator(self, f: _Frame, c: str) -> None:
        self.shell = True
        if c == "(":
            f.depth += 1
        elif c == ")":
            f.depth -= 1
        if c == "<" and self.peek() == "<":
            self.i += 1
            strip = self.peek() == "-"
            self.i += strip
            self.end_word(f)
            self.want_delimiter.append(strip)
            return
        if c in "<>":
            self.end_word(f)
            return
        self.end_command(f)
        if c == "\n" and self.heredocs:
            self.heredoc_bodies()

    def heredoc_bodies(self) -> None:
        """Skip each pending heredoc's body; a placeholder there is in code."""
        for delimiter, strip in self.heredocs:
            line: list[str] = []
            while self.i < len(self.tokens):
                tok = self.tokens[self.i][1]
                self.i += 1
                if isinstance(tok, int):
                    self.slots[tok] = None
                    line.append("\0")  # a placeholder: the line is not the delimiter
                elif tok == "\n":
                    text = "".join(line)
                    if (text.lstrip("\t") if strip else text) == delimiter:
                        break
                    line = []
                else:
                    line.append(tok)
        self.heredocs = []


def layout(tokens: list[Token]) -> Layout:
    """The slots of the placeholders ``0..n-1`` in ``tokens`` (characters with their offsets,
    and placeholder indexes), and the argv words when the text needs no shell.

    >>> lay = layout(_tokens('python t.py "tag={}" x={}'))
    >>> lay.slots, lay.words is not None
    ((Slot(code=False, quote='"'), Slot(code=False, quote='')), True)
    >>> layout(_tokens("sh -c 'python t.py {}'")).slots
    (Slot(code=True, quote="'"),)
    """
    lexer = _Lexer(tokens)
    lexer.run()
    slots: list[Slot] = []
    for index in sorted(lexer.slots):
        where = lexer.slots[index]
        if where is None:
            slots.append(Slot(True))
        else:
            words, quote = where
            slots.append(Slot(any(w.loud for w in words), quote))
    return Layout(tuple(slots), None if lexer.shell else tuple(lexer.words))


def _tokens(text: str) -> list[Token]:
    """``{}`` as numbered placeholders (for the examples above)."""
    out: list[Token] = []
    n = 0
    i = 0
    while i < len(text):
        if text.startswith("{}", i):
            out.append((i, n))
            n += 1
            i += 2
        else:
            out.append((i, text[i]))
            i += 1
    return out
