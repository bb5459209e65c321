"""Synthetic entry point: acc = 70 + 10 * (A or B) - 3 * (no warmup) + N(0, 0.5) noise.

A = more than one head, B = dropout > 0. The effects are redundant (seed 004): removing
either from the full system costs nothing, adding either to the system with neither gains
10 points, and their interaction is 80 - 80 - 80 + 70 = -10.
"""

import random


def run(config: dict, seed: int) -> dict:
    rng = random.Random(f"{seed}/{config['heads']}/{config['dropout']}/{config['warmup']}")
    a = config["heads"] > 1
    b = config["dropout"] > 0
    acc = 70.0 + 10.0 * (a or b) - 3.0 * (config["warmup"] == 0) + rng.gauss(0.0, 0.5)
    loss = 1.0 - acc / 100.0 + rng.gauss(0.0, 0.005)
    return {"acc": acc, "loss": loss}
