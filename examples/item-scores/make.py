"""Writes the three per-item files of docs/item-scores.md (run from the repository root).

A 1000-question reading benchmark: 200 passages with 5 questions each. A passage's
difficulty is shared by its questions (that is what makes them a cluster), and the three
models' abilities differ a little; the outcome of a question is 0/1.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

rng = np.random.default_rng(2024)
passages, per_passage = 200, 5
passage_effect = np.repeat(rng.normal(0.0, 1.2, passages), per_passage)
question_effect = rng.normal(0.0, 0.8, passages * per_passage)
difficulty = passage_effect + question_effect
here = Path(__file__).parent
for name, ability in (("model-a", 0.55), ("model-b", 0.75), ("model-c", 0.62)):
    noise = rng.normal(0.0, 0.9, difficulty.size)
    correct = (ability - difficulty + noise > 0).astype(int)
    with open(here / f"{name}.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "passage", "correct"])
        for i, c in enumerate(correct):
            writer.writerow([f"q{i + 1:04d}", f"p{i // per_passage + 1:03d}", int(c)])
