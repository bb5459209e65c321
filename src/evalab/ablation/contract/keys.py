"""The keys of a study file, declared once: table, name, type, default, allowed values, help.

Every key a study file may hold is one :class:`Key` in :data:`KEYS`. The parser of each
table takes its known keys (the "unknown key" refusals list them in this order), its
required keys (a missing one is refused with its help text) and its defaults from here;
a key whose value stands on its own (a name, a number of seconds, a list of seeds) also
names its :data:`Check`, applied by :func:`checked_values`. Checks that need other keys
(``primary`` among ``metrics``, ``bounds`` of declared metrics) stay with their parsers
(:mod:`~evalab.ablation.study.load` and the section modules it calls). Adding a key is one line here (and its use).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: the longest study name: it names a run folder, and the file system's limit is 255 bytes
MAX_NAME_LENGTH = 100
_ENTRY_RE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")
# a study name names its run folder: one plain path component, nothing hidden
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._+-]*$")


class Refused(Exception):
    """A key's value is refused; the message says why (the parser adds file, line, key)."""


#: a check of one value: returns nothing, raises :class:`Refused` with the reason
Check = Callable[[Any], None]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: the default of a key that must be given
REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Key:
    """One key of a study-file table (``table`` is ``""`` for the top-level sections)."""

    table: str
    name: str
    kind: str  # its type in words
    help: str  # what it means: the docs and the "missing" refusal show it
    default: Any = None
    allowed: tuple[Any, ...] = ()
    check: Check | None = None

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


def _plain_name(name: Any) -> None:
    if not isinstance(name, str) or not _NAME_RE.match(name) or ".." in name:
        raise Refused(
            f"{name!r} is not a plain name: it names the study's run folder, so use letters, "
            "digits, space and . _ + - (no / \\ or .., not starting with . or a space)"
        )
    if len(name) > MAX_NAME_LENGTH:
        raise Refused(
            f"is {len(name)} characters long; it names the study's run folder, so at most "
            f"{MAX_NAME_LENGTH}"
        )


def _entry_point(point: Any) -> None:
    if point is not None and (not isinstance(point, str) or not _ENTRY_RE.match(point)):
        raise Refused(f"{point!r} is not of the form 'package.module:function'")


def _seeds(seeds: Any) -> None:
    if not isinstance(seeds, list) or not seeds:
        raise Refused("is empty; give at least one integer seed, e.g. seeds = [0, 1, 2]")
    if not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise Refused(f"must be integers, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise Refused(f"has duplicates: {seeds!r}")


def is_number(value: Any) -> bool:
    """An int or a float, not a bool (TOML's inf and nan included)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _seconds(value: Any) -> None:
    if value is not None and (not is_number(value) or value <= 0):
        raise Refused(f"must be a positive number of seconds, got {value!r}")


def _count(value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise Refused(f"must be an integer >= 0, got {value!r}")


def _text(value: Any) -> None:
    if not isinstance(value, str):
        raise Refused("must be a string")


def _optional_word(value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise Refused("must be a non-empty string")


def _megabytes(value: Any) -> None:
    if not is_number(value) or not value > 0 or value == float("inf"):
        raise Refused(f"must be a positive number of MB, got {value!r}")


def _flag(value: Any) -> None:
    if not isinstance(value, bool):
        raise Refused(f"must be true or false, got {value!r}")


_S = "study"
KEYS: tuple[Key, ...] = (
    # the top-level sections
    Key("", "study", "table", "the study: name, entry point or command, seeds, metrics", REQUIRED),
    Key("", "metrics", "tables", "[metrics.NAME]: a metric evalab computes from each run's outputs file", {}),
    Key("", "base", "table", "the full configuration every variant starts from", REQUIRED),
    Key("", "evaluation", "table", "evaluation-only keys with their defaults (stage = 'eval' rows)", {}),
    Key("", "variant", "array of tables", "[[variant]]: one row of the study each", []),
    Key("", "grid", "table", "key -> list of values: a full factorial over them", {}),
    Key("", "reference", "tables", "[reference.COLUMN]: side-by-side columns, keyed by row label", {}),
    Key("", "display", "table", "column names and derived columns of the report", {}),
    Key("", "curves", "table", "rules over the per-step values runs log", {}),
    # [study]
    Key(_S, "name", "string", "study name (string)", REQUIRED, check=_plain_name),
    Key(_S, "description", "string", "free text", "", check=_text),
    Key(_S, "entry", "string", "'package.module:function' called as function(config, seed)", check=_entry_point),
    Key(_S, "command", "string", "shell command template: {config} {seed} {out}, {key} (a configuration key, {optim.lr} nested), "
        "{args} (the whole configuration); {{ and }} for literal braces"),
    Key(_S, "args_style", "string", 'how {args} writes the configuration: "hydra" (key=value, the default) or "argparse" (--key value)',
        "hydra", ("hydra", "argparse")),
    Key(_S, "seeds", "list of integers", "list of integer seeds", REQUIRED, check=_seeds),
    Key(_S, "metrics", "list of strings", "list of metric names the run returns (optional when [metrics.NAME] tables declare computed metrics)"),
    Key(_S, "primary", "string", "the metric the report leads with"),
    Key(_S, "higher_is_better", "table", "table metric -> true/false", {}),
    Key(_S, "timeout", "number", "seconds per run", check=_seconds),
    Key(_S, "retries", "integer", "extra attempts after a failed run", 0, check=_count),
    Key(_S, "resources", "table", "{ cpus = 1, gpus = 0 } per run (Ray)", {}),
    Key(_S, "code_version", "string", "string that changes when the code changes", check=_optional_word),
    Key(_S, "evaluate", "string", "'package.module:function' called as function(config, seed, checkpoint_dir) by stage = 'eval' rows",
        check=_entry_point),
    Key(_S, "paired_seeds", "boolean", "true when seed s of every row shares data order/initialisation (deltas paired by seed); default false",
        False, check=_flag),
    Key(_S, "bounds", "table", "metric -> [low, high]: the values a metric can take, e.g. { acc = [0, 100] }", {}),
    Key(_S, "min_effect", "number or table", "smallest effect of interest: a number (for the primary metric) or metric -> number", {}),
    Key(_S, "inputs", "list of strings", 'list of data files the runs read, as glob patterns relative to the study file, e.g. ["data/*"]', []),
    Key(_S, "definitions", "table", "metric -> what it measures (the report prints it; computed metrics print their signature)", {}),
    Key(_S, "shared_folder", "boolean", "true when every Ray node sees the store's run folders at the same path (NFS); false: run folders travel "
        "through Ray", False, check=_flag),
    Key(_S, "transfer_limit_mb", "number", "the largest run folder (MB) that travels through Ray between a node and the driver", 1024,
        check=_megabytes),
    # [study] resources
    Key("study.resources", "cpus", "number", "CPUs per run (Ray)", 1),
    Key("study.resources", "gpus", "number", "GPUs per run (Ray)", 0),
    # [[variant]]
    Key("variant", "label", "string", "the row's label", REQUIRED),
    Key("variant", "description", "string", "free text", ""),
    Key("variant", "stage", "string", '"train" (retrained) or "eval" (suppressed at evaluation of a trained row\'s checkpoints)',
        "train", ("train", "eval")),
    Key("variant", "from", "string", "the trained row a stage = 'eval' row evaluates", "base"),
    Key("variant", "set", "table", "the [base] keys the row changes", {}),
    Key("variant", "component", "string", "the component the row removes or adds"),
    # [metrics.NAME]
    Key("metrics.NAME", "metric", "string", "an evalab metric name (see `evalab metrics`)", REQUIRED),
    Key("metrics.NAME", "settings", "table", 'table of the metric\'s settings, e.g. { tokenize = "13a" }', {}),
    Key("metrics.NAME", "outputs", "string", "file name the run writes in its run folder, one output segment per line", REQUIRED),
    Key("metrics.NAME", "references", "list of strings", "list of reference files (paths relative to the study file), one segment per line",
        REQUIRED),
    Key("metrics.NAME", "source", "string", "source file (relative to the study file) for metrics that read sources"),
    # [curves]
    Key("curves", "select", "string", '"last" | "min:METRIC" | "max:METRIC": the logged step whose values are the run\'s', "last"),
    Key("curves", "stop_when", "string", '"METRIC not decreasing for N logs" (or increasing): log() then returns True'),
)  # fmt: skip


def keys_of(table: str) -> dict[str, Key]:
    """The keys of one table, in their declared order."""
    return {k.name: k for k in KEYS if k.table == table}


def names(table: str) -> tuple[str, ...]:
    """The key names of one table, in their declared order."""
    return tuple(keys_of(table))


def helps(table: str) -> dict[str, str]:
    """Key name -> help text of one table."""
    return {k.name: k.help for k in KEYS if k.table == table}


def checked_values(
    table: str, given: dict[str, Any], refuse: Callable[[Key, str, bool], Exception]
) -> dict[str, Any]:
    """Every key of ``table``: the value given or its default (a copy), each checked with
    its :data:`Check` in declared order. A missing required key raises
    ``refuse(key, why, True)``, a refused value ``refuse(key, why, False)``."""
    out: dict[str, Any] = {}
    for key in keys_of(table).values():
        if key.name not in given:
            if key.required:
                raise refuse(key, f"missing ({key.help})", True)
            out[key.name] = copy.copy(key.default)
            continue
        value = given[key.name]
        if key.check is not None:
            try:
                key.check(value)
            except Refused as exc:
                raise refuse(key, str(exc), False) from None
        out[key.name] = value
    return out
