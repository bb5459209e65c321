"""Seed 004's redundant components: either A or B lifts accuracy from 70 to 80."""


def run(config: dict, seed: int) -> dict:
    return {"acc": 70.0 + 10.0 * (config["A"] or config["B"])}
