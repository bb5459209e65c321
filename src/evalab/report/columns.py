"""The configuration columns of the results table, as in Table 3 of "Attention Is All You
Need": one column per configuration key that some row changes, the base row showing its
values and every other row only the values that differ from the base (blank = as in the
base). ``[display]`` in the study file names the columns, adds derived ones (d_k =
d_model / heads) and labels values; see :mod:`evalab.ablation.study.display`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalab.ablation.analysis.analyze import RowAnalysis, StudyAnalysis


def _config(r: RowAnalysis) -> dict[str, Any]:
    # analyses made before rows carried their configuration: the changes are all there is
    return r.config or r.changes


def config_keys(a: StudyAnalysis) -> list[str]:
    """The keys (and derived columns) whose value differs from the base's in some row, in
    the order of ``[display] columns``, then of the base configuration, then derived."""
    d = a.display
    base = _config(a.base)
    candidates: list[str] = []
    for k in [*d.columns, *base, *(k for r in a.rows for k in _config(r)), *d.derived]:
        if k not in candidates:
            candidates.append(k)
    base_values = {k: d.value(k, base) for k in candidates}
    return [
        k for k in candidates if any(d.value(k, _config(r)) != base_values[k] for r in a.rows[1:])
    ]


def config_header(a: StudyAnalysis, keys: list[str]) -> list[str]:
    """Column names: the ``[display] columns`` name of each key, else the key."""
    return [a.display.name(k) for k in keys]


def config_cells(a: StudyAnalysis, r: RowAnalysis, keys: list[str]) -> list[str]:
    """The row's values in ``keys``: all of them for the base row, else only those that
    differ from the base (blank = as in the base)."""
    d = a.display
    base, cfg = _config(a.base), _config(r)
    cells = []
    for k in keys:
        value = d.value(k, cfg)
        same = r is not a.base and value == d.value(k, base)
        cells.append(
            ""
            if same or (value is None and k not in cfg and k not in d.derived)
            else d.text(k, value)
        )
    return cells


def config_note(a: StudyAnalysis, keys: list[str]) -> str:
    """What the configuration columns are: renamed keys, derived columns, blank cells."""
    if not keys:
        return ""
    d = a.display
    parts = []
    for k in keys:
        if k in d.derived:
            parts.append(f"{d.name(k)} = {d.derived[k]} (derived from each row's configuration)")
        elif d.name(k) != k:
            parts.append(f"{d.name(k)} = {k}")
    what = "Configuration columns: one per key that some row changes; blank = as in the base row"
    return what + (f"; {'; '.join(parts)}." if parts else ".")
