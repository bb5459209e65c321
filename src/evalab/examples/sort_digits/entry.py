"""The study's entry points: ``evalab.examples.sort_digits.entry:run`` trains (and saves
the model into its run folder), ``evalab.examples.sort_digits.entry:evaluate`` evaluates a
saved model with a component suppressed (the study's ``stage = "eval"`` rows)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: the metrics :func:`run` and :func:`evaluate` return, in the study's order
METRICS = ("seq_acc", "digit_acc", "xent", "ppl")
#: the metrics also returned per held-out sequence (``"per_example"``): test-set intervals
PER_EXAMPLE = ("seq_acc", "digit_acc")
#: evaluation-only settings (the study's ``[evaluation]`` table) and their defaults:
#: ``eval_heads`` heads kept in every attention layer (0: all), ``eval_positions`` false
#: removes the positional encoding
EVAL_DEFAULTS: dict[str, Any] = {"eval_heads": 0, "eval_positions": True}
CHECKPOINT = "model.pt"


def _check_seed(seed: Any) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int):
        from evalab.errors import SettingsError

        raise SettingsError(f"sort_digits: seed must be an integer, got {seed!r}")


def run(config: Mapping[str, Any], seed: int, out_dir: str | None = None) -> dict[str, Any]:
    """Train one model with ``config`` (keys of :class:`~.train.SortConfig`) and ``seed``;
    return its held-out metrics: ``seq_acc`` and ``digit_acc`` in percent, ``xent`` in nats
    per token, ``ppl``, and ``per_example``: seq_acc and digit_acc of each held-out sequence. With ``out_dir`` (the run folder the ablation engine passes) the
    trained weights and configuration are saved there as ``model.pt`` for :func:`evaluate`.
    Unknown or invalid settings raise :class:`~evalab.errors.SettingsError`.

    >>> m = run({"steps": 2, "warmup": 1, "eval_size": 8, "d_model": 8, "heads": 2, "d_ff": 8}, seed=0)
    >>> sorted(m)
    ['digit_acc', 'per_example', 'ppl', 'seq_acc', 'xent']
    >>> len(m["per_example"]["seq_acc"])
    8
    """
    import dataclasses

    import torch

    from .train import SortConfig, run_one

    _check_seed(seed)
    cfg = SortConfig.from_dict(config)
    metrics, result = run_one(cfg, seed)
    if out_dir is not None:
        path = Path(out_dir) / CHECKPOINT
        tmp = path.with_suffix(".tmp")
        torch.save(
            {"config": dataclasses.asdict(cfg), "seed": seed, "state": result.model.state_dict()},
            tmp,
        )
        tmp.replace(path)  # a killed run leaves no half-written checkpoint under the real name
    return _returned(metrics)


def _returned(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """What a run returns: the study's metrics and their per-sequence values."""
    return {
        **{name: metrics[name] for name in METRICS},
        "per_example": {name: metrics["per_example"][name] for name in PER_EXAMPLE},
    }


def evaluate(config: Mapping[str, Any], seed: int, checkpoint_dir: str) -> dict[str, Any]:
    """Evaluate the model that :func:`run` saved in ``checkpoint_dir`` on the held-out set,
    with the evaluation-only settings of ``config`` (:data:`EVAL_DEFAULTS`) applied; the
    other keys must be the training configuration the checkpoint was trained with.
    Returns the same metrics as :func:`run`; never trains.
    """
    import dataclasses

    import torch

    from evalab.errors import SettingsError

    from .suppress import keep_heads, without_positions
    from .train import SortConfig, build_model, isolated_torch
    from .train import evaluate as held_out_metrics

    _check_seed(seed)
    settings = {**EVAL_DEFAULTS, **{k: v for k, v in config.items() if k in EVAL_DEFAULTS}}
    cfg = SortConfig.from_dict({k: v for k, v in config.items() if k not in EVAL_DEFAULTS})
    heads, positions = settings["eval_heads"], settings["eval_positions"]
    if isinstance(heads, bool) or not isinstance(heads, int) or not 0 <= heads <= cfg.heads:
        raise SettingsError(
            f"sort_digits: eval_heads must be an integer in [0, heads={cfg.heads}] (0: all), got {heads!r}"
        )
    if not isinstance(positions, bool):
        raise SettingsError(f"sort_digits: eval_positions must be true or false, got {positions!r}")
    path = Path(checkpoint_dir) / CHECKPOINT
    if not path.is_file():
        raise SettingsError(
            f"sort_digits: no trained model at {path}; the training run must save one (run(..., out_dir))"
        )
    saved = torch.load(path, weights_only=True)
    if saved["config"] != dataclasses.asdict(cfg) or saved["seed"] != seed:
        raise SettingsError(
            f"sort_digits: {path} was trained with another configuration or seed than this evaluation's"
        )
    with isolated_torch(seed):
        model = build_model(cfg)
        model.load_state_dict(saved["state"])
        with keep_heads(model, heads or cfg.heads):
            if positions:
                metrics = held_out_metrics(model, cfg)
            else:
                with without_positions(model):
                    metrics = held_out_metrics(model, cfg)
    return _returned(metrics)
