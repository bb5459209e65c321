"""Reading a study file: TOML in, each section checked by its own module, a :class:`Study` out.

Everything is checked *before anything runs*; each problem raises
:class:`~evalab.errors.SettingsError` with the file, the key (and its line when it can be
found) and what would be right. The format is in :mod:`evalab.ablation.study.spec`.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalab import numbers
from evalab.ablation.contract import keys
from evalab.ablation.contract.codeversion import (
    DigestCache,
)
from evalab.ablation.contract.keys import is_number
from evalab.ablation.contract.template import (
    CommandTemplate,
)
from evalab.ablation.study.command import parse_command, trained_configs
from evalab.ablation.study.display import Display, parse_display
from evalab.ablation.study.grid import BASE_LABEL, grid_cells
from evalab.ablation.study.metric_keys import (
    parse_definitions,
    parse_directions,
    parse_metrics,
    parse_study_options,
)
from evalab.ablation.study.spec import Resources, Study, Variant
from evalab.ablation.study.variants import (
    check_display_rows,
    check_eval_rows,
    parse_evaluation,
    parse_grid,
    parse_reference,
    parse_variants,
)
from evalab.ablation.study.versions import code_keys
from evalab.ablation.study.where import Where, check_plain, table_or_default
from evalab.errors import InputError, SettingsError
from evalab.io import decode_utf8

#: [study] key -> what it means (the "missing" refusals show it)
STUDY_KEYS = keys.helps("study")

TOP_KEYS = keys.names("")

RESOURCE_KEYS = keys.names("study.resources")


def load_study(path: str | Path, *, check_entry: bool = True) -> Study:
    """Read and validate a study file; raise :class:`SettingsError` on the first problem.

    ``check_entry`` imports the entry point in a subprocess (with the study's folder on
    ``sys.path``) so a typo fails here rather than in every run.
    """
    p = Path(path)
    if not p.exists():
        raise SettingsError(f"{p}: no such study file")
    if p.is_dir():
        raise SettingsError(f"{p}: is a directory, expected a study .toml file")
    text = _read_utf8(p)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{p}: not valid TOML: {exc}") from exc
    where = Where(p.resolve(), text)
    _check_numbers(data, where)
    return _build(p.resolve(), data, where, check_entry)


def _check_numbers(value: Any, where: Where, path: tuple[str, ...] = ()) -> None:
    """Every number of the study held to :mod:`evalab.numbers`'s range (TOML's own syntax,
    ``1_000`` included, is TOML's): ``inf``, ``nan`` and integers beyond 2**53 are refused
    with the key, not met later as an ``OverflowError`` or an endless timeout."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_numbers(item, where, (*path, str(key)))
    elif isinstance(value, list):
        for item in value:
            _check_numbers(item, where, path)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        try:
            numbers.number_value(value)
        except numbers.NumberError as exc:
            section = ".".join(path[:-1]) or None
            raise where.error(".".join(path), str(exc), key=path[-1], section=section) from None


def _read_utf8(p: Path) -> str:
    try:
        # a byte-order mark (which some editors write) is not TOML: it is dropped
        return decode_utf8(
            p.read_bytes(), str(p), expected="a study file is UTF-8 TOML"
        ).removeprefix("\ufeff")
    except InputError as exc:
        raise SettingsError(str(exc)) from exc


def _study_table(data: dict[str, Any], w: Where) -> dict[str, Any]:
    """The sections checked against the key table, and every ``[study]`` key's value (or
    default), each checked on its own; exactly one of ``entry`` and ``command``."""
    for key in data:
        if key not in TOP_KEYS:
            raise w.error(
                f"top-level key {key!r}",
                f"unknown; expected sections {', '.join('[' + k + ']' for k in TOP_KEYS)}",
                key,
            )
    if "study" not in data or not isinstance(data["study"], dict):
        raise w.error(
            "[study]",
            "missing; a study file needs a [study] table (name, entry or command, seeds, metrics)",
        )
    st = data["study"]
    w.check_known(st, STUDY_KEYS, "[study]", "study")
    given = keys.checked_values(
        "study",
        st,
        lambda key, why, missing: w.error(
            f"[study] {key.name}", why, None if missing else key.name, None if missing else "study"
        ),
    )
    if (given["entry"] is None) == (given["command"] is None):
        raise w.error(
            "[study]",
            "give exactly one of entry = 'module:function' or command = '... {config} {seed} {out}'",
        )
    return given


@dataclass(frozen=True)
class _Rows:
    """The sections that define the rows: base, evaluation keys, variants, grid, reference, display."""

    base: dict[str, Any]
    evaluation: dict[str, Any]
    variants: list[Variant]
    grid: dict[str, list[Any]]
    template: CommandTemplate | None
    reference: dict[str, dict[str, float]]
    display: Display


def _rows(path: Path, data: dict[str, Any], given: dict[str, Any], w: Where) -> _Rows:
    base = data.get("base")
    if not isinstance(base, dict) or not base:
        raise w.error(
            "[base]",
            "missing or empty; [base] holds the full configuration every variant starts from",
        )
    check_plain(base, "[base]", w)
    evaluation = parse_evaluation(table_or_default(data, "evaluation"), base, w)
    variants = parse_variants(table_or_default(data, "variant"), base, evaluation, w)
    grid = parse_grid(table_or_default(data, "grid"), base, w)
    check_eval_rows(variants, given["evaluate"], grid_cells(base, grid), w)
    # a base alone (no variants, no grid) is still a study: seed variance
    template = parse_command(
        data["study"], given["command"], trained_configs(base, variants, grid), w
    )
    labels = [BASE_LABEL, *(v.label for v in variants)]
    reference = parse_reference(table_or_default(data, "reference"), labels, grid, base, w)
    display = parse_display(
        table_or_default(data, "display"),
        [*base, *evaluation],
        lambda where, msg, key: w.error(where, msg, key, "display"),
    )
    check_display_rows(display, path, base, evaluation, variants, grid, w)
    return _Rows(base, evaluation, variants, grid, template, reference, display)


def _build(path: Path, data: dict[str, Any], w: Where, check_entry: bool) -> Study:
    given = _study_table(data, w)
    st = data["study"]
    cache = DigestCache()
    metrics, computed = parse_metrics(st, table_or_default(data, "metrics"), path.parent, w, cache)
    primary = given["primary"] if "primary" in st else metrics[0]
    if primary not in metrics:
        raise w.error(
            "[study] primary", f"{primary!r} is not one of metrics {metrics!r}", "primary", "study"
        )
    hib = parse_directions(given["higher_is_better"], metrics, computed, w)
    bounds, min_effect = parse_study_options(given, metrics, primary, computed, w)
    definitions = parse_definitions(given["definitions"], metrics, computed, w)
    resources = _resources(given["resources"], w)
    rows = _rows(path, data, given, w)
    code = code_keys(path, given, data, computed, cache, w, check_entry)
    cache.save()
    timeout = given["timeout"]
    return Study(
        curves=code.curves,
        computed=computed,
        paired_seeds=given["paired_seeds"],
        shared_folder=given["shared_folder"],
        transfer_limit_mb=float(given["transfer_limit_mb"]),
        bounds=bounds,
        min_effect=min_effect,
        path=path,
        name=given["name"],
        seeds=tuple(given["seeds"]),
        metrics=tuple(metrics),
        primary=primary,
        higher_is_better=hib,
        base=dict(rows.base),
        entry=given["entry"],
        command=given["command"],
        template=rows.template,
        description=given["description"],
        timeout=float(timeout) if timeout is not None else None,
        retries=given["retries"],
        resources=resources,
        code_version=code.version,
        code=code.code,
        variants=tuple(rows.variants),
        grid=rows.grid,
        reference=rows.reference,
        evaluate=given["evaluate"],
        evaluation=dict(rows.evaluation),
        display=rows.display,
        definitions=definitions,
        stage_versions=code.stage_versions,
    )


def _resources(res: Any, w: Where) -> Resources:
    res = w.study_table(res, "resources", "{ cpus = 1, gpus = 0 }")
    for k, v in res.items():
        if k not in RESOURCE_KEYS:
            raise w.error(
                "[study] resources",
                f"unknown key {k!r}; known: {', '.join(RESOURCE_KEYS)}",
                "resources",
                "study",
            )
        if not is_number(v) or v < 0:
            raise w.error(
                "[study] resources", f"{k} must be a number >= 0, got {v!r}", "resources", "study"
            )
    given = {k.name: res.get(k.name, k.default) for k in keys.keys_of("study.resources").values()}
    return Resources(cpus=float(given["cpus"]), gpus=float(given["gpus"]))
