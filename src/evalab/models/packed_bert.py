"""The forward pass of a plain BERT encoder over packed tokens (no work on padding).

Hugging Face's ``BertModel`` runs every layer on a ``[batch, longest, hidden]`` tensor, so
the padding of a batch costs as much as real tokens in every projection and feed-forward
product (most of the work). Here the tokens of a batch are kept end to end,
``[tokens, hidden]``, for everything that acts on one token at a time (embeddings, the
query/key/value projections, made one product, the output projections, feed-forward,
layer norms); the attention takes each run of sentences of one length as one
``[sentences, length, ...]`` view of those rows, so nothing is padded, masked or copied
(sentences sorted by length make few runs). The arithmetic is BERT's: the hidden states
agree with ``BertModel``'s to float32 rounding (a few 1e-6; the cosines BERTScore takes
from them to about 1e-7), and :func:`packed_encoder` is used only for the models whose
layout it knows (checked on load).

The encoder runs on the weights alone (a ``BertModel`` state dict and four numbers of its
config), so COMET, whose checkpoint holds the encoder's weights, builds it without
importing or constructing Hugging Face's model (:func:`bert_weight_shapes` lists what a
state dict must hold).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

__all__ = ["BertShape", "PackedBertEncoder", "bert_weight_shapes", "packed_encoder"]


def _linear(name: str, out: str, into: str) -> dict[str, tuple[str, ...]]:
    """A linear layer's weight ``[out, in]`` and bias ``[out]``."""
    return {f"{name}.weight": (out, into), f"{name}.bias": (out,)}


def _norm(name: str) -> dict[str, tuple[str, ...]]:
    """A LayerNorm's weight and bias, one value per hidden unit."""
    return {f"{name}.weight": ("h",), f"{name}.bias": ("h",)}


#: per layer: state-dict key (after ``encoder.layer.N.``) -> shape in (hidden, intermediate)
_LAYER_KEYS = {
    **_linear("attention.self.query", "h", "h"),
    **_linear("attention.self.key", "h", "h"),
    **_linear("attention.self.value", "h", "h"),
    **_linear("attention.output.dense", "h", "h"),
    **_norm("attention.output.LayerNorm"),
    **_linear("intermediate.dense", "i", "h"),
    **_linear("output.dense", "h", "i"),
    **_norm("output.LayerNorm"),
}


@dataclass(frozen=True)
class BertShape:
    """The numbers of a BERT config the forward pass needs."""

    layers: int
    heads: int
    hidden: int
    intermediate: int
    vocab: int
    positions: int
    token_types: int
    eps: float

    @classmethod
    def from_config(cls, config: Any) -> BertShape:
        """From a ``BertConfig`` or the dict of its ``config.json``."""
        get: Any = (
            config.get if isinstance(config, dict) else lambda k, d=None: getattr(config, k, d)
        )
        return cls(
            layers=int(get("num_hidden_layers")),
            heads=int(get("num_attention_heads")),
            hidden=int(get("hidden_size")),
            intermediate=int(get("intermediate_size")),
            vocab=int(get("vocab_size")),
            positions=int(get("max_position_embeddings")),
            token_types=int(get("type_vocab_size", 2)),
            eps=float(get("layer_norm_eps", 1e-12)),
        )


def bert_weight_shapes(shape: BertShape) -> dict[str, tuple[int, ...]]:
    """Every weight of a ``BertModel`` without pooler, by state-dict key, with its shape."""
    h, i = shape.hidden, shape.intermediate
    size = {"h": h, "i": i}
    out: dict[str, tuple[int, ...]] = {
        "embeddings.word_embeddings.weight": (shape.vocab, h),
        "embeddings.position_embeddings.weight": (shape.positions, h),
        "embeddings.token_type_embeddings.weight": (shape.token_types, h),
        "embeddings.LayerNorm.weight": (h,),
        "embeddings.LayerNorm.bias": (h,),
    }
    for n in range(shape.layers):
        for key, dims in _LAYER_KEYS.items():
            out[f"encoder.layer.{n}.{key}"] = tuple(size[d] for d in dims)
    return out


class PackedBertEncoder:
    """Hidden states of a ``BertModel`` (absolute positions, GELU) from its weights."""

    def __init__(self, weights: dict[str, Any], shape: BertShape) -> None:
        import torch

        self._torch = torch
        self.shape = shape
        self.heads = shape.heads
        w = {k: v.detach() for k, v in weights.items()}
        self.embeddings = (
            w["embeddings.word_embeddings.weight"],
            w["embeddings.position_embeddings.weight"],
            w["embeddings.token_type_embeddings.weight"],
            w["embeddings.LayerNorm.weight"],
            w["embeddings.LayerNorm.bias"],
        )
        self.layers = []
        for n in range(shape.layers):
            p = f"encoder.layer.{n}."
            qkv = [f"{p}attention.self.{x}" for x in ("query", "key", "value")]
            self.layers.append(
                (
                    # query, key and value as one product: one pass over the tokens
                    torch.cat([w[f"{k}.weight"] for k in qkv]),
                    torch.cat([w[f"{k}.bias"] for k in qkv]),
                    *(
                        w[p + k]
                        for k in (
                            "attention.output.dense.weight",
                            "attention.output.dense.bias",
                            "attention.output.LayerNorm.weight",
                            "attention.output.LayerNorm.bias",
                            "intermediate.dense.weight",
                            "intermediate.dense.bias",
                            "output.dense.weight",
                            "output.dense.bias",
                            "output.LayerNorm.weight",
                            "output.LayerNorm.bias",
                        )
                    ),
                )
            )

    @classmethod
    def from_module(cls, model: Any) -> PackedBertEncoder:
        """The encoder of a loaded ``BertModel`` (its layers as they are, maybe truncated)."""
        shape = BertShape.from_config(model.config)
        layers = len(model.encoder.layer)
        state = dict(model.state_dict())
        return cls(state, BertShape(**{**shape.__dict__, "layers": layers}))

    def first_layers(self, n: int) -> PackedBertEncoder:
        """This encoder computing its first ``n`` layers only (where no state above them is
        read), sharing the weights."""
        out = copy.copy(self)
        out.layers = self.layers[:n]
        out.shape = BertShape(**{**self.shape.__dict__, "layers": n})
        return out

    def to(self, device: str) -> PackedBertEncoder:
        """The weights moved to ``device`` (this encoder, for chaining)."""
        self.embeddings = tuple(t.to(device) for t in self.embeddings)
        self.layers = [tuple(t.to(device) for t in layer) for layer in self.layers]
        return self

    def __call__(self, batch: list[list[int]], device: str) -> Any:
        """Float32 hidden states ``[tokens, hidden]`` of the last layer for the token-id
        lists of ``batch``, end to end (rows ``sum(len(x) for x in batch[:i])`` on are
        sentence ``i``'s)."""
        return self.all_states(batch, device)[-1]

    def all_states(
        self,
        batch: list[list[int]],
        device: str,
        first: list[int] | None = None,
        last_rows: Any = None,
    ) -> list[Any]:
        """The embeddings and every layer's hidden states, each packed ``[tokens, hidden]``.
        With ``first``, sentence ``i``'s first ``first[i]`` tokens are of token type 0 and
        the rest of type 1 (a sentence pair); without, every token is of type 0. With
        ``last_rows`` (packed row indices), the last layer is computed for those rows only
        (their attention still reads every token), its state holding them in that order."""
        torch = self._torch
        lengths = [len(x) for x in batch]
        with torch.inference_mode():
            x = self._embed(batch, lengths, device, first)
            runs = _runs(lengths)
            states = [x]
            for k, layer in enumerate(self.layers):
                rows = last_rows if k == len(self.layers) - 1 else None
                states.append(self._layer(layer, states[-1], runs, rows))
            return [s.float() for s in states]

    def _embed(
        self, batch: list[list[int]], lengths: list[int], device: str, first: list[int] | None
    ) -> Any:
        torch = self._torch
        words, positions, token_types, ln_w, ln_b = self.embeddings
        ids = torch.tensor([t for x in batch for t in x], dtype=torch.long, device=device)
        sizes = torch.tensor(lengths, device=device)
        # each token's position in its sentence: its row less its sentence's first row
        at = torch.arange(len(ids), device=device) - torch.repeat_interleave(
            torch.cumsum(sizes, 0) - sizes, sizes
        )
        # BertEmbeddings: words + token type + positions, in that order, then LayerNorm
        if first is None:
            x = words[ids] + token_types[0]
        else:
            limit = torch.repeat_interleave(torch.tensor(first, device=device), sizes)
            x = words[ids] + token_types[(at >= limit).long()]
        x = x + positions[at]
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), ln_w, ln_b, self.shape.eps)

    def _attention(self, packed: Any, runs: list[tuple[int, int, int]]) -> Any:
        """Multi-head self-attention ``[tokens, hidden]`` from the packed query/key/value
        rows ``[tokens, 3 * hidden]``, one run of equal lengths at a time (its rows are one
        ``[sentences, length, 3, heads, head size]`` block: no copy, no padding, no mask)."""
        torch = self._torch
        parts = []
        for start, count, length in runs:
            rows = packed[start : start + count * length]
            q, k, v = rows.view(count, length, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            context = torch.nn.functional.scaled_dot_product_attention(q, k, v)
            parts.append(context.permute(0, 2, 1, 3).reshape(count * length, -1))
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    def _layer(
        self, layer: tuple[Any, ...], x: Any, runs: list[tuple[int, int, int]], rows: Any = None
    ) -> Any:
        functional = self._torch.nn.functional
        qkv_w, qkv_b, ao_w, ao_b, ln1_w, ln1_b, i_w, i_b, o_w, o_b, ln2_w, ln2_b = layer
        width = (x.shape[-1],)
        context = self._attention(functional.linear(x, qkv_w, qkv_b), runs)
        if rows is not None:  # the rows read of this layer's output alone
            context, x = context[rows], x[rows]
        eps = self.shape.eps
        x = functional.layer_norm(
            functional.linear(context, ao_w, ao_b) + x, width, ln1_w, ln1_b, eps
        )
        hidden = functional.gelu(functional.linear(x, i_w, i_b))
        return functional.layer_norm(
            functional.linear(hidden, o_w, o_b) + x, width, ln2_w, ln2_b, eps
        )


def _runs(lengths: list[int]) -> list[tuple[int, int, int]]:
    """Consecutive sentences of one length as ``(first row, sentences, length)``: each run
    fills a ``[sentences, length]`` grid, so its attention needs neither padding nor mask."""
    runs: list[tuple[int, int, int]] = []
    row = 0
    for n in lengths:
        if runs and runs[-1][2] == n:
            start, count, _ = runs[-1]
            runs[-1] = (start, count + 1, n)
        else:
            runs.append((row, 1, n))
        row += n
    return runs


def packed_encoder(model: Any, config: Any) -> PackedBertEncoder | None:
    """A :class:`PackedBertEncoder` for ``model``, or ``None`` if it is not a plain BERT
    encoder (other architectures keep Hugging Face's forward pass)."""
    plain = (
        type(model).__name__ == "BertModel"
        and is_plain_bert(config)
        and not getattr(model.config, "output_attentions", False)
    )
    if not plain:
        return None
    try:
        return PackedBertEncoder.from_module(model)
    except (AttributeError, KeyError):  # a BertModel subclass laid out differently
        return None


def is_plain_bert(config: Any) -> bool:
    """Whether a BERT config (object or ``config.json`` dict) is one this pass computes."""
    get = config.get if isinstance(config, dict) else lambda k, d=None: getattr(config, k, d)
    return (
        get("hidden_act") == "gelu"
        and get("position_embedding_type", "absolute") == "absolute"
        and not get("is_decoder", False)
    )
