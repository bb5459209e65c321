"""Rows of a study: the base, the variants and the cells of a full-factorial grid.

Kept apart from the study file's parsers (:mod:`evalab.ablation.study.variants` checks
``[reference]`` labels against the grid cells) and :mod:`evalab.ablation.plan.runs`
(which builds the rows from them), so both use one grid.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

BASE_LABEL = "base"


@dataclass(frozen=True)
class Row:
    """One row of the report: the base, a variant, or a grid cell.

    A ``stage == "eval"`` row is not trained: its runs evaluate the trained runs of row
    ``parent`` (whose configuration is ``parent_config``) with ``eval_config`` (the
    ``[evaluation]`` defaults and the row's changes); ``config`` is what ``evaluate``
    receives, the two merged.
    """

    label: str
    description: str
    kind: str  # "base" | "variant" | "grid"
    config: dict[str, Any]
    changes: dict[str, Any]  # keys whose value differs from [base] (or, eval rows, [evaluation])
    levels: dict[str, Any]  # grid cells: factor -> level (empty otherwise)
    stage: str = "train"  # "train" | "eval"
    parent: str = ""
    parent_config: dict[str, Any] = field(default_factory=dict)
    eval_config: dict[str, Any] = field(default_factory=dict)


def format_level(value: Any) -> str:
    """A grid level as it appears in a row label (strings bare, the rest as TOML-ish JSON).

    >>> format_level("relu"), format_level(0.1), format_level(True)
    ('relu', '0.1', 'true')
    """
    return value if isinstance(value, str) else json.dumps(value)


def grid_cells(base: dict[str, Any], grid: dict[str, list[Any]]) -> list[Row]:
    """The full factorial over ``grid`` (first factor varies slowest), each cell on ``base``.

    >>> [c.label for c in grid_cells({"a": 1, "b": 2}, {"a": [0, 1], "b": [2, 3]})]
    ['a=0, b=2', 'a=0, b=3', 'a=1, b=2', 'a=1, b=3']
    """
    if not grid:
        return []
    factors = list(grid)
    cells = []
    for combo in itertools.product(*(grid[f] for f in factors)):
        levels = dict(zip(factors, combo, strict=True))
        config = {**base, **levels}
        changes = {k: v for k, v in levels.items() if base.get(k) != v}
        label = ", ".join(f"{k}={format_level(v)}" for k, v in levels.items())
        desc = (
            "grid cell = base"
            if not changes
            else "grid: " + ", ".join(f"{k}={format_level(v)}" for k, v in changes.items())
        )
        cells.append(
            Row(
                label=label,
                description=desc,
                kind="grid",
                config=config,
                changes=changes,
                levels=levels,
            )
        )
    return cells
