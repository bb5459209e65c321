"""Per-item scores of one model and one metric, and their alignment across models.

Every reader (:mod:`evalab.items.readers`, :mod:`evalab.items.harness`) turns its records
into :class:`Row` values; :func:`collect` checks them (numeric finite scores, no duplicate
item or sample, one cluster per item) and builds one :class:`ScoreSet` per metric;
:func:`align` puts the score sets of several models on the same items, or refuses.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from evalab import numbers
from evalab.errors import InputError, Setting

__all__ = ["Aligned", "Records", "Row", "ScoreSet", "align", "collect", "floats", "numeric"]


@dataclass(frozen=True)
class Row:
    """One record of a per-item file: an item, optionally a sample and a cluster, its scores."""

    item: str
    line: int
    scores: Mapping[str, object]
    sample: str | None = None
    cluster: str | None = None


@dataclass(frozen=True)
class ScoreSet:
    """One model's scores on one metric: ``values[j]`` belongs to item ``ids[item[j]]``."""

    model: str
    metric: str
    path: str
    ids: tuple[str, ...]
    #: line (or sample number, see ``unit``) of each item's first record
    lines: tuple[int, ...]
    values: np.ndarray
    item: np.ndarray
    clusters: tuple[str, ...] | None = None
    #: the task version the harness recorded (compared across models)
    version: str | None = None
    unit: str = "line"

    @property
    def binary(self) -> bool:
        """Every score is 0 or 1."""
        return bool(np.all((self.values == 0.0) | (self.values == 1.0)))


def numeric(value: object, where: str) -> float:
    """A score from a JSON/CSV value under :mod:`evalab.numbers`'s grammar (a JSON ``true`` is
    1), or :class:`InputError` naming ``where``."""
    if isinstance(value, bool):
        return float(value)
    try:
        return float(numbers.read_value(value.strip() if isinstance(value, str) else value))
    except TypeError:
        raise InputError(f"{where}: score {value!r} is not a number") from None
    except numbers.NumberError as exc:
        if exc.reason == "syntax":
            raise InputError(f"{where}: score {numbers.shown(exc.text)} is not a number") from None
        if exc.reason == "not-finite":
            raise InputError(
                f"{where}: score is {exc.text!r}; every score must be a finite number"
            ) from None
        raise InputError(f"{where}: score {exc}") from None


@dataclass
class Records:
    """Rows of one file gathered column by column (the checks then run on whole arrays)."""

    items: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    samples: list[str | None] = field(default_factory=list)
    clusters: list[str | None] = field(default_factory=list)
    #: metric -> (row numbers, raw values)
    scores: dict[str, tuple[list[int], list[object]]] = field(default_factory=dict)

    def add(self, row: Row) -> None:
        """Append one row."""
        k = len(self.items)
        self.items.append(row.item)
        self.lines.append(row.line)
        self.samples.append(row.sample)
        self.clusters.append(row.cluster)
        for metric, value in row.scores.items():
            rows, values = self.scores.setdefault(metric, ([], []))
            rows.append(k)
            values.append(value)


def floats(raw: Sequence[object], *, label: Callable[[int], str]) -> np.ndarray:
    """``raw`` as float64 values read by :func:`numeric`; the first bad one is refused naming
    ``label(k)``."""
    if all(type(v) is float for v in raw):  # JSON's numbers: only finiteness is left to check
        arr = np.array(raw, dtype=np.float64)
        if np.all(np.isfinite(arr)):
            return arr
    return np.array([numeric(v, label(k)) for k, v in enumerate(raw)], dtype=np.float64)


def _duplicate(rec: Records, n_ids: int, path: str, unit: str) -> None:
    unsampled = all(s is None for s in rec.samples)
    if unsampled and n_ids == len(rec.items):
        return
    keys = list(zip(rec.items, rec.samples, strict=True))
    if not unsampled and len(set(keys)) == len(keys):
        return
    seen: dict[tuple[str, str | None], int] = {}
    for key, line in zip(keys, rec.lines, strict=True):
        if key in seen:
            what = f"item {key[0]!r}" + ("" if key[1] is None else f" sample {key[1]!r}")
            several = (
                ()
                if key[1] is not None
                else (
                    " (several samples of an item: name the column numbering them with ",
                    Setting("Columns.sample"),
                    ")",
                )
            )
            raise InputError(
                f"{path}: {unit} {line}: {what} already given at {unit} {seen[key]}; give each once",
                *several,
            )
        seen[key] = line


def _cluster_labels(
    rec: Records, item: np.ndarray, first: np.ndarray, path: str, unit: str
) -> tuple[str, ...] | None:
    """Each item's cluster (None without clusters); refuses a cluster that changes within an item."""
    if all(c is None for c in rec.clusters):
        return None
    if None in rec.clusters:
        raise InputError(
            f"{path}: {unit} {rec.lines[rec.clusters.index(None)]}: the item has no cluster; give every item one"
        )
    index: dict[str | None, int] = {}
    code = np.fromiter(
        (index.setdefault(c, len(index)) for c in rec.clusters), np.int64, len(rec.clusters)
    )
    changed = code != code[first][item]
    if np.any(changed):
        j = int(np.argmax(changed))
        i = first[item[j]]
        raise InputError(
            f"{path}: {unit} {rec.lines[j]}: item {rec.items[j]!r} is in cluster {rec.clusters[j]!r} here but "
            f"{rec.clusters[i]!r} at {unit} {rec.lines[i]}; an item belongs to one cluster"
        )
    return tuple(str(rec.clusters[i]) for i in first)


def _value_label(
    path: str, unit: str, lines: list[int], where: list[int], metric: str
) -> Callable[[int], str]:
    """Names a metric's ``k``-th value by its input line."""
    return lambda k: f"{path}: {unit} {lines[where[k]]}, {metric}"


def collect(
    rows: Iterable[Row] | Records,
    *,
    model: str,
    path: str,
    unit: str = "line",
    version: str | None = None,
) -> list[ScoreSet]:
    """One :class:`ScoreSet` per metric (refusing bad values, duplicates and clusters that
    change within an item)."""
    rec = rows if isinstance(rows, Records) else Records()
    if not isinstance(rows, Records):
        for row in rows:
            rec.add(row)
    if not rec.items:
        raise InputError(f"{path}: no scored items")
    index: dict[str, int] = {}
    item = np.fromiter(
        (index.setdefault(i, len(index)) for i in rec.items), np.int64, len(rec.items)
    )
    first = np.unique(item, return_index=True)[1]  # codes follow first appearance
    clusters = _cluster_labels(rec, item, first, path, unit)
    _duplicate(rec, len(index), path, unit)
    ids, lines = tuple(index), tuple(rec.lines[i] for i in first)
    out = []
    for metric, (where, raw) in rec.scores.items():
        values = floats(raw, label=_value_label(path, unit, rec.lines, where, metric))
        items = item[np.asarray(where, dtype=np.int64)]
        counts = np.bincount(items, minlength=len(ids))
        if np.any(counts == 0):
            k = int(np.argmin(counts))
            raise InputError(f"{path}: {unit} {lines[k]}: item {ids[k]!r} has no {metric} score")
        out.append(
            ScoreSet(model, metric, path, ids, lines, values, items, clusters, version, unit)
        )
    return out


@dataclass(frozen=True)
class Aligned:
    """The score sets of one metric on common items (each remapped to ``ids`` order)."""

    metric: str
    ids: tuple[str, ...]
    sets: tuple[ScoreSet, ...]
    clusters: tuple[str, ...] | None
    #: items left out because not every model has them (``common=True`` only)
    dropped: int


def _mismatch(ref: ScoreSet, other: ScoreSet) -> str:
    ref_ids, other_ids = set(ref.ids), set(other.ids)
    extra = [i for i in other.ids if i not in ref_ids]
    if extra:
        line = other.lines[other.ids.index(extra[0])]
        return (
            f"{other.path}: {other.unit} {line}: item {extra[0]!r} is not in {ref.path} "
            f"({len(extra)} such items)"
        )
    missing = [i for i in ref.ids if i not in other_ids]
    line = ref.lines[ref.ids.index(missing[0])]
    return (
        f"{ref.path}: {ref.unit} {line}: item {missing[0]!r} is missing from {other.path} "
        f"({len(missing)} such items)"
    )


def _restrict(s: ScoreSet, ids: tuple[str, ...]) -> ScoreSet:
    """``s`` on ``ids`` only, items renumbered in that order."""
    if s.ids == ids:
        return s
    position = {i: k for k, i in enumerate(ids)}
    remap = np.array([position.get(i, -1) for i in s.ids], dtype=np.int64)
    new_item = remap[s.item]
    keep = new_item >= 0
    old = {i: k for k, i in enumerate(s.ids)}
    clusters = None if s.clusters is None else tuple(s.clusters[old[i]] for i in ids)
    return ScoreSet(
        s.model,
        s.metric,
        s.path,
        tuple(ids),
        tuple(s.lines[old[i]] for i in ids),
        s.values[keep],
        new_item[keep],
        clusters,
        s.version,
        s.unit,
    )


def _clusters(sets: Sequence[ScoreSet]) -> tuple[str, ...] | None:
    given = [s for s in sets if s.clusters is not None]
    for s in given[1:]:
        if s.clusters != given[0].clusters:
            k = next(
                k
                for k, (a, b) in enumerate(
                    zip(s.clusters or (), given[0].clusters or (), strict=True)
                )
                if a != b
            )
            raise InputError(
                f"{s.path}: {s.unit} {s.lines[k]}: item {s.ids[k]!r} is in cluster {s.clusters[k]!r} "  # type: ignore[index]
                f"but in {given[0].clusters[k]!r} in {given[0].path}; the clusters must agree"  # type: ignore[index]
            )
    return given[0].clusters if given else None


def align(sets: Sequence[ScoreSet], *, common: bool = False) -> list[Aligned]:
    """Group ``sets`` by metric and align each group's items by id (the first model's order).

    Refuses missing or extra ids (naming file and line) and task versions that differ; a
    metric that not every model has is left out with a warning (refused when no metric is
    left); with ``common`` the items every model has are kept.
    """
    models = list(dict.fromkeys(s.model for s in sets))
    by_metric: dict[str, list[ScoreSet]] = {}
    for s in sets:
        by_metric.setdefault(s.metric, []).append(s)
    shared = {m: g for m, g in by_metric.items() if [s.model for s in g] == models}
    partial = [m for m in by_metric if m not in shared]
    if partial and not shared:
        group = by_metric[partial[0]]
        lacking = next(m for m in models if m not in {s.model for s in group})
        raise InputError(
            f"{lacking}: has no {partial[0]!r} scores, which {group[0].path} has, and no "
            "metric is scored for every model"
        )
    if partial:
        warnings.warn(
            f"{', '.join(partial)}: not scored for every model; compared on the metrics "
            f"every model has ({', '.join(shared)})",
            UserWarning,
            stacklevel=2,
        )
    out = []
    for metric, group in shared.items():
        versions = {s.version for s in group}
        if len(versions) > 1:
            detail = ", ".join(f"{s.path}: {s.version}" for s in group)
            raise InputError(f"{metric}: the models ran different task versions ({detail})")
        ref = group[0]
        id_sets = [set(s.ids) for s in group]
        ids = (
            [i for i in ref.ids if all(i in other for other in id_sets[1:])]
            if common
            else list(ref.ids)
        )
        if not common:
            for s, other in zip(group[1:], id_sets[1:], strict=True):
                if other != id_sets[0]:
                    raise InputError(
                        _mismatch(ref, s),
                        "; pass ",
                        Setting("common"),
                        " to compare the items all models have",
                    )
        if not ids:
            raise InputError(f"{metric}: no item is scored for every model")
        kept = tuple(_restrict(s, tuple(ids)) for s in group)
        union = set().union(*id_sets)
        out.append(Aligned(metric, tuple(ids), kept, _clusters(kept), len(union) - len(ids)))
    return out
