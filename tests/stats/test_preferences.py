"""Win rates equal to AlpacaEval 2.0's leaderboard on its own annotation files; the paired
comparison of models on shared instructions; refusals."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import ALPACA

from evalab.errors import InputError
from evalab.items.preferences import PreferenceSet, read_annotations
from evalab.stats.preferences import win_rate, win_rates

#: the annotation files hold each verdict to 10 decimals (the leaderboard was computed before
#: that rounding): a mean of verdicts times 100 is known to 100 * 0.5e-10 = 5e-9 points
FILE_PRECISION = 5e-9
#: models whose avg_length the leaderboard takes over outputs the judge did not annotate
PARTLY_ANNOTATED = {"phi-2", "alpaca-7b_verbose"}


def _leaderboard() -> dict[str, dict[str, str]]:
    path = ALPACA / "weighted_alpaca_eval_gpt4_turbo_leaderboard.csv"
    with path.open(encoding="utf-8") as f:
        return {row[""]: row for row in csv.DictReader(f)}


def test_every_shared_model_equals_the_leaderboard(alpaca_annotations: Path) -> None:
    board = _leaderboard()
    files = sorted(alpaca_annotations.glob("*.json"))
    assert len(files) == 16
    for path in files:
        name = path.stem
        got = win_rate(read_annotations(str(path), model=name), n_samples=10)
        row = board[name]
        assert got.win_rate == pytest.approx(float(row["win_rate"]), rel=0, abs=FILE_PRECISION)
        se = float(row["standard_error"])
        assert got.standard_error == pytest.approx(se, rel=0, abs=FILE_PRECISION)
        assert got.discrete_win_rate == pytest.approx(float(row["discrete_win_rate"]), rel=1e-14)
        counts = (got.n_wins, got.n_wins_base, got.n_draws, got.n_total)
        assert counts == tuple(int(row[k]) for k in ("n_wins", "n_wins_base", "n_draws", "n_total"))
        if name not in PARTLY_ANNOTATED:
            assert got.avg_length == int(row["avg_length"])
        assert got.ci.low <= got.win_rate <= got.ci.high


def _set(model: str, prefs: list[float], instructions: list[str] | None = None) -> PreferenceSet:
    texts = instructions or [f"q{i}" for i in range(len(prefs))]
    return PreferenceSet(
        model,
        "base",
        model,
        tuple(texts),
        np.array(prefs, dtype=float),
        np.ones(len(prefs), int),
        np.ones(len(prefs), int),
    )


def test_alpaca_eval_conventions() -> None:
    # 0 is a draw, NaN is no verdict, values are kept as given (1.5 counts as a draw)
    got = win_rate(_set("m", [2.0, 1.0, 0.0, 1.5, np.nan, 1.7, 1.2]), n_samples=10)
    assert (got.n_wins, got.n_wins_base, got.n_draws, got.n_total) == (2, 2, 2, 6)
    assert got.win_rate == pytest.approx(np.mean([1, 0, 0.5, 0.5, 0.7, 0.2]) * 100)
    assert got.discrete_win_rate == pytest.approx(np.mean([1, 0, 0.5, 0.5, 1, 0]) * 100)


def test_paired_comparison_on_shared_instructions(alpaca_annotations: Path) -> None:
    names = ["gpt-3.5-turbo-1106", "gpt-3.5-turbo-1106_concise", "phi-2"]
    sets = [read_annotations(str(alpaca_annotations / f"{n}.json"), model=n) for n in names]
    table = win_rates(sets, n_samples=50)
    assert table.shared_items == 803  # phi-2's judge left two instructions out
    common = set(sets[2].instructions)
    a = [
        v - 1 for t, v in zip(sets[1].instructions, sets[1].preference, strict=True) if t in common
    ]
    b = [
        v - 1 for t, v in zip(sets[0].instructions, sets[0].preference, strict=True) if t in common
    ]
    scipy_stats = pytest.importorskip("scipy.stats")
    assert table.p_values[1, 0] == pytest.approx(scipy_stats.ttest_rel(a, b).pvalue, rel=1e-9)
    alone = win_rate(sets[1], n_samples=50)
    # the same resamples alone or among others (one matrix product instead of one per model)
    assert table.rates[1].ci.low == pytest.approx(alone.ci.low, rel=1e-12)
    assert table.rates[1].ci.high == pytest.approx(alone.ci.high, rel=1e-12)
    assert table.ranking.order[0] == 0  # gpt-3.5-turbo-1106 has the highest win rate


def test_refusals() -> None:
    with pytest.raises(InputError, match="different baselines"):
        other = _set("n", [1.2, 1.8])
        other = dataclasses.replace(other, baseline="other")
        win_rates([_set("m", [1.2, 1.8]), other])
    with pytest.raises(InputError, match="name them NAME=PATH"):
        win_rates([_set("m", [1.2, 1.8]), _set("m", [1.3, 1.9])])
    with pytest.raises(InputError, match="share 0 judged instructions"):
        win_rates([_set("m", [1.2, 1.8], ["a", "b"]), _set("n", [1.3, 1.9], ["c", "d"])])
