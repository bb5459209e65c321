"""A tiny PyTorch study with an evaluation stage (docs/ablation-eval-stage.md).

Task: label a point (x0, x1, x2) by the sign of x0 + x1, where x2 is a noisy copy of x1
(a redundant feature, as in seed 004). The model is a small MLP.

- ``run(config, seed, out_dir)`` trains it (fresh batches from the seed; ``drop_feature``
  zeroes one input feature in training and evaluation: the retrained ablation), saves the
  weights to ``out_dir/model.pt`` and returns held-out ``acc`` (%) and ``loss``.
- ``evaluate(config, seed, checkpoint_dir)`` loads those weights and evaluates them with
  ``zero_feature`` zeroed at evaluation only (the evaluation-time ablation); it never trains.
"""

import os

import torch
from torch import nn

HELD_OUT_SEED = 12345


def data(generator, n):
    x = torch.randn(n, 3, generator=generator)
    x[:, 2] = x[:, 1] + 0.1 * torch.randn(n, generator=generator)
    return x, (x[:, 0] + x[:, 1] > 0).float()


def model():
    return nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))


def zeroed(x, *features):
    """``x`` with the given input features set to 0 (-1: none)."""
    x = x.clone()
    for f in features:
        if f >= 0:
            x[:, f] = 0.0
    return x


def held_out_metrics(net, *features):
    x, y = data(torch.Generator().manual_seed(HELD_OUT_SEED), 2000)
    with torch.no_grad():
        logits = net(zeroed(x, *features)).squeeze(1)
    acc = 100.0 * float(((logits > 0).float() == y).float().mean())
    return {"acc": acc, "loss": float(nn.functional.binary_cross_entropy_with_logits(logits, y))}


def run(config, seed, out_dir):
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(seed)
    net = model()
    opt = torch.optim.Adam(net.parameters(), lr=config["lr"])
    for _ in range(config["steps"]):
        x, y = data(gen, 64)
        loss = nn.functional.binary_cross_entropy_with_logits(net(zeroed(x, config["drop_feature"])).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save(net.state_dict(), os.path.join(out_dir, "model.pt"))
    return held_out_metrics(net, config["drop_feature"])


def evaluate(config, seed, checkpoint_dir):
    torch.set_num_threads(1)
    net = model()
    net.load_state_dict(torch.load(os.path.join(checkpoint_dir, "model.pt"), weights_only=True))
    # a feature removed in training stays removed; zero_feature is removed now, at evaluation
    return held_out_metrics(net, config["drop_feature"], config["zero_feature"])
