"""Perplexity of a local Hugging Face causal language model, by sliding windows.

The protocol follows Hugging Face's "Perplexity of fixed-length models" guide. A document
is tokenized once (``add_special_tokens=False``; a BOS token is prepended only when asked,
so the ``bos`` setting is the only source of it). Windows of at most ``max_length`` tokens
start every ``stride`` tokens; each window scores only the tokens not scored by the
previous one (``[prev_end, end)``), with everything before them in the window as context.
So every token is scored once, with at least ``max_length - stride`` tokens of context once
the first window is full.

A token needs a token before it in its window to be predicted: the first token of a
document is scored only with ``bos=True`` (then the BOS token is its context). With
``stride == max_length`` the windows are disjoint and the first token of each window has
no context, so it is not scored (the guide's loop drops it the same way); the ``tokens``
count says how many tokens were actually scored.

Speed and memory: windows of all documents are grouped by length and run ``batch_size`` of
one length at a time in one forward pass, without padding: the numbers of a document do not
depend on the other documents of the call (a shard of the corpus scores as the whole corpus
does), and its token losses are summed exactly in float64. Of each batch's logits only the rows of scored positions are
gathered, their losses computed by :func:`evalab.nll.token_loss`, and the logits dropped
before the next batch: at most one batch's logits are alive.

>>> plan_windows(10, max_length=4, stride=2)
[(0, 4, 1), (2, 6, 4), (4, 8, 6), (6, 10, 8)]
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalab.errors import InputError, Setting, SettingsError, require
from evalab.models.hub import model_label
from evalab.progress import progress_bar

__all__ = [
    "CausalLMScorer",
    "DocumentNLL",
    "plan_windows",
    "resolve_window",
]

DTYPES = ("float32", "float64", "bfloat16", "float16")

#: files of which a saved tokenizer has at least one (fast JSON, sentencepiece, BPE/WordPiece
#: vocabularies); without any, transformers builds an empty tokenizer that yields no tokens
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer.model",
    "spiece.model",
    "sentencepiece.bpe.model",
    "vocab.json",
    "vocab.txt",
    "merges.txt",
    "tokenizer.tiktoken",
)


def plan_windows(n_tokens: int, *, max_length: int, stride: int) -> list[tuple[int, int, int]]:
    """Windows ``(begin, end, score_from)`` over a sequence of ``n_tokens`` tokens.

    Window ``[begin, end)`` is fed to the model; positions ``[score_from, end)`` are scored
    (each predicted from the positions before it in the window). Every position from 1 to
    ``n_tokens - 1`` is scored at most once; all of them when ``stride < max_length``.

    >>> plan_windows(5, max_length=8, stride=4)     # shorter than one window
    [(0, 5, 1)]
    >>> plan_windows(6, max_length=3, stride=3)     # disjoint: position 3 is not scored
    [(0, 3, 1), (3, 6, 4)]
    """
    if max_length < 2:
        raise SettingsError(
            f"max_length must be at least 2 (one context + one scored token), got {max_length}"
        )
    if not 1 <= stride <= max_length:
        raise SettingsError(f"stride must be between 1 and max_length ({max_length}), got {stride}")
    out: list[tuple[int, int, int]] = []
    prev_end = 0
    for begin in range(0, max(n_tokens, 1), stride):
        end = min(begin + max_length, n_tokens)
        score_from = max(prev_end, begin + 1)
        if score_from < end:
            out.append((begin, end, score_from))
        prev_end = end
        if end >= n_tokens:
            break
    return out


@dataclass(frozen=True)
class DocumentNLL:
    """Summed negative log-likelihood (nats) of one document and how many tokens it covers."""

    nll: float
    tokens: int


def _read_config(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise InputError(f"{path}: no such model directory")
    if not path.is_dir():
        raise InputError(f"{path}: is not a directory; expected a Hugging Face model directory")
    cfg = path / "config.json"
    if not cfg.exists():
        raise InputError(
            f"{path}: not a Hugging Face model directory (no config.json); save one with "
            "model.save_pretrained(path) and tokenizer.save_pretrained(path)"
        )
    try:
        config: dict[str, Any] = json.loads(cfg.read_text(encoding="utf-8"))
        return config
    except (OSError, ValueError) as exc:
        raise InputError(f"{cfg}: cannot read the model config ({exc})") from exc


def check_causal_config(path: Path, config: dict[str, Any]) -> None:
    """Refuse a config that is not a causal LM's, before any weight is read.

    ``AutoModelForCausalLM`` also loads encoders (BERT as ``BertLMHeadModel``): their
    checkpoint has no causal head, so the head would be freshly initialised and the
    perplexity a random number. The config says so: its architectures, its
    ``is_encoder_decoder``, and ``is_decoder`` for model types that are encoders by default.
    """
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    kind = config.get("model_type", "unknown")
    archs = [a for a in config.get("architectures") or [] if isinstance(a, str)]
    causal = set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values())
    reason = None
    if config.get("is_encoder_decoder"):
        reason = "it is an encoder-decoder model"
    elif archs and not any(a in causal for a in archs):
        reason = f"its architecture {', '.join(archs)} has no causal language-model head"
    elif (
        kind in MODEL_FOR_MASKED_LM_MAPPING_NAMES
        and kind in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
        and not config.get("is_decoder")
    ):
        reason = f"model type {kind!r} is an encoder unless its config sets is_decoder=true"
    elif kind not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        reason = f"model type {kind!r} has no causal language-model class in transformers"
    if reason:
        raise InputError(
            f"{path}: not a causal language model ({reason}); perplexity needs a decoder "
            "such as GPT-2 or Llama saved with save_pretrained"
        )


def check_tokenizer_files(path: Path) -> None:
    """Refuse a model folder without tokenizer files (an empty tokenizer scores nothing)."""
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        raise InputError(
            f"{path}: no tokenizer files (expected one of {', '.join(TOKENIZER_FILES)}); "
            "save the tokenizer next to the model with tokenizer.save_pretrained(path)"
        )


def check_device(device: str) -> None:
    """Refuse a device torch cannot parse or this machine does not have, before loading."""
    torch = require("torch", what="perplexity of a causal LM", extra="lm")
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise SettingsError(
            f"device {device!r} is not a torch device; use cpu, cuda, cuda:N or mps"
        ) from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise SettingsError(f"device {device!r} requested but CUDA is not available; use cpu")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise SettingsError(
                f"device {device!r}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                f"numbered from 0"
            )
    elif dev.type == "mps" and not torch.backends.mps.is_available():
        raise SettingsError(f"device {device!r} requested but MPS is not available; use cpu")
    elif dev.type not in ("cpu", "cuda", "mps"):
        raise SettingsError(f"device {device!r} is not supported; use cpu, cuda, cuda:N or mps")


def _context_size(config: dict[str, Any]) -> int | None:
    for key in ("n_positions", "max_position_embeddings", "n_ctx", "seq_length"):
        value = config.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return None


def resolve_window(
    config: dict[str, Any], max_length: int | None, stride: int | None
) -> tuple[int, int]:
    """The window length and stride actually used: defaults are the model's context size
    and half of the window (the guide's GPT-2 setting: 1024 and 512).
    """
    context = _context_size(config)
    if max_length is None:
        if context is None:
            raise SettingsError("the model config gives no context size; pass max_length")
        max_length = context
    elif context is not None and max_length > context:
        raise SettingsError(
            f"max_length {max_length} exceeds the model's context size {context}; "
            f"use at most {context}"
        )
    if stride is None:
        stride = max(1, max_length // 2)
    plan_windows(0, max_length=max_length, stride=stride)  # validates both
    return max_length, stride


@dataclass(frozen=True)
class _Window:
    """Window ``[begin, end)`` of document ``doc``; positions ``[score_from, end)`` are scored."""

    doc: int
    begin: int
    end: int
    score_from: int


def _same_length_batches(windows: Sequence[_Window], size: int) -> Iterator[list[_Window]]:
    """Batches of at most ``size`` windows of one length each, longest first (so the
    largest batch comes first, where memory runs out if it does)."""
    by_length: dict[int, list[_Window]] = {}
    for w in windows:
        by_length.setdefault(w.end - w.begin, []).append(w)
    for length in sorted(by_length, reverse=True):
        same = by_length[length]
        for start in range(0, len(same), size):
            yield same[start : start + size]


class CausalLMScorer:
    """Sliding-window negative log-likelihoods of texts under a local causal LM.

    ``model`` is a directory written by ``save_pretrained`` (model and tokenizer); nothing
    is downloaded. The protocol (``max_length``, ``stride``, ``bos``) is resolved at
    construction from the model's config; the weights load on first use.

    >>> scorer = CausalLMScorer("/tmp/tiny-gpt2", max_length=64, stride=32)  # doctest: +SKIP
    >>> scorer.score_texts(["Hello world."])  # doctest: +SKIP
    [DocumentNLL(nll=..., tokens=...)]
    """

    def __init__(
        self,
        model: str | Path,
        *,
        max_length: int | None = None,
        stride: int | None = None,
        batch_size: int = 8,
        bos: bool = False,
        device: str = "cpu",
        dtype: str = "float32",
    ) -> None:
        self.path = Path(model).expanduser()
        self.config = _read_config(self.path)
        # what the folder holds is checked before any setting: a window size is no help
        # with a model that cannot give a perplexity at all
        require("transformers", what="perplexity of a causal LM", extra="lm")
        check_causal_config(self.path, self.config)
        check_tokenizer_files(self.path)
        self.max_length, self.stride = resolve_window(self.config, max_length, stride)
        if batch_size < 1:
            raise SettingsError(f"batch_size must be at least 1, got {batch_size}")
        if dtype not in DTYPES:
            raise SettingsError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
        check_device(device)
        self.batch_size = batch_size
        self.bos = bos
        self.device = device
        self.dtype = dtype
        self._model: Any = None
        self._tokenizer: Any = None

    # -- loading ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The model's directory name (recorded in signatures; ``Org/name`` from a hub cache)."""
        return model_label(self.path)

    @property
    def tokenizer(self) -> Any:
        """The model directory's tokenizer (loaded on first use)."""
        if self._tokenizer is None:
            transformers = require("transformers", what="perplexity of a causal LM", extra="lm")
            try:
                with _QuietTransformers(transformers):
                    self._tokenizer = transformers.AutoTokenizer.from_pretrained(
                        str(self.path), local_files_only=True
                    )
            except Exception as exc:
                # a damaged tokenizer file fails inside transformers or the Rust tokenizers
                # library with KeyError, plain Exception, ...: any failure here is the folder's
                raise InputError(
                    f"{self.path}: cannot load a tokenizer from the model directory "
                    f"({type(exc).__name__}: {_first_sentence(exc)})"
                ) from exc
        return self._tokenizer

    @property
    def model(self) -> Any:
        """The causal LM in eval mode on ``device`` (loaded on first use)."""
        if self._model is None:
            torch = require("torch", what="perplexity of a causal LM", extra="lm")
            transformers = require("transformers", what="perplexity of a causal LM", extra="lm")
            with _QuietTransformers(transformers):
                model, info = self._load(transformers, getattr(torch, self.dtype))
            _check_loading_info(self.path, type(model).__name__, info)
            self._model = model.to(self.device).eval()
        return self._model

    def _load(self, transformers: Any, dtype: Any) -> tuple[Any, dict[str, Any]]:
        """The model and transformers' loading report; a file it cannot read is an InputError."""
        import pickle

        from safetensors import SafetensorError

        try:
            loaded: tuple[Any, dict[str, Any]] = transformers.AutoModelForCausalLM.from_pretrained(
                str(self.path), local_files_only=True, dtype=dtype, output_loading_info=True
            )
            return loaded
        except pickle.UnpicklingError as exc:
            raise InputError(
                f"{self.path}: torch's safe loader refused the pickle weight file (it is damaged, or "
                "holds objects other than tensors whose loading would run code); save the model "
                "as model.safetensors from a trusted copy"
            ) from exc
        except SafetensorError as exc:
            raise InputError(
                f"{self.path}: a weight file is damaged or truncated ({_first_sentence(exc)}); "
                "copy or save the model again"
            ) from exc
        except (OSError, ValueError, RuntimeError, EOFError) as exc:
            raise InputError(
                f"{self.path}: cannot load the model weights ({_first_sentence(exc)})"
            ) from exc

    # -- tokens ----------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` as scored: no special tokens, BOS prepended if ``bos``."""
        tok = self.tokenizer
        ids = list(
            tok(text, add_special_tokens=False, return_attention_mask=False, verbose=False)[
                "input_ids"
            ]
        )
        if text and not ids:
            # an empty vocabulary would score nothing and report "nothing to score"
            raise InputError(
                f"{self.path}: the tokenizer turns a non-empty text into no tokens; is its vocabulary saved?"
            )
        if self.bos:
            if tok.bos_token_id is None:
                raise SettingsError(
                    f"{self.path}: the tokenizer has no BOS token; use bos=False",
                    Setting("no_bos", aside=""),
                )
            ids = [int(tok.bos_token_id), *ids]
        return ids

    def score_texts(self, texts: Sequence[str], *, progress: bool = False) -> list[DocumentNLL]:
        """Summed NLL and scored-token count of each text (each text is one document)."""
        return self.score_ids([self.encode(t) for t in texts], progress=progress)

    def score_ids(
        self, documents: Sequence[Sequence[int]], *, progress: bool = False
    ) -> list[DocumentNLL]:
        """Summed NLL and scored-token count of each document given as token ids.

        The ids are scored as given (prepend BOS yourself if wanted: :meth:`encode` does).
        A document's numbers do not depend on the other documents of the call: a batch
        holds windows of one length only (no padding, whose attention width moves the
        float32 logits of the real positions), and each document's token losses are summed
        exactly in float64 (``math.fsum``), so the order of its windows does not matter.
        """
        torch = require("torch", what="perplexity of a causal LM", extra="lm")
        windows = [
            _Window(d, begin, end, score_from)
            for d, ids in enumerate(documents)
            for begin, end, score_from in plan_windows(
                len(ids), max_length=self.max_length, stride=self.stride
            )
        ]
        losses: list[list[float]] = [[] for _ in documents]
        model = self.model  # loaded (or refused) before the progress bar starts
        with (
            progress_bar(
                sum(w.end - w.begin for w in windows), "language model", progress, unit="tokens"
            ) as advance,
            torch.inference_mode(),
        ):
            for batch in _same_length_batches(windows, self.batch_size):
                for w, values in zip(
                    batch, self._window_losses(model, documents, batch), strict=True
                ):
                    losses[w.doc].extend(values)
                advance(sum(w.end - w.begin for w in batch))
        return [DocumentNLL(math.fsum(v), len(v)) for v in losses]

    def _window_losses(
        self, model: Any, documents: Sequence[Sequence[int]], batch: Sequence[_Window]
    ) -> list[list[float]]:
        """Each window's token losses (float64 nats) from one forward pass of equal-length windows."""
        torch = require("torch", what="perplexity of a causal LM", extra="lm")
        from evalab.nll import token_loss

        device = torch.device(self.device)
        ids = torch.as_tensor([documents[w.doc][w.begin : w.end] for w in batch], dtype=torch.long)
        logits = model(input_ids=ids.to(device), use_cache=False).logits
        rows = [r for r, w in enumerate(batch) for _ in range(w.score_from, w.end)]
        # the logits one position earlier predict position p
        cols = [p - w.begin - 1 for w in batch for p in range(w.score_from, w.end)]
        labels = [t for w in batch for t in documents[w.doc][w.score_from : w.end]]
        picked = logits[torch.as_tensor(rows, device=device), torch.as_tensor(cols, device=device)]
        del logits  # only the gathered rows survive: one batch's logits at most
        flat = token_loss(picked, torch.as_tensor(labels, device=device), ignore_index=None)
        values = flat.double().cpu().tolist()
        out, at = [], 0
        for w in batch:
            out.append(values[at : at + w.end - w.score_from])
            at += w.end - w.score_from
        return out

    # -- protocol --------------------------------------------------------------------------
    def signature_fields(self) -> list[tuple[str, str]]:
        """``(key, value)`` pairs naming everything that changes the numbers."""
        return [
            ("lm", self.name),
            ("window", str(self.max_length)),
            ("stride", str(self.stride)),
            ("bos", "yes" if self.bos else "no"),
            ("dtype", self.dtype),
        ]


def _first_sentence(exc: BaseException) -> str:
    """The first line of a library's error message (some run to a page of advice)."""
    text = str(exc).strip().split("\n", 1)[0]
    return text if len(text) <= 200 else text[:197] + "..."


def _check_loading_info(path: Path, cls: str, info: dict[str, Any]) -> None:
    """Refuse weights that leave parameters randomly initialised (a head not in the checkpoint).

    transformers fills missing parameters with fresh random values and only logs it; the
    perplexity of such a model is a random number.
    """
    missing = sorted(info.get("missing_keys") or [])
    mismatched = sorted(
        str(k[0]) if isinstance(k, tuple) else str(k) for k in info.get("mismatched_keys") or []
    )
    if missing or mismatched:
        keys = missing or mismatched
        shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
        what = "missing from" if missing else "of another shape in"
        raise InputError(
            f"{path}: {len(keys)} parameter(s) of {cls} are {what} the weight files ({shown}); "
            "they would be random, so the perplexity would be meaningless"
        )


class _QuietTransformers:
    """Silence transformers' own "Loading weights" bar (our progress goes to stderr only
    when asked); the previous setting is restored on exit.
    """

    def __init__(self, transformers: Any) -> None:
        self.logging = transformers.utils.logging
        self.was_enabled = True
        self.verbosity = self.logging.get_verbosity()

    def __enter__(self) -> None:
        self.was_enabled = self.logging.is_progress_bar_enabled()
        self.verbosity = self.logging.get_verbosity()
        self.logging.disable_progress_bar()
        # its load report and config warnings are multi-line logs; what matters in them
        # (missing weights) is checked and reported as one line by the caller
        self.logging.set_verbosity_error()

    def __exit__(self, *exc: object) -> None:
        self.logging.set_verbosity(self.verbosity)
        if self.was_enabled:
            self.logging.enable_progress_bar()
