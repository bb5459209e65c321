"""A MetricX checkpoint (Juraska et al. 2023, 2024) computed with torch and transformers,
with the numbers of Google's ``metricx23``/``metricx24`` ``predict`` (checked by parity
tests) and without its code.

MetricX is an mT5 encoder-decoder read as a regressor (its ``MT5ForRegression``): the input
is one text (:func:`input_text`), tokenized with truncation to ``max_input_length`` tokens
and its closing ``</s>`` removed; the decoder runs one step from token 0 and the score is
the logit of ``<extra_id_10>`` (vocabulary row 250089) of that step, clipped to [0, 25].
Lower is better (an MQM-like error score).

Only the score's rows of the output layer are kept (a product with 8 rows in place of a
250k-wide projection), each distinct input runs once, and inputs run in batches of one
length: no padding, so each score is the one Google's code computes for that input alone
(its Trainer stacks unpadded inputs, so it runs one at a time).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from evalab.errors import InputError, Setting, require
from evalab.progress import progress_bar

__all__ = ["SCORE_ROW", "MetricXModel", "Side", "input_text"]

#: the vocabulary row read as the score: ``<extra_id_10>`` of mT5's vocabulary
SCORE_ROW = 250089
#: the rows of the output layer kept: the score row last (a product with a few rows rounds
#: as the full layer's does; with one row it takes another path)
BLOCK = slice(SCORE_ROW - 7, SCORE_ROW + 1)
#: the range the scores are clipped to
LOW, HIGH = 0.0, 25.0

Side = Literal["src", "ref"]


def input_text(version: int, hypothesis: str, source: str | None, reference: str | None) -> str:
    """The text MetricX-``version`` reads, as its ``predict.py`` builds it: MetricX-24
    ``source: S candidate: H[ reference: R]``; MetricX-23 ``candidate: H reference: R``
    (with a reference) or ``candidate: H source: S`` (quality estimation).

    >>> input_text(24, "Hallo", "Hello", None)
    'source: Hello candidate: Hallo'
    >>> input_text(23, "Hallo", None, "Hallo!")
    'candidate: Hallo reference: Hallo!'
    """
    if version == 24:
        text = f"source: {source or ''} candidate: {hypothesis}"
        return text if reference is None else f"{text} reference: {reference}"
    if reference is not None:
        return f"candidate: {hypothesis} reference: {reference}"
    return f"candidate: {hypothesis} source: {source}"


@dataclass(frozen=True)
class ModelFiles:
    """A checkpoint folder's config (read before torch loads) and its tokenizer folder."""

    folder: Path
    config: dict[str, Any]
    tokenizer: Path


def read_model_files(folder: Path, tokenizer: Path | None) -> ModelFiles:
    """The checkpoint's ``config.json``, checked to be an mT5 with MetricX's vocabulary;
    one line naming the folder and what it should hold otherwise."""
    if not folder.is_dir():
        raise InputError(
            f"{folder}: metricx.model is not a folder; pass a MetricX checkpoint folder "
            "(config.json + weights) or its name in the local Hugging Face cache"
        )
    config_file = folder / "config.json"
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(
            f"{folder}: no readable config.json ({type(exc).__name__}); a MetricX checkpoint "
            "folder has config.json and model.safetensors (or pytorch_model.bin)"
        ) from None
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if model_type not in ("mt5", "t5") or int(config.get("vocab_size", 0)) <= SCORE_ROW:
        raise InputError(
            f"{folder}: config.json describes a {model_type!r} model with "
            f"{config.get('vocab_size') if isinstance(config, dict) else '?'} tokens; MetricX is an "
            f"mT5 with more than {SCORE_ROW} (google/metricx-23-* or google/metricx-24-*)"
        )
    tok = folder if tokenizer is None else tokenizer
    if not any((tok / f).is_file() for f in ("spiece.model", "tokenizer.json")):
        raise InputError(
            f"{tok}: no mT5 tokenizer here (spiece.model or tokenizer.json); MetricX checkpoints "
            "ship without one: pass ",
            Setting("metricx.tokenizer"),
            "=google/mt5-xl (a local folder or "
            "a name in the Hugging Face cache; the mT5 of the checkpoint's size)",
        )
    return ModelFiles(folder, config, tok)


def score_rows(torch: Any, folder: Path) -> Any:
    """The rows :data:`BLOCK` of the checkpoint's ``lm_head.weight`` (a tied checkpoint:
    of ``shared.weight``), the last the score row, read alone from its safetensors or
    PyTorch weights file."""
    index = next(folder.glob("*.index.json"), None)
    names = ["lm_head.weight", "shared.weight"]
    if index is not None:  # sharded: the index names each tensor's file
        where = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        files = [folder / where[n] for n in names if n in where]
    else:
        files = [
            f for f in (folder / "model.safetensors", folder / "pytorch_model.bin") if f.is_file()
        ]
    for file in files:
        if file.suffix == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(file), framework="pt") as f:
                for name in names:
                    if name in f.keys():  # noqa: SIM118 (a safe_open handle)
                        return f.get_slice(name)[BLOCK].clone()
        else:
            state = torch.load(str(file), map_location="cpu", mmap=True, weights_only=True)
            for name in names:
                if name in state:
                    return state[name][BLOCK].clone()
    raise InputError(
        f"{folder}: no lm_head.weight in its weights; a MetricX checkpoint has the output layer "
        "its score is read from"
    )


class MetricXModel:
    """An mT5 encoder, one decoder step and the score row of one checkpoint."""

    def __init__(self, files: ModelFiles, device: str = "cpu") -> None:
        self.torch = require("torch", what="MetricX", extra="metricx")
        transformers = require("transformers", what="MetricX", extra="metricx")
        require("sentencepiece", what="MetricX's mT5 tokenizer", extra="metricx")
        self.files = files
        self.device = device
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(
                str(files.tokenizer), local_files_only=True
            )
        except Exception as exc:
            raise InputError(f"{files.tokenizer}: cannot load the mT5 tokenizer ({exc})") from None
        self._load(transformers)

    def _load(self, transformers: Any) -> None:
        """Embeddings, encoder and decoder as ``MT5Model`` reads them (``MT5ForRegression``'s
        state dict less its output layer), and the score row read from the weights file:
        transformers 5 ties an mT5's output layer to its embeddings whatever the checkpoint
        says, which MetricX's is not."""
        hf_logging = transformers.utils.logging
        verbosity, bar_was_on = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()  # "lm_head.weight not used" is no news
        hf_logging.disable_progress_bar()  # nor is a "Loading weights" bar
        try:
            model = transformers.MT5Model.from_pretrained(
                str(self.files.folder),
                dtype="auto",
                local_files_only=True,
                attn_implementation="eager",
            )
            rows = score_rows(self.torch, self.files.folder)
        except InputError:
            raise
        except Exception as exc:
            raise InputError(f"{self.files.folder}: cannot load the mT5 weights ({exc})") from None
        finally:
            hf_logging.set_verbosity(verbosity)
            if bar_was_on:
                hf_logging.enable_progress_bar()
        self.tied = bool(self.files.config.get("tie_word_embeddings", True))
        self.d_model = int(self.files.config["d_model"])
        self.encoder = model.encoder.to(self.device).eval()
        self.decoder = model.decoder.to(self.device).eval()
        self.rows = rows.to(device=self.device, dtype=model.dtype)
        self.dtype = str(model.dtype).removeprefix("torch.")
        self.pad = int(self.files.config.get("pad_token_id") or 0)

    def token_ids(self, texts: Sequence[str], max_length: int) -> list[list[int]]:
        """Each text's ids as ``predict.py`` feeds them: truncated to ``max_length`` tokens
        with ``</s>``, then without that last token."""
        encoded = self.tokenizer(list(texts), max_length=max_length, truncation=True)
        return [ids[:-1] for ids in encoded["input_ids"]]

    def scores(
        self, texts: Sequence[str], max_length: int, batch_size: int, progress: bool
    ) -> np.ndarray:
        """The score of each text: each distinct text tokenized and run once, in batches of
        inputs of one length (no padding: each score is the one ``predict.py`` computes
        for that input alone, to the bit on a CPU)."""
        distinct = list(dict.fromkeys(texts))
        ids = self.token_ids(distinct, max_length)
        out = np.empty(len(ids), dtype=np.float64)
        with progress_bar(len(ids), "metricx", enabled=progress) as advance:
            for chunk in length_batches([len(x) for x in ids], batch_size):
                out[chunk] = self._forward([ids[i] for i in chunk])
                advance(len(chunk))
        where = {text: i for i, text in enumerate(distinct)}
        return out[[where[t] for t in texts]]

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        """The encoder on the batch; the decoder step and the output rows on each input
        alone: a one-token product of the batch (``M = len(batch)``) rounds otherwise than
        the one-input product of Google's code (``M = 1``, another kernel): ~1e-5."""
        torch = self.torch
        input_ids = torch.tensor(batch, dtype=torch.long, device=self.device)
        mask = torch.ones_like(input_ids)
        start = torch.zeros((1, 1), dtype=torch.long, device=self.device)
        with torch.inference_mode():
            hidden = self.encoder(input_ids=input_ids, attention_mask=mask).last_hidden_state
            scores = torch.stack([self._step(start, hidden[i : i + 1]) for i in range(len(batch))])
        return np.asarray(torch.clamp(scores, LOW, HIGH).float().cpu().numpy(), dtype=np.float64)

    def _step(self, start: Any, hidden: Any) -> Any:
        """One decoder step from token 0 (``MT5ForRegression``'s dummy decoder input) and
        the score row's logit, for one input's encoder states."""
        mask = self.torch.ones(hidden.shape[:2], dtype=self.torch.long, device=self.device)
        step = self.decoder(
            input_ids=start,
            encoder_hidden_states=hidden,
            encoder_attention_mask=mask,
            use_cache=False,
        ).last_hidden_state
        if self.tied:  # T5's rescaling before a tied output layer
            step = step * self.d_model**-0.5
        return self.torch.nn.functional.linear(step, self.rows)[0, 0, -1]


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped by length, longest first, at most ``batch_size`` a group.

    >>> length_batches([3, 5, 3, 3, 5], 2)
    [[1, 4], [0, 2], [3]]
    """
    by_length: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        by_length.setdefault(n, []).append(i)
    return [
        group[a : a + batch_size]
        for _, group in sorted(by_length.items(), reverse=True)
        for a in range(0, len(group), batch_size)
    ]
