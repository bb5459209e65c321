"""Position bias, length bias and judge-human agreement, against direct counts and peers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from evalab.errors import InputError
from evalab.items.preferences import read_annotations
from evalab.items.verdicts import read_verdicts
from evalab.stats.judges import judge_agreement, length_bias, position_bias


def _mt_bench(tmp_path: Path, rows: list[tuple[str, str, str, str]]) -> str:
    path = tmp_path / "pairs.jsonl"
    lines = [
        json.dumps(
            {"question_id": q, "model_1": "x", "model_2": "y", "g1_winner": g1, "g2_winner": g2}
        )
        for q, g1, g2, _ in rows
    ]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_position_bias_counts_each_kind_of_pair(tmp_path: Path) -> None:
    rows = [
        ("1", "model_1", "model_1", "consistent"),
        ("2", "tie", "tie", "consistent"),
        ("3", "model_1", "model_2", "first both"),  # g2 shows model_2 first, and it wins
        ("4", "model_2", "model_1", "second both"),
        ("5", "tie", "model_2", "a tie one way"),
        ("6", "error", "model_1", "one game only"),
    ]
    bias = position_bias(read_verdicts(_mt_bench(tmp_path, rows)))
    assert (bias.pairs, bias.consistent, bias.first_both, bias.second_both, bias.inconsistent) == (
        5,
        2,
        1,
        1,
        1,
    )
    # decisive games: q1 (first won, then second won), q3 (first twice), q4 (second twice),
    # q5's g2 (first), q6's g2 (second): 4 of 8 won by the first position
    assert (bias.first_wins, bias.decisive) == (4, 8)
    scipy_stats = pytest.importorskip("scipy.stats")
    assert bias.p_value == pytest.approx(scipy_stats.binomtest(4, 8).pvalue)


def test_arena_hard_games(tmp_path: Path) -> None:
    path = tmp_path / "judgment.jsonl"
    records = [
        {"question_id": "a", "model": "m", "games": [{"score": "B>A"}, {"score": "A>>B"}]},
        {"question_id": "b", "model": "m", "games": [{"score": "A>B"}, {"score": "A>B"}]},
        {"question_id": "c", "model": "m", "games": [{"score": None}, {"score": "A=B"}]},
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    verdicts = read_verdicts(str(path), baseline="base")
    assert verdicts.empty == 1 and len(verdicts.item) == 5
    bias = position_bias(verdicts)
    assert (bias.pairs, bias.consistent, bias.first_both) == (2, 1, 1)


def test_length_bias_equals_numpy(alpaca_annotations: Path) -> None:
    prefs = read_annotations(str(alpaca_annotations / "claude-2.1.json"))
    got = length_bias(prefs, prefs.baseline_lengths, n_samples=50)
    records = json.loads((alpaca_annotations / "claude-2.1.json").read_text())
    x = np.log([len(r["output_2"]) / len(r["output_1"]) for r in records])
    y = np.array([float(r["preference"]) - 1 for r in records])
    assert got.correlation == pytest.approx(np.corrcoef(x, y)[0, 1], abs=1e-12)
    assert got.interval.low < got.correlation < got.interval.high
    assert got.longer_win_rate > got.shorter_win_rate


def test_agreement_with_people_equals_scikit_learn(tmp_path: Path) -> None:
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    labels = ["model_1", "model_2", "tie"]
    judge, human = [], []
    for q in range(60):
        g = [str(rng.choice(labels)) for _ in range(2)]
        h = [x if rng.random() < 0.7 else str(rng.choice(labels)) for x in g]
        judge.append((str(q), g[0], g[1], ""))
        human.append((str(q), h[0], h[1], ""))
    (tmp_path / "j").mkdir()
    (tmp_path / "h").mkdir()
    a = read_verdicts(_mt_bench(tmp_path / "j", judge))
    b = read_verdicts(_mt_bench(tmp_path / "h", human))
    got = judge_agreement(a, b, n_samples=20)
    assert got.games == 120
    assert got.kappa.value == pytest.approx(
        sk.cohen_kappa_score((2 * a.outcome).astype(int), (2 * b.outcome).astype(int)), abs=1e-12
    )
    assert got.with_ties == pytest.approx(np.mean(a.outcome == b.outcome))


def test_refusals(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"question_id": 1, "model_1": "x", "model_2": "y", "g1_winner": "x", "g2_winner": "tie"}\n'
    )
    with pytest.raises(InputError, match="g1_winner 'x' is not model_1, model_2 or tie"):
        read_verdicts(str(bad))
    other = tmp_path / "other.jsonl"
    other.write_text('{"a": 1}\n')
    with pytest.raises(InputError, match="neither MT-Bench"):
        read_verdicts(str(other))
    ties = tmp_path / "ties.jsonl"
    ties.write_text(
        '{"question_id": 1, "model_1": "x", "model_2": "y", "g1_winner": "tie", "g2_winner": "tie"}\n'
    )
    with pytest.raises(InputError, match="every verdict is a tie"):
        position_bias(read_verdicts(str(ties)))
