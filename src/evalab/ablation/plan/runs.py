"""From a study to rows and runs: base + variants (+ grid cells) x seeds.

A run is identified by its *key*, a hash of the merged configuration, the seed and the
study's code version. Two rows with the same configuration (the grid cell that equals the
base) therefore share their runs, and a finished run is never repeated unless the
configuration, the seed or the code changes.

A run of a ``stage = "eval"`` row evaluates the checkpoint of one trained run (its
*parent*: the ``from`` row, same seed). Its key hashes the parent's key, the evaluation
configuration and the code version, so it is redone exactly when the parent is retrained
(new configuration, seed or code) or the evaluation changes. Eval runs come after the
training runs in the plan.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

# Row, grid_cells, format_level and BASE_LABEL are re-exported: callers import them from here
from evalab.ablation.study.grid import BASE_LABEL, Row, format_level, grid_cells
from evalab.ablation.study.spec import Study
from evalab.errors import SettingValueError

__all__ = [
    "BASE_LABEL",
    "PlannedRun",
    "Row",
    "Subset",
    "canonical",
    "eval_run_key",
    "format_level",
    "grid_cells",
    "plan_runs",
    "row_run_key",
    "run_key",
    "study_rows",
    "study_run_key",
]


@dataclass(frozen=True)
class PlannedRun:
    """One (configuration, seed) pair to execute; ``rows`` are the rows it belongs to."""

    key: str
    config: dict[str, Any]
    seed: int
    rows: tuple[str, ...]
    stage: str = "train"
    parent_key: str = ""  # eval runs: the key of the trained run whose checkpoint they evaluate


def canonical(value: Any) -> str:
    """Canonical JSON (sorted keys, no spaces): the text that is hashed and stored."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def run_key(config: dict[str, Any], seed: int, code_version: str) -> str:
    """The run key: sha256 of the merged configuration, the seed and the code version.

    >>> run_key({"a": 1}, 0, "v1") == run_key({"a": 1}, 0, "v1")
    True
    >>> run_key({"a": 1}, 0, "v1") == run_key({"a": 1}, 1, "v1")
    False
    """
    text = canonical({"config": config, "seed": seed, "code_version": code_version})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def eval_run_key(parent_key: str, eval_config: dict[str, Any], code_version: str) -> str:
    """The key of an eval run: sha256 of its parent run's key, the evaluation configuration
    and the code version (the seed and training configuration are in the parent's key).

    >>> eval_run_key("k1", {"eval_heads": 1}, "v1") == eval_run_key("k2", {"eval_heads": 1}, "v1")
    False
    """
    text = canonical({"parent": parent_key, "eval": eval_config, "code_version": code_version})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


def row_run_key(row: Row, seed: int, code_version: str, eval_version: str | None = None) -> str:
    """The key of ``row``'s run for ``seed`` (trained or evaluation-time); an eval run's
    key holds its trained run's key (``code_version``) and ``eval_version`` (default: the same)."""
    if row.stage == "eval":
        return eval_run_key(
            run_key(row.parent_config, seed, code_version),
            row.eval_config,
            eval_version or code_version,
        )
    return run_key(row.config, seed, code_version)


def study_run_key(study: Study, row: Row, seed: int) -> str:
    """The key of ``row``'s run for ``seed`` under the study's per-stage code versions."""
    return row_run_key(row, seed, study.stage_version("train"), study.stage_version("eval"))


def study_rows(study: Study) -> list[Row]:
    """The report's rows in order: base, the variants as written (trained and eval), then
    the grid cells."""
    base = Row(
        BASE_LABEL, study.description or "base configuration", "base", dict(study.base), {}, {}
    )
    cells = grid_cells(study.base, study.grid)
    trained = {base.label: base, **{c.label: c for c in cells}}
    for v in study.variants:
        if v.stage == "train":
            changes = {k: val for k, val in v.settings.items() if study.base.get(k) != val}
            trained[v.label] = Row(
                v.label, v.description, "variant", {**study.base, **v.settings}, changes, {}
            )
    variants = [
        trained[v.label] if v.stage == "train" else _eval_row(study, v, trained[v.parent])
        for v in study.variants
    ]
    return [base, *variants, *cells]


def _eval_row(study: Study, v: Any, parent: Row) -> Row:
    eval_config = {**study.evaluation, **v.settings}
    changes = {k: val for k, val in v.settings.items() if study.evaluation.get(k) != val}
    return Row(
        v.label,
        v.description,
        "variant",
        {**parent.config, **eval_config},
        changes,
        {},
        stage="eval",
        parent=parent.label,
        parent_config=dict(parent.config),
        eval_config=eval_config,
    )


def plan_runs(study: Study) -> list[PlannedRun]:
    """Every distinct run of the study, row by row and seed by seed.

    >>> from evalab.ablation.study.spec import Study
    >>> from pathlib import Path
    >>> s = Study(path=Path("s.toml"), name="s", seeds=(0, 1), metrics=("acc",),
    ...           primary="acc", higher_is_better={"acc": True}, base={"a": 1},
    ...           entry="m:f", grid={"a": [0, 1]})
    >>> [(r.rows, r.seed) for r in plan_runs(s)][:3]
    [(('base', 'a=1'), 0), (('base', 'a=1'), 1), (('a=0',), 0)]
    """
    by_key: dict[str, tuple[Row, int, list[str]]] = {}
    for row in sorted(study_rows(study), key=lambda r: r.stage == "eval"):  # training runs first
        for seed in study.seeds:
            key = study_run_key(study, row, seed)
            if key in by_key:
                by_key[key][2].append(row.label)
            else:
                by_key[key] = (row, seed, [row.label])
    return [
        PlannedRun(
            key,
            row.config,
            seed,
            tuple(labels),
            row.stage,
            run_key(row.parent_config, seed, study.stage_version("train"))
            if row.stage == "eval"
            else "",
        )
        for key, (row, seed, labels) in by_key.items()
    ]


@dataclass(frozen=True)
class Subset:
    """The runs of some rows and some seeds (``ablate run --row``, ``--seed``); empty = all.

    An eval row's runs come with the trained runs whose checkpoints they evaluate.
    """

    rows: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.rows or self.seeds)

    def check(self, study: Study) -> None:
        """:class:`SettingsError` for a row label or a seed the study does not have."""
        labels = [r.label for r in study_rows(study)]
        for label in self.rows:
            if label not in labels:
                raise SettingValueError(
                    "rows",
                    repr(label),
                    f"the study {study.name!r} has no such row; rows: {', '.join(labels)}",
                )
        for seed in self.seeds:
            if seed not in study.seeds:
                raise SettingValueError(
                    "seeds",
                    str(seed),
                    f"not a seed of the study {study.name!r}; seeds: "
                    f"{', '.join(map(str, study.seeds))}",
                )

    def select(self, plan: list[PlannedRun]) -> list[PlannedRun]:
        """The runs of ``plan`` in the subset, in the plan's order."""
        chosen = {
            r.key
            for r in plan
            if (not self.rows or set(r.rows) & set(self.rows))
            and (not self.seeds or r.seed in self.seeds)
        }
        chosen |= {r.parent_key for r in plan if r.key in chosen and r.parent_key}
        return [r for r in plan if r.key in chosen]
