"""A training script of the kind Hydra runs: every argument is a ``key=value`` override.

    python train.py hidden=32 optim.lr=0.01 optim.name=adam seed=0 out=metrics.json

It "trains" nothing: ``acc`` is a made-up function of the settings plus noise seeded by the
seed, so the ablation study beside it (study.toml) has a known truth: a hidden size of 8
costs 6 points, a learning rate of 0.001 costs 2. It refuses a hidden size smaller than the
number of heads (4), the way a real model would fail.
"""

import json
import random
import sys


def parse(text: str):
    """A value as Hydra's override grammar writes it (the subset this script needs)."""
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("\\'", "'")
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def main(argv: list[str]) -> None:
    args = {}
    for word in argv:
        key, sep, value = word.partition("=")
        if not sep:
            raise SystemExit(f"train.py: {word!r} is not a key=value override")
        args[key] = parse(value)
    heads = 4
    if args["hidden"] < heads:
        raise ValueError(f"hidden={args['hidden']} is smaller than heads={heads}")
    rng = random.Random(args["seed"])
    acc = 80.0 - 6.0 * (args["hidden"] < 16) - 2.0 * (args["optim.lr"] < 0.005) + rng.gauss(0.0, 0.3)
    with open(args["out"], "w", encoding="utf-8") as fh:
        json.dump({"acc": acc}, fh)


if __name__ == "__main__":
    main(sys.argv[1:])
