"""Typed exceptions. The CLI turns every :class:`EvalabError` into one line and exit code 2.

Library code never calls ``sys.exit`` and never uses ``assert`` for user input: it raises
one of these, with a message that names the offending input and says what would be right.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

#: how a caller with its own names for the library's settings calls one (the CLI: its option)
Naming = Callable[[str], str]


@dataclass(frozen=True)
class Setting:
    """A parameter of a library call named inside a refusal (``workers``, ``comet.model``).

    The library's words call it by that name; a caller with its own name for it words the
    refusal with that one (the CLI: ``-j``, ``--set comet.model``; see
    :meth:`EvalabError.worded`), so no library message names a command-line option.
    ``said``: the library's words for it where they are not its name (``the given`` for the
    CLI's ``-i``). ``aside``: named only by such a caller, in parentheses after the library's
    own words, with ``aside`` after the name (``use bos=False``; the CLI: ``use bos=False
    (--no-bos)``); ``None``: named by both.
    """

    name: str
    said: str | None = None
    aside: str | None = None

    def worded(self, naming: Naming | None) -> str:
        """The setting in a message: the library's words (``naming`` None), else
        ``naming(name)``."""
        if naming is None:
            return "" if self.aside is not None else self.name if self.said is None else self.said
        if self.aside is None:
            return naming(self.name)
        return f" ({naming(self.name)}{' ' + self.aside if self.aside else ''})"


#: a refusal's text: pieces of text and the settings it names between them
Part = str | Setting


class EvalabError(Exception):
    """Base class for errors caused by user input or settings (shown without traceback).

    The message is given in ``parts``: text, and :class:`Setting` where it names a setting
    of the call (``InputError(Setting("name_map"), " x=y: ...")``); ``str()`` is the
    library's words, :meth:`worded` a caller's.
    """

    def __init__(self, *parts: Part) -> None:
        self.parts: tuple[Part, ...] = parts
        super().__init__(self.worded())

    def worded(self, naming: Naming | None = None) -> str:
        """The message with each setting it names called ``naming(setting)`` (``None``: by
        the setting's name, the library's words)."""
        return "".join(p.worded(naming) if isinstance(p, Setting) else str(p) for p in self.parts)

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt from its attributes, not by calling __init__ with the message: a refusal
        # raised in a worker process (Ray, a shard) keeps its parts and its type's fields
        return (_rebuilt, (type(self), self.args), self.__dict__)


def _rebuilt(cls: type[EvalabError], args: tuple[Any, ...]) -> EvalabError:
    return cls.__new__(cls, *args)


class InputError(EvalabError, ValueError):
    """Bad data: unreadable file, wrong line counts, wrong reference layout, bad values."""


class SettingsError(EvalabError, ValueError):
    """An unknown name (metric, tokenizer, setting) or an invalid setting value."""


class SettingValueError(SettingsError):
    """A value given for one setting of a library call is refused.

    ``setting`` is the parameter's name in the library (``seed_column``), ``shown`` the value
    as given ('' when the setting as a whole is meant), ``reason`` what is wrong and what
    would be right. The library's words are ``seed_column 'x': reason``; a caller with its
    own name for the setting words it with that name (:meth:`worded`: the CLI's
    ``--seed-from``).
    """

    def __init__(self, setting: str, shown: str, reason: str) -> None:
        self.setting, self.shown, self.reason = setting, shown, reason
        super().__init__(Setting(setting), f" {shown}: {reason}" if shown else f": {reason}")


class OutOfRangeError(SettingValueError):
    """A setting's value outside its range: ``expected`` says what it must be (``>= 1``);
    worded ``jobs must be >= 1, got 0`` (the CLI: ``--jobs must be ...``)."""

    def __init__(self, setting: str, value: object, expected: str) -> None:
        self.value, self.expected = value, expected
        self.setting, self.shown, self.reason = setting, str(value), expected
        EvalabError.__init__(self, Setting(setting), f" must be {expected}, got {value}")


class MissingExtraError(EvalabError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(
        self, what: Part | tuple[Part, ...], extra: str, package: str | None = None
    ) -> None:
        pkg = f" ({package})" if package else ""
        super().__init__(
            *(what if isinstance(what, tuple) else (what,)),
            f" needs the optional dependency{pkg}: install it with `pip install 'evalab[{extra}]'`",
        )
        self.extra = extra


def require(module: str, *, what: Part, extra: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` naming ``extra``."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError(what, extra, module) from exc


class StoreBusyError(EvalabError, RuntimeError):
    """The run database stayed locked by another process for longer than the wait allows."""


class RunError(EvalabError):
    """An ablation run's result cannot be used (it raised, timed out, returned a metric that
    is no number ...): the message is the error stored with the run, ``traceback`` the tail of
    its traceback or log ('' when the check failed after the run itself succeeded)."""

    def __init__(self, error: str, traceback: str = "") -> None:
        super().__init__(error)
        self.error = error
        self.traceback = traceback


def first_line(exc: BaseException) -> str:
    """An exception's message as one line for a refusal: its first non-empty line, at most
    200 characters (a peer's message can run to a page), or its type when it has none."""
    line = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
    return line[:200]
