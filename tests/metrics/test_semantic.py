"""BERTScore (``bertscore``): seed 001's reference vectors, parity with bert-score 0.3.13,
order sanity on WMT22, the Metric contract, rescaling and bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import evalab
from conftest import read_lines, wmt_file
from evalab.errors import InputError, SettingsError
from evalab.metrics.semantic import BERTScore, default_baseline_path, read_baseline
from models.semantic_helpers import make_tiny_bert

TABLE = str(Path(__file__).resolve().parents[1] / "data" / "vi_seed001_table.tsv")
ONE_WORD = str(Path(__file__).resolve().parents[1] / "data" / "one_word_table.tsv")

# -- seed 001: the hand-made 28-word, 9-dimension Vietnamese table ------------------------
# (hypothesis, reference, settings, expected (P, R, F) rounded to 3 decimals, where from)
SEED_CASES = [
    (
        "bố tôi tậu chiếc xe_hơi",
        "cha tôi mua cái ô_tô",
        {},
        (0.983, 0.983, 0.983),
        "default pair: 'nghĩa 0.983'",
    ),
    (
        "bố tôi tậu chiếc xe_hơi",
        "cha tôi mua cái ô_tô",
        {"drop_function_words": True},
        (None, None, 0.987),
        "default pair without function words: 'nhích từ 0.983 lên 0.987'",
    ),
    (
        "con mèo ngủ trên ghế",
        "cha tôi mua cái ô_tô",
        {},
        (0.441, 0.351, 0.391),
        "control pair: 'precision là 0.441 còn recall là 0.351', 'tụt xuống 0.391'",
    ),
    (
        "con mèo ngủ trên ghế",
        "cha tôi mua cái ô_tô",
        {"drop_function_words": True},
        (None, None, 0.117),
        "control without function words: 'rơi từ 0.391 xuống 0.117'",
    ),
    (
        "con chó đuổi con mèo",
        "con mèo đuổi con chó",
        {},
        (1.0, 1.0, 1.0),
        "word-order swap: 'đều bằng 1.000'",
    ),
    (
        "phi_thuyền phi_thuyền",
        "phi_thuyền phi_thuyền",
        {},
        (0.0, 0.0, 0.0),
        "out-of-table word against itself: 'khớp nghĩa cho 0.000'",
    ),
    (
        "phi_thuyền phi_thuyền",
        "phi_thuyền phi_thuyền",
        {"oov": "exact"},
        (1.0, 1.0, 1.0),
        "letter-match fallback: 'khớp chữ cho 1.000'",
    ),
    (
        "bố tôi tậu chiếc phi_thuyền",
        "cha tôi mua cái ô_tô",
        {},
        (None, None, 0.816),
        "out-of-table case: 'F1 rơi xuống 0.816'",
    ),
]


@pytest.mark.parametrize(("hyp", "ref", "settings", "expected", "source"), SEED_CASES)
def test_seed_001_table(hyp, ref, settings, expected, source):
    score = evalab.metric("bertscore", model=TABLE, **settings).sentence_score(hyp, [ref])
    got = (score.precision, score.recall, score.fmeasure)
    for g, e in zip(got, expected, strict=True):
        if e is not None:
            assert round(g, 3) == e, source


def test_seed_001_letter_match_is_the_same_machine():
    # "khớp chữ": the same P/R/F with the cosine replaced by 0/1 string identity. With a
    # table that knows none of the words and oov="exact" that is exactly what runs:
    # the default pair gives 0.200 (only 'tôi' matches), the OOV pair 1.000
    letters = evalab.metric("bertscore", model=ONE_WORD, oov="exact")
    assert (
        round(
            letters.sentence_score("bố tôi tậu chiếc xe_hơi", ["cha tôi mua cái ô_tô"]).fmeasure, 3
        )
        == 0.2
    )
    assert letters.sentence_score("con mèo ngủ trên ghế", ["cha tôi mua cái ô_tô"]).fmeasure == 0.0
    assert (
        letters.sentence_score("phi_thuyền phi_thuyền", ["phi_thuyền phi_thuyền"]).fmeasure == 1.0
    )


def test_seed_001_greedy_matching_many_to_one():
    # "bố tôi" vs "cha mèo": both hypothesis tokens pick 'cha', 'mèo' gets no arrow
    m = evalab.metric("bertscore", model=TABLE)
    (a,) = m.explain(["bố tôi"], [["cha mèo"]])
    assert [a.ref_tokens[j] for j in a.hyp_best] == ["cha", "cha"]
    assert a.ref_tokens[a.ref_best[1]] == "mèo" and a.hyp_tokens[a.ref_best[1]] in ("bố", "tôi")


# -- parity with bert-score ----------------------------------------------------------------


@pytest.fixture(scope="module")
def wmt_pairs(wmt22):
    """500 WMT22 en-de pairs: 250 segments whose reference A and Online-A / Online-B outputs
    are all 1-60 characters long, each output against the reference (short segments bound
    the three forward passes this costs; the shared reference is embedded once by us)."""
    refs = read_lines(wmt_file("ref", "en-de", "A"))
    outs = [read_lines(wmt_file("hyp", "en-de", name)) for name in ("Online-A", "Online-B")]
    keep = [i for i in range(len(refs)) if all(0 < len(x[i].strip()) <= 60 for x in (refs, *outs))][
        :250
    ]
    assert len(keep) == 250
    hyps = [out[i] for out in outs for i in keep]
    return hyps, [refs[i] for _ in outs for i in keep]


@pytest.fixture(scope="module")
def bert_score_scorer():
    bert_score = pytest.importorskip("bert_score")
    import bert_score.utils as bsu
    import torch

    from evalab.models.hf_encoder import default_model_path

    # The idf and no-idf runs feed bert-score's forward pass identical padded batches;
    # memoising its `bert_encode` (a pure function of the batch) halves the test's cost
    # while bert-score's own tokenization, IDF and matching still run in both.
    forward = bsu.bert_encode
    memo: dict[torch.nn.Module, dict[bytes, torch.Tensor]] = {}  # per model object

    def memo_encode(model, x, attention_mask, all_layers=False):
        key = (
            x.numpy().tobytes()
            + bytes(str(tuple(x.shape)), "ascii")
            + attention_mask.numpy().tobytes()
        )
        cache = memo.setdefault(model, {})
        if key not in cache:
            cache[key] = forward(model, x, attention_mask=attention_mask, all_layers=all_layers)
        return cache[key].clone()

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bsu, "bert_encode", memo_encode)
        # same local directory, same layer (bert-score has no model2layers entry for it)
        yield bert_score.BERTScorer(model_type=str(default_model_path()), num_layers=6, idf=False)


@pytest.mark.parametrize("idf", [False, True])
def test_parity_with_bert_score_on_500_wmt22_pairs(wmt_pairs, bert_score_scorer, idf):
    hyps, refs = wmt_pairs
    scorer = bert_score_scorer
    scorer._idf = idf  # BERTScorer keeps one model; toggling idf avoids loading it twice
    if idf:
        scorer._idf_dict = None
        scorer.nthreads = 0
        scorer.compute_idf(refs)
    p, r, f = scorer.score(hyps, refs, batch_size=64)
    ours = evalab.metric("bertscore", idf=idf).stats(hyps, [refs]).rows
    theirs = np.stack([p.numpy(), r.numpy(), f.numpy()], axis=1)
    delta = np.abs(ours[:, :3] - theirs).max(axis=0)
    print(f"parity idf={idf}: max |delta| P {delta[0]:.2e} R {delta[1]:.2e} F {delta[2]:.2e}")
    assert ours.shape == (500, 4)
    assert np.all(delta < 1e-5)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert-metric"), layers=2)


@pytest.mark.parametrize("layer", [0, 1, 2])
@pytest.mark.parametrize("idf", [False, True])
def test_parity_tiny_bert_layers_and_multi_reference(tiny_bert, layer, idf):
    bert_score = pytest.importorskip("bert_score")
    hyps = ["the cat sat on the mat .", "a red car", "the dogs run", "a house , a house", "the mat"]
    refs_a = [
        "a cat sat on a mat",
        "the red auto",
        "dogs running",
        "the house",
        "the cat sat on the mat",
    ]
    refs_b = ["the cat sat .", "a car , red", "the dog runs .", "houses", "on the mat"]
    scorer = bert_score.BERTScorer(
        model_type=str(tiny_bert),
        num_layers=layer,
        idf=idf,
        nthreads=0,
        idf_sents=[r for pair in zip(refs_a, refs_b, strict=True) for r in pair] if idf else None,
    )
    p, r, f = scorer.score(hyps, [[a, b] for a, b in zip(refs_a, refs_b, strict=True)])
    ours = evalab.metric("bertscore", model=str(tiny_bert), layer=layer, idf=idf).stats(
        hyps, [refs_a, refs_b]
    )
    theirs = np.stack([p.numpy(), r.numpy(), f.numpy()], axis=1)
    assert np.abs(ours.rows[:, :3] - theirs).max() < 1e-5


# -- order sanity on real data ---------------------------------------------------------------


def _order_sanity(n: int | None) -> float:
    refs_a = read_lines(wmt_file("ref", "en-de", "A"))
    refs_b = read_lines(wmt_file("ref", "en-de", "B"))
    keep = [
        i for i, (a, b) in enumerate(zip(refs_a, refs_b, strict=True)) if a.strip() and b.strip()
    ]
    if n is not None:
        keep = [i for i in keep if len(refs_a[i]) <= 150][:n]
    a = [refs_a[i] for i in keep]
    b = [refs_b[i] for i in keep]
    rng = np.random.default_rng(7)
    # a derangement: every segment gets some other segment's reference B
    shift = rng.permutation(len(b))
    shuffled = [b[shift[(k + 1) % len(b)]] if shift[k] == k else b[shift[k]] for k in range(len(b))]
    m = evalab.metric("bertscore")
    f_para = m.stats(a, [b]).rows[:, 2]
    f_rand = m.stats(a, [shuffled]).rows[:, 2]
    return float(np.mean(f_para > f_rand))


def test_order_sanity_paraphrase_beats_unrelated_300_segments(wmt22):
    share = _order_sanity(300)
    print(f"order sanity (300 segments): F1(A, B) > F1(A, shuffled B) for {share:.1%}")
    assert share >= 0.95


@pytest.mark.slow
def test_order_sanity_full_en_de(wmt22):
    share = _order_sanity(None)
    print(f"order sanity (all en-de): {share:.1%}")
    assert share >= 0.95


# -- the Metric contract ---------------------------------------------------------------------


def test_stats_rows_are_additive_and_corpus_is_mean_f():
    m = evalab.metric("bertscore", model=TABLE)
    hyps = ["bố tôi tậu chiếc xe_hơi", "con mèo ngủ trên ghế", "con chó đuổi con mèo"]
    refs = [["cha tôi mua cái ô_tô", "cha tôi mua cái ô_tô", "con mèo đuổi con chó"]]
    rows = m.stats(hyps, refs).rows
    assert m.stat_names == ("precision", "recall", "f1", "count")
    assert rows[:, 3].tolist() == [1, 1, 1]
    score = m.corpus_score(hyps, refs)
    assert score.score == pytest.approx(rows[:, 2].mean())
    assert score.precision == pytest.approx(rows[:, 0].mean())
    # vectorised over resamples, as the bootstrap uses it
    sums = np.stack([rows.sum(axis=0), rows[[0, 0, 1]].sum(axis=0)])
    assert m.scores_from_sums(sums).tolist() == pytest.approx(
        [rows[:, 2].mean(), rows[[0, 0, 1], 2].mean()]
    )
    # segment order does not change the corpus stats
    perm = [2, 0, 1]
    rows_perm = m.stats([hyps[i] for i in perm], [[refs[0][i] for i in perm]]).rows
    assert rows_perm.sum(axis=0) == pytest.approx(rows.sum(axis=0))
    assert BERTScore.parallel_safe is False


def test_segment_scores_keep_corpus_idf():
    m = evalab.metric("bertscore", model=TABLE, idf=True)
    hyps = ["bố tôi tậu chiếc xe_hơi", "con mèo ngủ trên ghế"]
    refs = [["cha tôi mua cái ô_tô", "con mèo nằm trên bàn"]]
    rows = m.stats(hyps, refs).rows
    seg = m.segment_scores(hyps, refs)
    assert [s.fmeasure for s in seg] == pytest.approx(rows[:, 2].tolist())
    # IDF changes the numbers: 'tôi', 'trên' ... weigh differently than with idf=False
    plain = evalab.metric("bertscore", model=TABLE).stats(hyps, refs).rows
    assert not np.allclose(rows[:, 2], plain[:, 2])


def test_self_score_is_maximal_and_bounded():
    m = evalab.metric("bertscore", model=TABLE)
    s = "cha tôi mua cái ô_tô"
    rows = m.stats([s, "bố tôi tậu chiếc xe_hơi"], [[s, s]]).rows
    assert rows[0, :3] == pytest.approx([1, 1, 1])
    assert np.all(rows[:, :3] <= 1 + 1e-9) and np.all(rows[:, :3] >= 0)


def test_signature_names_model_layer_idf_rescale_version():
    m = evalab.metric("bertscore")
    sig = m.signature_for(1)
    assert sig.startswith("bertscore|nrefs:1|model:all-MiniLM-L6-v2#")
    assert "|layer:6|idf:no|rescale:no|match:greedy-bs64|" in sig
    assert sig.endswith(f"version:{evalab.__version__}")
    sig2 = evalab.metric("bertscore", idf=True, rescale=True, layer=5).signature_for(2)
    assert "|layer:5|idf:yes|rescale:bertscore-baseline-all-MiniLM-L6-v2.tsv(0.4503)|" in sig2


def test_rescale_with_shipped_baseline_is_linear():
    hyps = ["The cat sat on the mat.", "It rained all day."]
    refs = [["A cat was sitting on the mat.", "The weather was sunny."]]
    raw = evalab.metric("bertscore").stats(hyps, refs).rows
    resc = evalab.metric("bertscore", rescale=True).stats(hyps, refs).rows
    b = read_baseline(default_baseline_path(), 6)
    assert resc[:, :3] == pytest.approx((raw[:, :3] - b) / (1 - b))
    assert resc[0, 2] > resc[1, 2]


def test_rescale_needs_a_baseline_for_other_models(tmp_path):
    with pytest.raises(SettingsError, match="rescale needs a baseline"):
        evalab.metric("bertscore", model=TABLE, rescale=True).stats(["bố"], [["cha"]])
    base = tmp_path / "b.tsv"
    base.write_text("LAYER,P,R,F\n0,0.5,0.5,0.5\n", encoding="utf-8")
    rows = (
        evalab.metric("bertscore", model=TABLE, rescale=True, baseline=str(base))
        .stats(["bố"], [["cha"]])
        .rows
    )
    raw = evalab.metric("bertscore", model=TABLE).stats(["bố"], [["cha"]]).rows
    assert rows[0, 2] == pytest.approx((raw[0, 2] - 0.5) / 0.5)
    base.write_text("LAYER,P,R,F\n3,0.5,0.5,0.5\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"no baseline row for layer 0 \(layers present: \[3\]\)"):
        evalab.metric("bertscore", model=TABLE, rescale=True, baseline=str(base)).stats(
            ["bố"], [["cha"]]
        )
    with pytest.raises(SettingsError, match="rescale is off"):
        evalab.metric("bertscore", model=TABLE, baseline=str(base))


def test_bert_score_baseline_file_format_is_read():
    bert_score = pytest.importorskip("bert_score")
    path = Path(bert_score.__file__).parent / "rescale_baseline" / "en" / "bert-base-uncased.tsv"
    b = read_baseline(path, 9)
    import pandas as pd

    expected = pd.read_csv(path).iloc[9].to_numpy()[1:]
    assert b == pytest.approx(expected)


def test_empty_lines_warn_and_score_zero():
    m = evalab.metric("bertscore", model=TABLE)
    with pytest.warns(UserWarning, match="1 hypothesis/reference pair"):
        rows = m.stats(["", "bố tôi"], [["cha", "bố tôi"]]).rows
    assert rows[0, :3].tolist() == [0, 0, 0]
    assert rows[1, 2] == pytest.approx(1.0)


def test_function_words_need_a_list(tmp_path):
    m = evalab.metric("bertscore", model=ONE_WORD, drop_function_words=True)
    with pytest.raises(SettingsError, match="needs a list of function words"):
        m.stats(["a"], [["a"]])
    stop = tmp_path / "stop.txt"
    stop.write_text("cái\nchiếc\n", encoding="utf-8")
    m2 = evalab.metric("bertscore", model=TABLE, drop_function_words=True, stopwords=str(stop))
    # the table's own tags are used too
    rows = m2.stats(["con mèo ngủ trên ghế"], [["cha tôi mua cái ô_tô"]]).rows
    assert round(rows[0, 2], 3) == 0.117


def test_bad_settings_and_inputs(tmp_path):
    with pytest.raises(SettingsError, match="batch_size"):
        evalab.metric("bertscore", batch_size=0)
    with pytest.raises(SettingsError, match="oov"):
        evalab.metric("bertscore", oov="maybe")
    with pytest.raises(InputError, match="does not exist"):
        evalab.metric("bertscore", model=str(tmp_path / "missing")).stats(["a"], [["a"]])
    with pytest.raises(SettingsError, match="layer 2 is out of range for the static table"):
        evalab.metric("bertscore", model=TABLE, layer=2).stats(["a"], [["a"]])
    with pytest.raises(InputError, match="every stream must have one reference per hypothesis"):
        evalab.metric("bertscore", model=TABLE).stats(["a", "b"], [["a"]])


def test_registry_and_score_entry_point():
    assert isinstance(evalab.metric("bertscore"), BERTScore)
    value = evalab.score("bertscore", "The cat sat on the mat.", ["A cat sat on the mat."])
    assert 0.8 < value <= 1.0
