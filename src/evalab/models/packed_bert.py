"""The forward pass of a plain BERT encoder over packed tokens (no work on padding).

Hugging Face's ``BertModel`` runs every layer on a ``[batch, longest, hidden]`` tensor, so
the padding of a batch costs as much as real tokens in every projection and feed-forward
product (most of the work). Here the tokens of a batch are kept end to end,
``[tokens, hidden]``, for everything that acts on one token at a time (embeddings, the
query/key/value projections, made one product, the output projections, feed-forward,
layer norms), and spread to ``[batch, longest, ...]`` only for the attention itself, with
padded keys masked. The arithmetic is BERT's: the hidden states agree with ``BertModel``'s
to float32 rounding (a few 1e-6; the cosines BERTScore takes from them to about 1e-7), and
:func:`packed_encoder` is used only for the models whose layout it knows (checked on load).
"""

from __future__ import annotations

from typing import Any

__all__ = ["PackedBertEncoder", "packed_encoder"]


class PackedBertEncoder:
    """Hidden states of the last kept layer of a ``BertModel`` (absolute positions, GELU)."""

    def __init__(self, model: Any) -> None:
        import torch

        self._torch = torch
        self.embeddings = model.embeddings
        self.layers = list(model.encoder.layer)
        self.heads = self.layers[0].attention.self.num_attention_heads if self.layers else 0
        # query, key and value as one product: one pass over the tokens instead of three
        self.qkv = [
            (
                torch.cat([a.query.weight, a.key.weight, a.value.weight]).detach(),
                torch.cat([a.query.bias, a.key.bias, a.value.bias]).detach(),
            )
            for a in (layer.attention.self for layer in self.layers)
        ]

    def __call__(self, batch: list[list[int]], device: str) -> Any:
        """Float32 hidden states ``[tokens, hidden]`` of the token-id lists of ``batch``,
        end to end (rows ``sum(len(x) for x in batch[:i])`` on are sentence ``i``'s)."""
        torch = self._torch
        lengths = [len(x) for x in batch]
        with torch.inference_mode():
            x = self._embed(batch, lengths, device)
            valid = (
                torch.arange(max(lengths), device=device)[None, :]
                < torch.tensor(lengths, device=device)[:, None]
            )
            where = valid.reshape(-1).nonzero().squeeze(1)
            for layer, qkv in zip(self.layers, self.qkv, strict=True):
                x = self._layer(layer, qkv, x, valid, where)
            return x.float()

    def _embed(self, batch: list[list[int]], lengths: list[int], device: str) -> Any:
        torch = self._torch
        e = self.embeddings
        ids = torch.tensor([t for x in batch for t in x], dtype=torch.long, device=device)
        positions = torch.cat([torch.arange(n, device=device) for n in lengths])
        # BertEmbeddings: words + token type 0 + positions, in that order, then LayerNorm
        x = e.word_embeddings(ids) + e.token_type_embeddings.weight[0]
        x = x + e.position_embeddings(positions)
        return e.LayerNorm(x)

    def _layer(self, layer: Any, qkv: tuple[Any, Any], x: Any, valid: Any, where: Any) -> Any:
        torch = self._torch
        functional = torch.nn.functional
        batch, longest = valid.shape
        packed = functional.linear(x, *qkv)
        spread = packed.new_zeros(batch * longest, packed.shape[1])
        spread[where] = packed
        q, k, v = spread.view(batch, longest, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        context = functional.scaled_dot_product_attention(
            q, k, v, attn_mask=valid[:, None, None, :]
        )
        context = context.permute(0, 2, 1, 3).reshape(batch * longest, -1)[where]
        out = layer.attention.output
        x = out.LayerNorm(out.dense(context) + x)
        hidden = functional.gelu(layer.intermediate.dense(x))
        return layer.output.LayerNorm(layer.output.dense(hidden) + x)


def packed_encoder(model: Any, config: Any) -> PackedBertEncoder | None:
    """A :class:`PackedBertEncoder` for ``model``, or ``None`` if it is not a plain BERT
    encoder (other architectures keep Hugging Face's forward pass)."""
    plain = (
        type(model).__name__ == "BertModel"
        and getattr(config, "hidden_act", None) == "gelu"
        and getattr(config, "position_embedding_type", "absolute") == "absolute"
        and not getattr(config, "is_decoder", False)
        and not getattr(model.config, "output_attentions", False)
    )
    if not plain:
        return None
    try:
        return PackedBertEncoder(model)
    except AttributeError:  # a BertModel subclass laid out differently
        return None
