"""Corpus cross-entropy / perplexity metrics: additive rows, units, means, CIs, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import evalab
import evalab.nll as L
from evalab.errors import InputError, SettingsError
from evalab.metrics.loss import STAT_NAMES, CrossEntropy, Perplexity

NLL = [2.0, 6.0, 3.0]
TOKENS = [2, 4, 3]
TEXTS = ["Guten Tag", "Grüße aus Köln", "a b c d"]


def rows() -> np.ndarray:
    return Perplexity.stats_from_nll(NLL, TOKENS, texts=TEXTS)


def test_rows_are_per_segment_sums():
    r = rows()
    assert r.shape == (3, len(STAT_NAMES))
    assert r[:, 0].tolist() == NLL and r[:, 1].tolist() == TOKENS
    assert r[:, 2].tolist() == [L.count_bytes(t) for t in TEXTS] == [9, 17, 7]
    assert r[:, 3].tolist() == [2, 3, 4]
    assert r[:, 4].tolist() == [1, 1, 1]
    assert np.allclose(r[:, 5], np.array(NLL) / TOKENS)


def test_corpus_values_are_token_weighted():
    total, tokens = sum(NLL), sum(TOKENS)
    score = Perplexity().aggregate(rows())
    assert score.score == pytest.approx(math.exp(total / tokens))
    assert score.nats_per_token == pytest.approx(total / tokens)
    assert score.bits_per_token == pytest.approx(total / tokens / math.log(2))
    assert score.bits_per_byte == pytest.approx(total / (33 * math.log(2)))
    assert score.word_perplexity == pytest.approx(math.exp(total / 9))
    assert score.tokens == 9 and not Perplexity.higher_is_better
    assert CrossEntropy().aggregate(rows()).score == pytest.approx(total / tokens)
    assert CrossEntropy(unit="bits").aggregate(rows()).score == pytest.approx(
        total / tokens / math.log(2)
    )
    assert CrossEntropy(unit="bits", per="byte").aggregate(rows()).score == pytest.approx(
        score.bits_per_byte
    )
    assert Perplexity(per="word").aggregate(rows()).score == pytest.approx(score.word_perplexity)


def test_mean_over_documents_differs_from_mean_over_tokens():
    doc_ppl = [math.exp(n / t) for n, t in zip(NLL, TOKENS, strict=True)]
    by_docs = Perplexity(mean="documents").aggregate(rows()).score
    assert by_docs == pytest.approx(sum(doc_ppl) / 3)
    assert by_docs != pytest.approx(Perplexity().aggregate(rows()).score)
    assert CrossEntropy(mean="documents").aggregate(rows()).score == pytest.approx(
        sum(n / t for n, t in zip(NLL, TOKENS, strict=True)) / 3
    )
    # a segment without tokens is no document: it leaves the per-document mean alone
    with_empty = np.vstack([rows(), Perplexity.stats_from_nll([0.0], [0], texts=[""])])
    assert Perplexity(mean="documents").aggregate(with_empty).score == pytest.approx(by_docs)


def test_scores_from_sums_is_vectorised_and_shards_add_up():
    r = rows()
    for metric in (
        Perplexity(),
        CrossEntropy(unit="bits"),
        Perplexity(mean="documents"),
        Perplexity(per="byte"),
    ):
        sums = np.stack([r[:2].sum(0), r[1:].sum(0), r.sum(0)])[None]  # shape [1, 3, k]
        batch = metric.scores_from_sums(sums)
        assert batch.shape == (1, 3)
        assert batch[0, 2] == pytest.approx(metric.aggregate(r).score)
        assert batch[0, 0] == pytest.approx(metric.aggregate(r[:2]).score)
        # order of segments does not matter, shards sum
        assert metric.aggregate(r[::-1]).score == pytest.approx(metric.aggregate(r).score)


def test_rows_from_logits_match_the_loss_functions():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((3, 6, 11))
    labels = rng.integers(1, 11, size=(3, 6))
    labels[2, 4:] = 0  # padding
    r = Perplexity.stats_from_logits(logits, labels, shift=True, pad_id=0)
    x, y = L.shift_pairs(logits, labels)
    for i in range(3):
        total, count = L.summed_loss(x[i], y[i], pad_id=0)
        assert r[i, 0] == pytest.approx(total) and r[i, 1] == count
    assert Perplexity().aggregate(r).score == pytest.approx(L.perplexity(x, y, pad_id=0))
    torch = pytest.importorskip("torch")
    rt = Perplexity.stats_from_logits(
        torch.from_numpy(logits), torch.from_numpy(labels), shift=True, pad_id=0
    )
    assert np.allclose(rt, r)


def test_rows_from_token_logprobs():
    r = CrossEntropy.stats_from_token_logprobs([[math.log(0.5), math.log(0.25)], [math.log(0.5)]])
    assert np.allclose(r[:, :2], [[math.log(8), 2], [math.log(2), 1]])
    assert CrossEntropy(unit="bits").aggregate(r).score == pytest.approx(4 / 3)
    with pytest.raises(InputError, match="<= 0"):
        CrossEntropy.stats_from_token_logprobs([[0.5]])


def test_bootstrap_ci_and_paired_test_run_on_the_rows():
    bootstrap = pytest.importorskip("evalab.stats.bootstrap")
    rng = np.random.default_rng(1)
    tokens = rng.integers(5, 30, size=40)
    r = Perplexity.stats_from_nll(tokens * rng.uniform(2, 4, size=40), tokens)
    metric = Perplexity()
    ci = bootstrap.bootstrap_ci(metric, r, n_samples=200, seed=3)
    assert ci.low <= ci.score <= ci.high
    assert ci.score == pytest.approx(metric.aggregate(r).score)


def test_registry_signature_and_errors():
    ppl = evalab.metric("perplexity")
    assert isinstance(ppl, Perplexity)
    assert isinstance(evalab.metric("cross_entropy", unit="bits"), CrossEntropy)
    assert ppl.signature.startswith("perplexity|per:token|mean:tokens|lm:external|version:")
    assert CrossEntropy(unit="bits").signature.startswith("cross_entropy|unit:bits|per:token")
    with pytest.raises(SettingsError, match="needs a causal LM: set model=PATH"):
        ppl.corpus_score(["some text"])
    with pytest.raises(SettingsError, match="per='token'"):
        Perplexity(mean="documents", per="byte")
    with pytest.raises(SettingsError, match="unit"):
        CrossEntropy(unit="hartley")
    with pytest.raises(InputError, match="needs byte counts"):
        Perplexity(per="byte").aggregate(Perplexity.stats_from_nll([1.0], [1]))
    with pytest.raises(InputError, match="no scored tokens"):
        Perplexity().aggregate(Perplexity.stats_from_nll([0.0], [0]))
    with pytest.raises(InputError, match="2 NLL values but 3 token counts"):
        Perplexity.stats_from_nll([1.0, 2.0], [1, 2, 3])
    with pytest.raises(InputError, match="finite and >= 0"):
        Perplexity.stats_from_nll([-1.0], [1])
