"""From a study to rows and runs: base + variants (+ grid cells) x seeds.

A run is identified by its *key*, a hash of the merged configuration, the seed and the
study's code version. Two rows with the same configuration (the grid cell that equals the
base) therefore share their runs, and a finished run is never repeated unless the
configuration, the seed or the code changes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

# Row, grid_cells, format_level and BASE_LABEL are re-exported: callers import them from here
from evalab.ablation.grid import BASE_LABEL, Row, format_level, grid_cells
from evalab.ablation.spec import Study

__all__ = [
    "BASE_LABEL", "PlannedRun", "Row", "canonical", "format_level", "grid_cells", "plan_runs",
    "run_key", "study_rows",
]


@dataclass(frozen=True)
class PlannedRun:
    """One (configuration, seed) pair to execute; ``rows`` are the rows it belongs to."""

    key: str
    config: dict[str, Any]
    seed: int
    rows: tuple[str, ...]


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


def study_rows(study: Study) -> list[Row]:
    """The report's rows in order: base, the variants as written, then the grid cells."""
    rows = [Row(BASE_LABEL, study.description or "base configuration", "base", dict(study.base), {}, {})]
    for v in study.variants:
        config = {**study.base, **v.settings}
        changes = {k: val for k, val in v.settings.items() if study.base.get(k) != val}
        rows.append(Row(v.label, v.description, "variant", config, changes, {}))
    rows.extend(grid_cells(study.base, study.grid))
    return rows


def plan_runs(study: Study) -> list[PlannedRun]:
    """Every distinct run of the study, row by row and seed by seed.

    >>> from evalab.ablation.spec import Study
    >>> from pathlib import Path
    >>> s = Study(path=Path("s.toml"), name="s", seeds=(0, 1), metrics=("acc",),
    ...           primary="acc", higher_is_better={"acc": True}, base={"a": 1},
    ...           entry="m:f", grid={"a": [0, 1]})
    >>> [(r.rows, r.seed) for r in plan_runs(s)][:3]
    [(('base', 'a=1'), 0), (('base', 'a=1'), 1), (('a=0',), 0)]
    """
    by_key: dict[str, tuple[dict[str, Any], int, list[str]]] = {}
    for row in study_rows(study):
        for seed in study.seeds:
            key = run_key(row.config, seed, study.code_version)
            if key in by_key:
                by_key[key][2].append(row.label)
            else:
                by_key[key] = (row.config, seed, [row.label])
    return [PlannedRun(key, cfg, seed, tuple(labels)) for key, (cfg, seed, labels) in by_key.items()]
