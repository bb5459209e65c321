"""sacrebleu's own test vectors as our reference table: BLEU and chrF equal sacrebleu exactly.

Source of every input and published value: github.com/mjpost/sacrebleu, ``test/test_bleu.py``,
``test/test_sentence_bleu.py`` and ``test/test_chrf.py`` (sacrebleu 2.x; the published
values are rounded, sacrebleu's tests compare them within ``EPSILON``). Each case is
checked twice: our float ``==`` the float of the installed oracle (sacrebleu 2.6.0), and
within the file's ``EPSILON`` of the published number. Cases sacrebleu runs on single
strings (iterated character by character) are left out: our API refuses a string where a
list of segments belongs.
"""

from __future__ import annotations

import pytest

from evalab.metrics.bleu import BLEU, bleu_score
from evalab.metrics.chrf import CHRF

sacrebleu = pytest.importorskip("sacrebleu")
from sacrebleu.metrics import BLEU as SacreBLEU  # noqa: E402
from sacrebleu.metrics import CHRF as SacreCHRF  # noqa: E402

# test_bleu.py: the README example (three segments, two reference streams)
_REFS = [
    ["The dog bit the man.", "It was not unexpected.", "The man bit him first."],
    ["The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."],
]
_HYPS = ["The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."]
# raw_corpus_bleu(h, r, v) is corpus BLEU with floor smoothing v, no tokenizer, effective order
_RAW = {"smooth_method": "floor", "tokenize": "none", "effective_order": True}

#: (source, hypotheses, reference streams, settings, published value, EPSILON of the source)
BLEU_CASES = [
    # published 0.3799178428257963 predates sacrebleu #141 (no matching n-gram at all gives
    # 0); sacrebleu 2.6.0 itself returns 0.0 here, the value we check against
    (
        "test_bleu.py raw",
        ["this is a test", "another test"],
        [["ref1", "ref2"]],
        {**_RAW, "smooth_value": 0.01},
        0.0,
        1e-6,
    ),
    (
        "test_bleu.py raw",
        ["this is a test"],
        [["this is a test"]],
        {**_RAW, "smooth_value": 0.01},
        100.0,
        1e-6,
    ),
    (
        "test_bleu.py raw",
        ["this is a fest"],
        [["this is a test"]],
        {**_RAW, "smooth_value": 0.01},
        22.3606797749979,
        1e-6,
    ),
    ("test_bleu.py corpus", _HYPS, _REFS, {}, 48.530827, 1e-8),
    ("test_bleu.py corpus", ["", "", ""], _REFS, {}, 0.0, 1e-8),
    ("test_bleu.py corpus", _HYPS, _REFS, {"tokenize": "none"}, 49.1919566, 1e-8),
    ("test_bleu.py corpus", _HYPS, _REFS, {"tokenize": "13a"}, 48.530827, 1e-8),
    ("test_bleu.py corpus", _HYPS, _REFS, {"tokenize": "intl"}, 43.91623493, 1e-8),
    ("test_bleu.py corpus", _HYPS, _REFS, {"smooth_method": "none"}, 48.530827, 1e-8),
    (
        "test_bleu.py effective order",
        ["test"],
        [["a test"]],
        {**_RAW, "smooth_value": 0.01},
        36.78794411714425,
        1e-6,
    ),
    (
        "test_bleu.py effective order",
        ["a test"],
        [["a test"]],
        {**_RAW, "smooth_value": 0.01},
        100.0,
        1e-6,
    ),
    (
        "test_bleu.py effective order",
        ["a little test"],
        [["a test"]],
        {**_RAW, "smooth_value": 0.01},
        3.218297948685433,
        1e-6,
    ),
]

# test_sentence_bleu.py: sacrebleu issues #98 and #141, sentence BLEU with effective order
_REF98 = "producţia de zahăr brut se exprimă în zahăr alb;"
_SYS98 = "Producția de zahăr primă va fi exprimată în ceea ce privește zahărul alb;"
SENTENCE_CASES = [
    (_SYS98, _REF98, "exp", None, False, "13a", 8.493),
    (_SYS98, _REF98, "none", None, False, "13a", 0.0),
    (_SYS98, _REF98, "floor", None, False, "13a", 4.51688),
    (_SYS98, _REF98, "floor", 0.1, False, "13a", 4.51688),
    (_SYS98, _REF98, "floor", 0.5, False, "13a", 10.10),
    (_SYS98, _REF98, "add-k", None, False, "13a", 14.882),
    (_SYS98, _REF98, "add-k", 1, False, "13a", 14.882),
    (_SYS98, _REF98, "add-k", 2, False, "13a", 21.389),
    (_SYS98, _REF98, "exp", None, False, "none", 7.347),
    (_SYS98, _REF98, "exp", None, False, "intl", 8.493),
    (_SYS98, _REF98, "exp", None, False, "char", 40.8759),
    (_SYS98, _REF98, "exp", None, True, "char", 42.0267),
    *[
        ("this is a cat", "okay thanks", m, v, False, "13a", 0.0)
        for m, v in [
            ("exp", None),
            ("none", None),
            ("floor", None),
            ("floor", 0.1),
            ("add-k", None),
            ("add-k", 1),
        ]
    ],
]

# test_bleu.py: compute_bleu on statistics (correct, total, sys_len, ref_len, smoothing)
STATS_CASES = [
    ([9, 7, 5, 3], [10, 8, 6, 4], 11, 11, "exp", None, 83.75922397, 1e-6),
    ([0, 0, 0, 0], [4, 4, 2, 1], 0, 1, "floor", 0.0, 0.0, 0.0),
    ([0, 0, 0, 0], [10, 11, 12, 0], 14, 10, "floor", 0.0, 0.0, 0.0),
    ([0, 0, 0, 0], [0, 0, 0, 0], 0, 0, "floor", 0.0, 0.0, 0.0),
    ([6, 5, 4, 0], [6, 5, 4, 3], 6, 6, "floor", 0.0, 0.0, 0.0),
    ([0, 0, 0, 0], [0, 0, 0, 0], 0, 0, "floor", 0.1, 0.0, 0.0),
    ([0, 0, 0, 0], [0, 0, 0, 0], 1, 5, "floor", 0.01, 0.0, 0.0),
]

_CZ = [
    (
        "Co nás nejvíc trápí, protože lékaři si vybírají, kdo bude žít a kdo zemře.",
        "Nejvíce smutní jsme z toho, že musíme rozhodovat o tom, kdo bude žít a kdo zemře.",
        39.14078509,
    ),
    (
        "Nebo prostě nemají vybavení, které by jim pomohlo, uvedli lékaři.",
        "A někdy nemáme ani potřebný materiál, abychom jim pomohli, popsali lékaři.",
        31.22557079,
    ),
    (
        "Lapali po dechu, jejich životy skončily dřív, než skutečně začaly.",
        "Lapali po dechu a pak jejich život skončil - dřív, než skutečně mohl začít, připomněli.",
        57.15704367,
    ),
]
_RISK_H = " risk assessment must be made of those who are qualified and expertise in the sector - these are the scientists ."
_RISK_R = "risk assessment has to be undertaken by those who are qualified and expert in that area - that is the scientists ."
_EPS3 = {"beta": 3, "eps_smoothing": True}
_EFF3 = {"beta": 3, "eps_smoothing": False}
_WS3 = {"beta": 3, "whitespace": True}
#: test_chrf.py (EPSILON 1e-4): (hypotheses, references of one stream, settings, published value)
CHRF_CASES = [
    (["abcdefg"], ["hijklmnop"], _EPS3, 0.0),
    (["a"], ["b"], _EPS3, 0.0),
    ([""], ["b"], _EPS3, 0.0),
    ([""], ["ref"], _EPS3, 0.0),
    ([""], ["reference"], _EPS3, 0.0),
    (["aa"], ["ab"], _EPS3, 8.3333),
    (["a", "b"], ["a", "c"], _EPS3, 8.3333),
    (["a"], ["a"], _EPS3, 16.6667),
    (["a b c"], ["a b c"], _EPS3, 50.0),
    (["a b c"], ["abc"], _EPS3, 50.0),
    ([_RISK_H], [_RISK_R], _EPS3, 63.361730),
    (
        [" Die    Beziehung zwischen  Obama und Netanjahu ist nicht gerade  freundlich. "],
        ["Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."],
        _EPS3,
        64.1302698,
    ),
    (
        ["Niemand hat die Absicht, eine Mauer zu errichten"],
        ["Niemand hat die Absicht, eine Mauer zu errichten"],
        _EPS3,
        100.0,
    ),
    (["a"], ["a"], _EFF3, 100.0),
    ([""], ["reference"], _EFF3, 0.0),
    (["a b c"], ["a b c"], _EFF3, 100.0),
    (["a b c"], ["abc"], _EFF3, 100.0),
    ([""], ["c"], _EFF3, 0.0),
    (["a", "b"], ["a", "c"], _EFF3, 50.0),
    (["aa"], ["ab"], _EFF3, 25.0),
    (
        ["Die Beziehung zwischen Obama und Netanjahu ist nicht gerade freundlich."],
        ["Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."],
        _WS3,
        67.3481606,
    ),
    ([_RISK_H.strip()], [_RISK_R], _WS3, 65.2414427),
    *[([h], [r], {"eps_smoothing": True}, v) for h, r, v in _CZ],
]


@pytest.mark.parametrize(("source", "hyps", "refs", "kw", "published", "eps"), BLEU_CASES)
def test_corpus_bleu_vectors(source, hyps, refs, kw, published, eps) -> None:
    ours = BLEU(**kw).corpus_score(hyps, refs).score
    sacre_kw = {("use_effective_order" if k == "effective_order" else k): v for k, v in kw.items()}
    theirs = sacrebleu.corpus_bleu(hyps, refs, force=True, **sacre_kw).score
    assert ours == theirs, source
    assert abs(ours - published) <= max(eps * 100, 1e-8), source


@pytest.mark.parametrize(
    ("hyp", "ref", "method", "value", "lowercase", "tok", "published"), SENTENCE_CASES
)
def test_sentence_bleu_vectors(hyp, ref, method, value, lowercase, tok, published) -> None:
    kw = {"smooth_method": method, "smooth_value": value, "lowercase": lowercase, "tokenize": tok}
    ours = BLEU(**kw).sentence_score(hyp, [ref]).score
    theirs = SacreBLEU(effective_order=True, **kw).sentence_score(hyp, [ref]).score
    assert ours == theirs
    assert abs(ours - published) < 1e-3


@pytest.mark.parametrize(
    ("correct", "total", "sys_len", "ref_len", "method", "value", "published", "eps"), STATS_CASES
)
def test_compute_bleu_vectors(
    correct, total, sys_len, ref_len, method, value, published, eps
) -> None:
    theirs = SacreBLEU.compute_bleu(
        list(correct), list(total), sys_len, ref_len, smooth_method=method, smooth_value=value
    )
    k = value if value is not None else 0.0
    score, precisions, bp = bleu_score([sys_len, ref_len, *correct, *total], 4, method, k)
    assert (score, precisions, bp) == (theirs.score, theirs.precisions, theirs.bp)
    assert abs(score - published) <= eps * 100


@pytest.mark.parametrize(("hyps", "refs", "kw", "published"), CHRF_CASES)
def test_chrf_vectors(hyps, refs, kw, published) -> None:
    ours = CHRF(**kw).corpus_score(hyps, [refs]).score
    sacre_kw = {("whitespace" if k == "whitespace" else k): v for k, v in kw.items()}
    theirs = SacreCHRF(**sacre_kw).corpus_score(hyps, [refs]).score
    assert ours == theirs
    assert abs(ours - published) < 1e-4
