"""chrF (Popović, 2015) and chrF++ (Popović, 2017) exactly as sacrebleu 2.x computes them.

Statistics per segment, sacrebleu's layout: for every character order 1..``char_order``
and then every word order 1..``word_order``, the triple (hypothesis n-grams, reference
n-grams, matches). With several references, each segment keeps the triple of the
reference with the best segment-level chrF (the first one on ties), as sacrebleu does;
the corpus score is computed once from the column sums:

    P_n = matches_n / hyp_n,  R_n = matches_n / ref_n   (averaged over orders present)
    chrF_beta = (1 + beta^2) P R / (beta^2 P + R)

Characters are taken without whitespace unless ``whitespace`` is set; word n-grams split
one punctuation mark off the start or end of a word (Popović's chrF++.py).
``eps_smoothing`` switches to the reference script's per-order epsilon smoothing
(signature ``eff:no``); the default averages over effective orders (``eff:yes``).

>>> from evalab.metrics.chrf import CHRF
>>> s = CHRF().corpus_score(["the cat sat"], [["the cat sat"]])
>>> s.score, CHRF().signature_for(1).rsplit("|", 1)[0]
(100.0, 'chrf|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalab import _kernel
from evalab._kernel import Packed, TokenTable
from evalab.errors import InputError, SettingsError
from evalab.metrics._ngrams import (
    MAX_ORDER,
    NgramMetric,
    match_counts_many,
    pack_chars,
)
from evalab.metrics.base import MetricSettings, nrefs_field, setting
from evalab.metrics.stats_value import NRefs

__all__ = ["CHRF", "CHRFPlusPlus", "CHRFSettings", "chrf_from_sums", "chrf_score"]

#: ASCII punctuation split off word edges for chrF++ word n-grams (chrF++.py)
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_EPS = 1e-16


@dataclass(frozen=True)
class CHRFSettings(MetricSettings):
    """Settings of :class:`CHRF`, named as sacrebleu's arguments."""

    char_order: int = setting(6, "Character n-gram order.")
    word_order: int = setting(0, "Word n-gram order (2 = chrF++).")
    beta: int = setting(2, "Weight of recall relative to precision.")
    lowercase: bool = setting(False, "Lowercase hypotheses and references.")
    whitespace: bool = setting(False, "Keep whitespace in character n-grams.")
    eps_smoothing: bool = setting(
        False, "Epsilon smoothing per order as chrF++.py/Moses/NLTK (default: effective order)."
    )

    def validate(self) -> None:
        super().validate()
        for name in ("char_order", "word_order", "beta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise SettingsError(f"chrf: {name} must be a non-negative integer, got {value!r}")
        if self.char_order + self.word_order < 1:
            raise SettingsError("chrf: char_order + word_order must be at least 1")
        for name in ("char_order", "word_order"):
            if getattr(self, name) > MAX_ORDER:
                # every order is three columns per segment: 10**8 would hang, not score
                raise SettingsError(
                    f"chrf: {name} must be at most {MAX_ORDER}, got {getattr(self, name)}"
                )


def chrf_from_sums(
    sums: np.ndarray, order: int, beta: int = 2, eps_smoothing: bool = False
) -> np.ndarray:
    """chrF (0-100) from stats ``[..., 3 * order]``, vectorised over leading axes.

    Element by element the same operations, in the same order, as sacrebleu's
    ``CHRF._compute_f_score``, so the numbers (and hence the best-reference choices that
    depend on them) are identical.
    """
    sums = np.asarray(sums, dtype=np.float64)
    if sums.shape[-1] != 3 * order:
        raise InputError(f"chrf: sums must have {3 * order} columns, got {sums.shape[-1]}")
    factor = beta**2
    shape = sums.shape[:-1]
    score = np.zeros(shape)
    avg_prec = np.zeros(shape)
    avg_rec = np.zeros(shape)
    eff = np.zeros(shape, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(order):
            n_hyp, n_ref, n_match = sums[..., 3 * i], sums[..., 3 * i + 1], sums[..., 3 * i + 2]
            prec = np.where(n_hyp > 0, n_match / np.where(n_hyp > 0, n_hyp, 1.0), _EPS)
            rec = np.where(n_ref > 0, n_match / np.where(n_ref > 0, n_ref, 1.0), _EPS)
            denom = factor * prec + rec
            term = (1 + factor) * prec * rec / np.where(denom > 0, denom, 1.0)
            score = score + np.where(denom > 0, term, _EPS)
            present = (n_hyp > 0) & (n_ref > 0)
            avg_prec = np.where(present, avg_prec + prec, avg_prec)
            avg_rec = np.where(present, avg_rec + rec, avg_rec)
            eff = eff + present
        if eps_smoothing:
            return 100 * score / order
        safe_eff = np.where(eff > 0, eff, 1)
        avg_prec = np.where(eff > 0, avg_prec / safe_eff, 0.0)
        avg_rec = np.where(eff > 0, avg_rec / safe_eff, 0.0)
        f = (1 + factor) * avg_prec * avg_rec
        f = f / np.where(avg_prec + avg_rec != 0, factor * avg_prec + avg_rec, 1.0)
        return np.where(avg_prec + avg_rec != 0, 100 * f, 0.0)


def chrf_score(
    sums: Sequence[float], order: int, beta: int = 2, eps_smoothing: bool = False
) -> float:
    """chrF (0-100) of one summed stats vector ``[3 * order]``: the corpus score.

    Scalar Python arithmetic in the order of sacrebleu's ``CHRF._compute_f_score``, so the
    float is sacrebleu's bit for bit. :func:`chrf_from_sums` is the same formula
    vectorised for resampling (it has no transcendental functions, so it agrees too; the
    corpus score still takes the scalar path, like BLEU's).

    >>> chrf_score([10, 10, 10] * 6, 6)
    100.0
    """
    factor = beta**2
    score = avg_prec = avg_rec = 0.0
    effective_order = 0
    for i in range(order):
        n_hyp, n_ref, n_match = (float(x) for x in sums[3 * i : 3 * i + 3])
        prec = n_match / n_hyp if n_hyp > 0 else _EPS
        rec = n_match / n_ref if n_ref > 0 else _EPS
        denom = factor * prec + rec
        score += ((1 + factor) * prec * rec / denom) if denom > 0 else _EPS
        if n_hyp > 0 and n_ref > 0:
            avg_prec += prec
            avg_rec += rec
            effective_order += 1
    if eps_smoothing:
        return 100 * score / order
    if effective_order == 0:
        avg_prec = avg_rec = 0.0
    else:
        avg_prec /= effective_order
        avg_rec /= effective_order
    if avg_prec + avg_rec:
        f = (1 + factor) * avg_prec * avg_rec
        f /= (factor * avg_prec) + avg_rec
        return 100 * f
    return 0.0


def chrf_words(sentence: str) -> list[str]:
    """Words for chrF++: whitespace split, one punctuation mark split off an edge.

    >>> chrf_words("Hello, (world) (x a.")
    ['Hello', ',', '(world', ')', '(', 'x', 'a', '.']
    """
    out: list[str] = []
    for w in sentence.split():
        if len(w) == 1:
            out.append(w)
        elif w[-1] in _PUNCTUATION:
            out.extend((w[:-1], w[-1]))
        elif w[0] in _PUNCTUATION:
            out.extend((w[0], w[1:]))
        else:
            out.append(w)
    return out


@dataclass
class _RefTable:
    """Reference side of chrF, prepared once per reference set."""

    chars: list[Packed]
    vocab: TokenTable
    words: list[Packed]


class CHRF(NgramMetric[_RefTable]):
    """chrF as sacrebleu 2.x: same numbers, signature and statistics layout."""

    name = "chrf"
    settings_class = CHRFSettings
    releases_gil = _kernel.mt is not None  # n-gram matching runs in the kernel without the GIL
    settings: CHRFSettings

    @property
    def order(self) -> int:
        """Total number of orders (character + word)."""
        return self.settings.char_order + self.settings.word_order

    @property
    def stat_names(self) -> tuple[str, ...]:
        s = self.settings
        kinds = [f"char{n}" for n in range(1, s.char_order + 1)] + [
            f"word{n}" for n in range(1, s.word_order + 1)
        ]
        return tuple(f"{k}_{part}" for k in kinds for part in ("hyp", "ref", "match"))

    @property
    def label(self) -> str:
        """sacrebleu's name for the score: chrF2, chrF2++ ..."""
        return f"chrF{self.settings.beta}" + "+" * self.settings.word_order

    # -- preprocessing -----------------------------------------------------------------------
    def _prep(self, text: str) -> str:
        return text.lower() if self.settings.lowercase else text

    def _chars(self, texts: list[str]) -> Packed:
        return pack_chars(texts, keep_whitespace=self.settings.whitespace)

    def _prepare_references(self, references: list[list[str]]) -> _RefTable:
        streams = [[self._prep(r) for r in stream] for stream in references]
        vocab = TokenTable()  # the references' words, for this reference set only
        words = (
            [vocab.pack([chrf_words(r) for r in s], dtype=np.int64) for s in streams]
            if self.settings.word_order
            else []
        )
        return _RefTable([self._chars(s) for s in streams], vocab, words)

    # -- statistics ---------------------------------------------------------------------------

    def _segment_stats_many(
        self, systems: list[list[str]], references: list[list[str]]
    ) -> list[np.ndarray]:
        s = self.settings
        table = self._reference_table(references)
        prepped = [[self._prep(h) for h in hypotheses] for hypotheses in systems]
        # per system and kind: (per_ref matches [nseg, nrefs, k], hyp packed, ref packed list, k)
        parts: list[list[tuple[np.ndarray, Packed, list[Packed], int]]] = [[] for _ in systems]
        if s.char_order:
            chars = [self._chars(hyps) for hyps in prepped]
            for part, h, (per_ref, _) in zip(
                parts, chars, match_counts_many(chars, table.chars, s.char_order), strict=True
            ):
                part.append((per_ref, h, table.chars, s.char_order))
        if s.word_order:
            words = [table.vocab.pack_known([chrf_words(x) for x in hyps]) for hyps in prepped]
            for part, h, (per_ref, _) in zip(
                parts, words, match_counts_many(words, table.words, s.word_order), strict=True
            ):
                part.append((per_ref, h, table.words, s.word_order))
        return [self._rows(part, len(references)) for part in parts]

    def _rows(
        self, parts: list[tuple[np.ndarray, Packed, list[Packed], int]], nrefs: int
    ) -> np.ndarray:
        """Stats rows of one system from its matches per kind (characters, words)."""
        s = self.settings
        nseg = len(parts[0][1].offsets) - 1
        stats = np.zeros((nrefs, nseg, 3 * self.order), dtype=np.float64)
        col = 0
        for matches, hyp, refs, k in parts:
            grams = np.arange(k)[None, :]
            hyp_tot = np.maximum(hyp.lengths[:, None] - grams, 0)
            for j, ref in enumerate(refs):
                ref_tot = np.maximum(ref.lengths[:, None] - grams, 0)
                # sacrebleu counts the hypothesis n-grams only if the reference has some
                stats[j, :, col : col + 3 * k : 3] = np.where(ref_tot > 0, hyp_tot, 0)
                stats[j, :, col + 1 : col + 3 * k : 3] = ref_tot
                stats[j, :, col + 2 : col + 3 * k : 3] = matches[:, j, :]
            col += 3 * k
        if nrefs == 1:
            single: np.ndarray = stats[0]
            return single
        # best reference per segment by segment chrF; argmax keeps the first on ties,
        # like sacrebleu's strict ">" scan, so the choice depends on reference order
        f = chrf_from_sums(stats, self.order, s.beta, s.eps_smoothing)
        best = np.argmax(f, axis=0)
        rows: np.ndarray = stats[best, np.arange(nseg)]
        return rows

    # -- scores -------------------------------------------------------------------------------
    def scores_from_sums(self, sums: np.ndarray) -> np.ndarray:
        """chrF (0-100) of summed stats ``[..., 3 * order]`` (e.g. bootstrap resamples).

        One vector ``[3 * order]`` (a corpus) goes through sacrebleu's scalar arithmetic
        (:func:`chrf_score`), so the cited score is sacrebleu's float bit for bit.
        """
        s = self.settings
        sums = np.asarray(sums, dtype=np.float64)
        if sums.shape == (3 * self.order,):
            return np.array(chrf_score(sums.tolist(), self.order, s.beta, s.eps_smoothing))
        return chrf_from_sums(sums, self.order, s.beta, s.eps_smoothing)

    def _score_components(self, sums: np.ndarray) -> tuple[dict[str, Any], str]:
        s = self.settings
        components = {
            "name": self.label,
            "char_order": s.char_order,
            "word_order": s.word_order,
            "beta": s.beta,
        }
        return components, ""

    def _signature_fields(self, nrefs: NRefs) -> list[tuple[str, str]]:
        s = self.settings
        fields = [
            nrefs_field(nrefs),
            ("case", "lc" if s.lowercase else "mixed"),
            ("eff", "no" if s.eps_smoothing else "yes"),
            ("nc", str(s.char_order)),
            ("nw", str(s.word_order)),
            ("space", "yes" if s.whitespace else "no"),
        ]
        if s.beta != 2:
            # sacrebleu names beta only in the label (chrF2); at the default our signature is
            # its string, any other beta must be visible
            fields.append(("beta", str(s.beta)))
        return fields


@dataclass(frozen=True)
class CHRFPlusPlusSettings(CHRFSettings):
    """chrF++: chrF with word unigrams and bigrams (``word_order=2``)."""

    word_order: int = setting(2, "Word n-gram order (2 = chrF++).")


class CHRFPlusPlus(CHRF):
    """chrF++ (Popović, 2017): chrF plus word n-grams up to 2."""

    name = "chrf++"
    settings_class = CHRFPlusPlusSettings
    releases_gil = _kernel.mt is not None  # the same kernel, words included
