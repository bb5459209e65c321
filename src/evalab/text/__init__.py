"""Tokenizers and normalizers. A tokenizer is a contract: its name is in every signature."""

from evalab.text.tokenizers import TOKENIZERS, Tokenizer, available_tokenizers, get_tokenizer

__all__ = ["TOKENIZERS", "Tokenizer", "available_tokenizers", "get_tokenizer"]
