"""Paired significance tests of several systems against a baseline on one test set.

Two tests, both as sacrebleu 2.x runs them (``--paired-bs`` / ``--paired-ar``), on the
stats rows of the Metric contract so that any corpus metric can be tested:

* **Paired bootstrap resampling** (Koehn 2004). The *same* ``n_samples`` resamples of the
  segment indices are scored for every system; ``δ*_b`` is the system-minus-baseline
  difference in resample ``b`` and ``δ`` the observed difference. The p-value tests
  ``H0: δ = 0`` by shifting the bootstrap distribution to the null (Efron & Tibshirani
  1993, §16.4; Riezler & Maxwell 2005):

  - ``p_value="centered"`` (default): ``p = (#{b : |δ*_b - mean(δ*)| >= |δ|} + 1) / (N + 1)``.
  - ``p_value="sacrebleu"``: ``p = (#{b : |δ*_b| - mean(|δ*|) >= |δ|} + 1) / (N + 1)``,
    sacrebleu's ``_paired_bs_test`` (after Moses' ``bootstrap-hypothesis-difference-
    significance.pl``). It centres the *absolute* differences, which is not the null
    distribution of ``|δ|``: when two systems come from the same distribution it gives
    ``p < 0.05`` about twice as often as 5% (see ``tests/stats/test_paired.py``), so it
    is offered for reproducing sacrebleu, not as the default.

* **Paired approximate randomization** (Riezler & Maxwell 2005; Noreen 1989). In each of
  ``n_trials`` trials every segment's outputs are swapped between baseline and system with
  probability 1/2, and ``p = (#{t : |score(A_t) - score(B_t)| >= |δ|} + 1) / (N + 1)``. The
  ``+1`` keeps the test from rejecting more often than its level (multeval,
  ``StratifiedApproximateRandomizationTest``, quoted by sacrebleu).

Ties count as "at least as extreme" (``>=``; sacrebleu writes ``>``). On BLEU/chrF of
real systems an exact tie never happens and the p-values are sacrebleu's; for identical
systems ``>=`` gives ``p = 1`` where ``>`` would give ``1 / (N + 1)``, and for discrete
metrics (exact match, accuracy) ``>`` would make the test anti-conservative.

Confidence intervals use :func:`evalab.stats.bootstrap.percentile_interval`; for the
bootstrap test they come from the test's own resamples (as in sacrebleu), for AR from a
separate bootstrap of ``ci_samples`` resamples with the same seed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self, TypedDict, Unpack

import numpy as np

from evalab.errors import InputError, SettingsError
from evalab.metrics.base import Metric, Stats
from evalab.stats.bootstrap import (
    ConfidenceInterval,
    bootstrap_scores,
    check_resampling,
    percentile_interval,
    point_score,
    warn_if_tiny,
)
from evalab.stats.resampling import (
    DEFAULT_SEED,
    Scorer,
    ar_swaps,
    as_scorer,
    check_n_samples,
    compact_stats,
    resampled_sums,
    stats_matrix,
)

__all__ = [
    "DEFAULT_P_VALUE",
    "DEFAULT_TRIALS",
    "P_VALUE_METHODS",
    "TESTS",
    "FlatResamples",
    "PairedTestResult",
    "SystemResult",
    "paired_approximate_randomization",
    "paired_bootstrap",
    "paired_test",
]

#: test name -> default number of resamples (bs) or trials (ar), as sacrebleu
DEFAULT_TRIALS: dict[str, int] = {"bs": 1000, "ar": 10000}
TESTS = tuple(DEFAULT_TRIALS)
P_VALUE_METHODS = ("centered", "sacrebleu")
#: the bootstrap p-value used unless another is asked for (see the module docstring)
DEFAULT_P_VALUE = "centered"

# A resampled statistic within this relative distance of the observed one is a tie: the
# same difference computed through another order of floating-point operations.
_TIE_RTOL = 1e-9


def paired_signature(
    test: str, n_samples: int, seed: int, confidence: float, p_value_method: str, ci_samples: int
) -> str:
    """A paired test's settings, e.g. ``test:bs|n:1000|seed:12345|conf:0.95|p:centered``."""
    if test == "bs":
        return f"test:bs|n:{n_samples}|seed:{seed}|conf:{confidence:g}|p:{p_value_method}"
    ci = f"|bs:{ci_samples}|conf:{confidence:g}" if ci_samples else ""
    return f"test:ar|n:{n_samples}|seed:{seed}{ci}"


@dataclass(frozen=True)
class SystemResult:
    """One system's result for one metric in a paired comparison."""

    system: str
    score: float
    ci: ConfidenceInterval | None
    baseline: bool
    #: ``score - baseline score`` (0 for the baseline)
    delta: float
    #: ``None`` for the baseline
    p_value: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (CI fields are ``None`` when no interval was computed)."""
        ci = self.ci
        return {
            "system": self.system,
            "score": self.score,
            "mean": ci.mean if ci else None,
            "ci_low": ci.low if ci else None,
            "ci_high": ci.high if ci else None,
            "half_width": ci.half_width if ci else None,
            "baseline": self.baseline,
            "delta": self.delta,
            "p_value": self.p_value,
        }


@dataclass(frozen=True)
class FlatResamples:
    """Systems whose difference to the baseline on ``metric`` came out the same in every
    resample or trial (the baseline's per-segment statistics, or a difference that never
    varies): the test has no spread to weigh the difference against, so its p-value and a
    zero-width interval follow from that alone. ``systems``: ``(system, delta)``."""

    metric: str
    systems: tuple[tuple[str, float], ...]


@dataclass(frozen=True, eq=False)
class PairedRecord:
    """What a paired test of one metric ran under (the first fields of its result)."""

    metric: str
    test: str
    n_samples: int
    seed: int
    confidence: float
    p_value_method: str
    ci_samples: int

    @classmethod
    def of_plan(cls, plan: _Plan, metric: str, ci_n: int, **result: Any) -> Self:
        """The result of ``metric`` under ``plan`` (``ci_n``: the CIs' resamples)."""
        return cls(
            metric=metric,
            test=plan.test,
            n_samples=plan.n_samples,
            seed=plan.seed,
            confidence=plan.confidence,
            p_value_method=plan.p_value if plan.test == "bs" else "ar",
            ci_samples=ci_n if plan.test == "ar" else plan.n_samples,
            **result,
        )

    @property
    def signature(self) -> str:
        """The test settings, e.g. ``test:bs|n:1000|seed:12345|conf:0.95|p:centered``."""
        return paired_signature(
            self.test,
            self.n_samples,
            self.seed,
            self.confidence,
            self.p_value_method,
            self.ci_samples,
        )


@dataclass(frozen=True)
class PairedTestResult(PairedRecord):
    """The outcome of a paired test of one metric: the baseline first, then each system."""

    systems: tuple[SystemResult, ...]
    #: what qualifies the result (a report words it)
    notes: tuple[FlatResamples, ...] = ()

    @property
    def baseline(self) -> SystemResult:
        """The baseline's result (its ``p_value`` is ``None``)."""
        return self.systems[0]

    def p_values(self) -> list[float]:
        """The p-values of the non-baseline systems, in order."""
        return [float(r.p_value) for r in self.systems[1:] if r.p_value is not None]


def _check_systems(stats: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], int]:
    """Validate ``metric -> system -> rows``: same systems, >= 2 of them, same segment count."""
    if not stats:
        raise SettingsError("paired test: no metric given")
    names: list[str] | None = None
    n: int | None = None
    for metric_name, per_system in stats.items():
        systems = list(per_system)
        if names is None:
            names = systems
        elif systems != names:
            raise InputError(
                f"paired test: metric {metric_name!r} has systems {systems}, expected {names}"
            )
        if len(systems) < 2:
            raise InputError(
                f"paired test: need a baseline and at least one other system, got {len(systems)} "
                f"({', '.join(systems) or 'none'})"
            )
        lengths = {s: _segment_count(rows) for s, rows in per_system.items()}
        if len(set(lengths.values())) > 1:
            detail = ", ".join(f"{s}: {c} segments" for s, c in lengths.items())
            raise InputError(
                f"paired test: systems differ in segment count ({detail}); paired tests need "
                "line-aligned outputs of the same test set"
            )
        count = next(iter(lengths.values()))
        if count == 0:
            raise InputError("paired test: no segments; resampling needs at least one stats row")
        if n is not None and count != n:
            raise InputError(
                f"paired test: metric {metric_name!r} has {count} segments, others {n}"
            )
        n = count
    return names or [], n or 0


def _segment_count(rows: Any) -> int:
    """Segments of a :class:`Stats` value or of plain rows (0 for a scalar)."""
    arr = rows.rows if isinstance(rows, Stats) else np.asarray(rows)
    return len(arr) if arr.ndim else 0


def _stack(per_system: Mapping[str, Any], metric_name: str, metric: Any) -> np.ndarray:
    """Stats of every system as one ``[n, n_systems, k]`` array."""
    mats = [
        stats_matrix(rows, f"{metric_name} stats of {s}", metric) for s, rows in per_system.items()
    ]
    widths = {m.shape[1] for m in mats}
    if len(widths) > 1:
        raise InputError(
            f"{metric_name}: systems have stats rows of different widths {sorted(widths)}"
        )
    return np.stack(mats, axis=1)


def _p_values(null_stats: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """``(#{null >= observed} + 1) / (N + 1)`` per column; ties within ``_TIE_RTOL`` count.

    Resamples whose score is undefined (NaN, e.g. a ratio whose drawn segments all have a
    zero denominator) are left out of both counts; an undefined observed difference
    gives an undefined p-value rather than a small one.
    """
    threshold = observed - _TIE_RTOL * np.maximum(1.0, np.abs(observed))
    valid = np.isfinite(null_stats)
    count = np.sum(valid & (null_stats >= threshold[None, :]), axis=0)
    p = (count + 1.0) / (valid.sum(axis=0) + 1.0)
    return np.where(np.isfinite(observed), p, np.nan)


def _ar_all(
    plan: _Plan, obs: _Observed, pairs: tuple[np.ndarray, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """``|score(A_t) - score(B_t)|`` per trial and pair ``[n_trials, n_pairs]`` per metric.

    ``pairs`` are the ``(first, second)`` system indices of each pair, the first in the role
    of the baseline; by default the baseline (system 0) against every other system.
    """
    parts: dict[str, list[np.ndarray]] = {m: [] for m in obs.scorers}
    totals = {m: t.sum(axis=0) for m, t in obs.tensors.items()}
    # 0/1 weights: every partial sum is at most n * max|row|
    compact = {m: compact_stats(t, obs.n) for m, t in obs.tensors.items()}
    n_systems = len(obs.names)
    first, second = (
        pairs
        if pairs is not None
        else (np.zeros(n_systems - 1, dtype=np.intp), np.arange(1, n_systems))
    )
    for keep in ar_swaps(obs.n, plan.n_samples, plan.seed, plan.chunk_rows):
        for m, scorer in obs.scorers.items():
            kept = resampled_sums(keep, compact[m])  # [c, s, k]: rows where keep = 1
            swapped = totals[m][None] - kept  # rows where keep = 0 (exact for count stats)
            # pairs in blocks, so that the [c, pairs, k] temporaries stay bounded
            block = max(1, _PAIR_CELLS // max(1, kept.shape[0] * kept.shape[2]))
            diffs = []
            for lo in range(0, first.size, block):
                i, j = first[lo : lo + block], second[lo : lo + block]
                # sacrebleu: A = keep @ baseline + ~keep @ system, B = ~keep @ baseline + keep @ system
                a = kept[:, i] + swapped[:, j]
                b = swapped[:, i] + kept[:, j]
                diffs.append(
                    np.abs(
                        np.asarray(scorer(a), dtype=np.float64)
                        - np.asarray(scorer(b), dtype=np.float64)
                    )
                )
            parts[m].append(np.concatenate(diffs, axis=1))
        if plan.progress is not None:
            plan.progress(keep.shape[0])
    return {m: np.concatenate(p, axis=0) for m, p in parts.items()}


#: cells (trials x pairs x stats) of one block of approximate-randomization pseudo-systems
_PAIR_CELLS = 4_000_000


@dataclass(frozen=True)
class _Plan:
    """A paired test's validated settings."""

    test: str
    n_samples: int
    seed: int
    confidence: float
    p_value: str
    ci_samples: int
    chunk_rows: int | None
    #: called after each chunk of resamples/trials with its size
    progress: Callable[[int], None] | None


@dataclass(frozen=True)
class _Observed:
    """What a paired test resamples: the systems, their segment count, each metric's scorer
    and stacked rows ``[n, systems, k]``, and each system's corpus score per metric."""

    names: list[str]
    n: int
    scorers: dict[str, Scorer]
    tensors: dict[str, np.ndarray]
    points: dict[str, np.ndarray]


class ResampleOptions(TypedDict, total=False):
    """How a paired test resamples, beyond its sample count, seed and confidence."""

    #: ``"sacrebleu"`` or ``"centered"``: how the bootstrap's p-value is computed (module docstring)
    p_value: str
    #: approximate randomization: bootstrap resamples for the CIs (0: no CI)
    ci_samples: int
    #: segments of one resampling block (None: chosen from the data's size)
    chunk_rows: int | None
    #: called after each chunk of ``k`` resamples/trials (for a progress bar)
    progress: Callable[[int], None] | None


class PairedOptions(ResampleOptions, total=False):
    """Every setting of :func:`paired_test` and :func:`~evalab.stats.ranking.pairwise_test`."""

    #: resamples (bootstrap) or trials (randomization); None: the test's default
    n_samples: int | None
    seed: int
    confidence: float


def _plan(test: str, options: PairedOptions) -> _Plan:
    """Check the test's settings before any resampling starts (the defaults: the test's
    own trials, :data:`DEFAULT_SEED`, 95 %, :data:`DEFAULT_P_VALUE`, 1000 CI resamples)."""
    unknown = sorted(set(options) - PairedOptions.__optional_keys__)
    if unknown:
        raise TypeError(f"paired test: unexpected option {', '.join(map(repr, unknown))}")
    n_samples = options.get("n_samples")
    p_value = options.get("p_value", DEFAULT_P_VALUE)
    ci_samples = options.get("ci_samples", 1000)
    if test not in DEFAULT_TRIALS:
        raise SettingsError(f"unknown test {test!r}; expected one of {', '.join(TESTS)}")
    if p_value not in P_VALUE_METHODS:
        raise SettingsError(
            f"unknown p_value method {p_value!r}; expected one of {', '.join(P_VALUE_METHODS)}"
        )
    n_samples, confidence, seed = check_resampling(
        DEFAULT_TRIALS[test] if n_samples is None else n_samples,
        options.get("confidence", 0.95),
        options.get("seed", DEFAULT_SEED),
    )
    if test == "ar" and ci_samples != 0:
        ci_samples = check_n_samples(ci_samples, "ci_samples")
    return _Plan(
        test,
        n_samples,
        seed,
        confidence,
        p_value,
        ci_samples,
        options.get("chunk_rows"),
        options.get("progress"),
    )


def _observed(metrics: Mapping[str, Any], stats: Mapping[str, Mapping[str, Any]]) -> _Observed:
    """The checked systems, their rows and scores."""
    if set(metrics) != set(stats):
        raise SettingsError(f"paired test: metrics {sorted(metrics)} but stats for {sorted(stats)}")
    names, n = _check_systems(stats)
    warn_if_tiny(n)
    scorers = {m: as_scorer(metrics[m])[0] for m in stats}
    tensors = {m: _stack(stats[m], m, metrics[m]) for m in stats}
    points = {}
    for m, tensor in tensors.items():
        point = np.asarray(scorers[m](tensor.sum(axis=0)), dtype=np.float64)
        if point.shape != (len(names),):
            raise SettingsError(
                f"{m}: the scorer must be vectorised (summed stats [..., k] -> scores [...]); "
                f"got shape {point.shape} for {len(names)} systems"
            )
        if isinstance(metrics[m], Metric):
            # the corpus scores themselves through the metric's exact scalar path
            point = np.array([point_score(scorers[m], tensor[:, j]) for j in range(len(names))])
        points[m] = point
    return _Observed(names, n, scorers, tensors, points)


def bootstrap_null(deltas: np.ndarray, p_value: str) -> np.ndarray:
    """The bootstrap test's null statistics from resampled differences ``[n_samples, pairs]``."""
    null: np.ndarray
    if p_value == "centered":
        null = np.abs(deltas - deltas.mean(axis=0))
        return null
    absd = np.abs(deltas)  # sacrebleu's statistic, see the module docstring
    null = absd - absd.mean(axis=0)
    return null


def _null_distributions(
    plan: _Plan, obs: _Observed
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], int]:
    """``(null statistics per metric, bootstrap scores for the CIs, CI resamples)``."""
    if plan.test == "bs":
        boot, ci_n = _ci_resamples(plan, obs)
        null = {
            m: bootstrap_null(scores[:, 1:] - scores[:, :1], plan.p_value)
            for m, scores in boot.items()
        }
        return null, boot, ci_n
    return _ar_all(plan, obs), *_ci_resamples(plan, obs)


def _ci_resamples(plan: _Plan, obs: _Observed) -> tuple[dict[str, np.ndarray], int]:
    """Every system's bootstrap scores for the CIs, and how many: the test's own resamples
    under the bootstrap, ``ci_samples`` more under randomization (none when 0)."""
    ci_n = plan.n_samples if plan.test == "bs" else plan.ci_samples
    if not ci_n:
        return {}, 0
    # resampled scores [ci_n, n_systems] per metric, one shared index stream
    scores = bootstrap_scores(
        obs.scorers, obs.tensors, ci_n, plan.seed, plan.chunk_rows, plan.progress
    )
    return scores, ci_n


def interval(
    score: float, resampled: np.ndarray, confidence: float, n_samples: int, seed: int
) -> ConfidenceInterval:
    """The percentile interval of one system's resampled scores."""
    mean, low, high = percentile_interval(resampled, confidence)
    return ConfidenceInterval(score, mean, low, high, confidence, n_samples, seed)


def _metric_result(
    plan: _Plan,
    metric: str,
    names: list[str],
    point: np.ndarray,
    null: np.ndarray,
    boot: np.ndarray | None,
    ci_n: int,
) -> PairedTestResult:
    """One metric's result: every system's score, CI, delta and p-value."""
    pvals = _p_values(null, np.abs(point[1:] - point[0]))
    rows = []
    for j, name in enumerate(names):
        ci = (
            None
            if boot is None
            else interval(float(point[j]), boot[:, j], plan.confidence, ci_n, plan.seed)
        )
        rows.append(
            SystemResult(
                system=name,
                score=float(point[j]),
                ci=ci,
                baseline=j == 0,
                delta=float(point[j] - point[0]),
                p_value=None if j == 0 else float(pvals[j - 1]),
            )
        )
    ok = np.isfinite(null)  # an all-undefined column has spread -inf: not flat
    spread = np.max(np.where(ok, null, -np.inf), axis=0, initial=-np.inf) - np.min(
        np.where(ok, null, np.inf), axis=0, initial=np.inf
    )
    flat = tuple((r.system, r.delta) for r, s in zip(rows[1:], spread, strict=True) if s == 0.0)
    notes = (FlatResamples(metric, flat),) if flat else ()
    return PairedTestResult.of_plan(plan, metric, ci_n, systems=tuple(rows), notes=notes)


def paired_test(
    test: str,
    metrics: Mapping[str, Any],
    stats: Mapping[str, Mapping[str, Any]],
    **options: Unpack[PairedOptions],
) -> dict[str, PairedTestResult]:
    """Run a paired test for several metrics at once; the first system is the baseline.

    ``metrics`` maps a metric name to a :class:`~evalab.metrics.base.Metric` or a vectorised
    scorer; ``stats`` maps the same names to ``{system: Stats}`` (or rows; same systems,
    same order, line-aligned). ``test`` is ``"bs"`` (paired bootstrap, default 1000
    resamples) or ``"ar"`` (approximate randomization, default 10000 trials; CIs from
    ``ci_samples`` bootstrap resamples, 0 for none). One resampling stream serves every
    metric and system, so all comparisons see the same resamples. The other
    ``options`` (:class:`PairedOptions`): the seed, the confidence, the bootstrap's p-value
    method, ``chunk_rows``, and ``progress(k)``, called after each chunk of ``k``
    resamples/trials (for a progress bar).
    """
    plan = _plan(test, options)
    obs = _observed(metrics, stats)
    null, boot, ci_n = _null_distributions(plan, obs)
    return {
        m: _metric_result(plan, m, obs.names, obs.points[m], null[m], boot.get(m), ci_n)
        for m in stats
    }


#: the option each test's one-metric function refuses (the test would ignore it), and why
_IGNORED = {
    "bs": ("ci_samples", "the bootstrap's own resamples give its CIs"),
    "ar": ("p_value", "randomization has one p-value"),
}


def _one_metric(
    test: str,
    metric_or_scorer: Any,
    systems: Mapping[str, Any] | Sequence[Any],
    settings: PairedOptions,
) -> PairedTestResult:
    """:func:`paired_test` of one metric's systems; an option the test would ignore is
    refused, not silently dropped."""
    unused, why = _IGNORED[test]
    if unused in settings:
        raise TypeError(f"unexpected option {unused!r}: {why}")
    _, name = as_scorer(metric_or_scorer)
    return paired_test(test, {name: metric_or_scorer}, {name: _named(systems)}, **settings)[name]


def _named(systems: Mapping[str, Any] | Sequence[Any]) -> dict[str, Any]:
    if isinstance(systems, Mapping):
        return dict(systems)
    if isinstance(systems, (str, bytes)) or not isinstance(systems, Sequence):
        raise SettingsError("systems must be a mapping name -> stats rows or a list of stats rows")
    return {f"system{i}": rows for i, rows in enumerate(systems)}


def paired_bootstrap(
    metric_or_scorer: Any,
    systems: Mapping[str, Any] | Sequence[Any],
    n_samples: int = 1000,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
    **options: Unpack[ResampleOptions],
) -> PairedTestResult:
    """Paired bootstrap resampling (Koehn 2004) of systems against the first (the baseline).

    ``systems`` maps names to stats rows ``[n_segments, k]`` of one metric (or is a list of
    them). See the module docstring for the p-value; ``p_value="sacrebleu"`` reproduces
    ``sacrebleu --paired-bs`` exactly.

    >>> acc = lambda s: s[..., 0] / s[..., 1]
    >>> base = np.array([[1.0, 1], [0, 1], [1, 1], [0, 1]])
    >>> res = paired_bootstrap(acc, {"base": base, "same": base.copy()}, n_samples=100)
    >>> res.systems[1].p_value, res.systems[1].delta
    (1.0, 0.0)
    """
    settings = PairedOptions(**options, n_samples=n_samples, seed=seed, confidence=confidence)
    return _one_metric("bs", metric_or_scorer, systems, settings)


def paired_approximate_randomization(
    metric_or_scorer: Any,
    systems: Mapping[str, Any] | Sequence[Any],
    n_trials: int = 10000,
    confidence: float = 0.95,
    seed: int = DEFAULT_SEED,
    **options: Unpack[ResampleOptions],
) -> PairedTestResult:
    """Paired approximate randomization (Riezler & Maxwell 2005) against the first system.

    p-values are sacrebleu's ``--paired-ar`` for the same seed and trials; the CI of each
    system comes from ``ci_samples`` bootstrap resamples (0: no CI).

    >>> acc = lambda s: s[..., 0] / s[..., 1]
    >>> base = np.array([[1.0, 1], [0, 1], [1, 1], [0, 1]])
    >>> res = paired_approximate_randomization(acc, [base, base], n_trials=100, ci_samples=0)
    >>> res.systems[1].p_value
    1.0
    """
    settings = PairedOptions(**options, n_samples=n_trials, seed=seed, confidence=confidence)
    return _one_metric("ar", metric_or_scorer, systems, settings)
