"""A COMET regression model computed with torch and transformers (no unbabel-comet).

The computation follows unbabel-comet 2.2.7 (``comet/models/base.py``,
``regression/*.py``, ``modules/*.py``, ``encoders/bert.py``, ``encoders/xlmr.py``):

* each side (source, hypothesis, reference) is tokenized on its own, with truncation to
  ``max_position_embeddings - 4`` tokens (unbabel's ``max_positions - 2``), and encoded;
* ``layer: mix`` mixes every hidden state (embeddings included) with softmax weights
  times ``gamma``; with ``layer_norm`` each layer is first normalised over the real
  tokens and all dimensions of its sentence (mean and variance, eps 1e-12). An integer
  ``layer`` takes that hidden state;
* pooling ``avg`` averages over the real tokens, ``max`` takes the maximum, ``cls`` the
  first token, ``default`` (XLM-R only) the first token of the last layer;
* the estimator (Linear, activation, ... Linear) reads
  ``[h, r, h*r, |h-r|, h*s, |h-s|]`` (regression) or ``[h, s, h*s, |h-s|]``
  (reference-free).

A sentence embedding depends only on its string, so :meth:`CometModel.embed` computes
each distinct string once, in batches sorted by token count.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalab.errors import InputError, Setting, first_line, require
from evalab.models.comet_checkpoint import DEFAULT_HIDDEN_SIZES, CheckpointInfo
from evalab.models.comet_packed import FileTokenizer, load_packed_bert, packed_sentence_embeddings
from evalab.models.hf_encoder import padded_batch
from evalab.models.hub import load_local
from evalab.models.packed_bert import is_plain_bert
from evalab.progress import progress_bar

__all__ = ["CometModel"]

#: unbabel-comet encoder name -> (transformers model class, tokenizer class)
ENCODERS = {
    "BERT": ("BertModel", "BertTokenizerFast"),
    "XLM-RoBERTa": ("XLMRobertaModel", "XLMRobertaTokenizerFast"),
}
#: unbabel-comet encoder name -> the ``model_type`` of its config.json
ENCODER_TYPES = {"BERT": "bert", "XLM-RoBERTa": "xlm-roberta"}
POOLS = ("avg", "max", "cls", "default")
#: state-dict entries that carry no weights (buffers rebuilt from the config)
IGNORED_KEYS = (
    "encoder.model.embeddings.position_ids",
    "layerwise_attention.dropout_mask",
    "layerwise_attention.dropout_fill",
    # the word-level loss's class weights (training only; xCOMET)
    "wordloss.weight",
)


class CometModel:
    """Encoder, layer mixing, pooling and estimator of one checkpoint, ready to score."""

    def __init__(
        self, info: CheckpointInfo, encoder_dir: Path, device: str = "cpu", amp: bool = False
    ) -> None:
        self.torch = require("torch", what="COMET", extra="semantic")
        hp = self.model_hparams(info)
        self.info = info
        self.device = device
        self.amp = amp
        self.pool = str(hp.get("pool", "avg"))
        self.layer = hp.get("layer", "mix")
        if self.pool not in POOLS:
            raise InputError(
                f"{info.path}: unknown pooling {self.pool!r}; expected one of {', '.join(POOLS)}"
            )
        encoder_name = str(hp.get("encoder_model"))
        if encoder_name not in ENCODERS:
            raise InputError(
                f"{info.path}: encoder_model {encoder_name!r} is not supported; evalab loads "
                + ", ".join(ENCODERS)
            )
        if self.pool == "default" and encoder_name != "XLM-RoBERTa":
            raise InputError(
                f"{info.path}: pool 'default' needs an XLM-RoBERTa encoder (BERT has no pooler here)"
            )
        config = _read_config(encoder_dir, encoder_name)
        self.num_layers = int(config["num_hidden_layers"]) + 1
        self.max_length = int(config["max_position_embeddings"]) - 4
        self.mix = _layer_mix(self.torch, hp, self.num_layers, info.path)
        width = int(config["hidden_size"]) * self.feature_count(info)
        self.estimator = _estimator(self.torch, hp, width, info.path)
        #: further heads read from the checkpoint (``state_dict`` prefix -> module)
        self.heads: dict[str, Any] = self.make_heads(hp, int(config["hidden_size"]))
        #: a plain BERT runs packed from the checkpoint's weights (models/comet_packed.py)
        self.packed = encoder_name == "BERT" and is_plain_bert(config) and self.pool != "default"
        self.encoder: Any
        if self.packed:
            self.tokenizer = _file_tokenizer(encoder_dir, encoder_name)
            self.encoder = load_packed_bert(config, info.state_dict, info.path).to(device)
        else:
            transformers = require("transformers", what="COMET", extra="semantic")
            classes = tuple(getattr(transformers, n) for n in ENCODERS[encoder_name])
            self.tokenizer, self.encoder = _load_encoder(transformers, classes, encoder_dir)
        self._load_weights(info.state_dict)
        for module in (
            None if self.packed else self.encoder,
            self.mix,
            self.estimator,
            *self.heads.values(),
        ):
            if module is not None:
                module.eval().to(device)

    # -- what a model class changes ------------------------------------------------------
    @staticmethod
    def model_hparams(info: CheckpointInfo) -> dict[str, Any]:
        """The hyper-parameters as the layers below read them (a regression model's own)."""
        return info.hparams

    @staticmethod
    def feature_count(info: CheckpointInfo) -> int:
        """Sentence-embedding widths the estimator reads: ``[h, r, h*r, |h-r|, h*s, |h-s|]``
        or, reference-free, ``[h, s, h*s, |h-s|]``."""
        return 6 if info.uses_references else 4

    def make_heads(self, hp: dict[str, Any], hidden: int) -> dict[str, Any]:
        """Heads beyond the estimator (none for a regression model)."""
        return {}

    # -- weights --------------------------------------------------------------------------
    def _load_weights(self, state: dict[str, Any]) -> None:
        """Copy the checkpoint's weights; a missing weight is refused (unbabel-comet would
        silently keep a random one there, and the numbers would be meaningless)."""
        parts: dict[str, Any] = {"estimator.ff.": self.estimator}
        if not self.packed:  # the packed encoder was built from (and checked against) them
            parts["encoder.model."] = self.encoder
        if self.mix is not None:
            parts["layerwise_attention."] = self.mix
        parts.update({f"{name}.": head for name, head in self.heads.items()})
        known = (*parts, "encoder.model.")
        unknown = [k for k in state if k not in IGNORED_KEYS and not k.startswith(known)]
        if unknown:
            raise InputError(
                f"{self.info.path}: unexpected weights {', '.join(unknown[:3])}; is this a COMET checkpoint?"
            )
        for prefix, module in parts.items():
            sub = {
                k[len(prefix) :]: v
                for k, v in state.items()
                if k.startswith(prefix) and k not in IGNORED_KEYS
            }
            expected = set(module.state_dict())
            missing = sorted(expected - set(sub))
            extra = sorted(set(sub) - expected)
            if missing or extra:
                detail = (
                    f"missing {prefix}{missing[0]}" if missing else f"unexpected {prefix}{extra[0]}"
                )
                raise InputError(
                    f"{self.info.path}: the weights do not fit the encoder and estimator its hparams describe "
                    f"({detail}); is comet.encoder the encoder this checkpoint was trained on?"
                )
            try:
                module.load_state_dict(sub, strict=True)
            except RuntimeError as exc:
                raise InputError(
                    f"{self.info.path}: weight shapes do not fit ({str(exc).splitlines()[-1].strip()})"
                ) from None

    # -- sentence embeddings ------------------------------------------------------------
    def embed(
        self, sentences: Sequence[str], batch_size: int, progress: bool = False
    ) -> dict[str, Any]:
        """``{string: sentence embedding}`` for each distinct string, length-sorted batches."""
        torch = self.torch
        unique = list(dict.fromkeys(sentences))
        ids = self.tokenizer(unique, truncation=True, max_length=self.max_length)["input_ids"]
        order = sorted(range(len(unique)), key=lambda i: len(ids[i]))
        out: dict[str, Any] = {}
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        with (
            progress_bar(
                len(unique), "COMET embeddings", progress and len(batches) > 1, unit="segments"
            ) as advance,
            torch.inference_mode(),
        ):
            for batch in batches:
                emb = self._embed_batch([ids[i] for i in batch])
                for i, row in zip(batch, emb, strict=True):
                    out[unique[i]] = row
                advance(len(batch))
        return out

    def _embed_batch(self, batch: list[list[int]]) -> Any:
        if self.packed:
            states = self.encoder.all_states(batch, self.device)
            lengths = [len(x) for x in batch]
            layer = None if self.mix is not None else self._layer_index()
            return packed_sentence_embeddings(
                self.torch, states, lengths, self.mix, layer, self.pool
            )
        torch = self.torch
        pad = self.tokenizer.pad_token_id
        input_ids, mask = padded_batch(torch, batch, pad)
        input_ids, mask = input_ids.to(self.device), mask.to(self.device)
        autocast = (
            torch.autocast("cuda", dtype=torch.float16) if self.amp else contextlib.nullcontext()
        )
        with autocast:
            states = self.encoder(
                input_ids=input_ids, attention_mask=mask, output_hidden_states=True
            ).hidden_states
        states = [s.float() for s in states]
        if self.pool == "default":
            return states[-1][:, 0, :]
        hidden = self.mix(states, mask) if self.mix is not None else states[self._layer_index()]
        return _pool(torch, self.pool, hidden, input_ids, mask, pad)

    def _layer_index(self) -> int:
        """The hidden state a checkpoint without layer mixing reads."""
        if isinstance(self.layer, int) and 0 <= self.layer < self.num_layers:
            return self.layer
        raise InputError(
            f"{self.info.path}: layer {self.layer!r} is out of range 0..{self.num_layers - 1}"
        )

    # -- estimator ----------------------------------------------------------------------
    def estimate(self, hyp: Any, src: Any, ref: Any | None) -> list[float]:
        """Segment scores from stacked sentence embeddings ``[n, d]`` of each side."""
        torch = self.torch
        if ref is None:
            features: tuple[Any, ...] = (hyp, src, hyp * src, torch.abs(hyp - src))
        else:
            features = (hyp, ref, hyp * ref, torch.abs(hyp - ref), hyp * src, torch.abs(hyp - src))
        with torch.inference_mode():
            scores: list[float] = self.estimator(torch.cat(features, dim=1)).view(-1).tolist()
            return scores


def _read_config(folder: Path, encoder_name: str) -> dict[str, Any]:
    """The encoder folder's ``config.json``, checked to be of the checkpoint's architecture."""
    config = folder / "config.json"
    if not config.is_file():
        raise InputError(
            f"{folder}: not an encoder folder (no config.json); pass ",
            Setting("comet.encoder"),
            "=PATH, a local folder with the config and tokenizer of the encoder the checkpoint names",
        )
    data = _check_model_type(config, encoder_name)
    for key in ("num_hidden_layers", "max_position_embeddings", "hidden_size"):
        if not isinstance(data.get(key), int):
            raise InputError(f"{config}: no integer {key}; not an encoder's config.json")
    return data


def _file_tokenizer(folder: Path, encoder_name: str) -> Any:
    """The folder's ``tokenizer.json`` read directly; Hugging Face's fast tokenizer class
    (which reads the same file, or builds it from the vocabulary) when there is none."""
    if (folder / "tokenizer.json").is_file():
        try:
            return FileTokenizer(folder)
        except Exception as exc:
            raise InputError(
                f"{folder}: cannot load the encoder's tokenizer ({first_line(exc)})"
            ) from None
    transformers = require("transformers", what="COMET", extra="semantic")
    return _tokenizer(getattr(transformers, ENCODERS[encoder_name][1]), folder)


def _tokenizer(tok_cls: Any, folder: Path) -> Any:
    return load_local(tok_cls.from_pretrained, folder, "cannot load the encoder's tokenizer")


def _load_encoder(transformers: Any, classes: tuple[Any, ...], folder: Path) -> tuple[Any, Any]:
    """Tokenizer and randomly initialised encoder from ``folder``'s files (the weights
    come from the checkpoint, as unbabel-comet loads it with load_pretrained_weights=False)."""
    model_cls, tok_cls = classes
    load = transformers.AutoConfig.from_pretrained
    config = load_local(load, folder, "cannot load the encoder's config")
    return _tokenizer(tok_cls, folder), model_cls(config, add_pooling_layer=False)


def _check_model_type(config: Path, encoder_name: str) -> dict[str, Any]:
    """Refuse an encoder folder of another architecture (read before transformers builds it)."""
    import json

    try:
        data = json.loads(config.read_text(encoding="utf-8"))
        model_type = data.get("model_type")
    except (ValueError, OSError, AttributeError):
        raise InputError(
            f"{config}: not a JSON object; an encoder folder's config.json is one"
        ) from None
    if model_type != ENCODER_TYPES[encoder_name]:
        raise InputError(
            f"{config}: model_type {model_type!r}, but the checkpoint's encoder is {encoder_name} "
            f"(model_type {ENCODER_TYPES[encoder_name]!r}); pass that encoder's folder as comet.encoder"
        )
    return dict(data)


def _layer_mix(torch: Any, hp: dict[str, Any], num_layers: int, path: Path) -> Any:
    """unbabel-comet's LayerwiseAttention for ``layer: mix``, else ``None``."""
    if hp.get("layer", "mix") != "mix":
        return None
    transform = hp.get("layer_transformation", "softmax")
    # unbabel-comet >= 2.2.4 reads 'sparsemax_patch' as softmax (its issue #244)
    if transform not in ("softmax", "sparsemax_patch", "sparsemax"):
        raise InputError(
            f"{path}: layer_transformation {transform!r} is not supported; evalab computes "
            "softmax and sparsemax"
        )
    normalise = _sparsemax if transform == "sparsemax" else _softmax
    return _layer_mix_module(torch, num_layers, bool(hp.get("layer_norm", False)), normalise)


def _softmax(torch: Any, weights: Any) -> Any:
    return torch.softmax(weights, dim=0)


def _sparsemax(torch: Any, weights: Any) -> Any:
    """Sparsemax (Martins and Astudillo, 2016) of a vector, as the ``entmax`` package
    unbabel-comet uses computes it: shifted by the maximum, threshold from the sorted
    cumulative sums."""
    z = weights - weights.max()
    ordered = torch.sort(z, descending=True).values
    cumulative = ordered.cumsum(0) - 1
    ranks = torch.arange(1, len(z) + 1, dtype=z.dtype, device=z.device)
    support = int((ranks * ordered > cumulative).sum())
    tau = cumulative[support - 1] / support
    return torch.clamp(z - tau, min=0)


def _layer_mix_module(torch: Any, num_layers: int, layer_norm: bool, transform: Any) -> Any:
    """A module with unbabel-comet's parameter names: ``scalar_parameters.K`` and ``gamma``."""

    # torch is imported lazily and handed in untyped, so its Module is Any here
    class _LayerMix(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.scalar_parameters = torch.nn.ParameterList(
                [torch.nn.Parameter(torch.zeros(1)) for _ in range(num_layers)]
            )
            self.gamma = torch.nn.Parameter(torch.ones(1))

        def forward(self, states: list[Any], mask: Any) -> Any:
            m = mask.float()
            return self.packed(states, lambda state: _normalise(state, m))

        def weights(self) -> Any:
            """Each layer's weight (sparsemax gives some exactly 0)."""
            return transform(torch, torch.cat(list(self.scalar_parameters)))

        def packed(self, states: list[Any], normalise: Any) -> Any:
            """The mix of ``states`` (padded or packed), ``normalise`` being the layer norm;
            fewer states than layers: those above weigh 0 (see ``UnifiedModel``)."""
            weights = self.weights()
            total: Any = 0
            for k, state in enumerate(states):
                total = total + weights[k] * (normalise(state) if layer_norm else state)
            return self.gamma * total

    def _normalise(state: Any, m: Any) -> Any:
        # mean and variance over the real tokens and every dimension of each sentence
        b = m.unsqueeze(-1)
        count = m.sum(1) * state.shape[-1]
        masked = state * b
        mean = (masked.reshape(state.shape[0], -1).sum(1) / count).view(-1, 1, 1)
        var = (((masked - mean) * b) ** 2).reshape(state.shape[0], -1).sum(1) / count
        return (state - mean) / torch.sqrt(var + 1e-12).view(-1, 1, 1)

    return _LayerMix()


def _estimator(torch: Any, hp: dict[str, Any], width: int, path: Path) -> Any:
    """The feed-forward estimator with unbabel-comet's layout (``ff.N`` indices): Linear,
    then (activation, dropout, Linear) per hidden size; dropout is inactive in eval mode."""
    nn = torch.nn
    sizes = list(
        hp.get("hidden_sizes", DEFAULT_HIDDEN_SIZES)
    )  # checked when the checkpoint was read
    layers: list[Any] = [nn.Linear(width, sizes[0])]
    for i, size in enumerate(sizes):
        layers += [_activation(nn, hp.get("activations", "Tanh"), path), nn.Dropout(0.0)]
        layers.append(nn.Linear(size, sizes[i + 1] if i + 1 < len(sizes) else 1))
    if hp.get("final_activation"):
        layers.append(_activation(nn, hp["final_activation"], path))
    return nn.Sequential(*layers)


def _activation(nn: Any, name: Any, path: Path) -> Any:
    # unbabel-comet looks the name up title-cased in torch.nn ('tanh' -> Tanh); only the
    # activation functions qualify (nn.Module, nn.Linear... are no activation)
    cls = getattr(nn, str(name).title(), None)
    if not isinstance(cls, type) or cls.__module__ != nn.modules.activation.__name__:
        raise InputError(
            f"{path}: activation {name!r} is not a torch.nn activation function (e.g. Tanh, ReLU, GELU)"
        )
    try:
        return cls()
    except TypeError:  # one that needs arguments (MultiheadAttention)
        raise InputError(
            f"{path}: activation {name!r} needs arguments; COMET estimators use e.g. Tanh, ReLU, GELU"
        ) from None


def _pool(torch: Any, pool: str, hidden: Any, input_ids: Any, mask: Any, pad: int) -> Any:
    if pool == "cls":
        return hidden[:, 0, :]
    is_pad = input_ids.eq(pad).unsqueeze(-1)
    if pool == "max":
        return hidden.masked_fill(is_pad, float("-inf")).max(dim=1)[0]
    return hidden.masked_fill(is_pad, 0.0).sum(1) / mask.unsqueeze(-1).float().sum(1)
