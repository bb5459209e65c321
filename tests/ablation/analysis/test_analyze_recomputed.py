"""An independent recomputation of the report's statistics on a small synthetic study.

Nothing from ``stats/`` is used to compute the expected numbers: the bootstrap draws its
indices with ``numpy.random.default_rng(seed).choice`` (the stream ``bootstrap_counts``
documents), scores each run by indexing its per-example values, and the t quantiles, Welch
and paired tests come from scipy. Edge cases (one seed, failed seeds, per-example data on
some seeds only, a metric without seed spread) check that a number that may be wrong is
shown as '–' with a note, never printed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from evalab.ablation import analyze
from evalab.ablation.analysis.note_kinds import NoSeedSpreadNote, OneSeedNote
from evalab.ablation.store.example_refusals import ExampleGap
from evalab.report.notes import note_lines

from .test_analyze_test_set import bernoulli, stored_study, with_keys

B, N, SEEDS = 400, 300, (0, 1, 2, 3)


def boot_means(values: np.ndarray, seed: int = 0) -> np.ndarray:
    """Each resample's mean of ``values`` (one run's per-example values)."""
    idx = np.random.default_rng(seed).choice(values.size, size=(B, values.size))
    return values[idx].mean(axis=1)


def percentile(draws: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    d = np.sort(draws)
    lower = math.floor(d.size * (1 - confidence) / 2 + 1e-9)
    return float(d[lower]), float(d[d.size - lower - 1])


def interaction(v: np.ndarray) -> float:
    """ANOVA estimate of the seed x example interaction's share of Var(mean over seeds)."""
    s, dev = v.shape[0], v - v.mean(axis=0)
    dev = dev - dev.mean(axis=1, keepdims=True)
    return float((dev**2).sum() / (v.shape[1] - 1)) / (s * (s - 1))


def two_level(row: np.ndarray, base: np.ndarray, row_pts, base_pts, *, paired: bool):
    """(Δ, low, high, p) over seeds and test examples, from the formula in stats/two_level.py."""
    delta = float(np.mean(row_pts) - np.mean(base_pts))
    if paired:
        d_pts, d_v = np.asarray(row_pts) - base_pts, row - base
        seeds, df = np.var(d_pts, ddof=1) / d_pts.size, d_pts.size - 1
        examples, inter = np.var(d_v.mean(axis=0), ddof=1), interaction(d_v)
    else:
        va, vb = np.var(row_pts, ddof=1) / len(row_pts), np.var(base_pts, ddof=1) / len(base_pts)
        seeds = va + vb
        df = seeds**2 / (va**2 / (len(row_pts) - 1) + vb**2 / (len(base_pts) - 1))
        examples = np.var(row.mean(axis=0) - base.mean(axis=0), ddof=1)
        inter = interaction(row) + interaction(base)
    se = math.sqrt(max(seeds, inter) + max(examples, inter) - inter)
    half = sps.t.ppf(0.975, df) * se
    return delta, delta - half, delta + half, 2 * sps.t.sf(abs(delta) / se, df)


@pytest.mark.parametrize("paired", [False, True])
def test_every_interval_and_p_value_matches_a_recomputation(tmp_path, monkeypatch, paired):
    values = bernoulli({"(C)": -4.0, "(D)": 0.5}, n=N, seed_sd=1.0, shared=paired)
    study, db = stored_study(tmp_path, monkeypatch, values, seeds=SEEDS, paired_seeds=paired)
    a = analyze(study, db, resamples=B, holm=True)
    runs = {label: [values(label, s) for s in SEEDS] for label in ("base", "(C)", "(D)")}
    boots = {label: np.stack([boot_means(v) for v in vs]) for label, vs in runs.items()}
    points = {label: [float(v.mean()) for v in vs] for label, vs in runs.items()}
    base = a.base.metrics["acc"]
    assert (base.mean_examples_low, base.mean_examples_high) == pytest.approx(
        percentile(boots["base"].mean(axis=0))
    )
    p_rows = []
    for label in ("(C)", "(D)"):
        m = a.row(label).metrics["acc"]
        delta = np.mean(points[label]) - np.mean(points["base"])
        assert m.delta == pytest.approx(delta) and m.paired is paired
        assert (m.mean_examples_low, m.mean_examples_high) == pytest.approx(
            percentile(boots[label].mean(axis=0))
        )
        assert (m.examples_low, m.examples_high) == pytest.approx(
            percentile(boots[label].mean(axis=0) - boots["base"].mean(axis=0))
        )
        t = (
            sps.ttest_rel(points[label], points["base"])
            if paired
            else sps.ttest_ind(points[label], points["base"], equal_var=False)
        )
        ci = t.confidence_interval(0.95)
        assert (m.p_welch, m.delta_low, m.delta_high) == pytest.approx((t.pvalue, ci.low, ci.high))
        d, low, high, p = two_level(
            boots[label], boots["base"], points[label], points["base"], paired=paired
        )
        assert d == pytest.approx(m.delta)
        assert (m.both_low, m.both_high, m.p_both) == pytest.approx((low, high, p))
        assert (
            m.both_low <= m.delta_low and m.delta_high <= m.both_high
        )  # never narrower than seeds alone
        assert (m.p_both < 0.05) == (high < 0 or low > 0)  # p and interval agree
        p_rows.append(p)
    holm = sorted(p_rows)
    holm = [min(1, 2 * holm[0]), min(1, max(2 * holm[0], holm[1]))]
    order = np.argsort(p_rows)
    want = [0.0, 0.0]
    for rank, i in enumerate(order):
        want[i] = holm[rank]
    assert [a.row(x).metrics["acc"].p_holm for x in ("(C)", "(D)")] == pytest.approx(want)


def test_bounds_clip_only_what_leaves_them(tmp_path, monkeypatch):
    values = bernoulli({"(C)": -4.0}, n=N, seed_sd=1.0)
    study, db = stored_study(tmp_path, monkeypatch, values, seeds=SEEDS)
    free = analyze(study, db, resamples=B).row("(C)").metrics["acc"]
    bounded = (
        analyze(with_keys(study, bounds={"acc": [0, 100]}), db, resamples=B)
        .row("(C)")
        .metrics["acc"]
    )
    for f in (
        "ci_low",
        "ci_high",
        "delta_low",
        "delta_high",
        "both_low",
        "both_high",
        "examples_low",
        "examples_high",
    ):
        assert getattr(bounded, f) == getattr(free, f), f  # far from 0 and 100: nothing to clip


# -- edge cases: what may be wrong is '–' with a note -------------------------------------------
def test_rows_with_per_example_data_on_some_seeds_only_say_why_they_have_no_test_set_interval(
    tmp_path, monkeypatch
):
    full = bernoulli({"(C)": -3.0}, n=N)
    study, db = stored_study(
        tmp_path, monkeypatch, lambda label, s: None if (label, s) == ("(D)", 1) else full(label, s)
    )
    a = analyze(study, db, resamples=B)
    assert (
        a.row("(D)").metrics["acc"].examples_low is None
        and a.row("(C)").metrics["acc"].examples_low is not None
    )
    # before: the row's test-set columns were '–' and no note said why
    assert (
        "No test-set interval for acc, row (D): row (D) has usable per-example data on 2 of its 3 finished runs (none for seed 1)."
        in note_lines(a)
    )
    assert ExampleGap("acc", "(D)", "(D)", False, 3, (1,)) in a.notes


def test_a_base_without_per_example_data_on_one_seed_is_named_for_every_row_it_blanks(
    tmp_path, monkeypatch
):
    full = bernoulli({"(C)": -3.0}, n=N)
    study, db = stored_study(
        tmp_path,
        monkeypatch,
        lambda label, s: None if (label, s) == ("base", 1) else full(label, s),
    )
    a = analyze(study, db, resamples=B)
    assert all(r.metrics["acc"].n_examples is None for r in a.rows)
    for label in ("(C)", "(D)"):  # before: every test-set column vanished without a word
        assert (
            f"No test-set interval for acc, row {label}: row base (the row Δ is taken to) has usable per-example "
            "data on 2 of its 3 finished runs (none for seed 1)."
        ) in note_lines(a)


def flat_values(label: str, seed: int) -> np.ndarray:
    """The same per-example values on every seed (a deterministic run, or seeds agreeing by chance)."""
    v = np.zeros(200)
    v[: {"base": 160, "(C)": 150, "(D)": 160}[label]] = 100.0
    return v


def test_seeds_without_spread_show_no_t_interval_or_p_and_holm_uses_the_permutation_p(
    tmp_path, monkeypatch
):
    study, db = stored_study(tmp_path, monkeypatch, flat_values)
    a = analyze(study, db, resamples=B, holm=True)
    c = a.row("(C)").metrics["loss"]  # no per-example data for loss: p(t) would be the row's p
    # before: CI [+0.05, +0.05] and p(t) 0 ("<0.001"), a certainty three equal values cannot give
    assert c.no_seed_spread and c.delta_low is None and c.p_welch is None and c.ci_low is None
    assert c.absent == {
        "mean_ci": "no_seed_spread",
        "delta_ci": "no_seed_spread",
        "p_t": "no_seed_spread",
    }
    assert c.p_perm == pytest.approx(0.1) and c.p_holm == pytest.approx(min(1.0, 2 * 0.1))
    assert NoSeedSpreadNote(("base", "(C)", "(D)")) in a.notes
    assert any(n.startswith("No seed spread (rows base; (C); (D))") for n in note_lines(a))
    acc = a.row("(C)").metrics["acc"]  # the two-level interval takes ν = min(S) - 1 = 2, not ∞
    assert acc.both_low < acc.examples_low and acc.both_high > acc.examples_high


def test_the_deterministic_grid_example_prints_no_zero_width_interval(
    run_cli, tmp_path, monkeypatch
):
    from tests.conftest import REPO

    monkeypatch.syspath_prepend(str(REPO / "examples" / "two_by_two"))
    study, db = REPO / "examples" / "two_by_two" / "study.toml", tmp_path / "two.db"
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 0
    out = run_cli("ablate", "report", study, "--db", db, "-f", "markdown").stdout
    assert (
        "[-10.00, -10.00]" not in out and "<0.001" not in out
    )  # before: both, for three equal values
    assert "| A=false, B=false | – | -10.00 | – | – | 0.100 | no seed spread |" in out
    assert "80 - 80 - 80 + 70 = -10` (no seed spread: no CI, no p (t))" in out


@pytest.mark.parametrize("paired", [False, True])
def test_one_seed_shows_no_p_value_that_could_only_be_one(tmp_path, monkeypatch, paired):
    study, db = stored_study(
        tmp_path, monkeypatch, bernoulli({"(C)": -5.0}, n=2000), seeds=(0,), paired_seeds=paired
    )
    a = analyze(study, db, resamples=B)
    c = a.row("(C)").metrics["acc"]
    # before: p(perm) 1.000 (one seed against one: every relabeling is as extreme), next to
    # a test-set interval far from 0
    assert (
        c.p_perm is None
        and c.absent["p_perm"] == "one_seed"
        and c.examples_high < 0
        and c.too_few_seeds
    )
    assert OneSeedNote(("(C)", "(D)")) in a.notes
    assert any(
        n.startswith("One seed (rows (C); (D)): with one seed in the row") for n in note_lines(a)
    )
