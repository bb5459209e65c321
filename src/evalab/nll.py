"""Cross-entropy, perplexity and bits per token from logits: numpy arrays or torch tensors.

Public API (stable: the training code of the built-in study and the ``ppl`` command use it)

=========================  =============================================================
``log_softmax(x)``         stable log-probabilities straight from logits (never through
                           probabilities): ``x - (max + log(sum(exp(x - max))))``
``token_loss(x, y)``       per-position negative log-likelihood ``-log_softmax(x)[y]``,
                           0.0 at masked positions; shape of ``y``
``summed_loss(x, y)``      ``(total NLL in nats, number of kept tokens)``
``cross_entropy(x, y)``    mean NLL over kept tokens (nats per token)
``perplexity(x, y)``       ``exp(cross_entropy)`` (exp of the mean, not the mean of exps)
``shift_pairs(x, ids)``    causal-LM pairs ``(x[..., :-1, :], ids[..., 1:])`` as views
``kept_mask(y)``           which positions count (not ``ignore_index``, not ``pad_id``)
``nats_to_bits(v)``        ``v / ln 2``; ``bits_to_nats(v)`` is ``v * ln 2``
``bits_per_byte(nll, b)``  total NLL / (bytes * ln 2) (lm-evaluation-harness)
``byte_perplexity``,       ``exp(nll / bytes)``, ``exp(nll / words)`` with the harness'
``word_perplexity``        byte and word counts: ``count_bytes``, ``count_words``
=========================  =============================================================

Shapes: logits ``[..., V]`` (batch x sequence x vocabulary, or any leading shape), labels
``[...]`` with the same leading shape and an integer dtype. Masking: a position whose label
equals ``ignore_index`` (default ``-100``, PyTorch's convention) or ``pad_id`` (if given)
is removed from the numerator *and* the denominator of every mean.

Where these numbers silently go wrong (seed 003) and what this module does about it:

1. *When the log is taken*: log-probabilities come from logits by ``log-sum-exp`` with the
   row maximum subtracted, so ``log_softmax([0, -800])`` is ``[0, -800]``, not ``[0, -inf]``.
2. *Whether labels are shifted*: a causal LM's logits at position t predict token t+1;
   :func:`shift_pairs` makes the pairs explicitly (no function shifts implicitly).
3. *Whether padding is excluded*: masked positions leave the denominator too.
4. *Which log base*: everything is in nats; :func:`nats_to_bits` converts.

Empty input: :func:`cross_entropy` and :func:`perplexity` raise :class:`InputError` when no
token is left after masking. Returning 0.0 (seed 003's toy convention) would report a
perfect perplexity of 1.0 for an empty or fully padded batch, which is exactly the kind of
flattering silent error this module exists to prevent. :func:`summed_loss` returns
``(0.0, 0)`` for empty input, so additive statistics stay well defined.

Bad input raises :class:`InputError`: NaN or +-inf in the logits (the message gives the
first position), shape mismatches, non-integer labels and labels outside ``[0, V)`` at
kept positions.

Backends: numpy inputs (and lists) are computed in float64 and return numpy arrays or
Python floats. torch tensors are computed with torch ops on their own device, without a
copy to numpy, keep autograd (so the loss can be trained on), and return tensors; half
precision is computed in float32. torch is imported only when a tensor is passed.

Memory: the work runs over blocks of about :data:`CHUNK_ELEMENTS` logits, so the extra
memory beyond the input and the output stays flat as the input grows.

>>> import numpy as np
>>> logits = np.zeros((2, 5, 7))                 # uniform over a vocabulary of 7
>>> labels = np.array([[1, 2, 3, 4, 5], [6, 0, -100, -100, -100]])
>>> round(perplexity(logits, labels), 6)         # uniform -> perplexity = vocabulary size
7.0
>>> summed_loss(logits, labels)[1]               # the three -100 positions do not count
7
>>> log_softmax(np.array([0.0, -800.0])).tolist()
[0.0, -800.0]
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

from evalab.errors import InputError

__all__ = [
    "CHUNK_ELEMENTS",
    "IGNORE_INDEX",
    "LN2",
    "bits_per_byte",
    "bits_to_nats",
    "byte_perplexity",
    "count_bytes",
    "count_words",
    "cross_entropy",
    "kept_mask",
    "log_softmax",
    "nats_to_bits",
    "perplexity",
    "shift_pairs",
    "summed_loss",
    "token_loss",
    "word_perplexity",
]

#: label value that marks a position to skip (PyTorch's and Hugging Face's convention)
IGNORE_INDEX = -100
#: natural log of 2: bits = nats / LN2
LN2 = math.log(2.0)
#: logits processed per block; the temporaries of one block bound the extra memory
CHUNK_ELEMENTS = 1 << 20
#: torch blocks are larger: each block costs a few kernel launches on an accelerator
TORCH_CHUNK_ELEMENTS = 1 << 24


# -- backend dispatch -------------------------------------------------------------------------
def _is_torch(x: Any) -> bool:
    # torch is never imported here: a tensor can only exist if the caller imported torch.
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _as_logits(logits: Any) -> Any:
    if _is_torch(logits):
        import torch

        if not torch.is_floating_point(logits):
            raise InputError(f"logits must be floating point, got a tensor of {logits.dtype}")
        if logits.ndim == 0:
            raise InputError("logits must have a vocabulary axis: shape [..., V], got a scalar")
        if logits.dtype in (torch.float16, torch.bfloat16):
            logits = logits.float()
        return logits
    arr = np.asarray(logits)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    ):
        raise InputError(f"logits must be a numeric array of shape [..., V], got dtype {arr.dtype}")
    if arr.ndim == 0:
        raise InputError("logits must have a vocabulary axis: shape [..., V], got a scalar")
    return arr


def _as_labels(labels: Any, logits: Any) -> Any:
    if _is_torch(logits):
        import torch

        lab = labels if _is_torch(labels) else torch.as_tensor(np.asarray(labels))
        if torch.is_floating_point(lab) or lab.dtype == torch.bool or lab.is_complex():
            raise InputError(f"labels must be integer token ids, got {lab.dtype}")
        return lab.to(device=logits.device)
    if _is_torch(labels):
        labels = labels.detach().cpu().numpy()
    lab = np.asarray(labels)
    if lab.size and not np.issubdtype(lab.dtype, np.integer):
        raise InputError(f"labels must be integer token ids, got dtype {lab.dtype}")
    return lab.astype(np.int64, copy=False)


def _check_shapes(logits: Any, labels: Any) -> None:
    lead = tuple(logits.shape[:-1])
    if tuple(labels.shape) != lead:
        raise InputError(
            f"labels have shape {tuple(labels.shape)} but logits have shape "
            f"{tuple(logits.shape)}; labels must have the logits' shape without the last "
            f"(vocabulary) axis, i.e. {lead}"
        )
    if logits.shape[-1] == 0:
        raise InputError("logits have an empty vocabulary axis (V = 0)")


# -- masking ----------------------------------------------------------------------------------
def kept_mask(
    labels: Any, *, ignore_index: int | None = IGNORE_INDEX, pad_id: int | None = None
) -> Any:
    """Boolean mask of the positions that count: label is not ``ignore_index`` nor ``pad_id``.

    >>> kept_mask(np.array([5, 0, -100]), pad_id=0).tolist()
    [True, False, False]
    """
    if _is_torch(labels):
        import torch

        keep: Any = torch.ones_like(labels, dtype=torch.bool)
    else:
        labels = np.asarray(labels)
        keep = np.ones(labels.shape, dtype=bool)
    if ignore_index is not None:
        keep &= labels != ignore_index
    if pad_id is not None:
        keep &= labels != pad_id
    return keep


# -- block iteration --------------------------------------------------------------------------
def _blocks(logits: Any, labels: Any) -> Iterator[tuple[Any, Any, Any]]:
    """Yield ``(index, rows[n, V], labels[n])`` blocks of at most ~CHUNK_ELEMENTS logits.

    ``index`` is a tuple of slices/ints locating the block in the leading shape. Views only:
    a non-contiguous input (e.g. the logits of :func:`shift_pairs`) is walked along its
    outer axes instead of being reshaped, which would copy it whole.
    """
    vocab = logits.shape[-1]
    lead = tuple(logits.shape[:-1])
    step = _rows_per_block(logits)
    if len(lead) == 0:
        yield (), logits.reshape(1, vocab), labels.reshape(1)
        return
    outer = lead[:-1]
    inner = lead[-1]
    for idx in np.ndindex(*outer):
        row_logits = logits[idx]
        row_labels = labels[idx]
        for start in range(0, inner, step):
            stop = min(inner, start + step)
            yield (*idx, slice(start, stop)), row_logits[start:stop], row_labels[start:stop]


def _rows_per_block(logits: Any) -> int:
    budget = TORCH_CHUNK_ELEMENTS if _is_torch(logits) else CHUNK_ELEMENTS
    rows: int = max(1, budget // logits.shape[-1])
    return rows


def _contiguous_2d(logits: Any, labels: Any) -> tuple[Any, Any] | None:
    """``(logits[N, V], labels[N])`` as views when the input is contiguous, else None."""
    vocab = logits.shape[-1]
    if _is_torch(logits):
        if not logits.is_contiguous():
            return None
        return logits.view(-1, vocab), labels.reshape(-1)
    if not logits.flags.c_contiguous:
        return None
    return logits.reshape(-1, vocab), labels.reshape(-1)


def _iter_blocks(logits: Any, labels: Any) -> Iterator[tuple[Any, Any, Any]]:
    """Blocks over the flat view when possible (few large blocks), else over outer axes."""
    flat = _contiguous_2d(logits, labels)
    if flat is None or logits.ndim <= 2:
        yield from _blocks(logits, labels)
        return
    rows, labs = flat
    step = _rows_per_block(logits)
    lead = tuple(logits.shape[:-1])
    for start in range(0, rows.shape[0], step):
        stop = min(rows.shape[0], start + step)
        yield ("flat", lead, start, stop), rows[start:stop], labs[start:stop]


def _position(lead: tuple[int, ...], index: Any, row: int) -> tuple[int, ...]:
    if index and index[0] == "flat":
        return tuple(int(i) for i in np.unravel_index(index[2] + row, index[1]))
    out = []
    for part in index:
        if isinstance(part, slice):
            out.append(part.start + row)
        else:
            out.append(int(part))
    return tuple(out) if lead else ()


# -- block kernels ----------------------------------------------------------------------------
def _np_block_lse(rows: np.ndarray, lead: tuple[int, ...], index: Any) -> np.ndarray:
    """log-sum-exp of each row in float64; raises on NaN/inf in the block."""
    hi = rows.max(axis=1)
    lo = rows.min(axis=1)
    # NaN propagates into both; +inf shows in the max, -inf in the min: two reductions
    # find every non-finite logit without a [n, V] boolean temporary.
    bad = ~(np.isfinite(hi) & np.isfinite(lo))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        where = _position(lead, index, row)
        raise InputError(
            f"logits contain NaN or inf at position {where}; logits must be finite "
            "(use a large negative number, not -inf, to rule a token out)"
        )
    m = hi.astype(np.float64)
    z = rows.astype(np.float64)  # one float64 block: shifted and exponentiated in place
    z -= m[:, None]
    np.exp(z, out=z)
    lse: np.ndarray = m + np.log(z.sum(axis=1))
    return lse


def _torch_block_lse(rows: Any, lead: tuple[int, ...], index: Any) -> Any:
    import torch

    hi = rows.amax(dim=1)
    lo = rows.amin(dim=1)
    bad = ~(torch.isfinite(hi) & torch.isfinite(lo))
    if bool(bad.any()):
        row = int(torch.nonzero(bad)[0, 0])
        where = _position(lead, index, row)
        raise InputError(
            f"logits contain NaN or inf at position {where}; logits must be finite "
            "(use a large negative number, not -inf, to rule a token out)"
        )
    # the shift is a constant for the gradient: detaching it keeps autograd exact and cheap
    m = hi.detach()
    return m + torch.log(torch.exp(rows - m[:, None]).sum(dim=1))


def _check_label_range(labs: Any, keep: Any, vocab: int, lead: tuple[int, ...], index: Any) -> None:
    if _is_torch(labs):
        import torch

        bad = keep & ((labs < 0) | (labs >= vocab))
        if bool(bad.any()):
            row = int(torch.nonzero(bad)[0, 0])
            value = int(labs[row])
        else:
            return
    else:
        bad = keep & ((labs < 0) | (labs >= vocab))
        if not bad.any():
            return
        row = int(np.flatnonzero(bad)[0])
        value = int(labs[row])
    where = _position(lead, index, row)
    raise InputError(
        f"label {value} at position {where} is outside the vocabulary [0, {vocab}); "
        f"mask such positions with ignore_index (default {IGNORE_INDEX}) or pad_id"
    )


# -- public functions -------------------------------------------------------------------------
def log_softmax(logits: Any, axis: int = -1) -> Any:
    """Log-probabilities from logits, computed stably (never through probabilities).

    ``x_i - (max + log(sum_j exp(x_j - max)))`` along ``axis``. Finite for any finite logits,
    however far apart; NaN/inf logits raise :class:`InputError`. numpy in, numpy out
    (float64 work, input float dtype kept, integers become float64); torch in, torch out.

    >>> log_softmax(np.array([0.0, -800.0])).tolist()    # naive exp-then-log gives -inf
    [0.0, -800.0]
    >>> np.allclose(np.exp(log_softmax(np.array([1.0, 2.0, 3.0]))).sum(), 1.0)
    True
    """
    x = _as_logits(logits)
    if axis not in (-1, x.ndim - 1):
        moved = np.moveaxis(x, axis, -1) if not _is_torch(x) else x.movedim(axis, -1)
        out = log_softmax(moved, -1)
        return np.moveaxis(out, -1, axis) if not _is_torch(out) else out.movedim(-1, axis)
    lead = tuple(x.shape[:-1])
    if _is_torch(x):
        import torch

        dummy: Any = torch.zeros(lead, dtype=torch.long, device=x.device)
        if x.requires_grad:
            # autograd needs a functional graph: blocks come in row-major order of the
            # leading shape, so concatenating them restores the layout
            parts = [
                rows - _torch_block_lse(rows, lead, index)[:, None]
                for index, rows, _ in _iter_blocks(x, dummy)
            ]
            return torch.cat(parts, dim=0).reshape(x.shape)
        out = torch.empty_like(x)
        for index, rows, _ in _iter_blocks(x, dummy):
            _store(out, index, rows - _torch_block_lse(rows, lead, index)[:, None], x.shape[-1:])
        return out
    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) and x.dtype.itemsize >= 4 else np.float64
    out = np.empty(x.shape, dtype=dtype)
    dummy = np.zeros(lead, dtype=np.int64)
    for index, rows, _ in _iter_blocks(x, dummy):
        lse = _np_block_lse(rows, lead, index)
        _store(out, index, rows.astype(np.float64) - lse[:, None], x.shape[-1:])
    return out


def _store(out: Any, index: Any, value: Any, row: tuple[int, ...] = ()) -> None:
    """``value`` (one block of :func:`_iter_blocks`) written at ``index`` of ``out``, whose
    cells are arrays of shape ``row`` (``()``: numbers)."""
    if index and index[0] == "flat":
        out.reshape(-1, *row)[index[2] : index[3]] = value
    elif index == ():
        out[...] = value.reshape(out.shape)
    else:
        out[index] = value


def token_loss(
    logits: Any,
    labels: Any,
    *,
    ignore_index: int | None = IGNORE_INDEX,
    pad_id: int | None = None,
) -> Any:
    """Negative log-likelihood of each label under its logits row, in nats.

    Shape of ``labels``; masked positions (``ignore_index`` / ``pad_id``) hold 0.0. No shift
    is applied: for a causal LM pass the pairs of :func:`shift_pairs`.

    >>> float(token_loss(np.array([0.0, 0.0]), 1))        # -log(1/2)
    0.6931471805599453
    >>> token_loss(np.zeros((1, 3, 4)), np.array([[0, -100, 3]])).round(4).tolist()
    [[1.3863, 0.0, 1.3863]]
    """
    x = _as_logits(logits)
    y = _as_labels(labels, x)
    _check_shapes(x, y)
    lead = tuple(x.shape[:-1])
    vocab = x.shape[-1]
    if _is_torch(x):
        import torch

        parts = []
        for index, rows, labs in _iter_blocks(x, y):
            keep = kept_mask(labs, ignore_index=ignore_index, pad_id=pad_id)
            _check_label_range(labs, keep, vocab, lead, index)
            lse = _torch_block_lse(rows, lead, index)
            safe: Any = torch.where(keep, labs, torch.zeros_like(labs))
            picked = rows.gather(1, safe[:, None])[:, 0]
            parts.append(torch.where(keep, lse - picked, torch.zeros_like(lse)))
        if not parts:
            return torch.zeros(lead, dtype=x.dtype, device=x.device)
        # blocks come in row-major order of the leading shape, so concatenation restores it
        return torch.cat(parts).reshape(lead)
    out = np.zeros(lead, dtype=np.float64)
    for index, rows, labs in _iter_blocks(x, y):
        keep = kept_mask(labs, ignore_index=ignore_index, pad_id=pad_id)
        _check_label_range(labs, keep, vocab, lead, index)
        lse = _np_block_lse(rows, lead, index)
        safe = np.where(keep, labs, 0)
        picked = rows[np.arange(rows.shape[0]), safe].astype(np.float64)
        _store(out, index, np.where(keep, lse - picked, 0.0))
    return out


def summed_loss(
    logits: Any,
    labels: Any,
    *,
    ignore_index: int | None = IGNORE_INDEX,
    pad_id: int | None = None,
) -> tuple[Any, int]:
    """``(total NLL in nats, number of kept tokens)``: the additive statistics of a loss.

    numpy: ``(float, int)``; torch: ``(0-d tensor, int)``. Empty input gives ``(0.0, 0)``.

    >>> summed_loss(np.zeros((3, 2)), np.array([0, 1, -100]))
    (1.3862943611198906, 2)
    """
    losses = token_loss(logits, labels, ignore_index=ignore_index, pad_id=pad_id)
    y = _as_labels(labels, _as_logits(logits))
    count = int(kept_mask(y, ignore_index=ignore_index, pad_id=pad_id).sum())
    if _is_torch(losses):
        return losses.sum(), count
    return float(np.sum(losses, dtype=np.float64)), count


def cross_entropy(
    logits: Any,
    labels: Any,
    *,
    ignore_index: int | None = IGNORE_INDEX,
    pad_id: int | None = None,
) -> Any:
    """Mean negative log-likelihood per kept token, in nats (a mean, not a sum).

    Masked positions leave both the numerator and the denominator. Raises
    :class:`InputError` when no token is kept (see the module docstring for why not 0.0).
    Equal to ``torch.nn.functional.cross_entropy(logits.reshape(-1, V), labels.reshape(-1),
    ignore_index=ignore_index)``.

    >>> round(cross_entropy(np.log(np.array([[0.5, 0.5], [0.25, 0.75]])), np.array([0, 0])), 6)
    1.039721
    """
    total, count = summed_loss(logits, labels, ignore_index=ignore_index, pad_id=pad_id)
    if count == 0:
        raise InputError(
            "cross-entropy of zero tokens is undefined: every label is masked "
            f"(ignore_index={ignore_index}, pad_id={pad_id}) or the input is empty"
        )
    return total / count


def perplexity(
    logits: Any,
    labels: Any,
    *,
    ignore_index: int | None = IGNORE_INDEX,
    pad_id: int | None = None,
) -> Any:
    """``exp(cross_entropy)``: the exponential of the mean loss (not a mean of exps).

    >>> round(perplexity(np.zeros((4, 12)), np.array([0, 3, 7, 11])), 9)
    12.0
    """
    ce = cross_entropy(logits, labels, ignore_index=ignore_index, pad_id=pad_id)
    if _is_torch(ce):
        import torch

        return torch.exp(ce)
    return math.exp(ce)


def shift_pairs(logits: Any, ids: Any) -> tuple[Any, Any]:
    """Causal-LM pairs: logits at position t predict token t+1.

    Returns ``(logits[..., :-1, :], ids[..., 1:])``: the last logits row has nothing to
    predict and the first token has no prediction. Views of the inputs (no copy).

    >>> rows, targets = shift_pairs(np.zeros((1, 4, 9)), np.array([[5, 6, 7, 8]]))
    >>> rows.shape, targets.tolist()
    ((1, 3, 9), [[6, 7, 8]])
    """
    x = _as_logits(logits) if not _is_torch(logits) else logits
    y = ids if _is_torch(ids) else np.asarray(ids)
    if x.ndim < 2:
        raise InputError(f"shift_pairs needs logits of shape [..., T, V], got {tuple(x.shape)}")
    if tuple(y.shape) != tuple(x.shape[:-1]):
        raise InputError(
            f"ids have shape {tuple(y.shape)} but logits have shape {tuple(x.shape)}; "
            f"expected ids of shape {tuple(x.shape[:-1])}"
        )
    if x.shape[-2] == 0:
        raise InputError("shift_pairs needs at least one position (T >= 1)")
    return x[..., :-1, :], y[..., 1:]


# -- units ------------------------------------------------------------------------------------
def nats_to_bits(nats: Any) -> Any:
    """Nats to bits (``/ ln 2``): bits per token from nats per token.

    >>> nats_to_bits(math.log(8))
    3.0
    """
    return nats / LN2


def bits_to_nats(bits: Any) -> Any:
    """Bits to nats (``* ln 2``).

    >>> round(bits_to_nats(1.0), 6)
    0.693147
    """
    return bits * LN2


def _check_count(count: float, what: str) -> None:
    if not count > 0:
        raise InputError(f"{what} needs a positive count, got {count}")


def bits_per_byte(total_nll: float, n_bytes: float) -> float:
    """Total NLL (nats, summed over tokens) / (UTF-8 bytes * ln 2), as lm-evaluation-harness.

    Tokenizer-independent, so models with different vocabularies can be compared.

    >>> bits_per_byte(8 * math.log(2), 4)
    2.0
    """
    _check_count(n_bytes, "bits_per_byte")
    return float(total_nll) / (float(n_bytes) * LN2)


def byte_perplexity(total_nll: float, n_bytes: float) -> float:
    """``exp(total NLL / bytes)`` (lm-evaluation-harness ``byte_perplexity``)."""
    _check_count(n_bytes, "byte_perplexity")
    return math.exp(float(total_nll) / float(n_bytes))


def word_perplexity(total_nll: float, n_words: float) -> float:
    """``exp(total NLL / words)`` (lm-evaluation-harness ``word_perplexity``).

    >>> word_perplexity(2 * math.log(10), 2)
    10.000000000000002
    """
    _check_count(n_words, "word_perplexity")
    return math.exp(float(total_nll) / float(n_words))


_WS = re.compile(r"\s+")


def count_bytes(text: str) -> int:
    """UTF-8 bytes of ``text`` (the harness' ``len(text.encode("utf-8"))``).

    >>> count_bytes("Grüße")
    7
    """
    return len(text.encode("utf-8"))


def count_words(text: str) -> int:
    """Words as lm-evaluation-harness counts them: ``len(re.split(r"\\s+", text))``.

    Kept exactly (a leading space adds an empty field) so word perplexities match the
    harness' numbers for the same text; the one deviation is the empty text, which has 0
    words here (the harness never scores empty documents; its formula would give 1).

    >>> count_words("the cat  sat"), count_words(" the cat"), count_words("")
    (3, 3, 0)
    """
    return len(_WS.split(text)) if text else 0
