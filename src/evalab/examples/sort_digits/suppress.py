"""Suppressing a component of a *trained* sorter at evaluation, without retraining.

- :func:`keep_heads` zeroes the outputs of all but the first ``n`` heads in every attention
  layer (encoder self-attention, decoder self- and cross-attention), as head masking does
  (Michel et al., 2019, "Are Sixteen Heads Really Better than One?"): the concatenated head
  outputs enter the output projection with the masked heads' slices set to zero, and the
  kept heads are not rescaled.
- :func:`without_positions` removes the positional encoding from the embeddings.

Both are context managers that undo themselves, so one loaded model can be evaluated with
and without the suppression.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .model import MultiHeadAttention


@contextmanager
def keep_heads(model: Any, n: int) -> Iterator[None]:
    """Within the block, only heads ``0..n-1`` of every attention layer contribute."""
    hooks = []
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            if not 1 <= n <= module.heads:
                raise ValueError(f"cannot keep {n} of {module.heads} heads")
            cut = n * module.d_k

            def mask(_layer: Any, inputs: tuple[Any, ...], cut: int = cut) -> tuple[Any, ...]:
                x = inputs[0].clone()
                x[..., cut:] = 0.0  # heads are contiguous slices of d_k features (see _split)
                return (x,)

            hooks.append(module.out.register_forward_pre_hook(mask))
    try:
        yield
    finally:
        for h in hooks:
            h.remove()


@contextmanager
def without_positions(model: Any) -> Iterator[None]:
    """Within the block, the embeddings carry no positional encoding."""
    saved = model.pos
    model.pos = None  # the buffer (sinusoids) or parameter (learned) is put back afterwards
    try:
        yield
    finally:
        model.pos = saved
