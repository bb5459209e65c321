"""The study's entry point: ``evalab.examples.sort_digits.entry:run``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: the metrics :func:`run` returns, in the study's order
METRICS = ("seq_acc", "digit_acc", "xent", "ppl")


def run(config: Mapping[str, Any], seed: int) -> dict[str, float]:
    """Train one model with ``config`` (keys of :class:`~.train.SortConfig`) and ``seed``;
    return its held-out metrics: ``seq_acc`` and ``digit_acc`` in percent, ``xent`` in nats
    per token, ``ppl``. Unknown or invalid settings raise :class:`~evalab.errors.SettingsError`.

    >>> m = run({"steps": 2, "warmup": 1, "eval_size": 8, "d_model": 8, "heads": 2, "d_ff": 8}, seed=0)
    >>> sorted(m)
    ['digit_acc', 'ppl', 'seq_acc', 'xent']
    """
    from .train import SortConfig, run_one

    if isinstance(seed, bool) or not isinstance(seed, int):
        from evalab.errors import SettingsError

        raise SettingsError(f"sort_digits: seed must be an integer, got {seed!r}")
    metrics, _ = run_one(SortConfig.from_dict(config), seed)
    return {name: metrics[name] for name in METRICS}
