"""Per-step values of a run (learning curves): logging, the selection rule, early stopping,
and their compact storage.

A run logs values at steps, from an entry point::

    from evalab.ablation import log

    for step in range(steps):
        ...
        if log(step=step, loss=loss, val_loss=val_loss):   # True once [curves] stop_when holds
            break

or, from a command, by writing the same records (one JSON object a line, ``{"step": 10,
"loss": 0.52}``) to ``metrics.jsonl`` in its run folder (beside ``{out}``; the folder is also
in the environment as ``EVALAB_RUN_DIR``). Outside a run ``log`` writes nothing and returns
False, so a script runs unchanged on its own.

The study's ``[curves]`` table declares the rules::

    [curves]
    select = "min:val_loss"     # "last" (default) | "min:METRIC" | "max:METRIC"
    stop_when = "val_loss not decreasing for 5 logs"   # entry points: log() returns True

``select`` picks the step whose values are the run's: ``last`` takes each metric's last
logged value, ``min:val_loss`` every metric's value at the step of the lowest ``val_loss``.
With ``select`` declared, a metric of ``[study] metrics`` that the run logged is taken from
its curve (the step is stored with the run); without it, the values the run returns are its
values and a metric it does not return takes its last logged value. ``stop_when`` is
``METRIC not decreasing|increasing for N logs``: N logs of METRIC in a row without a new best
value; the step at which it first held is stored with the run.

Storage: one blob per run and metric in the store's ``curves`` table: the steps
delta-encoded as int64 and the values as float64, each byte-shuffled and compressed with
zlib (lossless; a smooth curve compresses to a fraction of its 16 bytes a step).
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import sqlite3
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalab.ablation.contract import keys
from evalab.errors import RunError

if TYPE_CHECKING:
    import numpy as np

LOG_FILE = "metrics.jsonl"
RUN_DIR_ENV = "EVALAB_RUN_DIR"
STOP_ENV = "EVALAB_STOP_WHEN"
CURVES_DDL = """CREATE TABLE IF NOT EXISTS curves (
        study TEXT NOT NULL, run_key TEXT NOT NULL, metric TEXT NOT NULL, steps INTEGER NOT NULL,
        data BLOB NOT NULL, PRIMARY KEY (study, run_key, metric))"""
_MAGIC = b"EVC1"
_SELECT_RE = re.compile(r"^(last|(min|max):([A-Za-z_][\w./-]*))$")
_STOP_RE = re.compile(r"^([A-Za-z_][\w./-]*) not (decreasing|increasing) for ([1-9][0-9]*) logs?$")


@dataclass(frozen=True)
class Select:
    """``last``, or the step where ``metric`` is lowest (``min``) or highest (``max``)."""

    kind: str  # last | min | max
    metric: str = ""

    @staticmethod
    def parse(text: str) -> Select:
        """The rule a ``select`` text names.

        >>> Select.parse("min:val_loss")
        Select(kind='min', metric='val_loss')
        """
        m = _SELECT_RE.match(text.strip()) if isinstance(text, str) else None
        if m is None:
            raise ValueError(
                f'{text!r} is not a selection rule; expected "last", "min:METRIC" or "max:METRIC"'
            )
        return Select("last") if m.group(1) == "last" else Select(m.group(2), m.group(3))


@dataclass(frozen=True)
class StopRule:
    """``METRIC not decreasing|increasing for N logs``."""

    metric: str
    decreasing: bool
    patience: int

    @staticmethod
    def parse(text: str) -> StopRule:
        """The rule a ``stop_when`` text names.

        >>> StopRule.parse("val_loss not decreasing for 5 logs")
        StopRule(metric='val_loss', decreasing=True, patience=5)
        """
        m = _STOP_RE.match(" ".join(text.split())) if isinstance(text, str) else None
        if m is None:
            raise ValueError(
                f'{text!r} is not a stopping rule; expected "METRIC not decreasing for N logs" '
                'or "METRIC not increasing for N logs"'
            )
        return StopRule(m.group(1), m.group(2) == "decreasing", int(m.group(3)))


class StopState:
    """The stopping rule over a metric's values as they are logged."""

    def __init__(self, rule: StopRule) -> None:
        self.rule = rule
        self.best = math.nan
        self.waited = 0
        self.stopped_at: int | None = None

    def update(self, step: int, value: float) -> bool:
        """Take one logged value; whether the rule holds (from then on)."""
        if self.stopped_at is not None:
            return True
        better = value < self.best if self.rule.decreasing else value > self.best
        if math.isnan(self.best) or better:
            self.best, self.waited = value, 0
            return False
        self.waited += 1
        if self.waited >= self.rule.patience:
            self.stopped_at = step
            return True
        return False


@dataclass(frozen=True)
class CurveSettings:
    """The ``[curves]`` table (both rules empty when it is absent)."""

    select: str = ""
    stop_when: str = ""


#: [curves] key -> what it means (declared in :mod:`evalab.ablation.contract.keys`)
CURVE_KEYS = keys.helps("curves")


def parse_settings(table: Any) -> CurveSettings:
    """The ``[curves]`` table; ``ValueError`` with ``(key, message)`` args on a problem."""
    if not isinstance(table, dict):
        raise ValueError("", 'must be a table such as { select = "min:val_loss" }')
    for key in table:
        if key not in CURVE_KEYS:
            raise ValueError(key, f"unknown key; known: {', '.join(CURVE_KEYS)}")
    for key, parse in (("select", Select.parse), ("stop_when", StopRule.parse)):
        if key in table:
            try:
                parse(table[key])
            except ValueError as exc:
                raise ValueError(key, str(exc)) from None
    return CurveSettings(
        str(table.get("select", "")).strip(), " ".join(str(table.get("stop_when", "")).split())
    )


# ---------------------------------------------------------------------- logging in a run


class _Log:
    """The open log of this process's run (one run a process)."""

    def __init__(self, folder: str, stop: str) -> None:
        self.file = open(os.path.join(folder, LOG_FILE), "a", encoding="utf-8")  # noqa: SIM115 - open for the run
        self.stop = StopState(StopRule.parse(stop)) if stop else None


_open_log: dict[str, _Log] = {}


def log(step: int, **values: float) -> bool:
    """Append ``values`` at ``step`` to the run's ``metrics.jsonl``; True once the study's
    ``stop_when`` rule holds (the entry point should then stop). Outside an evalab run it
    writes nothing and returns False."""
    folder = os.environ.get(RUN_DIR_ENV)
    if not folder:
        return False
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"log(step=...) takes an integer step >= 0, got {step!r}")
    plain = {}
    for name, value in values.items():
        if hasattr(value, "item"):
            value = value.item()
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise ValueError(f"log({name}=...) takes a finite number, got {value!r}")
        plain[name] = float(value)
    current = _open_log.get(folder)
    if current is None:
        current = _open_log[folder] = _Log(folder, os.environ.get(STOP_ENV, ""))
    current.file.write(json.dumps({"step": step, **plain}) + "\n")
    current.file.flush()
    if current.stop is not None and current.stop.rule.metric in plain:
        return current.stop.update(step, plain[current.stop.rule.metric])
    return current.stop is not None and current.stop.stopped_at is not None


# ---------------------------------------------------------------------- reading a log


@dataclass(frozen=True)
class Curve:
    """One metric's logged values: ``steps`` (increasing int64) and ``values`` (float64)."""

    steps: np.ndarray
    values: np.ndarray


def read_log(path: Path) -> dict[str, Curve]:
    """The curves of a ``metrics.jsonl``; ``ValueError`` naming ``FILE:LINE`` on a bad record
    (not a JSON object, a step that is no integer >= 0 or does not increase, a value that is
    no finite number)."""
    import numpy as np

    from evalab import numbers

    steps: dict[str, list[int]] = {}
    values: dict[str, list[float]] = {}
    with open(path, encoding="utf-8", errors="strict") as fh:
        for i, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path.name}:{i}"
            try:
                rec = numbers.loads(line)
            except ValueError as exc:
                raise ValueError(f"{where}: not valid JSON ({exc})") from None
            step = rec.get("step") if isinstance(rec, dict) else None
            if isinstance(step, bool) or not isinstance(step, int) or step < 0:
                raise ValueError(
                    f'{where}: each record needs "step", an integer >= 0 (got {step!r})'
                )
            for name, value in rec.items():
                if name == "step":
                    continue
                if (
                    isinstance(value, bool)
                    or not isinstance(value, int | float)
                    or not math.isfinite(value)
                ):
                    raise ValueError(
                        f"{where}: {name} is {value!r}; a logged value is a finite number"
                    )
                seen = steps.setdefault(name, [])
                if seen and step <= seen[-1]:
                    raise ValueError(
                        f"{where}: {name} at step {step} after step {seen[-1]}; steps of a metric increase"
                    )
                seen.append(step)
                values.setdefault(name, []).append(float(value))
    return {
        n: Curve(np.asarray(steps[n], dtype=np.int64), np.asarray(values[n], dtype=np.float64))
        for n in steps
    }


def selected(curves: dict[str, Curve], rule: Select) -> tuple[dict[str, float], int | None]:
    """Each curve's value under ``rule`` and the step chosen (None for ``last``)."""
    if rule.kind == "last":
        return {n: float(c.values[-1]) for n, c in curves.items() if len(c.steps)}, None
    if rule.metric not in curves:
        raise ValueError(
            f'select = "{rule.kind}:{rule.metric}" but the run logged no {rule.metric} '
            f"(it logged {', '.join(sorted(curves)) or 'nothing'})"
        )
    c = curves[rule.metric]
    at = int(c.steps[int(c.values.argmin() if rule.kind == "min" else c.values.argmax())])
    out = {}
    for name, other in curves.items():
        hit = other.steps.searchsorted(at)
        if hit < len(other.steps) and other.steps[hit] == at:
            out[name] = float(other.values[hit])
    return out, at


def stopped_at(curves: dict[str, Curve], rule: StopRule) -> int | None:
    """The step at which ``rule`` first held over the logged values (None: never)."""
    c = curves.get(rule.metric)
    if c is None:
        return None
    state = StopState(rule)
    for step, value in zip(c.steps.tolist(), c.values.tolist(), strict=True):
        if state.update(step, value):
            return state.stopped_at
    return None


@dataclass(frozen=True)
class CurvesEntry:
    """A run's logged curves: the log, the metrics it logged, the selection rule, the step
    it selected (None for ``last``) and, when the study stops early (``watched``), the step
    the rule held at (None: never)."""

    file: str
    metrics: tuple[str, ...]
    select: str = ""
    selected_step: int | None = None
    stopped_at: int | None = None
    watched: bool = False

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "file": self.file,
            "metrics": list(self.metrics),
            "select": self.select,
            "selected_step": self.selected_step,
        }
        if self.watched:
            d["stopped_at"] = self.stopped_at
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> CurvesEntry:
        return CurvesEntry(
            str(d["file"]),
            tuple(d.get("metrics", ())),
            d.get("select") or "",
            d.get("selected_step"),
            d.get("stopped_at"),
            "stopped_at" in d,
        )


@dataclass(frozen=True)
class Logged:
    """What a run's log gives: the run's metrics with the selected values in them, the
    artifacts entry (None without a log) and ``{metric: encoded curve as base64}``."""

    metrics: dict[str, Any]
    entry: CurvesEntry | None = None
    blobs: dict[str, str] = field(default_factory=dict)


def collect_curves(
    settings: CurveSettings, wanted: tuple[str, ...], path: Path, metrics: dict[str, Any]
) -> Logged:
    """Read the run's log ``path`` (when it wrote one) and apply the selection rule to the
    ``wanted`` metrics of ``metrics`` (a new dict: the argument is not changed).
    :class:`~evalab.errors.RunError` on a bad log or a rule the log cannot satisfy."""
    if not path.is_file():
        if settings.select:
            raise RunError(
                f'[curves] select = "{settings.select}" but the run logged no values '
                f"(evalab.ablation.log, or {LOG_FILE} in its run folder)"
            )
        return Logged(metrics)
    try:
        curves = read_log(path)
        rule = Select.parse(settings.select) if settings.select else Select("last")
        values, step = selected(curves, rule)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunError(str(exc)) from None
    out = dict(metrics)
    for name, value in values.items():
        if name in wanted and (settings.select or name not in out):
            out[name] = value
    stop = StopRule.parse(settings.stop_when) if settings.stop_when else None
    entry = CurvesEntry(
        LOG_FILE,
        tuple(sorted(curves)),
        settings.select,
        step,
        stopped_at(curves, stop) if stop is not None else None,
        stop is not None,
    )
    blobs = {n: base64.b64encode(encode(c)).decode("ascii") for n, c in curves.items()}
    return Logged(out, entry, blobs)


# ---------------------------------------------------------------------- storage


def _shuffle(raw: bytes, width: int) -> bytes:
    import numpy as np

    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, width).T.tobytes()


def _unshuffle(raw: bytes, width: int) -> bytes:
    import numpy as np

    return np.frombuffer(raw, dtype=np.uint8).reshape(width, -1).T.tobytes()


def encode(curve: Curve) -> bytes:
    """The compact, lossless form of a curve.

    >>> import numpy as np
    >>> c = Curve(np.arange(0, 3000, 3), np.linspace(2.0, 0.1, 1000))
    >>> blob = encode(c); back = decode(blob)
    >>> bool((back.steps == c.steps).all() and (back.values == c.values).all()), len(blob) < 16000 / 2
    (True, True)
    """
    import numpy as np

    steps = np.diff(np.asarray(curve.steps, dtype="<i8"), prepend=np.int64(0)).astype("<i8")
    values = np.asarray(curve.values, dtype="<f8")
    body = _shuffle(steps.tobytes(), 8) + _shuffle(values.tobytes(), 8)
    return _MAGIC + struct.pack("<I", len(values)) + zlib.compress(body, 6)


def decode(blob: bytes) -> Curve:
    """The curve :func:`encode` wrote."""
    import numpy as np

    if blob[:4] != _MAGIC:
        raise ValueError("not an evalab curve")
    (n,) = struct.unpack("<I", blob[4:8])
    body = zlib.decompress(blob[8:])
    steps = np.cumsum(np.frombuffer(_unshuffle(body[: 8 * n], 8), dtype="<i8"))
    return Curve(
        steps.astype(np.int64), np.frombuffer(_unshuffle(body[8 * n :], 8), dtype="<f8").copy()
    )


def insert_curves(conn: sqlite3.Connection, study: str, key: str, blobs: dict[str, str]) -> None:
    """Store a run's curves (inside the caller's transaction), replacing earlier ones."""
    conn.execute("DELETE FROM curves WHERE study=? AND run_key=?", (study, key))
    for metric, text in sorted(blobs.items()):
        raw = base64.b64decode(text)
        (n,) = struct.unpack("<I", raw[4:8])
        conn.execute(
            "INSERT INTO curves(study, run_key, metric, steps, data) VALUES (?, ?, ?, ?, ?)",
            (study, key, metric, n, raw),
        )


def has_curves(conn: sqlite3.Connection, study: str) -> bool:
    """Whether some run of ``study`` has a stored curve (a store without the table has none)."""
    if not conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='curves'"
    ).fetchone():
        return False
    return (
        conn.execute("SELECT 1 FROM curves WHERE study=? LIMIT 1", (study,)).fetchone() is not None
    )


def load_curves(
    conn: sqlite3.Connection, study: str, keys: list[str]
) -> dict[str, dict[str, Curve]]:
    """``{run key: {metric: Curve}}`` of the given runs (a store without the table has none)."""
    if not has_curves(conn, study):
        return {}
    out: dict[str, dict[str, Curve]] = {}
    wanted = set(keys)
    for key, metric, blob in conn.execute(
        "SELECT run_key, metric, data FROM curves WHERE study=?", (study,)
    ):
        if key in wanted:
            out.setdefault(key, {})[metric] = decode(blob)
    return out
