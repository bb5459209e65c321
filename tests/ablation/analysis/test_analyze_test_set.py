"""analyze() with per-example data: the test-set fields of MetricStats, paired seeds,
declared bounds, min_effect, Holm, and the notes that explain them.

Runs are written straight into the store (no executor) and the per-example lookup
(``study_runs.example_stats_of``) is replaced by a table of ExampleStats built here.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable

import numpy as np
import pytest

from evalab.ablation import RunStore, analyze, load_study, plan_runs
from evalab.ablation.analysis import study_runs
from evalab.ablation.store.per_example import ExampleStats, mean_of_rows, mean_rows
from evalab.ablation.store.run_store import Outcome, RunResult
from evalab.report.notes import note_lines
from evalab.stats.resampling import bootstrap_counts
from evalab.stats.seed_stats import seeds_needed
from evalab.stats.two_level import example_delta, example_value, resample_runs

from ..evalsynth import write_eval_study
from ..synth import write_study

#: per-example values of a run: (row label, seed) -> values (accuracy in %, one per example)
Values = Callable[[str, int], np.ndarray | None]


def with_keys(study, **keys):
    """The study with the spec keys 15a parses (paired_seeds, bounds, min_effect, holm) set."""
    for k, v in keys.items():
        object.__setattr__(study, k, v)
    return study


def stored_study(
    tmp_path,
    monkeypatch,
    values: Values,
    *,
    seeds=(0, 1, 2),
    variants=None,
    stored_acc=None,
    path=None,
    **keys,
):
    """A synth study (or the study at ``path``) whose runs have the per-example ``values``
    (None: no per-example data)."""
    variants = variants or [("(C)", "worse", {"shift": -3.0}), ("(D)", "same", {"shift": 0.1})]
    path = path or write_study(tmp_path, seeds=list(seeds), variants=variants)
    study = with_keys(load_study(path), **keys)
    db = tmp_path / "s.db"
    table: dict[str, dict[str, ExampleStats]] = {}
    with RunStore(db) as store:
        for run in plan_runs(study):
            v = values(run.rows[0], run.seed)
            acc = (
                80.0
                if v is None
                else float(np.mean(v))
                if stored_acc is None
                else stored_acc(run.rows[0], run.seed, v)
            )
            store.record(
                Outcome(
                    study.name,
                    run.rows,
                    run.config,
                    run.seed,
                    study.code_version,
                    None,
                    None,
                    RunResult(run.key, "ok", metrics={"acc": acc, "loss": 1 - acc / 100}),
                )
            )
            if v is not None:
                table[run.key] = {"acc": ExampleStats("acc", mean_rows(v), mean_of_rows)}
    monkeypatch.setattr(
        study_runs, "example_stats_of", lambda study, store, run: table.get(run.key, {})
    )
    return study, db


def bernoulli(
    shift: dict[str, float], n: int = 800, seed_sd: float = 0.0, shared: bool = False
) -> Values:
    """0/100 per example; examples share a difficulty; each row's accuracy moves by ``shift``
    points; each seed by N(0, seed_sd) (the same draw for every row when ``shared``)."""
    difficulty = np.random.default_rng(0).random(n)

    def values(label: str, seed: int) -> np.ndarray:
        # a seed shared across rows: the same effect and the same per-example luck (data order)
        rng = np.random.default_rng([seed] if shared else [seed, zlib.crc32(label.encode())])
        seed_effect = np.random.default_rng(
            [seed, 1] if shared else [seed, zlib.crc32(label.encode()), 1]
        ).normal(0, seed_sd)
        p = np.clip(
            0.8 + (shift.get(label, 0.0) + seed_effect) / 100 - 0.3 * (difficulty - 0.5), 0, 1
        )
        return 100.0 * (rng.random(n) < p)

    return values


def test_fields_are_the_stats_layer_intervals_and_notes_explain_them(tmp_path, monkeypatch):
    values = bernoulli({"(C)": -3.0}, n=4000)
    study, db = stored_study(tmp_path, monkeypatch, values)
    a = analyze(study, db, resamples=500)
    base, c = a.base.metrics["acc"], a.row("(C)").metrics["acc"]
    runs = [values(label, s) for label in ("base", "(C)") for s in (0, 1, 2)]
    stats = [ExampleStats("acc", mean_rows(v), mean_of_rows) for v in runs]
    rr = resample_runs(stats, 500, 0)
    # the stacked product scores each run as its own ExampleStats.resampled on the same counts
    counts = np.concatenate(list(bootstrap_counts(4000, 500, 0)))
    np.testing.assert_allclose(
        rr.values, np.stack([es.resampled(counts) for es in stats]), rtol=1e-12
    )
    want_value = example_value(rr.take([0, 1, 2]), 0.95)
    want_delta = example_delta(rr.take([3, 4, 5]), rr.take([0, 1, 2]), 0.95)
    assert base.n_examples == 4000 and (base.mean_examples_low, base.mean_examples_high) == (
        want_value.low,
        want_value.high,
    )
    assert base.examples_low is None and base.both_low is None and base.p_both is None
    assert c.n_examples == 4000 and (c.examples_low, c.examples_high) == (
        want_delta.low,
        want_delta.high,
    )
    assert c.both_low <= c.examples_low < c.delta < c.examples_high <= c.both_high
    assert c.p_both is not None and 0 <= c.p_both < 0.05 and c.p_holm is None
    assert a.row("(C)").metrics["loss"].n_examples is None  # no per-example data for loss
    text = "\n".join(note_lines(a))
    assert "CI (test set) = 95% percentile interval of 500 bootstrap resamples" in text
    assert "CI (seeds + test set) = Δ over both sources" in text and "p (2-level)" in text
    assert (
        a.settings["resamples"] == 500
        and a.to_dict()["rows"][1]["metrics"]["acc"]["p_both"] == c.p_both
    )


def test_rows_without_per_example_data_on_every_seed_get_none(tmp_path, monkeypatch):
    full = bernoulli({})

    def values(label: str, seed: int):
        return None if (label, seed) == ("(D)", 1) else full(label, seed)

    study, db = stored_study(tmp_path, monkeypatch, values)
    a = analyze(study, db, resamples=200)
    d = a.row("(D)").metrics["acc"]
    assert (
        d.n_examples is None and d.examples_low is None and d.both_low is None and d.p_both is None
    )
    assert a.row("(C)").metrics["acc"].examples_low is not None


def test_per_example_data_that_does_not_reproduce_the_stored_value_is_refused(
    tmp_path, monkeypatch
):
    def stored_acc(label, seed, v):
        return float(np.mean(v)) + (1.0 if label == "(C)" and seed == 2 else 0.0)

    study, db = stored_study(tmp_path, monkeypatch, bernoulli({}), stored_acc=stored_acc)
    a = analyze(study, db, resamples=200)
    assert a.row("(C)").metrics["acc"].examples_low is None
    assert any(
        "No test-set interval for acc, run (C) seed 2: its per-example data scores" in n
        for n in note_lines(a)
    )


def test_test_sets_of_different_sizes_are_refused(tmp_path, monkeypatch):
    full = bernoulli({})

    def values(label: str, seed: int):
        return full(label, seed)[:700] if label == "(D)" else full(label, seed)

    study, db = stored_study(tmp_path, monkeypatch, values)
    a = analyze(study, db, resamples=200)
    assert (
        a.row("(D)").metrics["acc"].examples_low is None
        and a.row("(C)").metrics["acc"].examples_low is not None
    )
    assert any(
        "row (D): runs were scored on test sets of different sizes ([700, 800] examples)" in n
        for n in note_lines(a)
    )


def test_one_seed_still_has_the_test_set_interval(tmp_path, monkeypatch):
    study, db = stored_study(tmp_path, monkeypatch, bernoulli({"(C)": -3.0}, n=4000), seeds=(0,))
    c = analyze(study, db, resamples=300).row("(C)").metrics["acc"]
    assert (
        c.n == 1 and c.ci_low is None and c.delta_low is None and c.absent["delta_ci"] == "one_seed"
    )
    assert (
        c.examples_low < c.delta < c.examples_high and c.examples_high < 0
    )  # -3 points on 4000 examples
    assert c.both_low is None and c.p_both is None


def test_paired_seeds_recovers_a_paired_effect_welch_misses(tmp_path, monkeypatch):
    # the seed moves every row by the same N(0, 3) points; (C) is 1.5 points worse
    values = bernoulli({"(C)": -1.5}, n=4000, seed_sd=3.0, shared=True)
    seeds = (0, 1, 2, 3, 4)
    study, db = stored_study(tmp_path, monkeypatch, values, seeds=seeds)
    unpaired = analyze(study, db, resamples=300).row("(C)").metrics["acc"]
    paired = analyze(with_keys(study, paired_seeds=True), db, resamples=300)
    c = paired.row("(C)").metrics["acc"]
    assert not unpaired.paired and unpaired.p_welch > 0.05 and unpaired.p_both > 0.05
    assert c.paired and c.vs == "base" and c.p_welch < 0.01 and c.p_both < 0.05
    assert c.delta_high < 0 and c.both_high < 0
    assert any("PAIRED by seed (paired_seeds = true" in n for n in note_lines(paired))


def test_t_intervals_are_clipped_to_declared_bounds(tmp_path, monkeypatch):
    # accuracy near 100 with a large seed spread: mean ± t·sd/√n would pass 100
    def values(label: str, seed: int) -> np.ndarray:
        v = np.full(100, 100.0)
        v[: [0, 30, 2][seed]] = 0.0
        return v

    study, db = stored_study(tmp_path, monkeypatch, values, bounds={"acc": [0, 100]})
    a = analyze(study, db, resamples=200)
    unbounded = analyze(with_keys(study, bounds={}), db, resamples=200)
    assert unbounded.base.metrics["acc"].ci_high > 100
    for r in a.rows:
        m = r.metrics["acc"]
        assert (
            0 <= m.ci_low <= m.ci_high <= 100
            and 0 <= m.mean_examples_low <= m.mean_examples_high <= 100
        )
        if m.delta is not None:
            assert (
                -100 <= m.delta_low <= m.delta_high <= 100
                and -100 <= m.both_low <= m.both_high <= 100
            )
    assert any("Declared bounds: acc in [0, 100]" in n for n in note_lines(a))


def test_min_effect_marks_negligible_and_asks_no_seeds(tmp_path, monkeypatch):
    values = bernoulli({"(C)": -3.0, "(D)": 0.0}, n=4000, seed_sd=0.05)
    study, db = stored_study(
        tmp_path, monkeypatch, values, seeds=(0, 1, 2, 3), min_effect={"acc": 2.5}
    )
    a = analyze(study, db, resamples=300)
    c, d = a.row("(C)").metrics["acc"], a.row("(D)").metrics["acc"]
    assert d.negligible and not d.too_few_seeds and d.seeds_needed is None
    assert -2.5 <= d.both_low <= d.both_high <= 2.5 and -2.5 <= d.delta_low <= d.delta_high <= 2.5
    assert not c.negligible
    assert any("'negligible' = |Δ| and every interval shown" in n for n in note_lines(a))
    # a tiny Δ whose interval is not inside ±min_effect: the seed count is for min_effect
    wide = (
        analyze(with_keys(study, min_effect={"acc": 0.6}), db, resamples=300)
        .row("(D)")
        .metrics["acc"]
    )
    assert abs(wide.delta) < 0.6 < wide.both_high and not wide.negligible and wide.too_few_seeds
    pooled = math.sqrt(
        (np.var(wide.values, ddof=1) + np.var(a.base.metrics["acc"].values, ddof=1)) / 2
    )
    assert wide.seeds_needed == seeds_needed(0.6, pooled) != seeds_needed(wide.delta, pooled)


def test_holm_equals_a_direct_computation(tmp_path, monkeypatch):
    variants = [
        ("(C)", "", {"shift": -3.0}),
        ("(D)", "", {"shift": 0.1}),
        ("(E)", "", {"shift": -1.0}),
        ("(F)", "", {"shift": 0.5}),
    ]
    values = bernoulli({"(C)": -3.0, "(D)": 0.1, "(E)": -1.0, "(F)": 0.5}, n=1000, seed_sd=0.5)
    study, db = stored_study(tmp_path, monkeypatch, values, variants=variants)
    a = analyze(study, db, resamples=300, holm=True)
    rows = [r.metrics["acc"] for r in a.rows[1:]]
    p = [m.p_both for m in rows]
    order = sorted(range(len(p)), key=lambda i: p[i])
    direct, running = [0.0] * len(p), 0.0
    for j, i in enumerate(order):  # Holm (1979): step down, (m - j) p_(j), monotone, capped at 1
        running = max(running, min(1.0, (len(p) - j) * p[i]))
        direct[i] = running
    assert [m.p_holm for m in rows] == pytest.approx(direct)
    assert a.base.metrics["acc"].p_holm is None and a.row("(C)").metrics["loss"].p_holm is not None
    assert any(n.startswith("p(Holm) = Holm's step-down") for n in note_lines(a))
    assert (
        analyze(study, db, resamples=300).row("(C)").metrics["acc"].p_holm is None
    )  # only on request


def test_an_eval_row_is_paired_with_its_trained_row_on_examples_and_seeds(tmp_path, monkeypatch):
    # the eval row evaluates each seed's trained model: the same seed effect, 1 point lower
    path = write_eval_study(
        tmp_path, rows=[{"label": "(E)", "stage": "eval", "set": {"drop": 1}}], seeds=[0, 1, 2, 3]
    )
    values = bernoulli({"(E)": -1.0}, n=4000, seed_sd=3.0, shared=True)
    study, db = stored_study(tmp_path, monkeypatch, values, path=path)
    e = analyze(study, db, resamples=300).row("(E)").metrics["acc"]
    assert e.paired and e.vs == "base" and e.n_examples == 4000
    assert e.examples_low < e.delta < e.examples_high < 0 and e.both_high < 0 and e.p_both < 0.05
