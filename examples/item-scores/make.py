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


def lm_eval_run(folder: Path, skill: float, seed: int) -> None:
    """An lm-evaluation-harness 0.4 run folder (``--log_samples``): two tasks, 200 documents."""
    import json

    rng = np.random.default_rng(seed)
    date = "2024-06-01T12-00-00.000001"
    folder.mkdir(parents=True, exist_ok=True)
    docs = np.random.default_rng(7).normal(0.0, 1.0, 200)  # the same documents for every model
    acc = (skill - docs + rng.normal(0.0, 0.8, docs.size) > 0).astype(float)
    lines = []
    for i, a in enumerate(acc):
        lines.append({
            "doc_id": i, "doc": {"question": f"question {i}", "choices": ["A", "B", "C", "D"], "answer": 0},
            "target": 0, "arguments": {f"gen_args_{k}": {"arg_0": f"question {i}", "arg_1": f" {c}"}
                                       for k, c in enumerate("ABCD")},
            "resps": [[[-1.0 - k, False]] for k in range(4)], "filtered_resps": [[-1.0 - k, False] for k in range(4)],
            "filter": "none", "metrics": ["acc", "acc_norm"], "doc_hash": f"{i:064x}",
            "prompt_hash": f"{i + 1:064x}", "target_hash": f"{i + 2:064x}", "acc": a, "acc_norm": a,
        })
    (folder / f"samples_arc_easy_{date}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    results = {
        "results": {"arc_easy": {"alias": "arc_easy", "acc,none": float(acc.mean()), "acc_norm,none": float(acc.mean())}},
        "versions": {"arc_easy": 1.0}, "n-shot": {"arc_easy": 0},
        "config": {"model": "hf", "model_args": f"pretrained={folder.name}"}, "lm_eval_version": "0.4.3",
    }
    (folder / f"results_{date}.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


lm_eval_run(here / "lm-eval" / "base", 0.3, 1)
lm_eval_run(here / "lm-eval" / "tuned", 0.6, 2)


def sampled(name: str, ability: float, seed: int, items: int = 300, generations: int = 4) -> None:
    """Four generations per item (temperature sampling): the item's score is their mean."""
    rng = np.random.default_rng(seed)
    hardness = np.random.default_rng(11).normal(0.0, 1.0, items)  # the same items for both models
    p = 1.0 / (1.0 + np.exp(hardness - ability))
    with open(here / f"{name}.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "generation", "correct"])
        for i in range(items):
            for g in range(generations):
                writer.writerow([f"item{i + 1:03d}", g + 1, int(rng.random() < p[i])])


sampled("sampled-a", 0.2, 21)
sampled("sampled-b", 0.5, 22)
