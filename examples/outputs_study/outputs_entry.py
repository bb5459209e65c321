"""A stand-in system for docs/ablation-outputs.md: it "translates" each line of the
reference by copying it with every word dropped with probability ``drop`` (seeded), writes
that output to ``hyp.de`` in its run folder (evalab scores it: the study's ``[metrics.NAME]``
tables) and returns ``kept``, the share of words kept, with its value per segment."""

from __future__ import annotations

import os
import random


def run(config: dict, seed: int, out_dir: str) -> dict:
    rng = random.Random(f"{seed}|{config['drop']}")
    with open("../texts/news.de", encoding="utf-8") as fh:
        references = fh.read().split("\n")[:-1]
    lines, kept = [], []
    for ref in references:
        words = ref.split(" ")
        keep = [w for w in words if rng.random() >= config["drop"]]
        lines.append(" ".join(keep))
        kept.append(len(keep) / len(words))
    with open(os.path.join(out_dir, "hyp.de"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return {"kept": sum(kept) / len(kept), "per_example": {"kept": kept}}
