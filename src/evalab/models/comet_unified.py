"""COMET's ``UnifiedMetric`` (CometKiwi) and ``XCOMETMetric`` (xCOMET) computed with torch.

The computation follows unbabel-comet 2.2.7 (``models/multitask/unified_metric.py``,
``xcomet_metric.py``, ``encoders/base.py``):

* each side is tokenized on its own (truncated to ``max_position_embeddings - 4``
  tokens, pad ids dropped), then the hypothesis and the other sides the checkpoint's
  ``input_segments`` name are joined as the tokenizer joins a pair, again and again
  (BERT ``[CLS] mt [SEP] src [SEP] ref [SEP]``, XLM-R ``<s> mt </s></s> src </s>...``),
  cut to ``max_position_embeddings - 2`` tokens when too long; BERT's token types are 0
  over the hypothesis and 1 after it;
* with both a source and a reference, three sequences are scored (mt+src, mt+ref,
  mt+src+ref); otherwise the one that the given sides make;
* the sentence embedding is the first token of the layer mix (softmax or sparsemax
  weights, optionally per-sentence layer norm) or of ``sent_layer``; the estimator maps it
  to a score;
* a word-level head (``hidden2tag`` on ``word_layer``) tags each hypothesis token
  ``O``/``I-<severity>``; the three sequences' probabilities are averaged with weights
  1/6, 1/3, 1/2; runs of ``I`` tokens closed by an ``O`` are the error spans;
* ``UnifiedMetric``'s score is the mean of the three sequences' scores; xCOMET's is
  ``0.12, 0.33, 0.33`` times those (each capped at 1) plus ``0.22`` times
  ``1 - min(25, minor + 5 major + 10 critical) / 25`` from its spans (reference-free:
  ``0.78`` times the one score plus the same span term).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalab.errors import InputError
from evalab.models.comet_checkpoint import CheckpointInfo
from evalab.models.comet_model import CometModel
from evalab.models.hf_encoder import padded_batch
from evalab.progress import progress_bar

__all__ = ["ErrorSpan", "UnifiedModel", "UnifiedScores"]

#: weights of the mt+src, mt+ref and mt+src+ref sequences' tag probabilities
SPAN_INPUT_WEIGHTS = (0.1667, 0.3333, 0.5)
#: xCOMET: weights of the three sequences' scores and of the score from its spans
XCOMET_WEIGHTS = (0.12, 0.33, 0.33, 0.22)
#: xCOMET: the MQM penalty of a span by severity (others count 0), capped at 25
SEVERITY_PENALTY = {"minor": 1, "major": 5, "critical": 10}
MQM_CAP = 25
#: token types: BERT reads them, XLM-R does not
SEPARATOR_TOKENS = {"BERT": 1, "XLM-RoBERTa": 2}


@dataclass(frozen=True)
class ErrorSpan:
    """A run of hypothesis tokens the word-level head tags as an error."""

    text: str
    severity: str
    #: mean probability of the chosen tag over the span's tokens
    confidence: float
    #: character offsets in the hypothesis (end exclusive)
    start: int
    end: int


@dataclass(frozen=True)
class UnifiedScores:
    """Segment scores of one system, and its error spans where the model tags words."""

    scores: np.ndarray
    spans: list[list[ErrorSpan]] | None


@dataclass(frozen=True)
class _Encoded:
    ids: list[int]
    offsets: list[tuple[int, int]]


class UnifiedModel(CometModel):
    """Encoder, layer mix, estimator and word-level head of a unified checkpoint."""

    def __init__(self, info: CheckpointInfo, *args: Any, **kwargs: Any) -> None:
        super().__init__(info, *args, **kwargs)
        hp = self.model_hparams(info)
        self.xcomet = info.class_identifier == "xcomet_metric"
        self.segments = tuple(hp["input_segments"])
        self.separators = SEPARATOR_TOKENS[str(hp.get("encoder_model"))]
        self.token_types = hp.get("encoder_model") == "BERT"
        self.labels = ["O", *(f"I-{e}" for e in hp["error_labels"])]
        layer = hp.get("word_layer")
        if self.heads and not (isinstance(layer, int) and 0 <= layer < self.num_layers):
            raise InputError(
                f"{info.path}: word_layer {layer!r} is out of range 0..{self.num_layers - 1}"
            )
        #: the hidden state the word-level head reads (0 without a head: none is read)
        self.word_layer: int = layer if self.heads and isinstance(layer, int) else 0
        #: the top hidden state the sentence embedding reads
        self.sentence_top = self._sentence_top()
        #: whether the word layer is above it: its hypothesis rows alone are read there
        self.words_on_top = bool(self.heads) and self.word_layer > self.sentence_top
        if self.packed:  # no layer above the last one read is computed
            self.encoder = self.encoder.first_layers(self.depth())

    def depth(self) -> int:
        """The last hidden state the scores and spans read: the word layer, or the top layer
        the sentence embedding weighs (a sparsemax mix gives the layers above it a weight of
        exactly 0, so leaving them out changes no number) or reads."""
        return self.word_layer if self.words_on_top else self.sentence_top

    def _sentence_top(self) -> int:
        if self.mix is None:
            return self._layer_index()
        with self.torch.inference_mode():
            weights = self.mix.weights().tolist()
        return max(k for k, w in enumerate(weights) if w != 0)

    @staticmethod
    def model_hparams(info: CheckpointInfo) -> dict[str, Any]:
        hp = dict(info.hparams)
        xcomet = info.class_identifier == "xcomet_metric"
        # unbabel-comet's defaults; XCOMETMetric fixes its inputs and word-level head
        hp.setdefault("sent_layer", hp.get("layer", "mix"))
        hp.setdefault("layer_transformation", "sparsemax")
        hp.setdefault("layer_norm", not xcomet)
        hp.setdefault("word_layer", 36 if xcomet else 24)
        hp.setdefault(
            "error_labels", ["minor", "major", "critical"] if xcomet else ["minor", "major"]
        )
        if xcomet:
            hp["input_segments"], hp["word_level_training"] = ["mt", "src", "ref"], True
        hp.setdefault("input_segments", ["mt", "src", "ref"])
        return {**hp, "layer": hp["sent_layer"], "pool": "cls"}

    @staticmethod
    def feature_count(info: CheckpointInfo) -> int:
        return 1  # the first token's embedding alone

    def make_heads(self, hp: dict[str, Any], hidden: int) -> dict[str, Any]:
        if not hp.get("word_level_training", False):
            return {}
        return {"hidden2tag": self.torch.nn.Linear(hidden, 1 + len(hp["error_labels"]))}

    @property
    def tags_words(self) -> bool:
        """Whether the checkpoint has a word-level head (error spans)."""
        return bool(self.heads)

    def sides(self, has_src: bool, has_ref: bool) -> tuple[str, ...]:
        """The sides read: the hypothesis, then those given that ``input_segments`` names."""
        given = {"src": has_src, "ref": has_ref}
        return ("mt", *(s for s in ("src", "ref") if given[s] and s in self.segments))

    # -- scoring --------------------------------------------------------------------------
    def score(
        self,
        systems: Sequence[Sequence[str]],
        src: Sequence[str] | None,
        ref: Sequence[str] | None,
        batch_size: int,
        progress: bool = False,
    ) -> list[UnifiedScores]:
        """Segment scores (and spans) of each system against the sides given."""
        sides = self.sides(src is not None, ref is not None)
        columns = {"src": src, "ref": ref}
        groups = [("mt", "src"), ("mt", "ref"), sides] if len(sides) == 3 else [sides]
        strings = {x for hyps in systems for x in hyps}
        for side in sides[1:]:
            strings.update(columns[side] or [])
        encoded = self._encode(sorted(strings))
        keys = []
        for hyps in systems:
            for i, mt in enumerate(hyps):
                row = {"mt": mt, **{s: (columns[s] or [])[i] for s in sides[1:]}}
                keys.append([tuple(row[s] for s in g) for g in groups])
        unique = list(dict.fromkeys(k for ks in keys for k in ks))
        outputs = self._run(unique, encoded, batch_size, progress)
        out, at = [], 0
        for hyps in systems:
            rows = [[outputs[k] for k in ks] for ks in keys[at : at + len(hyps)]]
            at += len(hyps)
            out.append(self._combine(rows, [encoded[h] for h in hyps]))
        return out

    def _encode(self, texts: list[str]) -> dict[str, _Encoded]:
        tok = self.tokenizer
        if hasattr(tok, "encode_offsets"):
            pairs = tok.encode_offsets(texts, self.max_length)
        else:
            enc = tok(
                texts, truncation=True, max_length=self.max_length, return_offsets_mapping=True
            )
            pairs = list(zip(enc["input_ids"], enc["offset_mapping"], strict=True))
        pad = self.tokenizer.pad_token_id
        return {
            t: _Encoded([x for x in ids if x != pad], [tuple(o) for o in offs])
            for t, (ids, offs) in zip(texts, pairs, strict=True)
        }

    def _joined(self, key: tuple[str, ...], encoded: dict[str, _Encoded]) -> list[int]:
        """The sides of ``key`` as one sequence, as unbabel-comet's ``concat_sequences``."""
        parts = [encoded[s].ids for s in key]
        sequence = parts[0]
        for part in parts[1:]:
            sep = sequence[-1]
            sequence = [sequence[0], *sequence[1:-1], *[sep] * self.separators, *part[1:-1], sep]
        inner = sum(len(p) - 2 for p in parts)
        if inner > self.max_length + 2 - (1 + len(parts) * self.separators):
            sequence = sequence[: self.max_length + 2]
        return sequence

    def _run(
        self,
        keys: list[tuple[str, ...]],
        encoded: dict[str, _Encoded],
        batch_size: int,
        progress: bool,
    ) -> dict[tuple[str, ...], tuple[float, Any]]:
        """``{key: (score, tag probabilities [mt tokens, labels] or None)}``."""
        sequences = [self._joined(k, encoded) for k in keys]
        firsts = [len(encoded[k[0]].ids) for k in keys]
        order = sorted(range(len(keys)), key=lambda i: len(sequences[i]))
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        out: dict[tuple[str, ...], tuple[float, Any]] = {}
        show = progress and len(batches) > 1
        with (
            progress_bar(len(keys), "COMET sequences", show, unit="sequences") as advance,
            self.torch.inference_mode(),
        ):
            for batch in batches:
                scores, probs = self._forward(
                    [sequences[i] for i in batch], [firsts[i] for i in batch]
                )
                for j, i in enumerate(batch):
                    out[keys[i]] = (scores[j], None if probs is None else probs[j])
                advance(len(batch))
        return out

    def _forward(self, batch: list[list[int]], firsts: list[int]) -> tuple[list[float], Any]:
        """Scores and per-hypothesis-token tag probabilities of one batch of sequences."""
        torch = self.torch
        types = firsts if self.token_types else None
        if self.packed:
            sent, words = self._packed_forward(batch, firsts, types)
        else:
            input_ids, mask = padded_batch(torch, batch, self.tokenizer.pad_token_id)
            input_ids, mask = input_ids.to(self.device), mask.to(self.device)
            extra = {}
            if types is not None:
                at = torch.arange(input_ids.shape[1], device=self.device)[None, :]
                extra["token_type_ids"] = (
                    at >= torch.tensor(types, device=self.device)[:, None]
                ).long()
            states = self.encoder(
                input_ids=input_ids, attention_mask=mask, output_hidden_states=True, **extra
            ).hidden_states
            states = [s.float() for s in states]
            hidden = self.mix(states, mask) if self.mix is not None else states[self._layer_index()]
            sent = hidden[:, 0, :]
            words = (
                [states[self.word_layer][i, :n] for i, n in enumerate(firsts)]
                if self.heads
                else None
            )
        scores: list[float] = self.estimator(sent).view(-1).tolist()
        if words is None:
            return scores, None
        tagger = self.heads["hidden2tag"]
        return scores, [torch.softmax(tagger(w), dim=-1) for w in words]

    def _packed_forward(
        self, batch: list[list[int]], firsts: list[int], types: list[int] | None
    ) -> tuple[Any, list[Any] | None]:
        """Sentence embeddings and hypothesis-token states of the word layer, packed; with the
        word layer on top, its hypothesis rows alone are computed there."""
        torch = self.torch
        lengths = [len(x) for x in batch]
        starts = np.cumsum([0, *lengths[:-1]])
        spans = list(zip(starts.tolist(), firsts, strict=True))
        rows = None
        if self.words_on_top:
            rows = torch.cat([torch.arange(a, a + n) for a, n in spans]).to(self.device)
        states = self.encoder.all_states(batch, self.device, types, last_rows=rows)
        if not self.heads:
            return self._embed_states(states, lengths), None
        if self.words_on_top:  # the sentence embedding reads the states below
            words = list(torch.split(states[-1], firsts))
            return self._embed_states(states[:-1], lengths), words
        words = [states[self.word_layer][a : a + n] for a, n in spans]
        return self._embed_states(states, lengths), words

    def _embed_states(self, states: list[Any], lengths: list[int]) -> Any:
        from evalab.models.comet_packed import packed_sentence_embeddings

        layer = None if self.mix is not None else self._layer_index()
        return packed_sentence_embeddings(self.torch, states, lengths, self.mix, layer, "cls")

    # -- combining the sequences ----------------------------------------------------------
    def _combine(self, rows: list[list[tuple[float, Any]]], mts: list[_Encoded]) -> UnifiedScores:
        scores = np.asarray([[s for s, _ in row] for row in rows], dtype=np.float32)
        spans = None
        if self.heads:
            weights = SPAN_INPUT_WEIGHTS if scores.shape[1] == 3 else (1.0,)
            spans = [
                self._decode(sum(w * p for w, (_, p) in zip(weights, row, strict=True)), mt)
                for row, mt in zip(rows, mts, strict=True)
            ]
        if not self.xcomet:
            return UnifiedScores(scores.mean(axis=1).astype(np.float64), spans)
        capped = np.minimum(scores, np.float32(1.0))
        if scores.shape[1] == 3:
            regression = (capped * np.asarray(XCOMET_WEIGHTS[:3], dtype=np.float32)).sum(axis=1)
        else:
            regression = capped[:, 0] * np.float32(sum(XCOMET_WEIGHTS[:3]))
        mqm = np.asarray([_mqm(s) for s in spans or []], dtype=np.float32)
        return UnifiedScores(
            (regression + mqm * np.float32(XCOMET_WEIGHTS[3])).astype(np.float64), spans
        )

    def _decode(self, probs: Any, mt: _Encoded) -> list[ErrorSpan]:
        """Runs of ``I-`` tags closed by an ``O`` (a run still open at the end is dropped,
        as unbabel-comet drops it); the severity is the first token's."""
        best, labels = probs.max(dim=-1)
        spans: list[ErrorSpan] = []
        run: list[int] = []
        for k, label in enumerate(labels.tolist()):
            inside = self.labels[label].startswith("I")
            if inside:
                run.append(k)
            elif run:
                spans.append(self._span(run, labels, best, mt))
                run = []
        return spans

    def _span(self, run: list[int], labels: Any, best: Any, mt: _Encoded) -> ErrorSpan:
        ids = [mt.ids[k] for k in run]
        return ErrorSpan(
            text=self.tokenizer.decode(ids),
            severity=self.labels[int(labels[run[0]])].split("-", 1)[1],
            confidence=float(best[run].mean()),
            start=int(mt.offsets[run[0]][0]),
            end=int(mt.offsets[run[-1]][1]),
        )


def _mqm(spans: list[ErrorSpan]) -> float:
    """xCOMET's score from its spans: 1 - min(25, penalties) / 25."""
    penalty = min(MQM_CAP, sum(SEVERITY_PENALTY.get(s.severity, 0) for s in spans))
    return (MQM_CAP - penalty) / MQM_CAP
