"""ROUGE-1/2/L/Lsum: reference vectors, edge cases, parity with rouge-score, properties.

Expected values: the seed-002 style examples are worked by hand (arithmetic in comments);
the summary-level example is Lin (2004) section 3.2 as used in rouge-score's own
``testRougeLsum`` (R = 0.8, P = 0.4, F = 0.5333). Parity: Google's ``rouge-score``
(``RougeScorer.score`` / ``score_multi``) on WMT22 pairs with English targets.
"""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer
from tests.conftest import read_lines, wmt_file, wmt_systems

import evalab
from evalab import _kernel
from evalab.errors import SettingsError
from evalab.metrics.base import Stats
from evalab.metrics.rouge import Rouge1, Rouge2, RougeL, RougeLsum, lcs_indices, lcs_length
from evalab.text import get_tokenizer

TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
EN_PAIRS = {"cs-en": ("B", "C"), "de-en": ("A", "B"), "ru-en": ("A",), "uk-en": ("A",)}

HYP = "the cat sat on the mat"
REF = "the cat on a mat"
# hyp 6 tokens, ref 5; unigram overlap {the, cat, on, mat} = 4 and LCS "the cat on mat" = 4:
# P = 4/6, R = 4/5, F = 2PR/(P+R) = 16/22. Bigrams: hyp 5, ref 4, shared "the cat":
# P = 1/5, R = 1/4, F = 2/9.
VECTORS = [
    ("rouge1", HYP, REF, (4 / 6, 4 / 5, 16 / 22)),
    ("rouge2", HYP, REF, (1 / 5, 1 / 4, 2 / 9)),
    ("rougeL", HYP, REF, (4 / 6, 4 / 5, 16 / 22)),
    ("rougeLsum", HYP, REF, (4 / 6, 4 / 5, 16 / 22)),
    # repeated-phrase clipping: "the" x4 vs "the cat": overlap 1, P = 1/4, R = 1/2, F = 1/3
    ("rouge1", "the the the the", "the cat", (1 / 4, 1 / 2, 1 / 3)),
    ("rougeL", "the the the the", "the cat", (1 / 4, 1 / 2, 1 / 3)),
    # Lin (2004) 3.2: union LCS of r = w1..w5 with c1, c2 is w1 w2 w3 w5: R = 4/5, P = 4/10
    ("rougeLsum", "w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5", "w1 w2 w3 w4 w5", (0.4, 0.8, 0.8 / 1.5)),
    # rouge-score testRougeLSumSentenceSplitting: sentences in another order
    (
        "rougeLsum",
        "Second sentence.\nFirst Sentence.",
        "First sentence.\nSecond Sentence.",
        (1.0, 1.0, 1.0),
    ),
    (
        "rougeLsum",
        "Second sentence. First Sentence.",
        "First sentence. Second Sentence.",
        (0.5, 0.5, 0.5),
    ),
]


@pytest.mark.parametrize(("name", "hyp", "ref", "expected"), VECTORS)
def test_reference_vectors(name, hyp, ref, expected):
    s = evalab.metric(name).sentence_score(hyp, [ref])
    assert (s.precision, s.recall, s.fmeasure) == pytest.approx(expected, abs=1e-12)
    assert s.score == s.fmeasure
    # rouge-score agrees (argument order: target first)
    peer = rouge_scorer.RougeScorer([name]).score(ref, hyp)[name]
    assert (peer.precision, peer.recall, peer.fmeasure) == pytest.approx(expected, abs=1e-12)


def test_score_dispatch_rouge_l():
    assert evalab.score("rouge_l", HYP, [REF]) == pytest.approx(16 / 22)
    assert evalab.score("rouge_l", HYP, ["unrelated words", REF]) == pytest.approx(16 / 22)


@pytest.mark.parametrize("name", TYPES)
@pytest.mark.parametrize(
    ("hyp", "ref", "f"),
    [
        ("", "the cat", 0.0),  # empty prediction
        ("the cat", "", 0.0),  # empty reference
        ("", "", 0.0),  # rouge-score: nothing to match scores 0
        ("a dog barked", "the cat sat", 0.0),  # no shared token
        ("The cat sat!", "the cat sat", 1.0),  # exact match (after tokenization)
        ("...", "the cat", 0.0),  # punctuation only: no tokens
    ],
)
def test_edge_cases(name, hyp, ref, f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = evalab.metric(name).sentence_score(hyp, [ref])
    assert s.fmeasure == f
    assert 0.0 <= s.precision <= 1.0 and 0.0 <= s.recall <= 1.0
    assert rouge_scorer.RougeScorer([name]).score(ref, hyp)[name].fmeasure == f


def test_beta():
    # F_beta = (1 + b^2) P R / (R + b^2 P), P = 2/3, R = 4/5, b = 2: (8/3) / (52/15) = 10/13
    s = RougeL(beta=2.0).sentence_score(HYP, [REF])
    assert s.score == pytest.approx(10 / 13)
    assert "beta:2" in s.signature
    with pytest.raises(SettingsError, match="beta"):
        RougeL(beta=0.0)


def test_signature_names_tokenizer_stemmer_beta_version():
    sig = Rouge1(use_stemmer=True).signature_for(1)
    assert sig.startswith("rouge1|nrefs:1|tok:rouge|stem:porter|beta:1|version:")
    assert "tok:unicode|stem:no" in Rouge2(tokenize="unicode").signature_for(2)
    assert (
        RougeLsum(sentence_sep="<n>")
        .signature_for(1)
        .endswith(f"|split:newline+<n>|version:{evalab.__version__}")
    )
    with pytest.raises(SettingsError, match="unknown tokenizer 'nope'"):
        Rouge1(tokenize="nope")


def test_sentence_sep_splits_one_line_summaries():
    hyp, ref = "Second sentence.<n>First Sentence.", "First sentence.<n>Second Sentence."
    assert RougeLsum(sentence_sep="<n>").sentence_score(hyp, [ref]).score == 1.0
    # without the separator "<n>" is just punctuation plus the token "n"
    assert RougeLsum().sentence_score(hyp, [ref]).score < 1.0


def test_corpus_is_mean_of_segment_scores():
    hyps, refs = [HYP, "the the the the", "x"], [[REF, "the cat", "y"]]
    m = Rouge1()
    rows = m.stats(hyps, refs)
    assert m.stat_names == ("precision", "recall", "fmeasure", "count")
    assert rows.rows[:, 3].tolist() == [1.0, 1.0, 1.0]
    s = m.corpus_score(hyps, refs)
    assert s.score == pytest.approx((16 / 22 + 1 / 3 + 0) / 3)
    assert s.precision == pytest.approx((4 / 6 + 1 / 4) / 3)
    assert [x.score for x in m.segment_scores(hyps, refs)] == pytest.approx([16 / 22, 1 / 3, 0])
    assert m.scores_from_sums(rows.sums()) == pytest.approx(s.score)


def test_warns_with_count_when_default_tokenizer_erases_text():
    hyps = ["สวัสดีครับ", "東京", "ok fine"]
    refs = [["สวัสดีครับ", "東京", "ok"]]
    with pytest.warns(UserWarning, match=r"reduced 4 non-empty segment\(s\).*tokenize='unicode'"):
        s = Rouge1().corpus_score(hyps, refs)
    assert s.score == pytest.approx((0 + 0 + 2 / 3) / 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        uni = Rouge1(tokenize="unicode").corpus_score(hyps, refs)
    assert uni.score == pytest.approx((1 + 1 + 2 / 3) / 3)


def test_unicode_tokenizer_scores_non_latin():
    s = RougeL(tokenize="unicode").sentence_score("東京 の 天気", ["東京 天気"])
    # tokens: 東 京 の 天 気 vs 東 京 天 気: LCS 4, P = 4/5, R = 1
    assert s.fmeasure == pytest.approx(2 * 0.8 / 1.8)


# -- LCS helpers ----------------------------------------------------------------------------
def _dp_lcs(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a)):
        for j in range(len(b)):
            table[i + 1][j + 1] = (
                table[i][j] + 1 if a[i] == b[j] else max(table[i][j + 1], table[i + 1][j])
            )
    return table[-1][-1]


tokens = st.lists(st.sampled_from("abcde"), max_size=25)


@settings(max_examples=100, deadline=None)
@given(tokens, tokens)
def test_lcs_length_equals_dynamic_programming(a, b):
    assert lcs_length(a, b) == _dp_lcs(a, b) == lcs_length(b, a)


@settings(max_examples=100, deadline=None)
@given(tokens, tokens)
def test_lcs_indices_equal_rouge_score_backtracking(a, b):
    assert lcs_indices(a, b) == rouge_scorer.lcs_ind(a, b)


# -- parity with rouge-score on WMT22 -------------------------------------------------------
def _max_delta(ours: dict[str, Stats], peer: list[dict]) -> float:
    worst = 0.0
    for name, value in ours.items():
        rows = value.rows
        exp = np.array([[s[name].precision, s[name].recall, s[name].fmeasure] for s in peer])
        worst = max(worst, float(np.max(np.abs(rows[:, :3] - exp))))
    return worst


def _parity(pair: str, per_system: int | None, seed: int) -> tuple[int, float]:
    ref_ids = EN_PAIRS[pair]
    refs_full = [read_lines(wmt_file("ref", pair, r)) for r in ref_ids]
    n = len(refs_full[0])
    idx = sorted(random.Random(seed).sample(range(n), per_system)) if per_system else range(n)
    refs = [[stream[i] for i in idx] for stream in refs_full]
    checked, worst = 0, 0.0
    for stem in (False, True):
        scorer = rouge_scorer.RougeScorer(list(TYPES), use_stemmer=stem)
        metrics = {t: evalab.metric(t, use_stemmer=stem) for t in TYPES}
        for system in wmt_systems(pair):
            hyps_full = read_lines(wmt_file("hyp", pair, system))
            hyps = [hyps_full[i] for i in idx]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ours = {t: m.stats(hyps, refs) for t, m in metrics.items()}
            if len(refs) == 1:
                peer = [scorer.score(r, h) for r, h in zip(refs[0], hyps, strict=True)]
            else:
                peer = [scorer.score_multi([s[i] for s in refs], h) for i, h in enumerate(hyps)]
            worst = max(worst, _max_delta(ours, peer))
            # the corpus score is the mean of rouge-score's segment F
            mean_f = np.mean([p["rougeL"].fmeasure for p in peer])
            assert abs(metrics["rougeL"].aggregate(ours["rougeL"]).score - mean_f) < 1e-9
            checked += 1
    return checked, worst


@pytest.mark.parametrize("pair", sorted(EN_PAIRS))
def test_parity_every_system_sampled_segments(wmt22, pair):
    checked, worst = _parity(pair, per_system=20, seed=7)
    assert checked == 2 * len(wmt_systems(pair)) >= 2 * 5
    assert worst < 1e-9


@pytest.mark.slow
@pytest.mark.parametrize("pair", sorted(EN_PAIRS))
def test_parity_every_system_all_segments(wmt22, pair):
    checked, worst = _parity(pair, per_system=None, seed=0)
    assert checked == 2 * len(wmt_systems(pair))
    assert worst < 1e-9


def test_lsum_multi_sentence_parity_on_wmt22(wmt22):
    # build multi-sentence summaries from consecutive WMT22 lines
    ref = read_lines(wmt_file("ref", "de-en", "A"))
    hyp = read_lines(wmt_file("hyp", "de-en", wmt_systems("de-en")[0]))
    rnd = random.Random(3)
    starts = rnd.sample(range(len(ref) - 6), 25)
    for stem in (False, True):
        scorer = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=stem)
        m = RougeLsum(use_stemmer=stem)
        for s in starts:
            r = "\n".join(ref[s : s + rnd.randint(1, 5)])
            h = "\n".join(hyp[s : s + rnd.randint(1, 5)])
            exp = scorer.score(r, h)["rougeLsum"]
            got = m.sentence_score(h, [r])
            assert abs(got.precision - exp.precision) < 1e-12
            assert abs(got.recall - exp.recall) < 1e-12
            assert abs(got.fmeasure - exp.fmeasure) < 1e-12


summary = st.lists(
    st.lists(st.sampled_from("abcdef"), max_size=7).map(" ".join), min_size=1, max_size=4
).map("\n".join)


@settings(max_examples=80, deadline=None)
@given(summary, summary, summary)
def test_lsum_random_multi_sentence_and_multi_reference_parity(h, r1, r2):
    scorer = rouge_scorer.RougeScorer(list(TYPES))
    exp = scorer.score_multi([r1, r2], h)
    for name in TYPES:
        got = evalab.metric(name).stats([h], [[r1], [r2]]).rows[0]
        e = exp[name]
        assert np.allclose(got[:3], [e.precision, e.recall, e.fmeasure], rtol=0, atol=1e-12)


# -- properties -----------------------------------------------------------------------------
texts = st.text(max_size=60)


@settings(max_examples=60, deadline=None)
@given(texts, texts)
def test_bounds_and_symmetric_f(a, b):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cls in (Rouge1, Rouge2, RougeL, RougeLsum):
            for tok in ("rouge", "unicode"):
                m = cls(tokenize=tok)
                ab = m.sentence_score(a, [b])
                assert all(0.0 <= v <= 1.0 for v in (ab.precision, ab.recall, ab.fmeasure))
                if cls is not RougeLsum or ("\n" not in a and "\n" not in b):
                    # P and R swap when hypothesis and reference swap, so F1 is symmetric
                    ba = m.sentence_score(b, [a])
                    assert ba.fmeasure == pytest.approx(ab.fmeasure, abs=1e-12)
                    assert ba.precision == pytest.approx(ab.recall, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(texts)
def test_identical_inputs_score_one(a):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for cls in (Rouge1, Rouge2, RougeL, RougeLsum):
            for tok in ("rouge", "unicode"):
                m = cls(tokenize=tok, use_stemmer=True)
                s = m.sentence_score(a, [a]).score
                tokens = get_tokenizer(tok)(a)
                enough = len(tokens) >= (2 if cls is Rouge2 else 1)
                assert s == (1.0 if enough else 0.0), a


@given(st.text(alphabet=" \t\n\r\u00a0\u2028\u3000", max_size=20), st.text(max_size=20))
def test_whitespace_only_never_crashes(ws, other):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in TYPES:
            assert evalab.metric(name, tokenize="unicode").sentence_score(ws, [other]).score == 0.0
            assert evalab.metric(name).sentence_score(other, [ws]).score == 0.0


@pytest.mark.parametrize("kernels", [True, False])
@pytest.mark.parametrize("name", ["rouge1", "rouge2", "rougeL", "rougeLsum"])
def test_the_erased_count_is_the_same_for_every_type_and_path(monkeypatch, name, kernels):
    if not kernels:
        monkeypatch.setattr(_kernel, "rouge", None)
    from evalab.metrics import rouge

    rouge.clear_id_caches()
    hyps = ["Привет\nмир", "  ", "ok", "東京", "\u3000"]
    refs = [["ok", "", "Москва", "ok", "ok"], ["ok", "ok", "ok", "ok", "ok"]]
    with pytest.warns(UserWarning, match=r"reduced 3 non-empty segment\(s\)"):
        evalab.metric(name, use_stemmer=name == "rouge2").stats(hyps, refs)


def _rows_and_warnings(name: str, settings: dict, hyps: list[str], refs: list[list[str]]):
    from evalab.metrics import rouge

    rouge.clear_id_caches()  # the sides are cached per corpus: pack them again
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = evalab.metric(name, **settings).stats(hyps, refs).rows
    return rows, [str(w.message) for w in caught]


@pytest.mark.parametrize("kernels", [True, False])
@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"use_stemmer": True},
        {"tokenize": "unicode"},
        {"tokenize": "unicode", "sentence_sep": " . "},
    ],
)
@pytest.mark.parametrize("name", ["rouge1", "rouge2", "rougeL", "rougeLsum"])
def test_chunked_packing_gives_the_same_rows(wmt22, monkeypatch, name, settings, kernels):
    """Sides are tokenised PACK_CHUNK segments at a time: chunks of 7 give the rows of one
    chunk, bit for bit, and the same warning (emptied segments counted once per side)."""
    if not kernels:
        monkeypatch.setattr(_kernel, "rouge", None)
    if name != "rougeLsum":
        settings = {k: v for k, v in settings.items() if k != "sentence_sep"}
    ref = read_lines(wmt_file("ref", "de-en", "A"))[:60]
    hyp = read_lines(wmt_file("hyp", "de-en", wmt_systems("de-en")[0]))[:60]
    # sentence breaks, erased and blank segments spread over several chunks of 7
    hyps = [*hyp[:20], "Привет\nмир", "  ", f"{hyp[20]}\n{hyp[21]}", "東京", *hyp[22:40]]
    refs = [
        [*ref[:20], "Москва", "ok", f"{ref[20]} . {ref[21]}", "", *ref[22:40]],
        [*ref[20:40], "ok", "東京", "ok", f"{ref[0]}\n{ref[1]}", *ref[2:20]],
    ]
    whole, warned = _rows_and_warnings(name, settings, hyps, refs)
    monkeypatch.setattr(_kernel, "PACK_CHUNK", 7)
    chunked, warned_chunked = _rows_and_warnings(name, settings, hyps, refs)
    assert whole.tobytes() == chunked.tobytes()
    assert warned_chunked == warned
    assert len(warned) == (0 if settings.get("tokenize") == "unicode" else 1)
