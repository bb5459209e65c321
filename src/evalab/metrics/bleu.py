"""BLEU (Papineni et al., 2002) exactly as sacrebleu 2.x computes it.

Statistics per segment (sacrebleu's layout, so significance code written for either
library reads the other's rows): ``hyp_len``, ``ref_len`` (the reference length closest
to the hypothesis length, ties to the shorter), then clipped matches ``matches_1..N`` and
hypothesis n-gram counts ``totals_1..N``. The corpus score is computed once from the
column sums, never as a mean of sentence scores:

    BLEU = BP * exp(mean_n log p_n),  p_n = matches_n / totals_n,
    BP = 1 if c > r else exp(1 - r / c)

Smoothing follows Chen & Cherry (2014), "A Systematic Comparison of Smoothing Techniques
for Sentence-Level BLEU", as sacrebleu implements it: ``none``; ``floor`` (method 1:
a zero count becomes ``smooth_value``, default 0.1); ``add-k`` (method 2, Lin & Och 2004:
add ``smooth_value``, default 1, to matches and totals of orders n >= 2); ``exp`` (method
3, mteval-v13a's NIST smoothing: the k-th zero precision becomes 1 / (2^k totals_n)).

>>> from evalab.metrics.bleu import BLEU
>>> bleu = BLEU()
>>> s = bleu.corpus_score(["the cat is on the mat"], [["the cat is on the mat"]])
>>> round(s.score, 4), s.verbose
(100.0, '100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 6 ref_len = 6)')
>>> s.signature.rsplit("|", 1)[0]
'bleu|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp'
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import Any, ClassVar

import numpy as np

from evalab import _kernel
from evalab._kernel import Packed, offsets_of
from evalab.errors import InputError, SettingsError
from evalab.metrics._ngrams import MAX_ORDER, NgramMetric, match_counts_many
from evalab.metrics.base import MetricSettings, nrefs_field, setting
from evalab.metrics.stats_value import NRefs

__all__ = ["BLEU", "BLEUSettings", "bleu_from_sums", "bleu_score"]

#: sacrebleu's tokenizers; any other registered tokenizer name is accepted as well
MT_TOKENIZERS = ("13a", "intl", "zh", "char", "none", "ja-mecab", "ko-mecab")
SMOOTH_METHODS = ("none", "floor", "add-k", "exp")
#: default smoothing values (Chen & Cherry 2014), as sacrebleu's BLEU.SMOOTH_DEFAULTS
SMOOTH_DEFAULTS: dict[str, float | None] = {"none": None, "floor": 0.1, "add-k": 1.0, "exp": None}
#: sacrebleu's floor for log(0): keeps the sum finite so exp() gives 0
_LOG_ZERO = -9999999999.0


@dataclass(frozen=True)
class BLEUSettings(MetricSettings):
    """Settings of :class:`BLEU`, named as sacrebleu's arguments."""

    lowercase: bool = setting(False, "Lowercase hypotheses and references before tokenizing.")
    tokenize: str = setting(
        "13a",
        "Tokenizer: 13a (WMT default), intl, zh (Chinese targets), char, none, ja-mecab, "
        "ko-mecab, or any evalab tokenizer name.",
    )
    smooth_method: str = setting("exp", "Smoothing: none, floor, add-k, exp.", SMOOTH_METHODS)
    smooth_value: float | None = setting(
        None, "Value for floor (default 0.1) and add-k (default 1); ignored otherwise."
    )
    max_ngram_order: int = setting(4, "Highest n-gram order N.")
    effective_order: bool | None = setting(
        None,
        "Leave out orders without any n-gram (Lin & Och 2004). Default: no for corpus "
        "scores, yes for sentence scores (as sacrebleu's sentence_bleu).",
    )

    def validate(self) -> None:
        super().validate()
        if (
            isinstance(self.max_ngram_order, bool)
            or not isinstance(self.max_ngram_order, int)
            or self.max_ngram_order < 1
        ):
            raise SettingsError(
                f"bleu: max_ngram_order must be a positive integer, got {self.max_ngram_order!r}"
            )
        if self.max_ngram_order > MAX_ORDER:
            # every order is a pair of columns per segment: 10**9 would hang, not score
            raise SettingsError(
                f"bleu: max_ngram_order must be at most {MAX_ORDER}, got {self.max_ngram_order} (4 is the standard)"
            )
        if self.smooth_value is not None and not (0 <= float(self.smooth_value) < math.inf):
            raise SettingsError(
                f"bleu: smooth_value must be a finite number >= 0, got {self.smooth_value!r}"
            )
        from evalab.text.tokenizers import TOKENIZERS

        if self.tokenize not in TOKENIZERS:
            raise SettingsError(
                f"bleu: unknown tokenizer {self.tokenize!r}; expected one of {', '.join(TOKENIZERS)}"
            )

    @property
    def smooth_k(self) -> float:
        """The smoothing value in use (the method's default when ``smooth_value`` is None)."""
        if self.smooth_value is not None:
            return float(self.smooth_value)
        return SMOOTH_DEFAULTS[self.smooth_method] or 0.0


def _brevity_penalty(sys_len: np.ndarray, ref_len: np.ndarray) -> np.ndarray:
    """BLEU's brevity penalty, element by element as sacrebleu computes it (0 for no output)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(
            sys_len < ref_len,
            np.where(sys_len > 0, np.exp(1 - ref_len / np.where(sys_len > 0, sys_len, 1.0)), 0.0),
            1.0,
        )


def bleu_from_sums(
    sums: np.ndarray,
    max_order: int,
    smooth_method: str = "exp",
    smooth_value: float = 0.0,
    effective_order: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BLEU, precisions (percent) and BP from summed stats ``[..., 2 + 2N]``.

    Vectorised over leading axes; every element goes through the same floating-point
    operations, in the same order, as sacrebleu's ``BLEU.compute_bleu``, so the numbers
    are identical. Returns ``(score[...], precisions[..., N], bp[...])``.
    """
    sums = np.asarray(sums, dtype=np.float64)
    if sums.shape[-1] != 2 + 2 * max_order:
        raise InputError(f"bleu: sums must have {2 + 2 * max_order} columns, got {sums.shape[-1]}")
    sys_len = sums[..., 0]
    ref_len = sums[..., 1]
    correct = sums[..., 2 : 2 + max_order].copy()
    total = sums[..., 2 + max_order :].copy()
    bp = _brevity_penalty(sys_len, ref_len)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # sacrebleu returns 0 (with zero precisions) when nothing matched at all (#141)
        any_match = np.any(correct != 0, axis=-1)
        precisions = np.zeros(correct.shape, dtype=np.float64)
        active = np.ones(sys_len.shape, dtype=bool)
        eff = np.full(sys_len.shape, max_order, dtype=np.int64)
        mteval = np.ones(sys_len.shape, dtype=np.float64)
        for n in range(max_order):
            if smooth_method == "add-k" and n > 0:
                correct[..., n] += smooth_value
                total[..., n] += smooth_value
            c = correct[..., n]
            t = total[..., n]
            active &= t != 0
            if effective_order:
                eff = np.where(active, n + 1, eff)
            zero = c == 0
            safe_t = np.where(t != 0, t, 1.0)
            if smooth_method == "exp":
                mteval = np.where(active & zero, mteval * 2, mteval)
                smoothed = 100.0 / (mteval * safe_t)
            elif smooth_method == "floor":
                smoothed = 100.0 * smooth_value / safe_t
            else:
                smoothed = np.zeros_like(t)
            p = np.where(zero, smoothed, 100.0 * c / safe_t)
            precisions[..., n] = np.where(active, p, 0.0)
        log_sum = np.zeros(sys_len.shape, dtype=np.float64)
        for n in range(max_order):
            p = precisions[..., n]
            logp = np.where(p == 0.0, _LOG_ZERO, np.log(np.where(p == 0.0, 1.0, p)))
            log_sum = np.where(n < eff, log_sum + logp, log_sum)
        score = bp * np.exp(log_sum / eff)
    score = np.where(any_match, score, 0.0)
    precisions = np.where(any_match[..., None], precisions, 0.0)
    return score, precisions, bp


def bleu_score(
    sums: Sequence[float],
    max_order: int,
    smooth_method: str = "exp",
    smooth_value: float = 0.0,
    effective_order: bool = False,
) -> tuple[float, list[float], float]:
    """BLEU, precisions (percent) and BP of one summed stats vector ``[2 + 2N]``.

    This is the corpus score: scalar Python arithmetic (``math.exp``/``math.log``, a
    left-to-right ``sum``) in the order of sacrebleu's ``BLEU.compute_bleu``, so the float
    is sacrebleu's bit for bit on every CPU. :func:`bleu_from_sums` computes the same
    formula vectorised with numpy for thousands of bootstrap resamples; numpy's exp/log
    may differ from libm's by one ulp, which cannot move a percentile interval or a
    p-value, but a cited corpus score must be exact.

    >>> score, precisions, bp = bleu_score([4, 5, 3, 2, 1, 0, 4, 3, 2, 1], 4)
    >>> round(score, 6), precisions[:2], round(bp, 6)
    (46.307772, [75.0, 66.66666666666667], 0.778801)
    """
    sys_len, ref_len = float(sums[0]), float(sums[1])
    correct = [float(c) for c in sums[2 : 2 + max_order]]
    total = [float(t) for t in sums[2 + max_order : 2 + 2 * max_order]]
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    precisions = [0.0] * max_order
    if not any(correct):  # sacrebleu #141: nothing matched at all
        return 0.0, precisions, bp
    smooth_mteval = 1.0
    eff_order = max_order
    for n in range(1, max_order + 1):
        if smooth_method == "add-k" and n > 1:
            correct[n - 1] += smooth_value
            total[n - 1] += smooth_value
        if total[n - 1] == 0:
            break
        if effective_order:
            eff_order = n
        if correct[n - 1] == 0:
            if smooth_method == "exp":
                smooth_mteval *= 2
                precisions[n - 1] = 100.0 / (smooth_mteval * total[n - 1])
            elif smooth_method == "floor":
                precisions[n - 1] = 100.0 * smooth_value / total[n - 1]
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    log_sum = sum([_LOG_ZERO if p == 0.0 else math.log(p) for p in precisions[:eff_order]])
    return bp * math.exp(log_sum / eff_order), precisions, bp


@dataclass
class _RefTable:
    """Reference side of BLEU, computed once per reference set and reused for every system."""

    streams: list[Packed]
    lengths: np.ndarray  # [nrefs, nseg]


class BLEU(NgramMetric[_RefTable]):
    """Corpus BLEU as sacrebleu 2.x: same numbers, same signature, same statistics layout.

    Reference-side work (tokenizing, packing) is cached per reference set, so scoring many
    systems against the same references tokenizes the references once.
    """

    name = "bleu"
    settings_class = BLEUSettings
    releases_gil = _kernel.mt is not None  # n-gram matching runs in the kernel without the GIL
    settings: BLEUSettings
    test_setting_values: ClassVar[Mapping[str, Sequence[Any]]] = {
        "tokenize": ("intl", "zh", "char", "none"),
        # the value only counts under the methods that use it
        "smooth_value": (
            {"smooth_method": "floor", "smooth_value": 0.5},
            {"smooth_method": "add-k", "smooth_value": 0.125},
        ),
    }

    #: distinct segments whose token ids are memoised before the caches are emptied
    SEGMENT_CACHE_SIZE = 1 << 20

    def __init__(self, settings: BLEUSettings | None = None, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        self._reset_caches()
        self._words_fn: Callable[[str], Sequence[str]] | None = None

    def _reset_caches(self) -> None:
        # token -> id, segment string -> token ids, reference set -> packed references;
        # ids are only compared with each other, so they never change a number
        # a missing token gets the next id (len of the dict) inside map(), at C speed
        self._vocab: defaultdict[str, int] = defaultdict()
        self._vocab.default_factory = self._vocab.__len__
        self._seg_ids: dict[str, list[int]] = {}
        self._ref_cache.clear()
        # the compiled tokenizer's own token table (no str object per token)
        self._kernel_vocab: Any = None

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.update(_vocab=None, _seg_ids={}, _words_fn=None, _kernel_vocab=None)
        return state

    def _bound_caches(self) -> None:
        """Empty the caches when they have grown past ``SEGMENT_CACHE_SIZE``.

        Called only before the references are looked up: emptying them between encoding
        the references and the hypotheses would give the two sides different ids.
        """
        sizes = [len(self._seg_ids), len(self._vocab) if self._vocab is not None else 0]
        if self._kernel_vocab is not None:
            sizes.append(_kernel.vocab_size(self._kernel_vocab))
        if self._vocab is None or max(sizes) > self.SEGMENT_CACHE_SIZE:
            self._reset_caches()

    @property
    def stat_names(self) -> tuple[str, ...]:
        n = self.settings.max_ngram_order
        return (
            "hyp_len",
            "ref_len",
            *(f"matches_{i}" for i in range(1, n + 1)),
            *(f"totals_{i}" for i in range(1, n + 1)),
        )

    # -- tokenization ----------------------------------------------------------------------
    def _tokenizer(self) -> Any:
        from evalab.text.tokenizers import get_tokenizer

        return get_tokenizer(self.settings.tokenize)

    def _words(self) -> Callable[[str], Sequence[str]]:
        """The preprocessing of sacrebleu's BLEU: lowercase, rstrip, tokenize, split."""
        if self._words_fn is None:
            tok = self._tokenizer()
            cached = getattr(tok, "words", None)
            split = cached if cached is not None else (lambda s: tuple(tok(s)))
            if self.settings.lowercase:
                self._words_fn = lambda s: split(s.lower().rstrip())
            else:
                self._words_fn = lambda s: split(s.rstrip())
        return self._words_fn

    def _tok_signature(self) -> str:
        tok = self._tokenizer()
        return str(getattr(tok, "signature", None) or getattr(tok, "name", self.settings.tokenize))

    # -- statistics ------------------------------------------------------------------------
    def _encode(self, segments: list[str], add: bool = True) -> Packed:
        """Token ids of every segment, packed (memoised per distinct segment string).

        With the compiled tokenizer and ``add=False`` (hypotheses), a token no reference
        has gets id -1 instead of a new id: it can never be part of a matching n-gram.
        """
        tok = self._tokenizer()
        cjk = getattr(tok, "compiled_cjk", None)
        if cjk is not None:
            # 13a/zh: tokenization and id lookup of the whole list in one kernel call
            if self.settings.lowercase:
                lines = [seg.lower().rstrip() for seg in segments]
            else:
                lines = [seg.rstrip() for seg in segments]
            if self._kernel_vocab is None:
                self._kernel_vocab = _kernel.new_vocab()
            words = getattr(tok, "words", None) or (lambda s: tuple(tok(s)))
            return Packed(*_kernel.encode_lines(lines, self._kernel_vocab, cjk, add, words))
        memo, lookup, words = self._seg_ids, self._vocab.__getitem__, self._words()
        per_seg = []
        for seg in segments:
            ids = memo.get(seg)
            if ids is None:
                ids = memo[seg] = list(map(lookup, words(seg)))
            per_seg.append(ids)
        offsets = offsets_of(map(len, per_seg), len(per_seg))
        flat = np.fromiter(chain.from_iterable(per_seg), dtype=np.int64, count=int(offsets[-1]))
        return Packed(flat, offsets)

    def _prepare_references(self, references: list[list[str]]) -> _RefTable:
        streams = [self._encode(stream) for stream in references]
        return _RefTable(streams, np.stack([s.lengths for s in streams]))

    def _segment_stats_many(
        self, systems: list[list[str]], references: list[list[str]]
    ) -> list[np.ndarray]:
        n = self.settings.max_ngram_order
        self._bound_caches()
        table = self._reference_table(references)
        hyps = [self._encode(hypotheses, add=False) for hypotheses in systems]
        rows = []
        for hyp, (_, matches) in zip(hyps, match_counts_many(hyps, table.streams, n), strict=True):
            hyp_len = hyp.lengths
            totals = np.maximum(hyp_len[:, None] - np.arange(n)[None, :], 0)
            rows.append(
                np.column_stack(
                    [hyp_len, closest_ref_len(hyp_len, table.lengths), matches, totals]
                ).astype(np.float64)
            )
        return rows

    # -- scores ----------------------------------------------------------------------------
    def sentence_settings(self) -> BLEUSettings:
        """Sentence BLEU uses effective order unless it was set (as sacrebleu's sentence_bleu)."""
        if self.settings.effective_order is None:
            return replace(self.settings, effective_order=True)
        return self.settings

    def _args(self) -> tuple[int, str, float, bool]:
        s = self.settings
        return s.max_ngram_order, s.smooth_method, s.smooth_k, bool(s.effective_order)

    def scores_from_sums(self, sums: np.ndarray) -> np.ndarray:
        """Corpus BLEU (0-100) of summed stats ``[..., 2 + 2N]`` (e.g. bootstrap resamples).

        One vector ``[2 + 2N]`` (a corpus) goes through sacrebleu's scalar arithmetic
        (:func:`bleu_score`), so the cited score is sacrebleu's float bit for bit.
        """
        sums = np.asarray(sums, dtype=np.float64)
        if sums.ndim == 1 and sums.shape == (2 + 2 * self.settings.max_ngram_order,):
            return np.array(bleu_score(sums.tolist(), *self._args())[0])
        return bleu_from_sums(sums, *self._args())[0]

    def _score_components(self, sums: np.ndarray) -> tuple[dict[str, Any], str]:
        n = self.settings.max_ngram_order
        _, prec, bp = bleu_score(sums.tolist(), *self._args())
        sys_len, ref_len = int(sums[0]), int(sums[1])
        ratio = sys_len / ref_len if ref_len else 0.0
        verbose = (
            "/".join(f"{p:.1f}" for p in prec)
            + f" (BP = {bp:.3f} ratio = {ratio:.3f} hyp_len = {sys_len:d} ref_len = {ref_len:d})"
        )
        components = {
            "precisions": prec,
            "bp": bp,
            "sys_len": sys_len,
            "ref_len": ref_len,
            "ratio": ratio,
            "counts": [int(c) for c in sums[2 : 2 + n]],
            "totals": [int(t) for t in sums[2 + n :]],
        }
        return components, verbose

    # -- signature ---------------------------------------------------------------------------
    def _signature_fields(self, nrefs: NRefs) -> list[tuple[str, str]]:
        s = self.settings
        smooth = s.smooth_method
        if SMOOTH_DEFAULTS[smooth] is not None:
            # sacrebleu prints the value in brackets with two decimals: floor[0.10]; a value
            # that two decimals would round is printed in full, so it is never hidden
            k = f"{s.smooth_k:.2f}"
            smooth += f"[{k if float(k) == s.smooth_k else repr(s.smooth_k)}]"
        fields = [
            nrefs_field(nrefs),
            ("case", "lc" if s.lowercase else "mixed"),
            ("eff", "yes" if s.effective_order else "no"),
            ("tok", self._tok_signature()),
            ("smooth", smooth),
        ]
        if s.max_ngram_order != 4:
            # sacrebleu's signature leaves the order out; at its default 4 ours is the same
            # string, any other order must be visible
            fields.append(("ngram", str(s.max_ngram_order)))
        return fields


def closest_ref_len(hyp_len: np.ndarray, ref_lens: np.ndarray) -> np.ndarray:
    """Per segment, the reference length closest to ``hyp_len``; ties go to the shorter.

    >>> closest_ref_len(np.array([5, 5]), np.array([[4, 7], [6, 3]])).tolist()
    [4, 3]
    """
    best: np.ndarray = ref_lens[0].copy()
    best_diff = np.abs(hyp_len - best)
    for lens in ref_lens[1:]:
        diff = np.abs(hyp_len - lens)
        better = (diff < best_diff) | ((diff == best_diff) & (lens < best))
        best = np.where(better, lens, best)
        best_diff = np.where(better, diff, best_diff)
    return best
