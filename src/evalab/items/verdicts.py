"""A judge's verdicts on pairs of answers shown in both orders (MT-Bench, Arena-Hard).

Each verdict is one *game*: the judge saw ``first``'s answer in position A and
``second``'s in position B on ``item`` and gave ``outcome`` for ``first`` (1 first better,
0.5 a tie, 0 second better). Two formats are read:

* FastChat's MT-Bench pairwise judgments (``gen_judgment.py --mode pairwise-*``, JSON
  Lines): ``question_id``, ``model_1``, ``model_2``, ``g1_winner`` (``model_1`` shown first)
  and ``g2_winner`` (the order swapped), each ``model_1``, ``model_2``, ``tie`` or
  ``error``; ``turn`` when present is part of the item.
* Arena-Hard's judgments (JSON Lines): ``question_id``, ``model`` and ``games``: game 1 shows
  the baseline as A and the model as B, game 2 the other way round; each game's ``score``
  is ``A>>B``, ``A>B``, ``A=B``, ``B>A`` or ``B>>A`` (``null``: no verdict). The baseline is
  ``--baseline`` (Arena-Hard's default ``gpt-4-0314``).

A verdict that says nothing (``error``, ``null``) is left out and counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from evalab.errors import InputError
from evalab.io import read_records

__all__ = ["ARENA_HARD_SCORES", "Verdicts", "read_verdicts"]

#: Arena-Hard's labels and the outcome for the answer in position A
ARENA_HARD_SCORES = {"A>>B": 1.0, "A>B": 1.0, "A=B": 0.5, "B>A": 0.0, "B>>A": 0.0}
_MT_BENCH = {"model_1": 1.0, "model_2": 0.0, "tie": 0.5}


@dataclass(frozen=True)
class Verdicts:
    """Games: ``first[g]`` was shown in position A against ``second[g]`` on ``item[g]``."""

    source: str
    item: tuple[str, ...]
    first: tuple[str, ...]
    second: tuple[str, ...]
    outcome: np.ndarray
    #: verdicts left out because they said nothing (``error``, ``null``)
    empty: int


def _mt_bench(
    fields: dict[str, Any], label: str, line: int
) -> list[tuple[str, str, str, float | None]]:
    m1, m2 = str(fields["model_1"]), str(fields["model_2"])
    item = str(fields["question_id"]) + (f"/turn {fields['turn']}" if "turn" in fields else "")
    games: list[tuple[str, str, str, float | None]] = []
    for key, (a, b) in (("g1_winner", (m1, m2)), ("g2_winner", (m2, m1))):
        winner = fields.get(key)
        if winner == "error" or winner is None:
            games.append((item, a, b, None))
            continue
        if winner not in _MT_BENCH:
            raise InputError(
                f"{label}: line {line}: {key} {winner!r} is not model_1, model_2 or tie"
            )
        # the winner names a model; the outcome is for the one shown first in this game
        value = _MT_BENCH[winner]
        games.append((item, a, b, value if a == m1 else 1.0 - value))
    return games


def _arena_hard(
    fields: dict[str, Any], baseline: str, label: str, line: int
) -> list[tuple[str, str, str, float | None]]:
    model, item = str(fields["model"]), str(fields["question_id"])
    games = fields["games"]
    if not isinstance(games, list) or len(games) != 2:
        raise InputError(f"{label}: line {line}: 'games' must hold the two games of one pair")
    out: list[tuple[str, str, str, float | None]] = []
    for game, (a, b) in zip(games, ((baseline, model), (model, baseline)), strict=True):
        score = game.get("score") if isinstance(game, dict) else None
        if score is None:
            out.append((item, a, b, None))
            continue
        if score not in ARENA_HARD_SCORES:
            raise InputError(
                f"{label}: line {line}: score {score!r} is not one of {', '.join(ARENA_HARD_SCORES)}"
            )
        out.append((item, a, b, ARENA_HARD_SCORES[score]))
    return out


def read_verdicts(path: str, baseline: str = "gpt-4-0314") -> Verdicts:
    """MT-Bench or Arena-Hard pairwise judgments (JSON Lines), as games."""
    records = read_records(path, "jsonl")
    label = "<stdin>" if path == "-" else path
    games: list[tuple[str, str, str, float | None]] = []
    for record in records:
        fields = dict(record.fields)
        if {"model_1", "model_2", "g1_winner"} <= fields.keys():
            games += _mt_bench(fields, label, record.line)
        elif {"model", "games", "question_id"} <= fields.keys():
            games += _arena_hard(fields, baseline, label, record.line)
        else:
            raise InputError(
                f"{label}: line {record.line}: neither MT-Bench (model_1, model_2, g1_winner, "
                "g2_winner) nor Arena-Hard (question_id, model, games) judgments"
            )
    kept = [g for g in games if g[3] is not None]
    if not kept:
        raise InputError(f"{label}: no verdicts")
    return Verdicts(
        label,
        tuple(g[0] for g in kept),
        tuple(g[1] for g in kept),
        tuple(g[2] for g in kept),
        np.array([g[3] for g in kept], dtype=np.float64),
        len(games) - len(kept),
    )
