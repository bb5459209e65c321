"""COMET's BERT encoder without Hugging Face's model: packed tokens, the checkpoint's weights.

A COMET checkpoint holds every weight of its encoder, so for a plain BERT (the
:func:`~evalab.models.packed_bert.is_plain_bert` layout) nothing of ``transformers`` is
needed beyond the tokenizer: the encoder is a
:class:`~evalab.models.packed_bert.PackedBertEncoder` built from the state dict (no random
initialisation of a model that is overwritten at once, no import of the modelling stack,
which costs about as much CPU as unbabel-comet's whole import), the tokenizer is read from
the folder's ``tokenizer.json`` with ``tokenizers`` (the file Hugging Face's fast tokenizer
loads), and layer mixing and pooling run on the packed ``[tokens, hidden]`` states, with
unbabel-comet's arithmetic (per-sentence layer norm over real tokens and all dimensions,
softmax weights times ``gamma``, mean/max/first-token pooling).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalab.errors import InputError
from evalab.models.packed_bert import BertShape, PackedBertEncoder, bert_weight_shapes

__all__ = ["FileTokenizer", "load_packed_bert", "packed_sentence_embeddings"]

PREFIX = "encoder.model."


class FileTokenizer:
    """The ``tokenizer.json`` of an encoder folder, called as COMET calls its tokenizer."""

    def __init__(self, folder: Path) -> None:
        from tokenizers import Tokenizer

        self.name_or_path = str(folder)
        self._tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tok.no_padding()
        self._tok.no_truncation()
        self.pad_token_id = _pad_id(folder, self._tok)

    def __call__(
        self, texts: list[str], truncation: bool = True, max_length: int = 512
    ) -> dict[str, list[list[int]]]:
        if truncation:
            self._tok.enable_truncation(max_length)
        else:
            self._tok.no_truncation()
        encoded = self._tok.encode_batch(texts, add_special_tokens=True)
        return {"input_ids": [e.ids for e in encoded]}

    def encode_offsets(
        self, texts: list[str], max_length: int
    ) -> list[tuple[list[int], list[tuple[int, int]]]]:
        """Token ids (truncated to ``max_length``) and each token's character offsets."""
        self._tok.enable_truncation(max_length)
        encoded = self._tok.encode_batch(texts, add_special_tokens=True)
        return [(e.ids, list(e.offsets)) for e in encoded]

    def decode(self, ids: list[int]) -> str:
        """The text of token ids, special tokens kept (as Hugging Face's ``decode``)."""
        return str(self._tok.decode(ids, skip_special_tokens=False))


def _pad_id(folder: Path, tok: Any) -> int:
    config = folder / "tokenizer_config.json"
    name: Any = "[PAD]"
    if config.is_file():
        with_pad = json.loads(config.read_text(encoding="utf-8")).get("pad_token", name)
        name = with_pad.get("content", name) if isinstance(with_pad, dict) else with_pad
    pad = tok.token_to_id(str(name))
    return int(pad) if pad is not None else 0


def load_packed_bert(
    config: dict[str, Any], state: dict[str, Any], path: Path
) -> PackedBertEncoder:
    """The encoder from the checkpoint's ``encoder.model.*`` weights, checked against the
    config: a missing, unexpected or misshapen weight is refused by name."""
    shape = BertShape.from_config(config)
    expected = bert_weight_shapes(shape)
    sub = {k[len(PREFIX) :]: v for k, v in state.items() if k.startswith(PREFIX)}
    sub.pop("embeddings.position_ids", None)
    missing = sorted(set(expected) - set(sub))
    extra = sorted(set(sub) - set(expected))
    if missing or extra:
        detail = f"missing {PREFIX}{missing[0]}" if missing else f"unexpected {PREFIX}{extra[0]}"
        raise InputError(
            f"{path}: the weights do not fit the encoder and estimator its hparams describe "
            f"({detail}); is comet.encoder the encoder this checkpoint was trained on?"
        )
    for key, want in expected.items():
        if tuple(sub[key].shape) != want:
            raise InputError(
                f"{path}: weight shapes do not fit (size mismatch for {PREFIX}{key}: "
                f"{tuple(sub[key].shape)} in the checkpoint, {want} for the encoder's config)"
            )
    return PackedBertEncoder({k: v.float() for k, v in sub.items()}, shape)


def packed_sentence_embeddings(
    torch: Any, states: list[Any], lengths: list[int], mix: Any, layer: int | None, pool: str
) -> Any:
    """``[batch, hidden]`` sentence embeddings from packed states (embeddings first)."""
    device = states[0].device
    counts = torch.tensor(lengths, device=device)
    seg = torch.repeat_interleave(torch.arange(len(lengths), device=device), counts)
    if mix is not None:
        hidden = mix.packed(states, lambda s: _normalise(torch, s, seg, counts))
    else:
        hidden = states[layer or 0]
    if pool == "cls":
        starts = torch.cumsum(counts, 0) - counts
        return hidden[starts]
    if pool == "max":
        out = hidden.new_full((len(lengths), hidden.shape[1]), float("-inf"))
        return out.scatter_reduce_(0, seg.unsqueeze(-1).expand_as(hidden), hidden, "amax")
    total = hidden.new_zeros((len(lengths), hidden.shape[1])).index_add_(0, seg, hidden)
    return total / counts.unsqueeze(-1).float()


def _normalise(torch: Any, state: Any, seg: Any, counts: Any) -> Any:
    """unbabel-comet's layer norm: mean and variance over a sentence's real tokens and
    every dimension (eps 1e-12), on packed rows."""
    n = (counts * state.shape[-1]).float()
    sums = state.new_zeros(len(counts)).index_add_(0, seg, state.sum(-1))
    mean = (sums / n)[seg].unsqueeze(-1)
    centred = state - mean
    var = state.new_zeros(len(counts)).index_add_(0, seg, (centred**2).sum(-1)) / n
    return centred / torch.sqrt(var + 1e-12)[seg].unsqueeze(-1)
