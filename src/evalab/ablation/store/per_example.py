"""Per-example statistics of one run: what test-set uncertainty is computed from.

A run has per-example data when the study computes a metric from a file the run wrote
(``[metrics.NAME]`` with ``outputs``: evalab scores the file and keeps the metric's
per-segment statistics rows) or when the run returns per-example values for a mean-type
metric (``"per_example": {"acc": [1, 0, 1, ...]}``: rows ``[value, 1]``).

Either way the run's value of the metric is ``scores_from_sums(rows.sum(0))`` and a resample
of the test set with example counts ``c`` (shape ``[B, n]``) scores as
``scores_from_sums(c @ rows)``: the additive statistics contract of ``metrics/base.py``,
which makes a bootstrap over examples one matrix product.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evalab.ablation.plan.jobs import ExamplesEntry
from evalab.errors import RunError

if TYPE_CHECKING:
    from evalab.ablation.store.run_store import RunStore, StoredRun
    from evalab.ablation.study.spec import Study


@dataclass(frozen=True)
class ExampleStats:
    """One metric of one run, per test example.

    ``rows`` is ``[n_examples, k]`` in the test set's order (the same order in every run of
    a study, so rows of two runs pair example by example); ``scores_from_sums`` maps summed
    rows of shape ``[..., k]`` to the metric on the scale of the run's stored value.
    """

    metric: str
    rows: np.ndarray
    scores_from_sums: Callable[[np.ndarray], np.ndarray]

    @property
    def n_examples(self) -> int:
        return int(self.rows.shape[0])

    def value(self) -> float:
        """The run's value of the metric (all examples)."""
        return float(self.scores_from_sums(self.rows.sum(axis=0)))

    def resampled(self, counts: np.ndarray) -> np.ndarray:
        """Values under resamples given as example counts of shape ``[B, n_examples]``."""
        return np.asarray(self.scores_from_sums(counts @ self.rows), dtype=float)


def mean_rows(values: np.ndarray | list[float]) -> np.ndarray:
    """Rows ``[value, 1]`` for per-example values of a mean-type metric."""
    v = np.asarray(values, dtype=float).reshape(-1)
    return np.column_stack([v, np.ones_like(v)])


def mean_of_rows(sums: np.ndarray) -> np.ndarray:
    """``scores_from_sums`` of :func:`mean_rows`: the mean (NaN for an empty resample)."""
    sums = np.asarray(sums, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        means: np.ndarray = sums[..., 0] / sums[..., 1]
    return means


# ------------------------------------------------------------------ a run's examples file

#: the file in a run folder that holds the run's per-example rows
EXAMPLES_FILE = "examples.npz"
_FORMAT = 1


@dataclass(frozen=True)
class StoredRows:
    """One metric's rows as written in a run's examples file, with what they mean:
    ``kind`` is ``"computed"`` (rows of registry metric ``metric`` under ``signature``) or
    ``"mean"`` (per-example values returned by the run: :func:`mean_rows`)."""

    rows: np.ndarray
    kind: str
    metric: str = ""
    signature: str = ""


def check_per_example(raw: Any, metrics: dict[str, float]) -> dict[str, StoredRows]:
    """The rows of ``"per_example"`` as a run returned it: ``{metric: [value per example]}``.

    Every value list must be non-empty and finite, name a metric the run returned, and have
    the returned value as its mean (a per-example list on another scale than the value, or
    of another test set, would give intervals around a number that is not the run's);
    :class:`~evalab.errors.RunError` says which is not.
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RunError(
            f"per_example is {type(raw).__name__}; expected a dict {{metric: [one value per test example]}}"
        )
    out: dict[str, StoredRows] = {}
    for name, values in raw.items():
        if name not in metrics:
            raise RunError(
                f"per_example names {name!r}, which the run did not return as a metric ({sorted(metrics)})"
            )
        _check_values(name, values)
        v = np.asarray(values, dtype=float)
        mean = float(v.mean())
        if not math.isclose(mean, metrics[name], rel_tol=1e-6, abs_tol=1e-9):
            raise RunError(
                f"per_example {name!r}: the mean of its {v.size} values is {mean!r} but the run returned "
                f"{name} = {metrics[name]!r}; give the per-example values on the scale of the returned value"
            )
        out[str(name)] = StoredRows(mean_rows(v), "mean")
    return out


def _check_values(name: str, values: Any) -> None:
    """Refuse ``values`` unless a non-empty list of finite numbers, naming the first bad value."""
    what = f"per_example {name!r} must be a non-empty list of finite numbers (one per test example)"
    if not isinstance(values, list) or not values:
        raise RunError(
            f"{what}; got {type(values).__name__}{' (empty)' if isinstance(values, list) else ''}"
        )
    for i, v in enumerate(values, start=1):
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            hint = " (give 1.0/0.0 for True/False)" if isinstance(v, bool) else ""
            raise RunError(f"{what}; value {i} is {v!r} ({type(v).__name__}){hint}")


def check_counts(counts: dict[str, int], known: dict[str, tuple[int, str]]) -> None:
    """Refuse (:class:`~evalab.errors.RunError`) a metric's example count that differs from
    another run's of the study (``known``: metric -> (count, which run)); rows pair example
    by example across runs."""
    for name, n in counts.items():
        if name in known and known[name][0] != n:
            other, where = known[name]
            raise RunError(
                f"{name} has {n} per-example values but {where} has {other}: every run of a study must score "
                "the same test examples in the same order"
            )


def stored_counts(runs: Iterable[StoredRun]) -> dict[str, tuple[int, str]]:
    """Example counts per metric of stored ok runs (from their ``artifacts``)."""
    out: dict[str, tuple[int, str]] = {}
    for run in runs:
        info = examples_of(run)
        for name, n in (info.n if info else {}).items():
            out.setdefault(name, (int(n), f"run {'/'.join(run.rows)} seed {run.seed}"))
    return out


def examples_of(run: StoredRun) -> ExamplesEntry | None:
    """The examples entry of a stored ok run (None without per-example data)."""
    if run.status != "ok" or run.artifacts is None:
        return None
    return run.artifacts.examples


def write_examples(folder: Path, rows: dict[str, StoredRows]) -> ExamplesEntry:
    """Write the rows atomically as the run's examples file; return its artifacts entry."""
    from evalab.io import write_bytes_atomic

    arrays = {
        f"rows_{i}": np.ascontiguousarray(r.rows, dtype=np.float64)
        for i, r in enumerate(rows.values())
    }
    meta = {
        "format": _FORMAT,
        "metrics": {
            name: {
                "array": f"rows_{i}",
                "kind": r.kind,
                "metric": r.metric,
                "signature": r.signature,
            }
            for i, (name, r) in enumerate(rows.items())
        },
    }
    buf = io.BytesIO()
    # allow_pickle passed (its default) so that mypy does not match **arrays to it
    np.savez(buf, meta=np.array(json.dumps(meta, sort_keys=True)), allow_pickle=True, **arrays)
    write_bytes_atomic(folder / EXAMPLES_FILE, buf.getvalue())
    return ExamplesEntry(EXAMPLES_FILE, {name: int(r.rows.shape[0]) for name, r in rows.items()})


def read_examples(path: Path) -> dict[str, StoredRows]:
    """The rows of an examples file; :class:`InputError` naming it when unreadable."""
    from evalab.errors import InputError

    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            out = {
                name: StoredRows(
                    np.array(data[m["array"]], dtype=float),
                    m["kind"],
                    m.get("metric", ""),
                    m.get("signature", ""),
                )
                for name, m in meta["metrics"].items()
            }
    except FileNotFoundError:
        raise InputError(
            f"{path}: the run's per-example file is missing (was the run folder moved or cleaned?); "
            "rerun the run or import it again"
        ) from None
    except (
        OSError,
        ValueError,
        KeyError,
        TypeError,
        EOFError,
        zipfile.BadZipFile,  # a cut archive, a bad CRC
        NotImplementedError,  # a damaged header: "compression method", "zip file version"
        RuntimeError,  # a damaged flag: "encrypted"
    ) as exc:
        why = (
            "truncated or not a zip archive"
            if isinstance(exc, zipfile.BadZipFile | EOFError)
            else "damaged"
            if isinstance(exc, NotImplementedError | RuntimeError)
            else "unreadable"
        )
        raise InputError(
            f"{path}: not a readable evalab examples file: {why} ({exc}); rerun the run or import it "
            "again"
        ) from None
    if meta.get("format") != _FORMAT:
        raise InputError(
            f"{path}: examples file format {meta.get('format')!r}; this evalab reads format {_FORMAT}"
        )
    return out


def check_rows(path: Path, found: dict[str, StoredRows], recorded: dict[str, int]) -> None:
    """Every metric the run recorded per-example data for is in the file, with one row per
    example as recorded (:class:`InputError` otherwise: a cut or foreign file would give an
    interval over another test set)."""
    from evalab.errors import InputError

    for name, n in sorted(recorded.items()):
        rows = found.get(name)
        if rows is None:
            raise InputError(
                f"{path}: holds no rows of {name}, which the run recorded for {n} examples; the "
                "file is damaged or not this run's: rerun the run or import it again"
            )
        if rows.rows.ndim != 2 or rows.rows.shape[0] != n:
            got = rows.rows.shape[0] if rows.rows.ndim == 2 else f"a {rows.rows.ndim}-D array of"
            raise InputError(
                f"{path}: holds {got} rows of {name} but the run recorded {n} examples; the file "
                "is truncated or not this run's: rerun the run or import it again"
            )


def load_example_stats(store: RunStore, study: Study, run: StoredRun) -> dict[str, ExampleStats]:
    """``{metric: ExampleStats}`` of a stored ok run ({} when it has no per-example data).

    Computed metrics (``[metrics.NAME]``) score their sums with the registry metric built
    from the study (its signature must be the one the rows were computed under); per-example
    values a run returned score with :func:`mean_of_rows`. Each metric's rows must give
    back the run's stored value; anything else raises :class:`InputError`.
    """
    from evalab.ablation.study.bounds import bounds_error
    from evalab.errors import InputError

    info = examples_of(run)
    if info is None:
        return {}
    path = store.run_dir(study.name, run.key) / info.file
    out: dict[str, ExampleStats] = {}
    found = read_examples(path)
    check_rows(path, found, info.n)
    for name, stored in found.items():
        if name not in study.metrics or name not in run.metrics:
            continue
        scores = _scores_from_sums(study, name, stored, path)
        stats = ExampleStats(name, stored.rows, scores)
        value, expected = stats.value(), run.metrics[name]
        if not math.isclose(value, expected, rel_tol=1e-6, abs_tol=1e-9):
            raise InputError(
                f"{path}: the rows of {name} give {value!r} but the run stored {name} = {expected!r}; "
                "the examples file does not belong to this run"
            )
        error = bounds_error(
            {name: study.bounds[name]} if name in study.bounds else {},
            {},
            {name: stored.rows[:, 0]} if stored.kind == "mean" else {},
        )
        if error:  # bounds declared after the run: its intervals could leave them
            raise InputError(f"{path}: {error}")
        out[name] = stats
    return out


def _scores_from_sums(
    study: Study, name: str, stored: StoredRows, path: Path
) -> Callable[[np.ndarray], np.ndarray]:
    from evalab.errors import InputError

    if stored.kind == "mean":
        return mean_of_rows
    spec = study.computed.get(name)
    if spec is None or spec.metric != stored.metric:
        raise InputError(
            f"{path}: {name} was computed by {stored.metric!r}, which the study no longer declares as "
            f"[metrics.{name}]; rerun the study (its code version changed)"
        )
    metric = spec.build()
    built = metric.make_stats(np.zeros((0, stored.rows.shape[1])), None).signature
    if _without_nrefs(stored.signature) != _without_nrefs(built):
        raise InputError(
            f"{path}: {name} rows were computed under {stored.signature!r}, the study now computes "
            f"{built!r}; rerun the study"
        )
    return metric.scores_from_sums


def _without_nrefs(signature: str) -> str:
    # the reference count is the references', which the code version already covers
    return "|".join(f for f in signature.split("|") if not f.startswith("nrefs:"))
