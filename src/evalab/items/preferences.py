"""Judge preferences and arena battles, read into typed values.

Two shapes of pairwise data, in the formats people have:

* :class:`PreferenceSet`: one model against one baseline on a set of instructions, with the
  judge's preference for the model on each (AlpacaEval's ``annotations.json``: a JSON list
  of records with ``instruction``, ``output_1``/``generator_1`` (the baseline),
  ``output_2``/``generator_2`` (the model) and ``preference``, a number in [1, 2] (or a
  string holding one): 1 the baseline wins, 2 the model wins, 1.5 or 0 a draw, ``null``/NaN
  no verdict). Read by :func:`read_annotations`.
* :class:`~evalab.stats.bradley_terry.Battles`: pairs of models with an outcome (Chatbot
  Arena's battles, JSON list or JSON Lines with ``model_a``, ``model_b``, ``winner`` in
  ``model_a``/``model_b``/``tie``/``tie (bothbad)``, optionally ``question_id`` or
  ``prompt``), and plain CSV/TSV/JSONL records (``model_a``, ``model_b`` and ``winner`` or a
  numeric ``outcome`` of 1, 0.5 or 0 for ``model_a``; optionally ``item``). Read by
  :func:`read_battles`.

Every number goes through the one grammar (:mod:`evalab.numbers`); a bad record is refused
with the file, the record and the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalab.errors import InputError
from evalab.io import Record, data_suffix, read_records, read_text
from evalab.numbers import NumberError, Refused, loads, parse_number

__all__ = ["WINNERS", "PreferenceSet", "read_annotations", "read_battles"]

#: Arena ``winner`` values and the outcome for ``model_a`` they stand for
WINNERS = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5}
#: fields naming a battle's prompt, in the order they are looked for
_ITEM_FIELDS = ("item", "question_id", "prompt_id", "prompt", "instruction")


@dataclass(frozen=True)
class PreferenceSet:
    """One model judged against one baseline: ``preference[i]`` in [1, 2] per instruction.

    ``preference`` holds the raw verdicts (NaN: none; 0 is AlpacaEval's old draw code and
    is kept as given); ``lengths`` the length in characters of the model's answers.
    """

    model: str
    baseline: str
    source: str
    instructions: tuple[str, ...]
    preference: np.ndarray
    lengths: np.ndarray
    #: the length in characters of the baseline's answers (0 where not given)
    baseline_lengths: np.ndarray


def _json_list(path: str, what: str) -> tuple[list[Any], str]:
    text, label = read_text(path, what)
    try:
        data = loads(text)
    except ValueError as exc:
        raise InputError(f"{label}: not JSON ({exc}); expected {what}") from None
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise InputError(f"{label}: expected {what}, got JSON that is not a list of objects")
    if not data:
        raise InputError(f"{label}: no records, expected {what}")
    return data, label


def _json_number(value: Any, where: str) -> Any:
    """A JSON value with its number read: a string under :mod:`evalab.numbers`'s grammar, a
    number JSON cannot hold (NaN, Infinity) refused naming ``where``; anything else as given."""
    if isinstance(value, Refused):
        raise InputError(f"{where} {value.error}")
    if isinstance(value, str):
        try:
            return parse_number(value)
        except NumberError as exc:
            raise InputError(f"{where} {exc}") from None
    return value


def _preference(value: Any, label: str, no: int) -> float:
    """One AlpacaEval verdict as a float (NaN for none)."""
    where = f"{label}: record {no}: preference"
    if value is None:
        return math.nan
    if (
        isinstance(value, Refused)
        and value.error.reason == "not-finite"
        and value.error.text == "NaN"
    ):
        return math.nan  # AlpacaEval's own "no verdict"
    value = _json_number(value, where)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{where} must be a number in [1, 2] (or 0 for a draw), got {value!r}")
    number = float(value)
    if number != 0.0 and not 1.0 <= number <= 2.0:
        raise InputError(
            f"{where} {number:g} is outside [1, 2] (1: the baseline wins, 2: the model wins)"
        )
    return number


def _text(record: dict[str, Any], key: str, label: str, no: int) -> str:
    value = record.get(key)
    if not isinstance(value, str):
        raise InputError(f"{label}: record {no}: field {key!r} must be a string, got {value!r}")
    return value


def _one_name(record: dict[str, Any], key: str, seen: set[str], label: str, no: int) -> None:
    seen.add(_text(record, key, label, no))
    if len(seen) > 1:
        raise InputError(
            f"{label}: record {no}: {key} is {sorted(seen)}: one annotations file holds one "
            "model against one baseline"
        )


def read_annotations(path: str, model: str | None = None) -> PreferenceSet:
    """An AlpacaEval ``annotations.json``; ``model`` names it (default: its ``generator_2``)."""
    records, label = _json_list(path, "AlpacaEval annotations (a JSON list of records)")
    instructions, prefs, lengths, base_lengths = [], [], [], []
    models: set[str] = set()
    baselines: set[str] = set()
    for no, record in enumerate(records, start=1):
        instructions.append(_text(record, "instruction", label, no))
        lengths.append(len(_text(record, "output_2", label, no)))
        base_lengths.append(
            len(record["output_1"]) if isinstance(record.get("output_1"), str) else 0
        )
        _one_name(record, "generator_2", models, label, no)
        _one_name(record, "generator_1", baselines, label, no)
        if "preference" not in record:
            raise InputError(f"{label}: record {no} has no 'preference' (the judge's verdict)")
        prefs.append(_preference(record["preference"], label, no))
    if len(set(instructions)) != len(instructions):
        raise InputError(f"{label}: an instruction appears twice; each must be judged once")
    return PreferenceSet(
        model or models.pop(),
        baselines.pop(),
        label,
        tuple(instructions),
        np.array(prefs, dtype=np.float64),
        np.array(lengths, dtype=np.int64),
        np.array(base_lengths, dtype=np.int64),
    )


@dataclass(frozen=True)
class BattleRecords:
    """Battles as read: model names, outcome for ``model_a``, and the item where given."""

    model_a: tuple[str, ...]
    model_b: tuple[str, ...]
    outcome: np.ndarray
    items: tuple[str, ...] | None
    #: ``[battles, covariates, 2]``: each style covariate's value for model_a and model_b
    style: np.ndarray | None = None


def _outcome(record: dict[str, Any], label: str, where: str) -> float:
    if "winner" in record:
        winner = record["winner"]
        if winner not in WINNERS:
            raise InputError(
                f"{label}: {where}: winner {winner!r} is not one of {', '.join(WINNERS)}"
            )
        return WINNERS[winner]
    if "outcome" not in record:
        raise InputError(f"{label}: {where}: no 'winner' or 'outcome' field")
    value = record["outcome"]
    try:
        number = parse_number(value) if isinstance(value, str) else value
    except NumberError as exc:
        raise InputError(f"{label}: {where}: outcome {exc}") from None
    if isinstance(value, Refused) or number not in (0, 0.5, 1):
        raise InputError(
            f"{label}: {where}: outcome must be 1 (model_a won), 0.5 (tie) or 0, got {value!r}"
        )
    return float(number)


def _item(record: dict[str, Any]) -> str | None:
    for key in _ITEM_FIELDS:
        value = record.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return str(value)
    return None


def _battle_records(path: str) -> tuple[list[tuple[int, dict[str, Any]]], str, str]:
    """``(number, fields)`` of every record, the label, and what a record is called."""
    if data_suffix(path) == ".json":
        data, label = _json_list(path, "battles (a JSON list of records)")
        return list(enumerate(data, start=1)), label, "record"
    records: list[Record] = read_records(path)
    label = "<stdin>" if path == "-" else path
    return [(r.line, dict(r.fields)) for r in records], label, "line"


def _side_value(record: dict[str, Any], key: str, label: str, where: str) -> float:
    """A style value of one side: top level or in ``conv_metadata``; a dict of counts sums."""
    meta = record.get("conv_metadata")
    value = record.get(key, meta.get(key) if isinstance(meta, dict) else None)
    if isinstance(value, dict):
        counts = list(value.values())
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in counts):
            raise InputError(
                f"{label}: {where}: style covariate {key!r} holds counts that are not all "
                f"numbers: {value!r}"
            )
        value = sum(counts)
    value = _json_number(value, f"{label}: {where}: {key}")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(
            f"{label}: {where}: style covariate {key!r} must be a number, got {value!r}"
        )
    return float(value)


def _style_keys(name: str) -> tuple[str, str]:
    """The two sides' field names: ``NAME_a``/``NAME_b``, or ``{}`` filled with a and b."""
    if "{}" in name:
        return name.replace("{}", "a"), name.replace("{}", "b")
    return f"{name}_a", f"{name}_b"


def read_battles(path: str, style: tuple[str, ...] = ()) -> BattleRecords:
    """Arena-style battles from a JSON list, JSON Lines, CSV or TSV file; ``style`` names the
    per-side covariates to read (``length`` reads ``length_a`` and ``length_b``)."""
    records, label, unit = _battle_records(path)
    if not records:
        raise InputError(f"{label}: no battles")
    a, b, out, items, sides = [], [], [], [], []
    for no, record in records:
        where = f"{unit} {no}"
        sides.append(
            [[_side_value(record, key, label, where) for key in _style_keys(s)] for s in style]
        )
        a.append(_text(record, "model_a", label, no))
        b.append(_text(record, "model_b", label, no))
        if a[-1] == b[-1]:
            raise InputError(f"{label}: {where}: {a[-1]} against itself")
        out.append(_outcome(record, label, where))
        items.append(_item(record))
    known = [i for i in items if i is not None]
    if known and len(known) != len(items):
        first = items.index(None) + 1
        raise InputError(f"{label}: battle {first} names no item though others do")
    return BattleRecords(
        tuple(a),
        tuple(b),
        np.array(out),
        tuple(known) if known else None,
        np.array(sides, dtype=np.float64) if style else None,
    )
