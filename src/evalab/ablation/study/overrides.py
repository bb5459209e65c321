"""``ablate run --set key=value``: the study with one more row, the base with those keys changed."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from evalab import numbers
from evalab.ablation.contract.template import (
    TemplateError,
    flat_keys,
)
from evalab.ablation.study.grid import BASE_LABEL, grid_cells
from evalab.ablation.study.spec import Study, Variant
from evalab.errors import SettingValueError


def with_overrides(study: Study, assignments: list[str]) -> Study:
    """The study with one more row: ``[base]`` with the ``key=value`` assignments
    (``ablate run --set``). Each key must be a key of ``[base]`` (``optim.lr`` inside a
    table); each value is read as the type of the base's value. The row is labelled
    ``set key=value, ...``; every other row stays as the study file has it.
    """
    settings: dict[str, Any] = {}
    shown = []
    for text in assignments:
        key, sep, raw = text.partition("=")
        key = key.strip()
        if not sep or not key:
            raise SettingValueError("assignments", repr(text), "expected key=value, e.g. hidden=16")
        path = key.split(".") if key not in study.base else [key]
        old = _base_value(study, key, path, text)
        value = _typed_like(old, raw, text)
        _set_path(settings, study.base, path, value)
        shown.append(f"{key}={raw}")
    label = "set " + ", ".join(shown)
    labels = {
        BASE_LABEL,
        *(v.label for v in study.variants),
        *(c.label for c in grid_cells(study.base, study.grid)),
    }
    if label in labels:
        raise SettingValueError(
            "assignments", "", f"the study already has a row labelled {label!r}"
        )
    variant = Variant(label=label, description="from the command line (--set)", settings=settings)
    if study.template is not None:
        try:
            study.template.render({**study.base, **settings}, 0, "config.json", "metrics.json")
        except TemplateError as exc:
            raise SettingValueError(
                "assignments", ", ".join(assignments), f"[study] command: {exc}"
            ) from None
    return dataclasses.replace(study, variants=(*study.variants, variant))


def _base_value(study: Study, key: str, path: list[str], text: str) -> Any:
    node: Any = study.base
    for part in path:
        if not isinstance(node, dict) or part not in node:
            what = (
                f"{key!r} is an [evaluation] key"
                if key in study.evaluation
                else f"[base] has no key {key!r}"
            )
            raise SettingValueError(
                "assignments",
                repr(text),
                f"{what}; the keys of [base] are {', '.join(flat_keys(study.base))}",
            )
        node = node[part]
    if isinstance(node, dict):
        raise SettingValueError(
            "assignments",
            repr(text),
            f"{key!r} is a table; set one of its keys: {', '.join(flat_keys(node, key))}",
        )
    return node


def _typed_like(old: Any, raw: str, text: str) -> Any:
    """``raw`` read as the type of the base's value ``old``."""
    if isinstance(old, str):
        return raw
    if isinstance(old, bool):
        if raw not in ("true", "false"):
            raise SettingValueError(
                "assignments",
                repr(text),
                f"the base value is {str(old).lower()} (true/false); give true or false",
            )
        return raw == "true"
    if isinstance(old, list):
        try:  # JSON, its numbers read by evalab.numbers as every number a user gives
            value = numbers.loads(raw)
        except ValueError:
            value = None
        refused = numbers.first_refused(value)
        if refused is not None:
            raise SettingValueError("assignments", repr(text), str(refused[1].error))
        if not isinstance(value, list):
            raise SettingValueError(
                "assignments",
                repr(text),
                f'the base value is {old!r}; give a JSON list (e.g. [1, 2] or ["a", "b"])',
            )
        return value
    parse, what = (
        (numbers.parse_float, "a number")
        if isinstance(old, float)
        else (numbers.parse_int, "an integer")
    )
    try:
        return parse(raw)
    except numbers.NumberError as exc:
        raise SettingValueError(
            "assignments", repr(text), f"the base value is {old!r}; give {what} ({exc})"
        ) from None


def _set_path(settings: dict[str, Any], base: dict[str, Any], path: list[str], value: Any) -> None:
    """Set ``path`` in ``settings`` (a variant's top-level changes), copying nested tables
    from the base so their other keys are kept."""
    if len(path) == 1:
        settings[path[0]] = value
        return
    top = settings.setdefault(path[0], json.loads(json.dumps(base[path[0]])))
    node = top
    for part in path[1:-1]:
        node = node[part]
    node[path[-1]] = value
