"""Effects in a factorial ablation: removal, addition, interaction and main effects.

Each effect is a *contrast* (a signed sum of cell means) and is reported with the
arithmetic that produced it, because effects need not add (seed 004): with accuracy 70
for neither component, 80 for A alone, 80 for B alone and 80 for both,

- removing A from the full system changes accuracy by ``80 - 80 = 0``,
- adding A to the system with neither changes it by ``80 - 70 = +10``,
- and the interaction is ``80 - 80 - 80 + 70 = -10``.

Over seeds, a contrast ``sum(c_i * mean_i)`` has the standard error
``sqrt(sum(c_i^2 s_i^2 / n_i))`` and Welch-Satterthwaite degrees of freedom, which give
its CI and a two-sided p-value. When the seeds are paired across cells (the study's
``paired_seeds``), the contrast is taken seed by seed over the seeds every cell finished
and tested with the one-sample t over those per-seed contrasts (``n - 1`` degrees).

Where the t-test is undefined the CI and p are ``None`` with a reason code in ``absent``
(:data:`ABSENT_CODES`), never the degenerate limit (a zero-width CI, p 0).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from evalab.stats.seed_stats import overflow_exponent, satterthwaite_df, scale_back, t_ppf, t_sf2

#: why a contrast (or a Δ) has no CI and no p over seeds
ABSENT_CODES = {
    "missing_cells": "a cell has no finished run",
    "one_seed": "a cell (or, paired, the seeds all cells share) has fewer than two seeds",
    "no_seed_spread": "no seed spread: every seed gave the same value (paired: the same contrast), the t-test is 0/0",
}

#: a cell's seed values: an array (unpaired) or seed -> value (needed when paired)
CellValues = np.ndarray | Mapping[int, float]


@dataclass(frozen=True)
class Contrast:
    """A signed sum of cell means with its arithmetic, CI and p-value over seeds."""

    kind: str  # "removal" | "addition" | "interaction" | "main"
    name: str
    cells: tuple[str, ...]  # cell labels, in the order of the arithmetic
    coefficients: tuple[float, ...]
    means: tuple[float, ...]
    value: float
    arithmetic: str
    low: float | None = None
    high: float | None = None
    p: float | None = None
    missing: tuple[str, ...] = field(default=())  # cells without any finished run
    absent: str = ""  # why low/high/p are None (a key of ABSENT_CODES); "" when they are shown
    paired: bool = False  # taken seed by seed over the seeds every cell finished

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "cells": list(self.cells),
            "coefficients": list(self.coefficients),
            "means": list(self.means),
            "value": self.value,
            "arithmetic": self.arithmetic,
            "ci": None if self.low is None or self.high is None else [self.low, self.high],
            "p": self.p,
            "absent": self.absent or None,
            "paired": self.paired,
            "missing": list(self.missing),
        }


def _integral(values: Sequence[float]) -> bool:
    return all(math.isfinite(v) and abs(v - round(v)) < 1e-9 for v in values)


def format_number(x: float, decimals: int, signed: bool = False) -> str:
    """A number for the arithmetic strings: integers bare, else ``decimals`` places."""
    if not math.isfinite(x):
        return "n/a"
    text = f"{x:+.{decimals}f}" if signed else f"{x:.{decimals}f}"
    if text.lstrip("+-") == f"{0:.{decimals}f}":
        text = f"{0:.{decimals}f}"  # no "-0" or "+0"
    return text


def arithmetic(
    coefficients: Sequence[float], means: Sequence[float], value: float, decimals: int = 2
) -> str:
    """The contrast written out: ``80 - 80 - 80 + 70 = -10``.

    >>> arithmetic([1, -1, -1, 1], [80, 80, 80, 70], -10)
    '80 - 80 - 80 + 70 = -10'
    >>> arithmetic([1, -1], [80, 70], 10)
    '80 - 70 = +10'
    >>> arithmetic([1, -1], [80.25, 79.5], 0.75)
    '80.25 - 79.50 = +0.75'
    """
    numbers = [*means, value]
    d = 0 if _integral(numbers) else decimals
    parts = []
    for i, (c, m) in enumerate(zip(coefficients, means, strict=True)):
        scale = (
            ""
            if abs(abs(c) - 1.0) < 1e-12
            else f"{format_number(abs(c), 3).rstrip('0').rstrip('.')}*"
        )
        text = format_number(m, d)
        if m < 0:
            text = f"({text})"
        term = f"{scale}{text}"
        if i == 0:
            parts.append(term if c > 0 else f"-{term}")
        else:
            parts.append(f"{'+' if c > 0 else '-'} {term}")
    return f"{' '.join(parts)} = {format_number(value, d, signed=True) if d or value else '0'}"


def contrast(
    kind: str,
    name: str,
    cells: Sequence[tuple[str, float, CellValues]],
    *,
    confidence: float = 0.95,
    decimals: int = 2,
    paired: bool = False,
    bounds: tuple[float, float] | None = None,
) -> Contrast:
    """Build a :class:`Contrast` from ``(label, coefficient, seed values)`` cells.

    ``paired``: the values are ``seed -> value`` mappings and the contrast is taken over the
    seeds all cells share; ``bounds``: the interval every cell mean lies in, which bounds
    the contrast (its CI is clipped to ``[sum min(c lo, c hi), sum max(c lo, c hi)]``).
    """
    labels = tuple(c[0] for c in cells)
    coefs = tuple(float(c[1]) for c in cells)
    arrays = _cell_arrays(cells, paired)
    e = overflow_exponent(*arrays)
    if e:  # values near the float limit: computed on a rescaled copy (p is scale-free)
        scaled = (
            None
            if bounds is None
            else (float(np.ldexp(bounds[0], -e)), float(np.ldexp(bounds[1], -e)))
        )
        r = contrast(
            kind,
            name,
            [(lab, c, np.ldexp(a, -e)) for lab, c, a in zip(labels, coefs, arrays, strict=True)],
            confidence=confidence,
            decimals=decimals,
            paired=paired,
            bounds=scaled,
        )
        return _scaled_back(r, e, decimals)
    missing = tuple(lab for lab, arr in zip(labels, arrays, strict=True) if arr.size == 0)
    means = tuple(float(a.mean()) if a.size else float("nan") for a in arrays)
    if missing:
        return Contrast(
            kind,
            name,
            labels,
            coefs,
            means,
            float("nan"),
            "n/a (no finished runs for " + "; ".join(missing) + ")",
            missing=missing,
            absent="missing_cells",
            paired=paired,
        )
    value = float(sum(c * m for c, m in zip(coefs, means, strict=True)))
    text = arithmetic(coefs, means, value, decimals)
    low, high, p, absent = _contrast_t(coefs, arrays, value, confidence, paired=paired)
    if low is not None and high is not None and bounds is not None:
        low, high = _clipped(low, high, coefs, bounds)
    return Contrast(
        kind, name, labels, coefs, means, value, text, low, high, p, absent=absent, paired=paired
    )


def _cell_arrays(cells: Sequence[tuple[str, float, CellValues]], paired: bool) -> list[np.ndarray]:
    """Each cell's seed values; ``paired``: over the seeds every cell shares (all of each
    cell's values where they share none)."""
    if not paired:
        return [
            np.asarray(list(c[2].values()) if isinstance(c[2], Mapping) else c[2], dtype=float)
            for c in cells
        ]
    maps = [dict(c[2]) if isinstance(c[2], Mapping) else dict(enumerate(c[2])) for c in cells]
    shared = sorted(set.intersection(*(set(m) for m in maps))) if maps else []
    if not shared:
        return [np.asarray(list(m.values()), dtype=float) for m in maps]
    return [np.array([m[s] for s in shared], dtype=float) for m in maps]


def _clipped(
    low: float, high: float, coefs: Sequence[float], bounds: tuple[float, float]
) -> tuple[float, float]:
    """A contrast's interval clipped to the range its coefficients allow cell means in ``bounds``."""
    lo = sum(min(c * bounds[0], c * bounds[1]) for c in coefs)
    hi = sum(max(c * bounds[0], c * bounds[1]) for c in coefs)
    return min(max(low, lo), hi), min(max(high, lo), hi)


def _scaled_back(r: Contrast, e: int, decimals: int) -> Contrast:
    """A contrast computed on values scaled by ``2**-e``, on the values' own scale again."""
    means = tuple(scale_back(m, e) for m in r.means)
    value = scale_back(r.value, e)
    text = r.arithmetic if r.missing else arithmetic(r.coefficients, means, value, decimals)
    return replace(
        r,
        means=means,
        value=value,
        arithmetic=text,
        low=None if r.low is None else scale_back(r.low, e),
        high=None if r.high is None else scale_back(r.high, e),
    )


def _contrast_t(
    coefs: Sequence[float],
    arrays: list[np.ndarray],
    value: float,
    confidence: float,
    *,
    paired: bool,
) -> tuple[float | None, float | None, float | None, str]:
    """(low, high, p, absent) of a contrast over seeds: Welch-Satterthwaite, or paired t."""
    if paired and len({a.size for a in arrays}) == 1 and arrays[0].size >= 2:
        per_seed = sum(
            (c * a for c, a in zip(coefs, arrays, strict=True)), start=np.zeros(arrays[0].shape)
        )
        se2, df = float(np.var(per_seed, ddof=1)) / per_seed.size, float(per_seed.size - 1)
        if np.ptp(per_seed) == 0:
            se2 = 0.0
    elif not paired and all(a.size >= 2 for a in arrays):
        parts = [c * c * float(a.var(ddof=1)) / a.size for c, a in zip(coefs, arrays, strict=True)]
        se2 = sum(parts)
        df = satterthwaite_df(parts, [a.size for a in arrays]) if se2 > 0 else math.nan
    else:
        return None, None, None, "one_seed"
    if not se2 > 0:
        return None, None, None, "no_seed_spread"
    half = t_ppf(0.5 + confidence / 2, df) * math.sqrt(se2)
    return value - half, value + half, t_sf2(value / math.sqrt(se2), df), ""


def _fmt_level(v: Any) -> str:
    import json

    return v if isinstance(v, str) else json.dumps(v)


def cell_label(levels: dict[str, Any]) -> str:
    """The label of a grid cell, ``"heads=1, dropout=0.1"``."""
    return ", ".join(f"{k}={_fmt_level(v)}" for k, v in levels.items())


def factorial_effects(
    grid: dict[str, list[Any]],
    reference: dict[str, Any],
    values: Callable[[dict[str, Any]], CellValues],
    *,
    confidence: float = 0.95,
    decimals: int = 2,
    paired: bool = False,
    bounds: tuple[float, float] | None = None,
) -> list[Contrast]:
    """Main effects, removal / addition effects and 2x2 interactions of a full factorial.

    ``reference`` gives each factor's level in the full system (the base); every other
    level is an ablation of it. ``values(levels)`` returns the seed values of a cell.

    - main effect of ``F=f``: mean over all cells with ``F=f`` minus mean over all cells
      with ``F`` at its reference level;
    - removal of ``F`` (to ``f``): ``y(F=f, rest at reference) - y(full)``;
    - for each pair ``F, G`` (other factors at reference), with ``f, g`` the ablated
      levels: addition of ``F`` to the system without ``G``: ``y(F_ref, g) - y(f, g)``;
      interaction ``y(F_ref, G_ref) - y(F_ref, g) - y(f, G_ref) + y(f, g)``.

    ``paired`` and ``bounds`` are passed to every :func:`contrast`.
    """
    kw: dict[str, Any] = {
        "confidence": confidence,
        "decimals": decimals,
        "paired": paired,
        "bounds": bounds,
    }
    design = _Factorial(grid, reference, values)
    return [*design.main_effects(kw), *design.removals(kw), *design.pair_effects(kw)]


@dataclass(frozen=True)
class _Factorial:
    """A full factorial grid, its reference (full-system) levels and its cells' seed values."""

    grid: dict[str, list[Any]]
    reference: dict[str, Any]
    values: Callable[[dict[str, Any]], CellValues]

    def cell(self, **changes: Any) -> tuple[str, dict[str, Any]]:
        """The label and levels of the cell with ``changes``, every other factor at reference."""
        levels = {f: changes.get(f, self.reference[f]) for f in self.grid}
        return cell_label(levels), levels

    def ablated(self, factor: str) -> list[Any]:
        """The levels of ``factor`` other than its reference level."""
        return [x for x in self.grid[factor] if x != self.reference[factor]]

    def main_effects(self, kw: dict[str, Any]) -> list[Contrast]:
        """Each ablated level's mean over its cells minus the reference level's mean."""
        factors = list(self.grid)
        all_cells = [
            dict(zip(factors, combo, strict=True))
            for combo in itertools.product(*(self.grid[f] for f in factors))
        ]
        out = []
        for f in factors:
            ref_cells = [c for c in all_cells if c[f] == self.reference[f]]
            for level in self.ablated(f):
                lvl_cells = [c for c in all_cells if c[f] == level]
                k = len(lvl_cells)
                terms = [(cell_label(c), 1.0 / k, self.values(c)) for c in lvl_cells]
                terms += [(cell_label(c), -1.0 / k, self.values(c)) for c in ref_cells]
                name = f"main effect of {f}={_fmt_level(level)} (vs {_fmt_level(self.reference[f])}), averaged over {k} cells each"
                out.append(contrast("main", name, terms, **kw))
        return out

    def removals(self, kw: dict[str, Any]) -> list[Contrast]:
        """``y(F=f, rest at reference) - y(full)`` for every ablated level ``f``."""
        lab_full, lv_full = self.cell()
        out = []
        for f in self.grid:
            for level in self.ablated(f):
                lab_without, lv_without = self.cell(**{f: level})
                name = f"removal of {f}={_fmt_level(self.reference[f])} → {_fmt_level(level)} from the full system"
                terms = [
                    (lab_without, 1.0, self.values(lv_without)),
                    (lab_full, -1.0, self.values(lv_full)),
                ]
                out.append(contrast("removal", name, terms, **kw))
        return out

    def pair_effects(self, kw: dict[str, Any]) -> list[Contrast]:
        """For each pair of factors and ablated levels: the two additions and the interaction."""
        out = []
        ref = self.reference
        for f, g in itertools.combinations(self.grid, 2):
            for lf, lg in itertools.product(self.ablated(f), self.ablated(g)):
                l11, v11 = self.cell()
                l10, v10 = self.cell(**{g: lg})
                l01, v01 = self.cell(**{f: lf})
                l00, v00 = self.cell(**{f: lf, g: lg})
                y11, y10, y01, y00 = (self.values(v) for v in (v11, v10, v01, v00))
                at = f"to the system with {f}={_fmt_level(lf)}, {g}={_fmt_level(lg)}"
                out.append(
                    contrast(
                        "addition",
                        f"addition of {f}={_fmt_level(ref[f])} {at}",
                        [(l10, 1.0, y10), (l00, -1.0, y00)],
                        **kw,
                    )
                )
                out.append(
                    contrast(
                        "addition",
                        f"addition of {g}={_fmt_level(ref[g])} {at}",
                        [(l01, 1.0, y01), (l00, -1.0, y00)],
                        **kw,
                    )
                )
                out.append(
                    contrast(
                        "interaction",
                        f"interaction {f} x {g}: y(both) - y({g} ablated) - y({f} ablated) + y(neither)",
                        [(l11, 1.0, y11), (l10, -1.0, y10), (l01, -1.0, y01), (l00, 1.0, y00)],
                        **kw,
                    )
                )
        return out
