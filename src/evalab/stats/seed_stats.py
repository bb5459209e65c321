"""Statistics over seeds: t-based CIs, Welch's and paired t-tests, permutation and sign-flip
tests, power, ASO.

scipy is not a runtime dependency, so the Student t distribution is computed here from the
regularized incomplete beta function (continued fraction, evaluated with the modified
Lentz method), and the noncentral t power by quadrature over the chi distribution. The
tests compare every function with scipy.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

_EPS = 1e-15
_TINY = 1e-300


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + aa / c
        c = c if abs(c) > _TINY else _TINY
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta ``I_x(a, b)`` for ``a, b > 0`` and ``0 <= x <= 1``.

    >>> round(betainc(2.0, 3.0, 0.4), 6)
    0.5248
    """
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    # the continued fraction converges fast for x < (a+1)/(a+b+2); use the symmetry otherwise
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def _betacf_many(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """:func:`_betacf` of many arguments at once (each element stops where it converges)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = _floor(1.0 - qab * x / qap)
    d = 1.0 / d
    h = d.copy()
    active = np.ones(x.shape, dtype=bool)
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 / _floor(1.0 + aa * d)
        c = _floor(1.0 + aa / c)
        step = d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 / _floor(1.0 + aa * d)
        c = _floor(1.0 + aa / c)
        delta = d * c
        h = np.where(active, h * step * delta, h)
        active &= ~(np.abs(delta - 1.0) < _EPS)
        if not active.any():
            break
    out: np.ndarray = h
    return out


def _floor(v: np.ndarray) -> np.ndarray:
    """``v``, with magnitudes below the tiny floor replaced by the floor (Lentz's guard)."""
    return np.where(np.abs(v) > _TINY, v, _TINY)


def t_sf2_many(t: np.ndarray, df: float) -> np.ndarray:
    """:func:`t_sf2` of every element of ``t`` (one degrees of freedom for all).

    >>> t_sf2_many(np.array([0.0, 2.0, np.inf]), 5).round(6).tolist()
    [1.0, 0.101939, 0.0]
    """
    t = np.asarray(t, dtype=np.float64)
    if math.isinf(df):
        return np.array([t_sf2(float(v), df) for v in t.ravel()]).reshape(t.shape)
    a, b = df / 2.0, 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(np.isinf(t), 0.0, df / (df + t * t))
    out = np.empty_like(x)
    low = (x > 0.0) & (x < (a + 1.0) / (a + b + 2.0))
    high = (x < 1.0) & ~low & (x > 0.0)
    out[x <= 0.0] = 0.0
    out[x >= 1.0] = 1.0
    lg = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    if low.any():
        xl = x[low]
        front = np.exp(lg + a * np.log(xl) + b * np.log1p(-xl))
        out[low] = front * _betacf_many(np.full_like(xl, a), np.full_like(xl, b), xl) / a
    if high.any():
        xh = x[high]
        front = np.exp(lg + a * np.log(xh) + b * np.log1p(-xh))
        out[high] = (
            1.0 - front * _betacf_many(np.full_like(xh, b), np.full_like(xh, a), 1.0 - xh) / b
        )
    return out


def t_sf2(t: float, df: float) -> float:
    """Two-sided tail probability ``P(|T| >= |t|)`` of Student's t with ``df`` degrees."""
    if math.isinf(t):
        return 0.0
    if math.isinf(df):
        return 2.0 * NormalDist().cdf(-abs(t))
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def t_cdf(t: float, df: float) -> float:
    """CDF of Student's t.

    >>> round(t_cdf(2.0, 5), 6)
    0.94903
    """
    tail = 0.5 * t_sf2(t, df)
    return 1.0 - tail if t >= 0 else tail


@functools.lru_cache(maxsize=4096)
def t_ppf(p: float, df: float) -> float:
    """Quantile of Student's t (bisection on :func:`t_cdf`, to ~1e-12).

    >>> round(t_ppf(0.975, 3), 4)
    3.1824
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"t_ppf: p must be in (0, 1), got {p}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_ppf(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


#: values beyond this magnitude are divided by a power of two before the statistics: sums,
#: squares and differences of values near the float limit overflow to inf (then nan)
_RESCALE_ABOVE = 2.0**500


def overflow_exponent(*arrays: np.ndarray) -> int:
    """``e`` such that the values times ``2**-e`` are at most 1 in magnitude, when some value
    is so large that sums, squares or differences could overflow; 0 otherwise (then results
    stay bit-identical). Scaling by a power of two is exact, and t, p and df do not depend on
    the scale, so the statistics are computed on the rescaled values.

    >>> overflow_exponent(np.array([1.5e308, 1.0])), overflow_exponent(np.array([3.0]))
    (1024, 0)
    """
    top = max((float(np.max(np.abs(a))) for a in arrays if a.size), default=0.0)
    if not math.isfinite(top) or top <= _RESCALE_ABOVE:
        return 0
    return math.frexp(top)[1]


def _mean_var(x: np.ndarray) -> tuple[float, float]:
    """Mean and sample variance; exact (the value, 0) for values that are all equal, where
    the rounded mean of a sum would otherwise show a spread the values do not have."""
    if x.size and x.min() == x.max():
        return float(x[0]), 0.0
    return float(x.mean()), float(x.var(ddof=1)) if x.size > 1 else float("nan")


def scale_back(value: float, e: int) -> float:
    """A rescaled location or spread back on the data's scale (inf when it is beyond float range)."""
    if not e or not math.isfinite(value):
        return value
    with np.errstate(over="ignore"):
        return float(np.ldexp(value, e))


@dataclass(frozen=True)
class MeanCI:
    """Mean, sample standard deviation (ddof=1) and a t-based CI of ``n`` values."""

    n: int
    mean: float
    std: float
    low: float
    high: float


def mean_ci(values: np.ndarray | list[float], confidence: float = 0.95) -> MeanCI:
    """Mean and the t-based confidence interval ``mean ± t(n-1) * sd / sqrt(n)``.

    With one value the spread is unknown: std and the CI are NaN (never a zero-width CI).

    >>> r = mean_ci([1.0, 2.0, 3.0]); (r.mean, round(r.low, 4), round(r.high, 4))
    (2.0, -0.4841, 4.4841)
    """
    x = np.asarray(values, dtype=float)
    e = overflow_exponent(x)
    if e:
        r = mean_ci(np.ldexp(x, -e), confidence)
        return MeanCI(
            r.n,
            scale_back(r.mean, e),
            scale_back(r.std, e),
            scale_back(r.low, e),
            scale_back(r.high, e),
        )
    n = int(x.size)
    if n == 0:
        nan = float("nan")
        return MeanCI(0, nan, nan, nan, nan)
    mean, var = _mean_var(x)
    if n == 1:
        nan = float("nan")
        return MeanCI(1, mean, nan, nan, nan)
    sd = math.sqrt(var)
    half = t_ppf(0.5 + confidence / 2.0, n - 1) * sd / math.sqrt(n)
    return MeanCI(n, mean, sd, mean - half, mean + half)


@dataclass(frozen=True)
class WelchResult:
    """Welch's unequal-variance t-test of ``mean(a) - mean(b)`` with its CI."""

    delta: float
    t: float
    df: float
    p: float
    low: float
    high: float


def satterthwaite_df(parts: list[float], sizes: list[int]) -> float:
    """Welch–Satterthwaite degrees of freedom of a sum of variance parts ``var_i / n_i``.

    Computed on the parts divided by the largest one: the textbook form squares variances
    of ~1e-200 to zero and divides by it (the ratio is scale-free, so nothing changes).
    Parts that are zero (groups without spread) add nothing.

    >>> satterthwaite_df([1.0, 1.0], [4, 4]), satterthwaite_df([1e-220, 1e-220], [4, 4])
    (6.0, 6.0)
    """
    top = max(parts)
    scaled = [(v / top, n) for v, n in zip(parts, sizes, strict=True) if v > 0]
    return sum(v for v, _ in scaled) ** 2 / sum(v * v / (n - 1) for v, n in scaled)


def welch(
    a: np.ndarray | list[float], b: np.ndarray | list[float], confidence: float = 0.95
) -> WelchResult:
    """Welch's t-test (two-sided) and the Welch CI of the difference ``mean(a) - mean(b)``.

    Needs two values per group (else NaN). When both groups have zero spread the test is
    degenerate: p is 1 for equal means and 0 otherwise, and the CI is the point.

    >>> r = welch([1.0, 2.0, 3.0, 4.0], [3.0, 4.0, 5.0, 6.0]); (r.delta, round(r.p, 4))
    (-2.0, 0.071)
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    e = overflow_exponent(x, y)
    if e:
        return _welch_up(welch(np.ldexp(x, -e), np.ldexp(y, -e), confidence), e)
    nan = float("nan")
    if x.size == 0 or y.size == 0:
        return WelchResult(nan, nan, nan, nan, nan, nan)
    (mx, vx), (my, vy) = _mean_var(x), _mean_var(y)
    delta = mx - my
    if x.size < 2 or y.size < 2:
        return WelchResult(delta, nan, nan, nan, nan, nan)
    va, vb = vx / x.size, vy / y.size
    se2 = va + vb
    if se2 == 0.0:
        return WelchResult(
            delta,
            math.copysign(math.inf, delta) if delta else 0.0,
            nan,
            1.0 if delta == 0 else 0.0,
            delta,
            delta,
        )
    df = satterthwaite_df([va, vb], [x.size, y.size])
    se = math.sqrt(se2)
    t = delta / se
    half = t_ppf(0.5 + confidence / 2.0, df) * se
    return WelchResult(delta, t, df, t_sf2(t, df), delta - half, delta + half)


def pooled_sd(a: np.ndarray | list[float], b: np.ndarray | list[float]) -> float:
    """``sqrt((var(a) + var(b)) / 2)`` with ``ddof=1`` (two values per group at least),
    computed on rescaled values so that values near the float limit do not overflow.

    >>> pooled_sd([1.0, 3.0], [2.0, 4.0]), pooled_sd([1.5e308, 1.5e308], [1.5e308, 1.5e308])
    (1.4142135623730951, 0.0)
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    e = overflow_exponent(x, y)
    x, y = np.ldexp(x, -e), np.ldexp(y, -e)
    return scale_back(math.sqrt((float(np.var(x, ddof=1)) + float(np.var(y, ddof=1))) / 2.0), e)


def _welch_up(r: WelchResult, e: int) -> WelchResult:
    return WelchResult(
        scale_back(r.delta, e), r.t, r.df, r.p, scale_back(r.low, e), scale_back(r.high, e)
    )


def _subsets(n: int, k: int) -> np.ndarray:
    """Every ``k``-subset of ``range(n)`` as a 0/1 row (read-only)."""
    out = np.zeros((math.comb(n, k), n))
    if k:
        idx = np.array(list(itertools.combinations(range(n), k)), dtype=np.int64)
        np.put_along_axis(out, idx, 1.0, axis=1)
    out.flags.writeable = False
    return out


@functools.lru_cache(maxsize=8)
def relabelings(n: int, na: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Every way to pick ``na`` of ``n`` pooled values as group A, split in two halves: for
    each ``k``, the ``k``-subsets of the first ``n // 2`` values beside the ``(na - k)``-subsets
    of the rest (0/1 rows, read-only). Built once per ``(n, na)``; a relabeling's sum is a
    left sum plus a right sum, so the ``C(n, na)`` sums come from two small products.

    >>> sum(left.shape[0] * right.shape[0] for left, right in relabelings(20, 10))
    184756
    """
    h = n // 2
    return tuple(
        (_subsets(h, k), _subsets(n - h, na - k))
        for k in range(max(0, na - (n - h)), min(h, na) + 1)
    )


def count_extreme_relabelings(pooled: np.ndarray, na: int, observed: float) -> int:
    """How many of the ``C(n, na)`` relabelings of ``pooled`` give ``|mean(A) - mean(B)| >=
    observed``. ``mean(A) - mean(B)`` is ``(sum(A) - c)·(1/na + 1/nb)`` with ``c = total·na/n``,
    and ``sum(A)`` is a left-half sum plus a right-half sum (:func:`relabelings`): with the
    right sums sorted, each left sum counts its partners by binary search, never forming
    the ``C(n, na)`` sums."""
    n = pooled.size
    threshold = observed / (1.0 / na + 1.0 / (n - na))
    if threshold <= 0:
        return math.comb(n, na)
    h, c = n // 2, float(pooled.sum()) * na / n
    count = 0
    for left, right in relabelings(n, na):
        lefts, rights = left @ pooled[:h], np.sort(right @ pooled[h:])
        count += int(
            rights.size * lefts.size
            - np.searchsorted(rights, c + threshold - lefts, side="left").sum()
        )
        count += int(np.searchsorted(rights, c - threshold - lefts, side="right").sum())
    return count


@functools.lru_cache(maxsize=4)
def sign_patterns(n: int) -> np.ndarray:
    """All ``2^n`` sign assignments of ``n`` paired differences, one ±1 row each (read-only, built once per n)."""
    out = 1.0 - 2.0 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
    out.flags.writeable = False
    return out


def permutation_test(
    a: np.ndarray | list[float],
    b: np.ndarray | list[float],
    *,
    max_exact: int = 200_000,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple[float, bool]:
    """Two-sided permutation test of ``|mean(a) - mean(b)|``; returns ``(p, exact)``.

    All ``C(n_a + n_b, n_a)`` relabelings are enumerated when there are at most
    ``max_exact`` of them (then p is exact: the share of relabelings at least as extreme,
    the observed one included); otherwise ``resamples`` random relabelings from
    ``np.random.default_rng(seed)`` give ``p = (count + 1) / (resamples + 1)``, which never
    understates p (Phipson & Smyth 2010).

    >>> permutation_test([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    (0.1, True)
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size == 0 or y.size == 0:
        return float("nan"), True
    e = overflow_exponent(x, y)
    x, y = np.ldexp(x, -e), np.ldexp(y, -e)  # p does not depend on the scale
    pooled = np.concatenate([x, y])
    n, na = pooled.size, x.size
    total = pooled.sum()
    observed = abs(x.mean() - y.mean())
    # floating-point ties (identical relabelings summing in another order) count as extreme
    tol = 1e-9 * max(
        0.0 if e else 1.0, float(np.abs(pooled).max())
    )  # (the floor is on the data's scale)
    if math.comb(n, na) <= max_exact:
        return count_extreme_relabelings(pooled, na, observed - tol) / math.comb(n, na), True
    rng = np.random.default_rng(seed)
    keys = rng.random((resamples, n))
    idx = np.argsort(keys, axis=1)[:, :na]
    sums = pooled[idx].sum(axis=1)
    stats = np.abs(sums / na - (total - sums) / (n - na))
    count = int(np.sum(stats >= observed - tol))
    return (count + 1) / (resamples + 1), False


def paired_t(
    a: np.ndarray | list[float], b: np.ndarray | list[float], confidence: float = 0.95
) -> WelchResult:
    """Paired t-test (two-sided) of ``mean(a - b)`` over matched pairs, with its t-based CI.

    ``a[i]`` and ``b[i]`` must come from the same unit (here: the same trained model, one
    per seed). Returns the fields of :class:`WelchResult` with ``df = n - 1``. Needs two
    pairs (else NaN); differences without spread give p 1 (all zero) or 0 and the point CI.

    >>> r = paired_t([2.0, 3.0, 5.0], [1.0, 1.0, 2.0]); (r.delta, r.df, round(r.p, 4))
    (2.0, 2.0, 0.0742)
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired_t needs matched pairs, got {x.size} and {y.size} values")
    e = overflow_exponent(x, y)
    if e:
        return _welch_up(paired_t(np.ldexp(x, -e), np.ldexp(y, -e), confidence), e)
    nan = float("nan")
    if x.size == 0:
        return WelchResult(nan, nan, nan, nan, nan, nan)
    d = x - y
    delta = float(d.mean())
    if d.size < 2:
        return WelchResult(delta, nan, nan, nan, nan, nan)
    df = d.size - 1
    se = float(d.std(ddof=1)) / math.sqrt(d.size)
    if se == 0.0:
        return WelchResult(
            delta,
            math.copysign(math.inf, delta) if delta else 0.0,
            float(df),
            1.0 if delta == 0 else 0.0,
            delta,
            delta,
        )
    t = delta / se
    half = t_ppf(0.5 + confidence / 2.0, df) * se
    return WelchResult(delta, t, float(df), t_sf2(t, df), delta - half, delta + half)


def sign_flip_test(
    a: np.ndarray | list[float],
    b: np.ndarray | list[float],
    *,
    max_exact: int = 2**16,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple[float, bool]:
    """Two-sided sign-flip permutation test of ``|mean(a - b)|`` over matched pairs;
    returns ``(p, exact)``.

    Under the null hypothesis each pair's difference is as likely to have either sign. All
    ``2^n`` sign assignments are enumerated when there are at most ``max_exact`` (p is exact,
    the observed one included); otherwise ``resamples`` random ones from
    ``np.random.default_rng(seed)`` give ``p = (count + 1) / (resamples + 1)``.

    >>> sign_flip_test([2.0, 3.0, 5.0], [1.0, 1.0, 2.0])
    (0.25, True)
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"sign_flip_test needs matched pairs, got {x.size} and {y.size} values")
    if x.size == 0:
        return float("nan"), True
    e = overflow_exponent(x, y)
    d = np.ldexp(x, -e) - np.ldexp(y, -e)  # p does not depend on the scale
    observed = abs(d.mean())
    tol = 1e-9 * max(0.0 if e else 1.0, float(np.abs(d).max()))
    if 2**d.size <= max_exact:
        stats = np.abs(sign_patterns(d.size) @ d) / d.size
        return float(np.mean(stats >= observed - tol)), True
    rng = np.random.default_rng(seed)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(resamples, d.size))
    stats = np.abs(signs @ d) / d.size
    return (int(np.sum(stats >= observed - tol)) + 1) / (resamples + 1), False


def power_paired(delta: float, sd_diff: float, n: int, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t-test with ``n`` pairs whose differences have
    standard deviation ``sd_diff`` (noncentral t with ``n - 1`` degrees of freedom)."""
    if n < 2 or sd_diff <= 0 or not math.isfinite(sd_diff):
        return float("nan")
    return _power_t(abs(delta) / sd_diff * math.sqrt(n), n - 1, alpha)


def pairs_needed(
    delta: float, sd_diff: float, *, alpha: float = 0.05, power: float = 0.8, limit: int = 10_000
) -> int | None:
    """Smallest number of pairs (seeds) giving the paired t-test ``power`` to detect
    ``delta`` at ``alpha``; None when the delta is zero or the spread unknown.

    >>> pairs_needed(1.0, 1.0)
    10
    """
    return _smallest_n(
        lambda n: power_paired(delta, sd_diff, n, alpha), delta, sd_diff, 1, alpha, power, limit
    )


#: math.erfc elementwise (frompyfunc: no per-call signature inspection, unlike np.vectorize)
_ERFC = np.frompyfunc(math.erfc, 1, 1)


def _norm_cdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * np.asarray(_ERFC(-x / math.sqrt(2.0)), dtype=float)


def power_two_sample(delta: float, sd: float, n: int, alpha: float = 0.05) -> float:
    """Power of the two-sided two-sample t-test with ``n`` per group (equal variances).

    Exact: the noncentral t probability beyond ``±t(1-alpha/2, 2n-2)``, computed by
    quadrature over the chi distribution of ``s/sigma`` (no scipy).
    """
    if n < 2 or sd <= 0 or not math.isfinite(sd):
        return float("nan")
    return _power_t(abs(delta) / sd * math.sqrt(n / 2.0), 2 * n - 2, alpha)


def _power_t(nc: float, df: int, alpha: float) -> float:
    """P(|T| > t(1-alpha/2, df)) for T noncentral t with noncentrality ``nc``."""
    tc = t_ppf(1.0 - alpha / 2.0, df)
    # S = sqrt(chi2_df / df) has density c * s^(df-1) * exp(-df s^2 / 2)
    width = 12.0 / math.sqrt(2.0 * df)
    s = np.linspace(max(1e-9, 1.0 - width), 1.0 + width, 4001)
    log_c = (df / 2.0) * math.log(df / 2.0) + math.log(2.0) - math.lgamma(df / 2.0)
    dens = np.exp(log_c + (df - 1) * np.log(s) - df * s * s / 2.0)
    reject = 1.0 - _norm_cdf(tc * s - nc) + _norm_cdf(-tc * s - nc)
    ys = dens * reject
    return float(np.sum((ys[1:] + ys[:-1]) * np.diff(s)) / 2.0)


def seeds_needed(
    delta: float, sd: float, *, alpha: float = 0.05, power: float = 0.8, limit: int = 10_000
) -> int | None:
    """Smallest number of seeds per arm giving ``power`` to detect ``delta`` at ``alpha``.

    ``sd`` is the per-seed standard deviation (pooled over the two arms). Returns None when
    the delta is zero or the spread unknown (no finite number of seeds suffices).

    >>> seeds_needed(1.0, 1.0)
    17
    """
    return _smallest_n(
        lambda n: power_two_sample(delta, sd, n, alpha), delta, sd, 2, alpha, power, limit
    )


def _smallest_n(
    power_at: Callable[[int], float],
    delta: float,
    sd: float,
    arms: int,
    alpha: float,
    power: float,
    limit: int,
) -> int | None:
    """The smallest n >= 2 with ``power_at(n) >= power`` (None past ``limit``, or when the
    delta is zero or the spread unknown): the normal approximation ``arms (z sd / delta)^2``
    first, then a walk to the exact answer."""
    if not (math.isfinite(delta) and math.isfinite(sd)) or delta == 0:
        return None
    if sd == 0:
        return 2
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    n = max(2, math.ceil(arms * (z * sd / delta) ** 2))
    if n > limit:
        return None
    while n > 2 and power_at(n - 1) >= power:
        n -= 1
    while power_at(n) < power:
        n += 1
        if n > limit:
            return None
    return n


def _quantiles(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Empirical quantile function F^-1(t) = x_(ceil(n t)) (the step function ASO uses)."""
    xs = np.sort(x)
    idx = np.clip(np.ceil(xs.size * t).astype(int) - 1, 0, xs.size - 1)
    quantiles: np.ndarray = xs[idx]
    return quantiles


def violation_ratio(a: np.ndarray, b: np.ndarray, dt: float = 0.005) -> float:
    """epsilon_W2(A, B): the share of the squared Wasserstein-2 distance between the score
    distributions where A's quantile function lies below B's (Dror et al. 2019, eq. 4-5).
    0 means A stochastically dominates B; 1 means B dominates A.
    """
    t = np.arange(0.0, 1.0, dt)
    diff = _quantiles(np.asarray(b, float), t) - _quantiles(np.asarray(a, float), t)
    total = float(np.sum(diff * diff))
    if total == 0.0:
        return 0.5  # identical distributions: no evidence either way
    return float(np.sum(np.maximum(diff, 0.0) ** 2) / total)


def aso(
    a: np.ndarray | list[float],
    b: np.ndarray | list[float],
    *,
    alpha: float = 0.05,
    samples: int = 1000,
    bootstrap: int = 500,
    dt: float = 0.005,
    seed: int = 0,
) -> float:
    """Almost Stochastic Order: epsilon_min, an upper confidence bound (at level ``alpha``)
    of the violation ratio of "A is better than B" (higher scores better).

    eps_min = eps_W2 - Phi^-1(alpha) * sigma_hat / sqrt(n m / (n + m)), where sigma_hat is
    the bootstrap standard deviation of sqrt(samples / 2) * (eps_W2(boot) - eps_W2), each
    bootstrap drawing ``samples`` scores from each empirical quantile function (Dror et al.
    2019; del Barrio et al. 2018; as in the deep-significance package). eps_min < 0.5
    (stricter: < 0.2) supports "A is almost stochastically better than B".
    """
    x, y = np.asarray(a, float), np.asarray(b, float)
    if x.size == 0 or y.size == 0:
        return float("nan")
    rng = np.random.default_rng(seed)
    vr = violation_ratio(x, y, dt)
    boots = np.empty(bootstrap)
    for i in range(bootstrap):
        bx = _quantiles(x, rng.uniform(0.0, 1.0, samples))
        by = _quantiles(y, rng.uniform(0.0, 1.0, samples))
        boots[i] = violation_ratio(bx, by, dt)
    sigma = float(np.std(math.sqrt(samples / 2.0) * (boots - vr)))
    const = math.sqrt(x.size * y.size / (x.size + y.size))
    eps = vr - sigma / const * NormalDist().inv_cdf(alpha)
    return float(min(max(eps, 0.0), 1.0))
