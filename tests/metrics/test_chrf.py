"""chrF / chrF++: hand-checked values, properties, and sacrebleu 2.6.0 on WMT22 data."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import read_lines, wmt_file, wmt_systems

import evalab
from evalab import _kernel
from evalab.errors import InputError, SettingsError
from evalab.metrics.chrf import CHRF, CHRFPlusPlus, chrf_words
from evalab.metrics.parallel import parallel_stats


def test_hand_computed_unigram_chrf() -> None:
    # hyp "ab", ref "ac": char 1-grams P = R = 1/2, 2-grams P = R = 0 -> averaged over the
    # two effective orders P = R = 1/4, F_2 = 5 * 1/16 / (4/4 + 1/4) = 0.25
    s = CHRF(char_order=2).corpus_score(["ab"], [["ac"]])
    assert s.score == pytest.approx(25.0)
    rows = CHRF(char_order=2).stats(["ab"], [["ac"]])
    assert rows.rows.tolist() == [[2, 2, 1, 1, 1, 0]]


def test_whitespace_and_case_settings() -> None:
    assert CHRF().corpus_score(["a b"], [["ab"]]).score == pytest.approx(100.0)
    assert CHRF(whitespace=True).corpus_score(["a b"], [["ab"]]).score < 100
    assert CHRF().corpus_score(["ABC"], [["abc"]]).score == 0.0
    assert CHRF(lowercase=True).corpus_score(["ABC"], [["abc"]]).score == pytest.approx(100.0)


def test_chrf_words_split_one_punctuation_mark() -> None:
    # the end is checked first: "(world)" keeps its opening parenthesis
    assert chrf_words("Hello, (world) (x a. ,") == [
        "Hello",
        ",",
        "(world",
        ")",
        "(",
        "x",
        "a",
        ".",
        ",",
    ]


def test_signatures() -> None:
    v = evalab.__version__
    assert (
        CHRF().signature_for(1) == f"chrf|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:{v}"
    )
    assert (
        CHRFPlusPlus().signature_for(2)
        == f"chrf++|nrefs:2|case:mixed|eff:yes|nc:6|nw:2|space:no|version:{v}"
    )
    assert (
        CHRF(eps_smoothing=True, lowercase=True, whitespace=True)
        .signature_for(1)
        .startswith("chrf|nrefs:1|case:lc|eff:no|nc:6|nw:0|space:yes")
    )
    assert CHRFPlusPlus().corpus_score(["a"], [["a"]]).name == "chrF2++"


def test_bad_input_and_settings() -> None:
    with pytest.raises(InputError, match="one list of references per segment"):
        CHRF().corpus_score(["a", "b", "c"], [["a"], ["b"], ["c"]])
    with pytest.raises(SettingsError):
        CHRF(char_order=-1)
    with pytest.raises(SettingsError):
        CHRF(char_order=0, word_order=0)


def test_empty_lines() -> None:
    m = CHRF()
    assert m.corpus_score([""], [[""]]).score == 0.0
    s = m.corpus_score(["", "the cat"], [["a b", "the cat"]])
    assert 0 < s.score <= 100
    assert m.sentence_score("", ["abc"]).score == 0.0


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text("abc d.", max_size=15),
            st.text("abc d.", max_size=15),
            st.text("abc d.", max_size=15),
        ),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from([0, 2]),
    st.booleans(),
)
def test_properties_and_sacrebleu_on_random_text(triples, word_order, eps) -> None:
    from sacrebleu.metrics import CHRF as SacreCHRF

    hyps = [t[0] for t in triples]
    refs = [[t[1] for t in triples], [t[2] for t in triples]]
    m = CHRF(word_order=word_order, eps_smoothing=eps)
    rows = m.stats(hyps, refs)
    score = m.aggregate(rows, 2).score
    assert 0.0 <= score <= 100.0 + 1e-9
    assert (
        score == SacreCHRF(word_order=word_order, eps_smoothing=eps).corpus_score(hyps, refs).score
    )
    assert m.scores_from_sums(rows.rows).tolist() == [
        m.aggregate(r[None], 2).score for r in rows.rows
    ]
    cut = len(hyps) // 2
    parts = np.concatenate(
        [
            m.stats(hyps[:cut], [r[:cut] for r in refs]).rows,
            m.stats(hyps[cut:], [r[cut:] for r in refs]).rows,
        ]
    )
    assert np.array_equal(parts, rows.rows)


PAIRS = ["en-de", "en-zh", "cs-en", "de-en", "en-cs", "uk-en"]


@pytest.mark.parametrize("trial", range(12))
def test_matches_sacrebleu_on_random_settings_and_subsets(wmt22, trial) -> None:
    from sacrebleu.metrics import CHRF as SacreCHRF

    rng = random.Random(2000 + trial)
    pair = rng.choice(PAIRS)
    ref_ids = sorted(
        p.name.split(".ref.")[1].split(".")[0]
        for p in wmt_file("ref", pair, "X").parent.glob(f"generaltest2022.{pair}.ref.*")
    )
    if len(ref_ids) > 1 and rng.random() < 0.5:
        ref_ids = ref_ids[::-1]  # reference order matters for ties; both must agree
    ref_ids = ref_ids[: rng.choice([1, 2])]
    refs_full = [read_lines(wmt_file("ref", pair, r)) for r in ref_ids]
    hyp_full = read_lines(wmt_file("hyp", pair, rng.choice(wmt_systems(pair))))
    idx = sorted(rng.sample(range(len(hyp_full)), 150))
    hyps = [hyp_full[i] for i in idx]
    refs = [[r[i] for i in idx] for r in refs_full]
    kw = {
        "char_order": rng.choice([1, 3, 6, 6]),
        "word_order": rng.choice([0, 0, 1, 2]),
        "beta": rng.choice([1, 2, 3]),
        "lowercase": rng.random() < 0.5,
        "whitespace": rng.random() < 0.3,
        "eps_smoothing": rng.random() < 0.3,
    }
    ours = CHRF(**kw)
    sacre = SacreCHRF(**kw)
    assert ours.corpus_score(hyps, refs).score == sacre.corpus_score(hyps, refs).score, kw
    # sacrebleu names beta only in the score's label (chrF3); ours puts a non-default one in the signature
    beta = f"|beta:{kw['beta']}" if kw["beta"] != 2 else ""
    ours_sig = ours.signature_for(len(refs)).split("|", 1)[1].rsplit("|", 1)[0]
    assert ours_sig == sacre.get_signature().format().rsplit("|", 1)[0] + beta
    for i in range(4):
        seg_refs = [r[i] for r in refs]
        assert (
            ours.sentence_score(hyps[i], seg_refs).score
            == sacre.sentence_score(hyps[i], seg_refs).score
        )


def test_chrf_plus_plus_is_word_order_two(wmt22) -> None:
    from sacrebleu.metrics import CHRF as SacreCHRF

    hyps = read_lines(wmt_file("hyp", "de-en", wmt_systems("de-en")[0]))[:200]
    refs = [read_lines(wmt_file("ref", "de-en", "A"))[:200]]
    assert (
        CHRFPlusPlus().corpus_score(hyps, refs).score
        == SacreCHRF(word_order=2).corpus_score(hyps, refs).score
    )
    assert evalab.metric("chrf++").settings.word_order == 2


def test_fallback_kernel_pickle_and_jobs(wmt22, monkeypatch) -> None:
    hyps = read_lines(wmt_file("hyp", "en-de", wmt_systems("en-de")[2]))[:150]
    refs = [read_lines(wmt_file("ref", "en-de", r))[:150] for r in ("A", "B")]
    m = CHRFPlusPlus()
    fast = m.stats(hyps, refs)
    assert np.array_equal(
        parallel_stats(pickle.loads(pickle.dumps(m)), hyps, refs, jobs=2).rows, fast.rows
    )
    monkeypatch.setattr(_kernel, "mt", None)
    assert np.array_equal(CHRFPlusPlus().stats(hyps, refs).rows, fast.rows)
