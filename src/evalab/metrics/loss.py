"""Corpus cross-entropy and perplexity with additive per-segment statistics.

What ``hypotheses`` and ``references`` mean here: a language-model loss is reference-free.
The *hypotheses* are the texts (one segment = one document) whose likelihood is measured by
the causal LM named in the ``model`` setting; ``references`` are not used (they are
accepted, and their layout checked, only so the metric runs inside ``evalab score`` next
to BLEU). Without a ``model`` there is no way to score text, and :meth:`stats` says so and
points to the constructors that build rows from numbers you already have:

* :meth:`LossMetric.stats_from_nll` -- per-segment summed NLL (nats) and token counts
  (plus optional UTF-8 byte and word counts, or the texts to count them from);
* :meth:`LossMetric.stats_from_token_logprobs` -- per-segment lists of token log-probs;
* :meth:`LossMetric.stats_from_logits` -- a batch of logits and labels (one row per
  sequence), computed by :mod:`evalab.nll` with the same masking and shift options.

Stats rows (one per segment, additive): ``nll`` (summed negative log-likelihood, nats),
``tokens``, ``bytes`` (UTF-8), ``words`` (lm-evaluation-harness' ``re.split(r"\\s+")``
count), and for the per-document mean: ``documents`` (1 if the segment has tokens),
``document_nats`` (the segment's nats per token) and ``document_ppl`` (its perplexity).
Bootstrap CIs and paired tests resample these rows like any other metric.

Settings: ``per`` (token, byte or word: the denominator of the corpus mean), ``mean``
(``tokens``: total NLL / total count over the corpus, the usual corpus perplexity;
``documents``: the mean of the per-document values, as Hugging Face ``evaluate``'s
``mean_perplexity``), ``unit`` for cross-entropy (nats or bits), and the LM protocol
(``model``, ``max_length``, ``stride``, ``batch_size``, ``bos``, ``device``, ``dtype``).

>>> ppl = Perplexity()
>>> rows = ppl.stats_from_nll([2.0, 4.0], [2, 2], texts=["a b", "c d"])
>>> round(ppl.aggregate(rows).score, 6)        # exp(6 / 4)
4.481689
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from evalab.errors import InputError, SettingsError
from evalab.metrics.base import (
    Metric,
    MetricSettings,
    Refs,
    Score,
    Stats,
    check_references,
    empty_corpus_error,
    setting,
)
from evalab.metrics.stats_value import NRefs
from evalab.nll import (
    IGNORE_INDEX,
    LN2,
    count_bytes,
    count_words,
    shift_pairs,
    token_loss,
)

__all__ = ["CrossEntropy", "LossSettings", "Perplexity", "PerplexitySettings"]

STAT_NAMES = ("nll", "tokens", "bytes", "words", "documents", "document_nats", "document_ppl")
_NLL, _TOK, _BYTES, _WORDS, _DOCS, _DOC_NATS, _DOC_PPL = range(len(STAT_NAMES))
_DENOM = {"token": _TOK, "byte": _BYTES, "word": _WORDS}


@dataclass(frozen=True)
class PerplexitySettings(MetricSettings):
    """Settings shared by the loss metrics: denominator, mean, and the LM protocol."""

    per: str = setting(
        "token",
        "denominator: token, byte (UTF-8) or word (whitespace split)",
        choices=("token", "byte", "word"),
    )
    mean: str = setting(
        "tokens",
        "tokens: corpus total / corpus count; documents: mean of per-document values",
        choices=("tokens", "documents"),
    )
    model: str | None = setting(
        None,
        "local Hugging Face causal LM directory used to score text (None: rows come from stats_from_*)",
        path=True,
    )
    max_length: int | None = setting(
        None, "window length in tokens (None: the model's context size)"
    )
    stride: int | None = setting(None, "tokens between window starts (None: half the window)")
    batch_size: int = setting(8, "windows per forward pass")
    bos: bool = setting(False, "prepend the tokenizer's BOS token so the first token is scored")
    device: str = setting("cpu", "torch device of the LM (cpu, cuda, cuda:1...)")
    dtype: str = setting(
        "float32", "LM weights dtype", choices=("float32", "float64", "bfloat16", "float16")
    )

    def validate(self) -> None:
        super().validate()
        if self.mean == "documents" and self.per != "token":
            raise SettingsError(
                "mean='documents' averages per-document values per token; use per='token'"
            )


@dataclass(frozen=True)
class LossSettings(PerplexitySettings):
    """Cross-entropy settings: those of perplexity plus the log base of the result."""

    unit: str = setting(
        "nats",
        "unit of the result: nats (natural log) or bits (log base 2)",
        choices=("nats", "bits"),
    )


class LossMetric(Metric):
    """Shared machinery of :class:`CrossEntropy` and :class:`Perplexity`."""

    settings_class: ClassVar[type[MetricSettings]] = PerplexitySettings
    settings: PerplexitySettings
    higher_is_better: ClassVar[bool] = False
    scale: ClassVar[float] = 1.0
    #: a language model's loss on the texts themselves: ``-r`` may be left out
    needs_references = False
    _LM_ONLY = "part of the LM protocol: with model=PATH the scorer's signature fields name it; rows from numbers do not use it"
    inert_settings: ClassVar[Mapping[str, str]] = {
        "batch_size": "how many windows per forward pass: the same numbers",
        "device": "where the LM runs: the same numbers (up to the device's float arithmetic)",
        "max_length": _LM_ONLY,
        "stride": _LM_ONLY,
        "bos": _LM_ONLY,
        "dtype": _LM_ONLY,
    }
    test_setting_values: ClassVar[Mapping[str, Sequence[Any]]] = {
        # a model directory is test data the default suite does not load (tests/cli/test_ppl.py)
        "model": (),
    }

    def __init__(self, settings: MetricSettings | None = None, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        self._scorer: Any = None
        #: show a progress bar over windows on stderr (a terminal only; the CLI turns it on)
        self.progress = False
        self._source = "lm" if self.settings.model else "external"

    @property
    def stat_names(self) -> tuple[str, ...]:
        return STAT_NAMES

    # -- rows from numbers ---------------------------------------------------------------
    @staticmethod
    def stats_from_nll(
        nll: Sequence[float] | np.ndarray,
        tokens: Sequence[int] | np.ndarray,
        *,
        n_bytes: Sequence[int] | np.ndarray | None = None,
        n_words: Sequence[int] | np.ndarray | None = None,
        texts: Sequence[str] | None = None,
    ) -> np.ndarray:
        """Rows from per-segment summed NLL (nats, >= 0) and token counts (sequences or arrays).

        Byte and word counts come from ``n_bytes``/``n_words`` or are counted from
        ``texts``; without either they are 0 (then ``per='byte'``/``'word'`` is an error).
        """
        nll_a = np.asarray(nll, dtype=np.float64).reshape(-1)
        tok_a = np.asarray(tokens, dtype=np.float64).reshape(-1)
        n = nll_a.shape[0]
        if tok_a.shape[0] != n:
            raise InputError(
                f"{n} NLL values but {tok_a.shape[0]} token counts; give one of each per segment"
            )
        if not np.all(np.isfinite(nll_a)) or np.any(nll_a < 0):
            raise InputError(
                "NLL values must be finite and >= 0 (nats, summed over a segment's tokens)"
            )
        if np.any(tok_a < 0) or np.any(tok_a != np.round(tok_a)):
            raise InputError("token counts must be non-negative integers")
        if np.any((tok_a == 0) & (nll_a != 0)):
            raise InputError("a segment with 0 tokens must have NLL 0")
        if texts is not None:
            texts = list(texts)
            if len(texts) != n:
                raise InputError(f"{n} segments but {len(texts)} texts; give one text per segment")
            if n_bytes is None:
                n_bytes = [count_bytes(t) for t in texts]
            if n_words is None:
                n_words = [count_words(t) for t in texts]
        rows = np.zeros((n, len(STAT_NAMES)), dtype=np.float64)
        rows[:, _NLL] = nll_a
        rows[:, _TOK] = tok_a
        for col, values, what in ((_BYTES, n_bytes, "byte"), (_WORDS, n_words, "word")):
            if values is None:
                continue
            arr = np.asarray(values, dtype=np.float64).reshape(-1)
            if arr.shape[0] != n:
                raise InputError(f"{n} segments but {arr.shape[0]} {what} counts")
            if np.any(arr < 0):
                raise InputError(f"{what} counts must be non-negative")
            rows[:, col] = arr
        has = tok_a > 0
        rows[:, _DOCS] = has
        per_tok = np.divide(nll_a, tok_a, out=np.zeros(n), where=has)
        rows[:, _DOC_NATS] = per_tok
        rows[:, _DOC_PPL] = np.where(has, np.exp(per_tok), 0.0)
        return rows

    @classmethod
    def stats_from_token_logprobs(
        cls, logprobs: Sequence[Sequence[float]], *, texts: Sequence[str] | None = None
    ) -> np.ndarray:
        """Rows from per-segment lists of token log-probabilities (natural log, <= 0).

        >>> Perplexity.stats_from_token_logprobs([[math.log(0.5)] * 3])[0, :2].tolist()
        [2.0794415416798357, 3.0]
        """
        nll, tokens = [], []
        for i, seg in enumerate(logprobs):
            arr = np.asarray(seg, dtype=np.float64).reshape(-1)
            if np.any(~np.isfinite(arr)) or np.any(arr > 1e-9):
                raise InputError(
                    f"segment {i}: log-probabilities must be finite and <= 0 (natural log)"
                )
            nll.append(float(-arr.sum()))
            tokens.append(arr.size)
        return cls.stats_from_nll(nll, tokens, texts=texts)

    @classmethod
    def stats_from_logits(
        cls,
        logits: Any,
        labels: Any,
        *,
        shift: bool = False,
        ignore_index: int | None = IGNORE_INDEX,
        pad_id: int | None = None,
        texts: Sequence[str] | None = None,
    ) -> np.ndarray:
        """Rows from a batch of logits ``[n, T, V]`` and labels ``[n, T]``: one row per sequence.

        ``shift=True`` pairs logits at t with label t+1 (causal LM); masked positions
        (``ignore_index``, ``pad_id``) count neither in the NLL nor in the tokens.
        """
        if shift:
            logits, labels = shift_pairs(logits, labels)
        if len(getattr(logits, "shape", ())) != 3:
            raise InputError(
                f"stats_from_logits needs logits of shape [segments, T, V], got {tuple(np.shape(logits))}"
            )
        from evalab.nll import kept_mask

        losses = token_loss(logits, labels, ignore_index=ignore_index, pad_id=pad_id)
        keep = kept_mask(labels, ignore_index=ignore_index, pad_id=pad_id)
        if hasattr(losses, "detach"):
            losses = losses.detach().double().cpu().numpy()
            keep = keep.cpu().numpy()
        return cls.stats_from_nll(losses.sum(axis=1), np.asarray(keep).sum(axis=1), texts=texts)

    # -- rows from text --------------------------------------------------------------------
    @property
    def scorer(self) -> Any:
        """The :class:`~evalab.models.causal_lm.CausalLMScorer` of the ``model`` setting."""
        s = self.settings
        if not s.model:
            raise SettingsError(
                f"{self.name}: scoring text needs a causal LM: set model=PATH (a local Hugging "
                "Face model directory), or build rows from numbers with stats_from_nll(), "
                "stats_from_token_logprobs() or stats_from_logits() and call aggregate(rows)"
            )
        if self._scorer is None:
            from evalab.models.causal_lm import CausalLMScorer

            self._scorer = CausalLMScorer(
                s.model,
                max_length=s.max_length,
                stride=s.stride,
                batch_size=s.batch_size,
                bos=s.bos,
                device=s.device,
                dtype=s.dtype,
            )
        return self._scorer

    def stats(self, hypotheses: Sequence[str], references: Refs | None = None) -> Stats:
        """Rows for texts scored by the ``model`` LM (each hypothesis is one document).

        ``references`` are not used by a language-model loss; if given, their layout is
        still checked so a misaligned file is reported instead of ignored.
        """
        hyps, refs = check_references(hypotheses, references or [], metric=self.name, optional=True)
        nrefs: NRefs = len(refs) or None
        return self.make_stats(self._segment_stats(hyps, []), nrefs)

    def _segment_stats(self, hypotheses: list[str], references: list[list[str]]) -> np.ndarray:
        scorer = self.scorer
        docs = scorer.score_texts(hypotheses, progress=self.progress)
        return self.stats_from_nll(
            [d.nll for d in docs], [d.tokens for d in docs], texts=hypotheses
        )

    def corpus_score(self, hypotheses: Sequence[str], references: Refs | None = None) -> Score:
        """Score texts with the configured LM (references are optional and unused)."""
        if not isinstance(hypotheses, str):
            hypotheses = list(hypotheses)
            if not hypotheses:
                raise empty_corpus_error(self.name)
        return self.aggregate(self.stats(hypotheses, references))

    # -- scoring ---------------------------------------------------------------------------
    def _nats(self, sums: np.ndarray) -> np.ndarray:
        """Nats per unit from summed rows, vectorised over leading axes (NaN if no count)."""
        s = self.settings
        sums = np.asarray(sums, dtype=np.float64)
        if s.mean == "documents":
            num, den = sums[..., _DOC_NATS], sums[..., _DOCS]
        else:
            num, den = sums[..., _NLL], sums[..., _DENOM[s.per]]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)

    def _rates(self, sums: np.ndarray) -> dict[str, Any]:
        nll, tokens, n_bytes, words = (float(sums[i]) for i in (_NLL, _TOK, _BYTES, _WORDS))
        if tokens <= 0:
            raise InputError(
                f"{self.name}: no scored tokens in the corpus; cross-entropy and perplexity "
                "of zero tokens are undefined"
            )
        per_token = nll / tokens
        comps: dict[str, Any] = {
            "tokens": int(tokens),
            "nll": nll,
            "nats_per_token": per_token,
            "bits_per_token": per_token / LN2,
            "perplexity_per_token": math.exp(per_token),
            "bytes": int(n_bytes),
            "words": int(words),
            "bits_per_byte": nll / (n_bytes * LN2) if n_bytes > 0 else math.nan,
            "byte_perplexity": math.exp(nll / n_bytes) if n_bytes > 0 else math.nan,
            "word_perplexity": math.exp(nll / words) if words > 0 else math.nan,
            "documents": int(sums[_DOCS]),
            "mean_document_perplexity": float(sums[_DOC_PPL] / sums[_DOCS])
            if sums[_DOCS] > 0
            else math.nan,
        }
        return comps

    def _check_denominator(self, sums: np.ndarray) -> None:
        s = self.settings
        if s.mean == "tokens" and s.per != "token" and sums[_DENOM[s.per]] <= 0:
            raise InputError(
                f"{self.name}: per='{s.per}' needs {s.per} counts; give texts (or n_bytes / "
                "n_words) when building the rows"
            )

    def _signature_fields(self, nrefs: NRefs) -> list[tuple[str, str]]:
        s = self.settings
        fields = [("per", s.per), ("mean", s.mean)]
        if s.model:
            fields += self.scorer.signature_fields()
        else:
            fields.append(("lm", "external"))
        return fields


class Perplexity(LossMetric):
    """Perplexity: exp of the mean negative log-likelihood (lower is better)."""

    name: ClassVar[str] = "perplexity"
    bounds: ClassVar[tuple[float, float] | None] = (1.0, math.inf)
    settings_class: ClassVar[type[MetricSettings]] = PerplexitySettings

    def scores_from_sums(self, sums: np.ndarray) -> np.ndarray:
        sums = np.asarray(sums, dtype=np.float64)
        if self.settings.mean == "documents":
            den = sums[..., _DOCS]
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(den > 0, sums[..., _DOC_PPL] / np.where(den > 0, den, 1.0), np.nan)
        scores: np.ndarray = np.exp(self._nats(sums))
        return scores

    def _score_components(self, sums: np.ndarray) -> tuple[dict[str, Any], str]:
        self._check_denominator(sums)
        comps = self._rates(sums)
        verbose = (
            f"{comps['nats_per_token']:.4f} nats/token = {comps['bits_per_token']:.4f} bits/token "
            f"over {comps['tokens']} tokens"
        )
        return comps, verbose


class CrossEntropy(LossMetric):
    """Cross-entropy: mean negative log-likelihood in nats or bits (lower is better)."""

    name: ClassVar[str] = "cross_entropy"
    bounds: ClassVar[tuple[float, float] | None] = (0.0, math.inf)
    settings_class: ClassVar[type[MetricSettings]] = LossSettings
    settings: LossSettings

    def scores_from_sums(self, sums: np.ndarray) -> np.ndarray:
        nats = self._nats(sums)
        return nats / LN2 if self.settings.unit == "bits" else nats

    def _score_components(self, sums: np.ndarray) -> tuple[dict[str, Any], str]:
        self._check_denominator(sums)
        comps = self._rates(sums)
        verbose = f"{self.settings.unit}/{self.settings.per} over {comps['tokens']} tokens, ppl {comps['perplexity_per_token']:.4f}"
        return comps, verbose

    def _signature_fields(self, nrefs: NRefs) -> list[tuple[str, str]]:
        return [("unit", self.settings.unit), *super()._signature_fields(nrefs)]
