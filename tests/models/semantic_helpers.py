"""Helpers shared by the semantic-similarity tests: a tiny random BERT saved to disk."""

from __future__ import annotations

from pathlib import Path

TINY_WORDS = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    *[
        "the",
        "a",
        "cat",
        "dog",
        "sat",
        "on",
        "mat",
        "red",
        "car",
        "auto",
        "house",
        "##s",
        "##ing",
        "run",
        ".",
        ",",
    ],
]


def make_tiny_bert(folder: Path, layers: int = 2, max_positions: int = 64) -> Path:
    """A BERT with random weights (seed 0) and a 21-word WordPiece vocabulary."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(TINY_WORDS) + "\n", encoding="utf-8")
    BertTokenizer(str(vocab), model_max_length=max_positions).save_pretrained(str(folder))
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(TINY_WORDS),
        hidden_size=16,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=max_positions,
    )
    BertModel(config).save_pretrained(str(folder))
    return folder
