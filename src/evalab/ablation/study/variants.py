"""The sections that declare rows: ``[evaluation]``, ``[[variant]]``, ``[grid]`` and
``[reference]``, and the rows' configurations as the report shows them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalab.ablation.contract import keys
from evalab.ablation.contract.keys import is_number
from evalab.ablation.study.display import Display, check_rows
from evalab.ablation.study.grid import BASE_LABEL, grid_cells
from evalab.ablation.study.spec import Variant
from evalab.ablation.study.where import Where, check_plain

VARIANT_KEYS = keys.names("variant")

STAGES = keys.keys_of("variant")["stage"].allowed


def parse_evaluation(raw: Any, base: dict[str, Any], w: Where) -> dict[str, Any]:
    """``[evaluation]``: the evaluation-only keys with their defaults. They are declared
    apart from ``[base]`` so they can never reach a training configuration."""
    if not isinstance(raw, dict):
        raise w.error("[evaluation]", "must be a table of evaluation-only key = default value")
    check_plain(raw, "[evaluation]", w)
    for key in raw:
        if key in base:
            raise w.error(
                f"[evaluation] {key}",
                "is also a key of [base]; an evaluation-only key must not be a "
                f"training setting: rename it (e.g. eval_{key})",
                key,
                "evaluation",
            )
    return dict(raw)


def _variant_stage(v: dict[str, Any], label: str, w: Where) -> tuple[str, str]:
    stage = v.get("stage", "train")
    if stage not in STAGES:
        raise w.error(
            f"[[variant]] {label!r} stage",
            f'is {stage!r}; expected "train" (retrained, the default) or '
            '"eval" (suppressed at evaluation of a trained row\'s checkpoints)',
            "stage",
            "variant",
        )
    parent = v.get("from")
    if stage == "train" and parent is not None:
        raise w.error(
            f"[[variant]] {label!r} from",
            'is only for stage = "eval" rows (a trained row starts from [base])',
            "from",
            "variant",
        )
    if stage == "eval" and parent is None:
        parent = BASE_LABEL
    if stage == "eval" and not isinstance(parent, str):
        raise w.error(
            f"[[variant]] {label!r} from",
            f"must be the label of a trained row, got {parent!r}",
            "from",
            "variant",
        )
    return stage, parent or ""


def _check_setting(
    label: str,
    key: str,
    value: Any,
    stage: str,
    base: dict[str, Any],
    evaluation: dict[str, Any],
    w: Where,
) -> None:
    where = f"[[variant]] {label!r} set.{key}"
    if stage == "eval":
        if key not in evaluation:
            hint = (
                " (it is a training setting of [base]: an eval row cannot retrain)"
                if key in base
                else ""
            )
            raise w.error(
                where,
                f'[evaluation] has no key {key!r}{hint}; a stage = "eval" row may only change keys of '
                f"[evaluation] (known: {', '.join(evaluation) or 'none: add an [evaluation] table'})",
                key,
                "variant",
            )
        _check_same_kind(evaluation[key], value, where, key, w)
        return
    if key in evaluation:
        raise w.error(
            where,
            f"{key!r} is an evaluation-only key ([evaluation]); it cannot change training: "
            'give this row stage = "eval" (and from = the trained row it evaluates)',
            key,
            "variant",
        )
    if key not in base:
        raise w.error(
            where,
            f"[base] has no key {key!r}; a variant may only change keys of [base] (known: {', '.join(base)})",
            key,
            "variant",
        )
    _check_same_kind(base[key], value, where, key, w)


def check_eval_rows(
    variants: list[Variant], evaluate: str | None, cells: list[Any], w: Where
) -> None:
    """Every eval row needs the ``evaluate`` entry and a trained row to evaluate."""
    trained = [
        BASE_LABEL,
        *(v.label for v in variants if v.stage == "train"),
        *(c.label for c in cells),
    ]
    for v in variants:
        if v.stage != "eval":
            continue
        if evaluate is None:
            raise w.error(
                "[study] evaluate",
                f'missing: row {v.label!r} has stage = "eval", which calls '
                "evaluate = 'module:function' as function(config, seed, checkpoint_dir)",
            )
        if v.parent not in trained:
            what = (
                "an eval row (eval rows evaluate trained rows only)"
                if v.parent in {x.label for x in variants}
                else "no row"
            )
            raise w.error(
                f"[[variant]] {v.label!r} from",
                f"{v.parent!r} is {what}; trained rows: {', '.join(trained)}",
                "from",
                "variant",
            )


def parse_variants(
    raw: Any, base: dict[str, Any], evaluation: dict[str, Any], w: Where
) -> list[Variant]:
    """The ``[[variant]]`` rows in order, each label unique (and not the base's)."""
    if not isinstance(raw, list):
        raise w.error(
            "[[variant]]",
            "must be an array of tables: write [[variant]] (double brackets)",
            "variant",
        )
    out: list[Variant] = []
    seen: set[str] = {BASE_LABEL}
    for i, v in enumerate(raw, start=1):
        if not isinstance(v, dict):
            raise w.error(f"[[variant]] #{i}", "must be a table")
        w.check_known(v, VARIANT_KEYS, f"[[variant]] #{i}", "variant")
        label = v.get("label")
        if not isinstance(label, str) or not label.strip():
            raise w.error(f"[[variant]] #{i}", "needs label = '...' (e.g. '(A)')")
        if label in seen:
            raise w.error(
                f"[[variant]] #{i} label {label!r}",
                "is used twice (or is the reserved 'base'); labels must be unique",
                "label",
                "variant",
            )
        seen.add(label)
        out.append(_variant(v, label, base, evaluation, w))
    return out


def _variant(
    v: dict[str, Any], label: str, base: dict[str, Any], evaluation: dict[str, Any], w: Where
) -> Variant:
    """One ``[[variant]]`` table (its keys known, its label checked) as a :class:`Variant`."""
    stage, parent = _variant_stage(v, label, w)
    settings = v.get("set", {})
    check_plain(settings, f"[[variant]] {label!r} set", w)
    if not isinstance(settings, dict) or not settings:
        table = "[evaluation]" if stage == "eval" else "[base]"
        raise w.error(
            f"[[variant]] {label!r} set",
            f"must be a non-empty table of the {table} keys this row changes",
        )
    for key, value in settings.items():
        _check_setting(label, key, value, stage, base, evaluation, w)
    description = v.get("description", "")
    if not isinstance(description, str):
        raise w.error(f"[[variant]] {label!r} description", "must be a string")
    component = v.get("component", "")
    if not isinstance(component, str):
        raise w.error(
            f"[[variant]] {label!r} component",
            f"must be a string naming the component, got {component!r}",
            "component",
            "variant",
        )
    return Variant(
        label=label,
        description=description,
        settings=dict(settings),
        stage=stage,
        parent=parent,
        component=component,
    )


def _check_same_kind(base_value: Any, value: Any, where: str, key: str, w: Where) -> None:
    """A value replacing a base value must be of a compatible type (int and float mix)."""

    def kind(x: Any) -> str:
        if isinstance(x, bool):
            return "bool"
        if is_number(x):
            return "number"
        return type(x).__name__

    if kind(base_value) != kind(value):
        raise w.error(
            where,
            f"is {value!r} ({kind(value)}) but [base] {key} is {base_value!r} ({kind(base_value)})",
            key,
        )


def parse_grid(raw: Any, base: dict[str, Any], w: Where) -> dict[str, list[Any]]:
    if not isinstance(raw, dict):
        raise w.error("[grid]", "must be a table of key = [levels]")
    grid: dict[str, list[Any]] = {}
    for key, levels in raw.items():
        if key not in base:
            raise w.error(
                f"[grid] {key}",
                f"[base] has no key {key!r}; grid factors must be keys of [base]",
                key,
                "grid",
            )
        if not isinstance(levels, list) or len(levels) < 2:
            raise w.error(
                f"[grid] {key}", f"needs a list of at least two levels, got {levels!r}", key, "grid"
            )
        if len({json.dumps(x, sort_keys=True) for x in levels}) != len(levels):
            raise w.error(f"[grid] {key}", f"has duplicate levels: {levels!r}", key, "grid")
        for x in levels:
            _check_same_kind(base[key], x, f"[grid] {key} level {x!r}", key, w)
        grid[key] = list(levels)
    return grid


def parse_reference(
    raw: Any, labels: list[str], grid: dict[str, list[Any]], base: dict[str, Any], w: Where
) -> dict[str, dict[str, float]]:
    if not isinstance(raw, dict):
        raise w.error(
            "[reference]",
            'must hold one table per column: [reference."BLEU (paper)"] with row label = value',
        )
    allowed = set(labels) | {c.label for c in grid_cells(base, grid)}
    out: dict[str, dict[str, float]] = {}
    for column, rows in raw.items():
        if not isinstance(rows, dict):
            raise w.error(
                f"[reference] {column!r}",
                'must be a table of row label = number, e.g. [reference."BLEU (paper)"] base = 25.8',
                column,
                "reference",
            )
        col: dict[str, float] = {}
        for label, value in rows.items():
            if label not in allowed:
                raise w.error(
                    f"[reference.{column!r}] {label!r}",
                    f"is not a row of this study; rows: {', '.join(sorted(allowed))}",
                    label,
                    "reference",
                )
            if not is_number(value):
                raise w.error(
                    f"[reference.{column!r}] {label!r}",
                    f"must be a number, got {value!r}",
                    label,
                    "reference",
                )
            col[label] = float(value)
        out[column] = col
    return out


def check_display_rows(
    display: Display,
    path: Path,
    base: dict[str, Any],
    evaluation: dict[str, Any],
    variants: list[Variant],
    grid: dict[str, list[Any]],
    w: Where,
) -> None:
    """Derived columns and value labels against each row's configuration as the report shows it."""
    if not display.derived and not display.values:
        return
    check_rows(
        display,
        shown_configs(base, evaluation, variants, grid),
        lambda where, msg, key: w.error(where, msg, key, "display"),
    )


def shown_configs(
    base: dict[str, Any],
    evaluation: dict[str, Any],
    variants: list[Variant],
    grid: dict[str, list[Any]],
) -> list[tuple[str, dict[str, Any]]]:
    """Each row's configuration as the report shows it ([evaluation] defaults included), built
    here rather than by ``plan.runs.study_rows``: the plan stage comes after the study file
    and may not be imported by it. ``tests/ablation/study/test_display.py`` checks both agree."""
    cells = grid_cells(base, grid)
    trained = {BASE_LABEL: dict(base), **{c.label: dict(c.config) for c in cells}}
    trained.update({v.label: {**base, **v.settings} for v in variants if v.stage == "train"})
    rows = [(BASE_LABEL, {**evaluation, **base})]
    for v in variants:
        parent = trained[v.label] if v.stage == "train" else trained[v.parent]
        rows.append(
            (
                v.label,
                {**evaluation, **parent}
                if v.stage == "train"
                else {**parent, **evaluation, **v.settings},
            )
        )
    return rows + [(c.label, {**evaluation, **c.config}) for c in cells]
