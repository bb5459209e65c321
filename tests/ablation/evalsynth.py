"""A synthetic study with an evaluation stage: training writes a checkpoint, evaluation reads it.

Every call of ``run`` (training) and ``evaluate`` appends one line to ``calls.log`` in the
study folder (the runs' cwd), so tests can count them: ``train <seed>`` and
``eval <seed> <checkpoint_dir>``. The trained "model" is one number, ``weight``; an
evaluation with ``drop`` removes ``10 * drop`` from it plus seeded noise, so the paired
differences have a known mean and a spread.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .synth import toml_value

ENTRY = """
import json
import os
import random


def _log(line):
    with open("calls.log", "a", encoding="utf-8") as fh:
        fh.write(line + "\\n")


def run(config, seed, out_dir):
    assert "drop" not in config, "an evaluation-only key reached training"
    _log(f"train {seed}")
    rng = random.Random(f"{seed}|{sorted(config.items())}")
    weight = 70.0 + 10.0 * config["a"] + config["shift"] + rng.gauss(0.0, 2.0)
    with open(os.path.join(out_dir, "ckpt.json"), "w", encoding="utf-8") as fh:
        json.dump({"weight": weight, "seed": seed}, fh)
    return {"acc": weight, "loss": 1.0 - weight / 100.0}


def evaluate(config, seed, checkpoint_dir):
    _log(f"eval {seed} {checkpoint_dir}")
    with open(os.path.join(checkpoint_dir, "ckpt.json"), encoding="utf-8") as fh:
        ckpt = json.load(fh)
    assert ckpt["seed"] == seed, "checkpoint of another seed"
    noise = random.Random(f"eval|{seed}|{config['drop']}").gauss(0.0, 1.0)
    acc = ckpt["weight"] - 10.0 * config["drop"] + (noise if config["drop"] else 0.0)
    return {"acc": acc, "loss": 1.0 - acc / 100.0}
"""

BASE = {"a": 1, "shift": 0.0}


def write_eval_study(
    folder: Path,
    *,
    rows: list[dict[str, Any]] = (),
    base: dict[str, Any] | None = None,
    evaluation: dict[str, Any] | None = None,
    seeds: list[int] | None = None,
    evaluate: str | None = "synth_entry:evaluate",
    entry_source: str = ENTRY,
) -> Path:
    """Write ``synth_entry.py`` and ``study.toml``; ``rows`` are [[variant]] tables as dicts."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "synth_entry.py").write_text(entry_source, encoding="utf-8")
    lines = [
        "[study]",
        'name = "evalsynth"',
        'entry = "synth_entry:run"',
        f"seeds = {toml_value(seeds if seeds is not None else [0, 1, 2, 3])}",
        'metrics = ["acc", "loss"]',
        "higher_is_better = { acc = true, loss = false }",
        "timeout = 60",
    ]
    if evaluate:
        lines.append(f"evaluate = {json.dumps(evaluate)}")
    lines += ["", "[base]", *(f"{k} = {toml_value(v)}" for k, v in (base or BASE).items())]
    ev = {"drop": 0} if evaluation is None else evaluation
    if ev:
        lines += ["", "[evaluation]", *(f"{k} = {toml_value(v)}" for k, v in ev.items())]
    for row in rows:
        lines += ["", "[[variant]]", *(f"{k} = {toml_value(v)}" for k, v in row.items())]
    path = folder / "study.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def calls(folder: Path) -> list[list[str]]:
    """The logged calls, split into words."""
    log = folder / "calls.log"
    return (
        [ln.split(" ", 2) for ln in log.read_text(encoding="utf-8").splitlines()]
        if log.exists()
        else []
    )
