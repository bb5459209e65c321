"""Words are made at the edge: no module below ``report/`` builds an English sentence for
users (DESIGN.md, "typed values inside, words at the edge").

The layers below the report (``ablation``, ``stats``, ``metrics``, ``metaeval``) hand the
report numbers and codes; the report layer writes the sentences (the ablation notes:
``evalab.ablation.analysis.note_kinds`` holds their values, ``evalab.report.notes`` their words). A
refusal is the exception: the one clear line an exception carries to the user.

The rule, checked on the syntax tree of every module of those packages:

- a *phrase* is a piece of string literal with two words in a row (``"rows compared"``);
  SQL statements are not phrases;
- a *sentence* is text built from values around a phrase (an f-string, ``%``,
  ``.format``, ``+`` or ``.join`` with a phrase), or a phrase literal that a function
  returns or yields or that is appended to a list;
- a sentence is allowed where it becomes an error: inside a ``raise`` or an ``assert``, in
  the arguments of an exception or a warning (a callee named ``...Error``,
  ``...Exception``, ``...Warning``, ``warn``, ``error``), in a name that the same function
  later raises, in a function that makes an error line for its caller to raise (named
  ``..._error``, ``..._errors``), in an exception class, and in ``__repr__``/``__str__``;
- anything else is a violation, unless :data:`ALLOWED` names its function with the reason.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "evalab"
#: the packages below the report whose values the report renders
BELOW_REPORT = ("ablation", "stats", "metrics", "metaeval")

_PHRASE = re.compile(r"\b[A-Za-z]{2,}[,;:]?\s+[A-Za-z]{2,}\b")
_SQL = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|PRAGMA|WITH)\b")
_ERROR_CALLEE = re.compile(r"(Error|Exception|Warning|Exit|^warn|^error|^warning)$")
_ERROR_FUNCTION = re.compile(r"_errors?$|^__(repr|str)__$")
_APPENDS = ("append", "extend", "insert")

#: why a function below the report still builds sentences, by kind
_ERROR_VALUE = "an error line returned as a value ((value, error) tuples): the engine raises exceptions next (issue 28)"
_STATUS = "`ablate status` lines in words: to become values that report/ words"
_EFFECTS = "a grid effect's name and arithmetic in words: to become codes that report/ words"
_METAEVAL_NOTES = "meta-eval notes in words: to become codes, as the ablation notes did"
_ERROR_LINE = "a line for the refusal its caller raises"

#: (module, function) -> why it builds sentences today; each entry must still be needed
ALLOWED: dict[tuple[str, str], str] = {
    ("evalab.ablation.execution.executors", "_start"): _ERROR_VALUE,
    ("evalab.ablation.importing.sources", "foreign_record"): _ERROR_VALUE,
    ("evalab.ablation.store.run_store", "live_lease"): _ERROR_LINE,
    ("evalab.stats.paired", "_stack"): _ERROR_LINE,
    ("evalab.ablation.execution.status", "superseded_lines"): _STATUS,
    ("evalab.ablation.execution.status", "stale_lines"): _STATUS,
    ("evalab.ablation.execution.status", "example_lines"): _STATUS,
    ("evalab.ablation.store.run_store", "_stale_checkpoint"): _STATUS,
    ("evalab.stats.effects", "contrast"): _EFFECTS,
    ("evalab.stats.effects", "main_effects"): _EFFECTS,
    ("evalab.stats.effects", "removals"): _EFFECTS,
    ("evalab.stats.effects", "pair_effects"): _EFFECTS,
    ("evalab.metrics.rouge", "<module>"): "a setting's help text, which `evalab metrics` shows",
    (
        "evalab.metrics.loss",
        "_score_components",
    ): "the score's verbose line, part of its result (as sacrebleu's)",
    ("evalab.metaeval.evaluate", "_enough_defined"): _METAEVAL_NOTES,
    ("evalab.metaeval.evaluate", "_system_level"): _METAEVAL_NOTES,
    ("evalab.metaeval.evaluate", "_segment_level"): _METAEVAL_NOTES,
}


@dataclass(frozen=True)
class Violation:
    module: str
    function: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.module}:{self.line} in {self.function}(): {self.text}"


def _is_phrase(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and bool(_PHRASE.search(node.value))
        and not _SQL.match(node.value)
    )


def _has_phrase(node: ast.AST) -> bool:
    """A phrase literal, or an f-string with a phrase among its literal parts (not SQL)."""
    if isinstance(node, ast.JoinedStr):
        first = node.values[0] if node.values else None
        sql = isinstance(first, ast.Constant) and _SQL.match(str(first.value))
        return not sql and any(_is_phrase(v) for v in node.values)
    return _is_phrase(node)


def _built(node: ast.AST) -> bool:
    """Text built from values around a phrase."""
    if isinstance(node, ast.JoinedStr):
        return _has_phrase(node) and any(isinstance(v, ast.FormattedValue) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod | ast.Add):
        sides = (node.left, node.right)
        return any(_has_phrase(s) for s in sides) and not all(
            isinstance(s, ast.Constant | ast.JoinedStr) for s in sides
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in ("format", "join") and _has_phrase(node.func.value)
    return False


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


class _Checker(ast.NodeVisitor):
    def __init__(self, module: str) -> None:
        self.module = module
        self.function = "<module>"
        self.raised: set[str] = set()  # names the current function raises
        self.found: list[Violation] = []
        self.error_depth = 0

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer = (self.function, self.raised, self.error_depth)
        self.function = node.name
        self.raised = _raised_names(node)
        self.error_depth += bool(_ERROR_FUNCTION.search(node.name))
        self.generic_visit(node)
        self.function, self.raised, self.error_depth = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        """An exception class's methods make its message."""
        error = any(_ERROR_CALLEE.search(ast.unparse(b).rpartition(".")[2]) for b in node.bases)
        self.error_depth += error
        self.generic_visit(node)
        self.error_depth -= error

    def _in_error(self, node: ast.AST) -> None:
        self.error_depth += 1
        self.generic_visit(node)
        self.error_depth -= 1

    def visit_Raise(self, node: ast.Raise) -> None:
        self._in_error(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        self._in_error(node)

    def visit_Call(self, node: ast.Call) -> None:
        if _ERROR_CALLEE.search(_callee(node)):
            self._in_error(node)
            return
        if _callee(node) in _APPENDS and isinstance(node.func, ast.Attribute):
            for arg in node.args:
                self._flag_value(arg)
        self._flag(node)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if any(isinstance(t, ast.Name) and t.id in self.raised for t in node.targets):
            self._in_error(node)  # msg = f"..."; raise Error(msg)
            return
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            self._flag_value(node.value)
        self.generic_visit(node)

    def visit_Yield(self, node: ast.Yield) -> None:
        if node.value is not None:
            self._flag_value(node.value)
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self._flag(node)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self._flag(node)
        self.generic_visit(node)

    def _flag_value(self, node: ast.AST) -> None:
        """A phrase literal handed on as data (returned, yielded, appended)."""
        for part in _alternatives(node):
            if _is_phrase(part):
                self._add(part)

    def _flag(self, node: ast.AST) -> None:
        if _built(node):
            self._add(node)

    def _add(self, node: ast.AST) -> None:
        if self.error_depth:
            return
        text = ast.unparse(node)
        violation = Violation(self.module, self.function, getattr(node, "lineno", 0), text[:80])
        if violation not in self.found and not any(
            v.line == violation.line and v.function == violation.function for v in self.found
        ):
            self.found.append(violation)


def _alternatives(node: ast.AST) -> list[ast.AST]:
    """The values an expression may be: both arms of ``a if c else b``, list elements."""
    if isinstance(node, ast.IfExp):
        return [*_alternatives(node.body), *_alternatives(node.orelse)]
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [x for e in node.elts for x in _alternatives(e)]
    return [node]


def _raised_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names used inside the function's ``raise`` statements and error calls."""
    names: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Raise) or (
            isinstance(node, ast.Call) and _ERROR_CALLEE.search(_callee(node))
        ):
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return names


def violations_in(source: str, module: str) -> list[Violation]:
    """The sentences ``source`` builds outside an error (the rule of this module's docstring)."""
    checker = _Checker(module)
    checker.visit(ast.parse(source))
    return checker.found


def all_violations() -> list[Violation]:
    out = []
    for package in BELOW_REPORT:
        for path in sorted((SRC / package).rglob("*.py")):
            module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
            out += violations_in(path.read_text(encoding="utf-8"), module)
    return out


def test_no_module_below_the_report_builds_a_sentence():
    found = [v for v in all_violations() if (v.module, v.function) not in ALLOWED]
    assert not found, (
        "sentences built below report/ (make a typed value; words go in report/):\n"
        + "\n".join(map(str, found))
    )


def test_every_allowed_function_still_builds_a_sentence():
    needed = {(v.module, v.function) for v in all_violations()}
    assert not set(ALLOWED) - needed, "remove from ALLOWED: " + ", ".join(
        f"{m}.{f}" for m, f in sorted(set(ALLOWED) - needed)
    )


PLANTED = """
def notes(rows, alpha):
    out = []
    out.append(f"{len(rows)} rows compared at alpha {alpha:g}")
    out.append("Grid effects are not adjusted.")
    return out

def label(n):
    return "rows compared: " + str(n)

def refused(x):
    if x < 0:
        raise ValueError(f"x = {x} must be at least 0")
    msg = f"the value {x} is too large"
    if x > 9:
        raise ValueError(msg)
    return x

def bounds_error(x):
    return f"{x} is outside its bounds"

def signature(n):
    return f"bs:{n}|seed:0"

def query(cols):
    return f"SELECT {cols} FROM runs WHERE study=?"

class TooLong(ValueError):
    def text(self, n):
        return f"{n} tokens is too long"
"""


def test_the_checker_finds_planted_sentences_and_spares_errors():
    found = violations_in(PLANTED, "planted")
    assert [(v.function, v.line) for v in found] == [("notes", 4), ("notes", 5), ("label", 9)]


def test_the_checker_sees_format_join_and_returned_alternatives():
    source = """
def a(n):
    return "{} rows compared".format(n)

def b(parts):
    return "; and then ".join(parts)

def c(ok):
    return "all rows compared" if ok else "no rows compared"

def d(n):
    return "%d rows compared" % n
"""
    assert [v.function for v in violations_in(source, "planted")] == ["a", "b", "c", "d"]


#: a command-line option in a message (``--jobs``, ``--set``, ``-r``): the CLI's word, not the
#: library's
_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z-]+|-[a-z](?![\w-]))")


class _OptionFinder(_Checker):
    """The options named in the text of errors: inside a ``raise``, an error's arguments, a
    name the function raises, an ``..._error`` function or an exception class (the places
    :class:`_Checker` spares), docstrings left out."""

    def __init__(self) -> None:
        super().__init__("")
        self.options: list[tuple[int, str]] = []

    def visit_Expr(self, node: ast.Expr) -> None:
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if self.error_depth and isinstance(node.value, str):
            self.options += [(node.lineno, m) for m in _OPTION.findall(node.value)]


def _option_words(tree: ast.AST) -> list[tuple[int, str]]:
    """Each option named in the text of an error (:class:`_OptionFinder`)."""
    finder = _OptionFinder()
    finder.visit(tree)
    return finder.options


_PEER_FLAG = "a peer tool's own flag in the command that would help, not an option of evalab"

#: ``module: option`` an error below cli/ may still name, with the reason
OPTION_HINTS = {
    "ablation/study/command.py: --key": "argparse's syntax (what args_style writes), not an option of evalab",
    "ablation/contract/template.py: -c": "`sh -c '...'`, the shell's flag, in the template's text",
    "ablation/store/run_store.py: -f": "`ulimit -f`: " + _PEER_FLAG,
    "io.py: -t": "`gzip -t`, `iconv -t`: " + _PEER_FLAG,
    "io.py: -f": "`iconv -f`: " + _PEER_FLAG,
    "metrics/ray_shards.py: --head": "`ray start --head`: " + _PEER_FLAG,
    "metrics/semantic.py: --model": "the `evalab semsim baseline` command that makes the missing file",
    "metrics/semantic.py: --out": "the `evalab semsim baseline` command that makes the missing file",
}


def test_the_library_names_settings_not_options():
    # run_study(jobs=0), align_human(name_map=...), binary_outcomes: the library names its
    # parameter (errors.Setting, SettingValueError.setting); the CLI words it as its option
    # (cli/app.py option_of), so a library user never reads an option they do not have
    found = {
        f"{path.relative_to(SRC)}: {word}"
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] != "cli"
        for _, word in _option_words(ast.parse(path.read_text(encoding="utf-8")))
    }
    assert found == set(OPTION_HINTS), (
        "name the setting (errors.Setting), not the option: "
        + ", ".join(sorted(found - set(OPTION_HINTS)))
        if found - set(OPTION_HINTS)
        else "remove from OPTION_HINTS: " + ", ".join(sorted(set(OPTION_HINTS) - found))
    )


def test_the_option_finder_sees_every_place_of_an_error():
    source = """
def a(x):
    raise SettingsError(f"--row {x}: no such row")

def b(n):
    msg = f"-j {n} is one process"
    raise SettingsError(msg)

def c_error(n):
    return f"give -r REF for {n}"

def d(n):
    "Refuse a bad --jobs."
    return InputError(f"pass --source for {n}")

class E(InputError):
    def text(self):
        return "use --set x=1"

def f(n):
    return f"--jobs {n} in a note"
"""
    assert _option_words(ast.parse(source)) == [
        (3, "--row"),
        (6, "-j"),
        (10, "-r"),
        (14, "--source"),
        (18, "--set"),
    ]
