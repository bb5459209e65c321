"""A stand-in training loop that logs a learning curve: the training loss falls towards 0.1
(slower for a wider model), the validation loss follows it and rises again after step 300
(overfitting). Seeded noise makes each seed's curve its own."""

import math
import random

from evalab.ablation import log


def run(config, seed):
    rng = random.Random(seed * 1000 + config["hidden"])
    for step in range(config["steps"]):
        loss = 2.0 * math.exp(-step / (5.0 * config["hidden"])) + 0.1 + rng.gauss(0.0, 0.01)
        val_loss = loss + 0.05 + 0.0002 * max(0, step - 300) + rng.gauss(0.0, 0.005)
        if log(step=step, loss=loss, val_loss=val_loss):  # True once [curves] stop_when holds
            break
    return {"acc": round(100 * (1 - val_loss / 2), 4)}
