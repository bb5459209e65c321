"""Training and evaluation for the sorting study: fresh sequences each step, a fixed held-out set.

Protocol (what the study's numbers mean):

- **Task.** The input is ``seq_len`` random digits ``0..vocab-1``; the target is the same
  digits sorted ascending. Each training step draws a *new* batch, so the model never sees
  an example twice: there is nothing to memorise, which is why dropout cannot help here
  (seed 000, part 4) while it is the strongest row of the paper's Table 3.
- **Training.** Teacher forcing, cross-entropy with label smoothing ``label_smoothing``,
  Adam (beta 0.9/0.98, eps 1e-9, as in section 5.3) with a linear warm-up to ``lr`` over
  ``warmup`` steps, then a cosine decay to zero at ``steps`` (a short run needs the decay
  to settle; the paper's inverse-square-root schedule is made for 100k steps).
- **Held-out set.** ``eval_size`` sequences drawn once from a generator seeded with
  ``eval_seed``, the same for every run and every seed of a study.
- **Metrics.** ``seq_acc``: percent of held-out sequences whose greedy decoding is exactly
  the sorted input; ``digit_acc``: percent of positions right in those decodings;
  ``xent``: mean token cross-entropy (nats) of the teacher-forced held-out targets, without
  smoothing, through :func:`evalab.nll.cross_entropy`; ``ppl = exp(xent)`` (:func:`evalab.nll.perplexity`).
  seq_acc and digit_acc are also given per held-out sequence (``per_example``), so the
  ablation report has test-set intervals for them beside the seed intervals.
- **Determinism.** Model initialisation and dropout use ``torch.manual_seed(seed)`` (inside
  a forked RNG, so the caller's global state is untouched), the training data a separate
  ``torch.Generator`` seeded from ``seed``; the run uses one thread and deterministic
  algorithms, so the same seed gives the same numbers on the same machine.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from evalab.errors import SettingsError

from .model import POS_ENCODINGS


@dataclass(frozen=True)
class SortConfig:
    """Every setting of one run. ``SortConfig.from_dict`` validates a study's configuration."""

    seq_len: int = 10
    vocab: int = 10
    d_model: int = 32
    heads: int = 4
    layers: int = 2
    d_ff: int = 64
    dropout: float = 0.1
    label_smoothing: float = 0.1
    pos_encoding: str = "sin"
    steps: int = 400
    batch_size: int = 64
    lr: float = 3e-3
    warmup: int = 40
    eval_size: int = 1000
    eval_seed: int = 20170612  # arXiv v1 date of "Attention Is All You Need"

    @classmethod
    def from_dict(cls, config: Mapping[str, Any]) -> SortConfig:
        """Build and validate a configuration; unknown keys and bad values raise SettingsError.

        >>> SortConfig.from_dict({"heads": 8}).heads
        8
        >>> SortConfig.from_dict({"head": 8})
        Traceback (most recent call last):
        ...
        evalab.errors.SettingsError: sort_digits: unknown setting 'head'; known settings: seq_len, vocab, d_model, heads, layers, d_ff, dropout, label_smoothing, pos_encoding, steps, batch_size, lr, warmup, eval_size, eval_seed
        """
        if not isinstance(config, Mapping):
            raise SettingsError(
                f"sort_digits: configuration must be a table, got {type(config).__name__}"
            )
        fields = {f.name: f for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for key, value in config.items():
            if key not in fields:
                raise SettingsError(
                    f"sort_digits: unknown setting {key!r}; known settings: {', '.join(fields)}"
                )
            want = fields[key].type
            if want == "int":
                ok = isinstance(value, int) and not isinstance(value, bool)
            elif want == "float":
                ok = isinstance(value, int | float) and not isinstance(value, bool)
                value = float(value) if ok else value
            else:
                ok = isinstance(value, str)
            if not ok:
                raise SettingsError(f"sort_digits: setting {key!r} must be {want}, got {value!r}")
            values[key] = value
        cfg = cls(**values)
        cfg.check()
        return cfg

    def check(self) -> None:
        """Raise SettingsError for values the model or training cannot use."""
        positive = (
            "seq_len",
            "d_model",
            "heads",
            "layers",
            "d_ff",
            "steps",
            "batch_size",
            "eval_size",
        )
        for name in positive:
            if getattr(self, name) < 1:
                raise SettingsError(f"sort_digits: {name} must be >= 1, got {getattr(self, name)}")
        if self.vocab < 2:
            raise SettingsError(f"sort_digits: vocab must be >= 2, got {self.vocab}")
        if self.d_model % self.heads:
            raise SettingsError(
                f"sort_digits: d_model={self.d_model} must be divisible by heads={self.heads}"
            )
        if self.pos_encoding == "sin" and self.d_model % 2:
            raise SettingsError(f"sort_digits: sinusoids need an even d_model, got {self.d_model}")
        if self.pos_encoding not in POS_ENCODINGS:
            raise SettingsError(
                f"sort_digits: pos_encoding={self.pos_encoding!r}; expected one of "
                f"{', '.join(POS_ENCODINGS)}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise SettingsError(f"sort_digits: dropout must be in [0, 1), got {self.dropout}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise SettingsError(
                f"sort_digits: label_smoothing must be in [0, 1), got {self.label_smoothing}"
            )
        if not self.lr > 0.0:
            raise SettingsError(f"sort_digits: lr must be > 0, got {self.lr}")
        if not 0 <= self.warmup <= self.steps:
            raise SettingsError(
                f"sort_digits: warmup must be in [0, steps={self.steps}], got {self.warmup}"
            )


@dataclass
class TrainResult:
    """A trained model, its configuration, and the training loss at every step."""

    model: Any
    config: SortConfig
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0


@contextmanager
def isolated_torch(seed: int) -> Iterator[None]:
    """Seed torch for one run without leaking state: forked RNG, one thread, deterministic ops.

    One thread keeps parallel runs of a study from fighting over cores and makes the
    floating-point reduction order (hence the numbers) independent of the machine's load.
    """
    import torch

    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        torch.set_num_threads(1)
        torch.use_deterministic_algorithms(True)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(deterministic)
            torch.set_num_threads(threads)


def make_batch(generator: Any, size: int, config: SortConfig) -> tuple[Any, Any]:
    """``size`` random digit sequences and their sorted targets, drawn from ``generator``."""
    import torch

    src = torch.randint(0, config.vocab, (size, config.seq_len), generator=generator)
    return src, src.sort(dim=1).values


def held_out(config: SortConfig) -> tuple[Any, Any]:
    """The fixed held-out set: the same for every seed (its own generator, ``eval_seed``)."""
    import torch

    gen = torch.Generator().manual_seed(config.eval_seed)
    return make_batch(gen, config.eval_size, config)


def lr_at(step: int, config: SortConfig) -> float:
    """Linear warm-up to ``lr``, then cosine decay to 0 at ``steps`` (``step`` counts from 0).

    >>> cfg = SortConfig(steps=100, warmup=10, lr=1.0)
    >>> round(lr_at(4, cfg), 2), lr_at(9, cfg), round(lr_at(54, cfg), 4), round(lr_at(99, cfg), 4)
    (0.5, 1.0, 0.5, 0.0)
    """
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    span = max(config.steps - config.warmup, 1)
    progress = (step + 1 - config.warmup) / span
    return config.lr * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def build_model(config: SortConfig) -> Any:
    """The :class:`~.model.Sorter` a configuration describes (uses torch's global RNG)."""
    from .model import Sorter

    return Sorter(
        vocab=config.vocab,
        max_len=config.seq_len,
        d_model=config.d_model,
        heads=config.heads,
        layers=config.layers,
        d_ff=config.d_ff,
        dropout=config.dropout,
        pos_encoding=config.pos_encoding,
    )


def train(config: SortConfig, seed: int, *, steps: int | None = None) -> TrainResult:
    """Train a fresh model for ``steps`` (default ``config.steps``) steps; call inside
    :func:`isolated_torch` for reproducible numbers (as :func:`run_one` does)."""
    import torch
    import torch.nn.functional as F

    total = config.steps if steps is None else steps
    model = build_model(config)
    # The data stream has its own generator, so it is identical for every variant of a seed:
    # rows differ in the model, never in the examples they saw.
    data = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr, betas=(0.9, 0.98), eps=1e-9)
    model.train()
    losses: list[float] = []
    start = time.perf_counter()
    for step in range(total):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, config)
        src, tgt = make_batch(data, config.batch_size, config)
        logits = model(src, model.shift_right(tgt))
        loss = F.cross_entropy(
            logits.reshape(-1, config.vocab),
            tgt.reshape(-1),
            label_smoothing=config.label_smoothing,
        )
        opt.zero_grad(set_to_none=True)
        torch.autograd.backward(loss)
        opt.step()
        losses.append(loss.item())
    return TrainResult(model, config, losses, time.perf_counter() - start)


def evaluate(model: Any, config: SortConfig) -> dict[str, Any]:
    """Held-out metrics of ``model``: seq_acc and digit_acc (percent), xent (nats), ppl; and
    ``per_example``: seq_acc and digit_acc of each held-out sequence (percent)."""
    import torch

    from evalab.nll import cross_entropy, perplexity

    src, tgt = held_out(config)
    model.eval()
    with torch.no_grad():
        logits = model(src, model.shift_right(tgt))
        pred = model.greedy(src, config.seq_len)
    # Unsmoothed cross-entropy of the true next digit, averaged over all held-out tokens
    # (every sequence has the same length, so nothing is masked), computed in float64 by
    # evalab's loss layer from the model's logits.
    logits_np, labels_np = logits.double().numpy(), tgt.numpy()
    right = pred == tgt
    # per held-out sequence, in its fixed order (the same in every run of a study), so the
    # ablation report can resample the test set: the mean of each list is the metric
    seq_right = 100.0 * right.all(dim=1).double()
    digits_right = 100.0 * right.double().mean(dim=1)
    return {
        "seq_acc": float(seq_right.mean()),
        "digit_acc": float(digits_right.mean()),
        "xent": float(cross_entropy(logits_np, labels_np)),
        "ppl": float(perplexity(logits_np, labels_np)),
        "per_example": {"seq_acc": seq_right.tolist(), "digit_acc": digits_right.tolist()},
    }


def run_one(config: SortConfig, seed: int) -> tuple[dict[str, Any], TrainResult]:
    """Train and evaluate one (configuration, seed) reproducibly; metrics and the result."""
    with isolated_torch(seed):
        result = train(config, seed)
        metrics = evaluate(result.model, config)
    metrics["train_seconds"] = result.seconds
    return metrics, result
