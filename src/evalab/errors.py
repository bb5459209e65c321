"""Typed exceptions. The CLI turns every :class:`EvalabError` into one line and exit code 2.

Library code never calls ``sys.exit`` and never uses ``assert`` for user input: it raises
one of these, with a message that names the offending input and says what would be right.
"""

from __future__ import annotations

from types import ModuleType


class EvalabError(Exception):
    """Base class for errors caused by user input or settings (shown without traceback)."""


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
    ``--seed-from``), so no library message names a command-line option.
    """

    def __init__(self, setting: str, shown: str, reason: str) -> None:
        self.setting, self.shown, self.reason = setting, shown, reason
        super().__init__(self.worded(setting))

    def worded(self, name: str) -> str:
        """The message with the setting called ``name``."""
        return f"{name} {self.shown}: {self.reason}" if self.shown else f"{name}: {self.reason}"


class OutOfRangeError(SettingValueError):
    """A setting's value outside its range: ``expected`` says what it must be (``>= 1``);
    worded ``jobs must be >= 1, got 0`` (the CLI: ``--jobs must be ...``)."""

    def __init__(self, setting: str, value: object, expected: str) -> None:
        self.value, self.expected = value, expected
        super().__init__(setting, str(value), expected)

    def worded(self, name: str) -> str:
        return f"{name} must be {self.expected}, got {self.value}"


class MissingExtraError(EvalabError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, what: str, extra: str, package: str | None = None) -> None:
        pkg = f" ({package})" if package else ""
        super().__init__(
            f"{what} needs the optional dependency{pkg}: install it with "
            f"`pip install 'evalab[{extra}]'`"
        )
        self.extra = extra


def require(module: str, *, what: str, extra: str) -> ModuleType:
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
