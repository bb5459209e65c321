"""A study whose runs write a system output file (scored by evalab: ``[metrics.NAME]``) and
return per-example accuracies (``per_example``), on the first lines of a WMT22 system.

Each run blanks a seeded random share ``drop`` of the system's segments, so runs differ;
``short`` drops the last line (a run whose outputs do not match its test set), ``n_acc``
sets the number of per-example values and ``acc_scale`` the scale of the returned mean.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import wmt_file

ENTRY = """
import os
import random


def run(config, seed, out_dir=None):
    with open("data/sys.txt", encoding="utf-8") as fh:
        hyps = fh.read().split("\\n")[:-1]
    rng = random.Random(seed * 1000 + int(config["drop"] * 100))
    lines = ["" if rng.random() < config["drop"] else h for h in hyps]
    if config["short"]:
        lines = lines[:-1]
    with open(os.path.join(out_dir, "hyp.txt"), "w", encoding="utf-8") as fh:
        fh.write("\\n".join(lines) + "\\n")
    acc = [float(rng.random() < 0.7) for _ in range(config["n_acc"])]
    return {"acc": config["acc_scale"] * sum(acc) / len(acc), "per_example": {"acc": acc}}


def evaluate(config, seed, checkpoint_dir, out_dir=None):
    # evaluation-time row: the trained run's outputs with the first `blank` lines blanked
    with open(os.path.join(checkpoint_dir, "hyp.txt"), encoding="utf-8") as fh:
        lines = fh.read().split("\\n")[:-1]
    lines = [""] * config["blank"] + lines[config["blank"]:]
    with open(os.path.join(out_dir, "hyp.txt"), "w", encoding="utf-8") as fh:
        fh.write("\\n".join(lines) + "\\n")
    return {"acc": 0.5, "per_example": {"acc": [1.0, 0.0] * (config["n_acc"] // 2)}}
"""

BASE: dict[str, Any] = {"drop": 0.1, "short": False, "n_acc": 40, "acc_scale": 1.0}
N_LINES = 60


def write_outputs_study(
    folder: Path,
    *,
    variants: list[tuple[str, dict[str, Any]]] = (),
    seeds: tuple[int, ...] = (0, 1),
    tables: str | None = None,
    extra_study: str = "",
) -> Path:
    """Write data/ref.txt, data/ref2.txt, data/sys.txt, out_entry.py and study.toml; return the study path."""
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    for name, src in (
        ("ref.txt", wmt_file("ref", "en-de", "A")),
        ("ref2.txt", wmt_file("ref", "en-de", "B")),
        ("sys.txt", wmt_file("hyp", "en-de", "Online-A")),
    ):
        lines = src.read_text(encoding="utf-8").split("\n")[:N_LINES]
        (data / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "out_entry.py").write_text(ENTRY, encoding="utf-8")
    if tables is None:
        tables = (
            '[metrics.bleu]\nmetric = "bleu"\nsettings = { tokenize = "13a" }\noutputs = "hyp.txt"\n'
            'references = ["data/ref.txt", "data/ref2.txt"]\n\n'
            '[metrics.ter]\nmetric = "ter"\noutputs = "hyp.txt"\nreferences = ["data/ref.txt"]\n'
        )
    lines = [
        "[study]",
        'name = "outs"',
        'entry = "out_entry:run"',
        f"seeds = {list(seeds)}",
        'metrics = ["acc"]',
        'primary = "bleu"',
        "timeout = 120",
        extra_study,
        "",
        tables,
        "",
        "[base]",
    ]
    lines += [f"{k} = {json.dumps(v)}" for k, v in BASE.items()]
    for label, settings in variants:
        body = ", ".join(f"{k} = {json.dumps(v)}" for k, v in settings.items())
        lines += ["", "[[variant]]", f"label = {json.dumps(label)}", f"set = {{ {body} }}"]
    path = folder / "study.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
