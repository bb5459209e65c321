"""A small encoder–decoder transformer (Vaswani et al., 2017), written for the sorting study.

Everything Table 3 of "Attention Is All You Need" varies is a constructor argument:
``d_model``, ``heads`` (``d_k = d_model // heads``, so the cost stays fixed as in row (A)),
``layers``, the feed-forward width ``d_ff``, ``dropout`` (row (D)) and the positional
encoding (row (E)): ``"sin"`` (the paper's sinusoids, section 3.5), ``"learned"`` (a trained
table, the paper's variant) or ``"none"`` (not in the paper; the seed's sorting task needs
none). Label smoothing lives in the training loss (``train.py``), not in the model.

The layers are post-norm, as in the paper: ``x = LayerNorm(x + Dropout(Sublayer(x)))``.
Written here rather than taken from ``torch.nn.Transformer`` so that every piece an
ablation touches is visible in about a hundred lines.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

POS_ENCODINGS = ("sin", "learned", "none")


def sinusoids(length: int, d_model: int) -> Tensor:
    """The fixed table of section 3.5: ``PE[pos, 2i] = sin(pos / 10000^(2i/d))``, cos for odd.

    >>> sinusoids(4, 6).shape
    torch.Size([4, 6])
    >>> float(sinusoids(4, 6)[0, 1])  # cos(0)
    1.0
    """
    pos = torch.arange(length, dtype=torch.float32)[:, None]
    inv = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model)
    )
    table = torch.zeros(length, d_model)
    table[:, 0::2] = torch.sin(pos * inv)
    table[:, 1::2] = torch.cos(pos * inv)[:, : d_model // 2]
    return table


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention over ``heads`` heads of size ``d_model // heads``."""

    def __init__(self, d_model: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.dropout = dropout
        self.d_k = d_model // heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)

    def _split(self, x: Tensor) -> Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.heads, self.d_k).transpose(1, 2)

    def forward(self, query: Tensor, memory: Tensor, causal: bool = False) -> Tensor:
        q, k, v = (
            self._split(self.q(query)),
            self._split(self.k(memory)),
            self._split(self.v(memory)),
        )
        # softmax(q k^T / sqrt(d_k)) v (equation 1), fused; ``causal`` hides later positions.
        # Dropout on the attention weights too: section 5.4 names only sub-layer outputs and
        # embedding sums, but the reference code (tensor2tensor) and torch.nn.Transformer,
        # which the seed's toy model used, also drop attention weights.
        p = self.dropout if self.training else 0.0
        att = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=causal)
        b, _, n, _ = q.shape
        out: Tensor = self.out(att.transpose(1, 2).reshape(b, n, self.heads * self.d_k))
        return out


class FeedForward(nn.Module):
    """``max(0, x W1 + b1) W2 + b2`` (equation 2)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        # inner dropout as in tensor2tensor and torch.nn.Transformer (see MultiHeadAttention)
        self.net = nn.Sequential(
            nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model)
        )

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.net(x)
        return out


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, heads: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.attn = MultiHeadAttention(d_model, heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        x = self.norm1(x + self.drop(self.attn(x, x)))
        out: Tensor = self.norm2(x + self.drop(self.ff(x)))
        return out


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, heads: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))
        self.drop = nn.Dropout(dropout)

    def forward(self, y: Tensor, memory: Tensor) -> Tensor:
        y = self.norm1(y + self.drop(self.self_attn(y, y, causal=True)))
        y = self.norm2(y + self.drop(self.cross_attn(y, memory)))
        out: Tensor = self.norm3(y + self.drop(self.ff(y)))
        return out


class Sorter(nn.Module):
    """Encoder–decoder transformer over digit tokens ``0..vocab-1`` plus a start token.

    The start token is ``vocab`` (one past the digits); the output layer predicts digits
    only. Embeddings are scaled by ``sqrt(d_model)`` before the positions are added (3.4).

    >>> import torch
    >>> m = Sorter(vocab=10, max_len=5, d_model=16, heads=2, layers=1, d_ff=32)
    >>> src = torch.tensor([[3, 1, 2, 0, 9]])
    >>> m(src, m.shift_right(src)).shape
    torch.Size([1, 5, 10])
    """

    #: the positions added to the embeddings: a buffer (sin), a parameter (learned) or None
    pos: Tensor | None

    def __init__(
        self,
        *,
        vocab: int,
        max_len: int,
        d_model: int = 32,
        heads: int = 4,
        layers: int = 2,
        d_ff: int = 128,
        dropout: float = 0.1,
        pos_encoding: str = "sin",
    ) -> None:
        super().__init__()
        if d_model % heads:
            raise ValueError(f"d_model={d_model} is not divisible by heads={heads}")
        if pos_encoding not in POS_ENCODINGS:
            raise ValueError(f"pos_encoding={pos_encoding!r}; expected one of {POS_ENCODINGS}")
        self.vocab, self.d_model, self.pos_encoding = vocab, d_model, pos_encoding
        self.bos = vocab
        self.embed = nn.Embedding(vocab + 1, d_model)
        if pos_encoding == "sin":
            self.register_buffer("pos", sinusoids(max_len, d_model), persistent=False)
        elif pos_encoding == "learned":
            self.pos = nn.Parameter(torch.randn(max_len, d_model) * 0.02)
        else:
            self.pos = None
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.ModuleList(
            EncoderLayer(d_model, heads, d_ff, dropout) for _ in range(layers)
        )
        self.decoder = nn.ModuleList(
            DecoderLayer(d_model, heads, d_ff, dropout) for _ in range(layers)
        )
        self.head = nn.Linear(d_model, vocab)

    def shift_right(self, target: Tensor) -> Tensor:
        """Decoder input for teacher forcing: the start token, then ``target[:, :-1]``."""
        start = torch.full_like(target[:, :1], self.bos)
        return torch.cat([start, target[:, :-1]], dim=1)

    def _embed(self, tokens: Tensor) -> Tensor:
        x = self.embed(tokens) * math.sqrt(self.d_model)
        if self.pos is not None:
            x = x + self.pos[: tokens.shape[1]]
        out: Tensor = self.drop(x)
        return out

    def encode(self, src: Tensor) -> Tensor:
        x = self._embed(src)
        for layer in self.encoder:
            x = layer(x)
        return x

    def decode(self, memory: Tensor, dec_in: Tensor) -> Tensor:
        y = self._embed(dec_in)
        for layer in self.decoder:
            y = layer(y, memory)
        logits: Tensor = self.head(y)
        return logits

    def forward(self, src: Tensor, dec_in: Tensor) -> Tensor:
        """Logits ``[batch, len(dec_in), vocab]`` for each next token (teacher forcing)."""
        return self.decode(self.encode(src), dec_in)

    @torch.no_grad()
    def greedy(self, src: Tensor, length: int) -> Tensor:
        """Decode ``length`` tokens greedily (argmax at each step, no teacher forcing)."""
        memory = self.encode(src)
        out = torch.full_like(src[:, :1], self.bos)
        for _ in range(length):
            nxt = self.decode(memory, out)[:, -1].argmax(-1, keepdim=True)
            out = torch.cat([out, nxt], dim=1)
        return out[:, 1:]
