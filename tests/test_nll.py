"""evalab.nll: seed 003's reference vectors, parity with torch / torchmetrics, properties, errors.

Reference vectors (seed 003, "손실 하나를 손으로 만든다"): uniform logits give perplexity =
vocabulary size; log_softmax([0, -800]) is finite (~ -800) where exp-then-log gives -inf; on
data where position t's logits favour token t+1 the shifted loss is smaller than the
unshifted one; excluding padding changes the denominator (and the padded mean flatters);
bits = nats / ln 2.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import evalab.nll as L
from evalab.errors import InputError

# -- seed 003's toy data ---------------------------------------------------------------------
VOCAB = 12
PAD_ID = 0
SEQ = [3, 7, 1, 9, 4, 4, 11, 2, 5, 8, 6, 10, 3, 1, 7, 2, PAD_ID, PAD_ID, PAD_ID, PAD_ID]


def seed_dataset() -> tuple[np.ndarray, np.ndarray]:
    """Deterministic logits: row t gives the token at t+1 the top score; after the sentence
    (where padding follows padding) the score is larger, so padding is easy to predict."""
    ids = np.array(SEQ)
    rows = np.zeros((len(SEQ), VOCAB))
    for t in range(len(SEQ)):
        nxt = SEQ[t + 1] if t + 1 < len(SEQ) else PAD_ID
        rows[t] = 0.1 * ((np.arange(VOCAB) * (t + 3)) % 5)  # some structure, no randomness
        rows[t, nxt] += 8.0 if nxt == PAD_ID else 3.0
    return rows, ids


def test_uniform_logits_give_vocabulary_size():
    for vocab in (2, 12, 50257):
        logits = np.zeros((3, vocab))
        assert L.perplexity(logits, np.array([0, 1, vocab - 1])) == pytest.approx(vocab, rel=1e-12)


def test_perplexity_is_exp_of_mean_not_mean_of_exp():
    logits = np.log(np.array([[0.5, 0.5], [0.9, 0.1]]))
    labels = np.array([0, 1])
    losses = [math.log(2), -math.log(0.1)]
    assert L.perplexity(logits, labels) == pytest.approx(math.exp(sum(losses) / 2))
    assert L.perplexity(logits, labels) != pytest.approx(sum(math.exp(x) for x in losses) / 2)


def test_log_softmax_gap_of_800_is_finite_where_naive_is_minus_inf():
    xs = np.array([0.0, -800.0])
    stable = L.log_softmax(xs)
    assert np.all(np.isfinite(stable))
    assert stable[1] == pytest.approx(-800.0, abs=1e-9)
    with np.errstate(divide="ignore", under="ignore"):
        naive = np.log(np.exp(xs) / np.exp(xs).sum())  # probabilities first, then the log
    assert naive[1] == -np.inf
    # far beyond float64's exp range too
    assert L.log_softmax(np.array([1e4, -1e4])).tolist() == [0.0, -2e4]
    assert L.token_loss(np.array([0.0, -800.0]), 1) == pytest.approx(800.0)


def test_shifted_loss_is_smaller_on_next_token_data():
    rows, ids = seed_dataset()
    shifted = L.cross_entropy(*L.shift_pairs(rows, ids), pad_id=PAD_ID)
    unshifted = L.cross_entropy(rows, ids, pad_id=PAD_ID)
    assert shifted < unshifted
    assert shifted < 0.5 < 2.0 < unshifted


def test_masking_changes_the_denominator_and_unmasked_padding_flatters():
    rows, ids = seed_dataset()
    x, y = L.shift_pairs(rows, ids)
    total_masked, kept = L.summed_loss(x, y, pad_id=PAD_ID)
    _, n_all = L.summed_loss(x, y)
    assert (kept, n_all) == (15, 19)  # three padding targets leave the denominator
    masked = L.cross_entropy(x, y, pad_id=PAD_ID)
    assert masked == pytest.approx(total_masked / kept)
    # dividing the masked sum by the full length is the silent error: smaller than the truth
    assert total_masked / n_all < masked
    # keeping the easy padding positions in the mean also makes the loss look better
    assert L.cross_entropy(x, y) < masked
    # ignore_index marks the same positions as pad_id here
    y_ignored = np.where(y == PAD_ID, L.IGNORE_INDEX, y)
    assert L.cross_entropy(x, y_ignored) == pytest.approx(masked, abs=1e-15)


def test_bits_are_nats_over_ln2():
    rows, ids = seed_dataset()
    nats = L.cross_entropy(*L.shift_pairs(rows, ids), pad_id=PAD_ID)
    assert L.nats_to_bits(nats) == pytest.approx(nats / math.log(2), rel=1e-15)
    assert L.bits_to_nats(L.nats_to_bits(nats)) == pytest.approx(nats, rel=1e-15)
    assert L.nats_to_bits(math.log(VOCAB)) == pytest.approx(math.log2(VOCAB))
    # perplexity is the same number in any base: 2 ** bits == e ** nats
    assert 2 ** L.nats_to_bits(nats) == pytest.approx(math.exp(nats))


def test_bytes_and_words_follow_the_harness():
    # lm-evaluation-harness: words = len(re.split(r"\s+", text)), bytes = len(text.encode())
    assert L.count_words("Der Hund  bellt.\nDie Katze") == 5
    assert L.count_words(" leading") == 2
    assert L.count_bytes("Straße") == 7
    nll = 10 * math.log(2)
    assert L.bits_per_byte(nll, 5) == pytest.approx(2.0)
    assert L.byte_perplexity(nll, 5) == pytest.approx(4.0)
    assert L.word_perplexity(nll, 2) == pytest.approx(32.0)
    with pytest.raises(InputError, match="positive count"):
        L.bits_per_byte(1.0, 0)


# -- parity with torch and torchmetrics --------------------------------------------------------
def _random_batch(seed: int, dtype=np.float64, batch=4, length=9, vocab=37, scale=4.0):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((batch, length, vocab)) * scale).astype(dtype)
    labels = rng.integers(0, vocab, size=(batch, length))
    for b in range(batch):  # right padding of random length
        labels[b, length - rng.integers(0, length // 2 + 1) :] = L.IGNORE_INDEX
    return logits, labels


@pytest.mark.parametrize("seed", range(5))
def test_parity_with_torch_cross_entropy(seed):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    logits, labels = _random_batch(seed)
    ours = L.cross_entropy(logits, labels)
    theirs = F.cross_entropy(
        torch.from_numpy(logits).reshape(-1, logits.shape[-1]),
        torch.from_numpy(labels).reshape(-1),
        ignore_index=L.IGNORE_INDEX,
    ).item()
    assert abs(ours - theirs) < 1e-6
    per_token = F.cross_entropy(
        torch.from_numpy(logits).reshape(-1, logits.shape[-1]),
        torch.from_numpy(labels).reshape(-1),
        ignore_index=L.IGNORE_INDEX,
        reduction="none",
    ).numpy()
    assert np.max(np.abs(L.token_loss(logits, labels).reshape(-1) - per_token)) < 1e-6
    # float32 logits: torch computes in float32, we in float64
    l32 = logits.astype(np.float32)
    theirs32 = F.cross_entropy(
        torch.from_numpy(l32).reshape(-1, l32.shape[-1]),
        torch.from_numpy(labels).reshape(-1),
        ignore_index=L.IGNORE_INDEX,
    ).item()
    assert abs(L.cross_entropy(l32, labels) - theirs32) < 1e-5


@pytest.mark.parametrize("seed", range(5))
def test_parity_with_torchmetrics_perplexity(seed):
    torch = pytest.importorskip("torch")
    tm = pytest.importorskip("torchmetrics.text")
    logits, labels = _random_batch(seed, scale=2.0)
    # set_dtype, not .double(): .double() leaves torchmetrics' summed state in float32
    metric = tm.Perplexity(ignore_index=L.IGNORE_INDEX).set_dtype(torch.float64)
    metric.update(torch.from_numpy(logits), torch.from_numpy(labels))
    theirs = metric.compute().item()
    assert abs(L.perplexity(logits, labels) - theirs) < 1e-6 * theirs
    assert abs(math.log(L.perplexity(logits, labels)) - math.log(theirs)) < 1e-12


# -- torch tensors: no copy, same numbers, autograd -------------------------------------------
def test_torch_tensors_stay_torch_and_match_numpy():
    torch = pytest.importorskip("torch")
    logits, labels = _random_batch(7)
    tl = torch.from_numpy(logits).requires_grad_(True)
    ty = torch.from_numpy(labels)
    ce = L.cross_entropy(tl, ty)
    assert isinstance(ce, torch.Tensor) and ce.dtype == torch.float64
    assert ce.item() == pytest.approx(L.cross_entropy(logits, labels), abs=1e-12)
    ce.backward()  # computed by torch ops: the gradient exists and equals torch's own
    ref = tl.detach().clone().requires_grad_(True)
    torch.nn.functional.cross_entropy(
        ref.reshape(-1, 37), ty.reshape(-1), ignore_index=-100
    ).backward()
    assert torch.allclose(tl.grad, ref.grad, atol=1e-12)
    assert L.perplexity(tl, ty).item() == pytest.approx(L.perplexity(logits, labels), rel=1e-12)
    lsm = L.log_softmax(tl.detach())
    assert isinstance(lsm, torch.Tensor)
    assert np.max(np.abs(lsm.numpy() - L.log_softmax(logits))) < 1e-12
    # shift_pairs returns views of the caller's storage, for numpy and torch alike
    x, y = L.shift_pairs(tl.detach(), ty)
    assert x.data_ptr() == tl.data_ptr() and y.data_ptr() == ty.data_ptr() + ty.element_size()
    xn, yn = L.shift_pairs(logits, labels)
    assert np.shares_memory(xn, logits) and np.shares_memory(yn, labels)
    total, count = L.summed_loss(x, y)
    assert isinstance(total, torch.Tensor) and isinstance(count, int)
    assert total.item() == pytest.approx(L.summed_loss(xn, yn)[0], abs=1e-10)


def test_torch_half_precision_is_computed_in_float32():
    torch = pytest.importorskip("torch")
    logits, labels = _random_batch(3)
    half = torch.from_numpy(logits).to(torch.bfloat16)
    ce = L.cross_entropy(half, torch.from_numpy(labels))
    assert ce.dtype == torch.float32
    assert ce.item() == pytest.approx(L.cross_entropy(half.float().numpy(), labels), rel=1e-6)


# -- blocks: chunked == whole, non-contiguous views, flat memory ------------------------------
def test_chunking_does_not_change_results(monkeypatch):
    logits, labels = _random_batch(11, batch=3, length=50, vocab=64)
    whole = L.token_loss(logits, labels)
    whole_lsm = L.log_softmax(logits)
    x, y = L.shift_pairs(logits, labels)  # non-contiguous: walked by outer index
    shifted = L.token_loss(np.ascontiguousarray(x), np.ascontiguousarray(y))
    monkeypatch.setattr(L, "CHUNK_ELEMENTS", 64 * 7)  # 7 rows per block
    assert np.array_equal(L.token_loss(logits, labels), whole)
    assert np.array_equal(L.log_softmax(logits), whole_lsm)
    assert np.array_equal(L.token_loss(x, y), shifted)
    assert np.array_equal(L.log_softmax(x), L.log_softmax(np.ascontiguousarray(x)))


def test_extra_memory_is_bounded_by_the_block(monkeypatch):
    monkeypatch.setattr(L, "CHUNK_ELEMENTS", 1 << 14)
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((4000, 500))  # 16 MB of float64
    labels = rng.integers(0, 500, size=4000)
    tracemalloc.start()
    try:
        L.summed_loss(logits, labels)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000, peak  # a few blocks of 16k float64 + the [4000] outputs, not 16 MB


# -- properties --------------------------------------------------------------------------------
finite = st.floats(-50, 50, allow_nan=False, allow_infinity=False)


@settings(max_examples=40, deadline=None)
@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6),
        elements=finite,
    )
)
def test_log_softmax_properties(x):
    out = L.log_softmax(x)
    assert out.shape == x.shape and np.all(out <= 1e-12)
    assert np.allclose(np.exp(out).sum(axis=-1), 1.0)
    assert np.allclose(L.log_softmax(x + 123.0), out)  # invariant to a shift of each row


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_loss_properties(data):
    n = data.draw(st.integers(1, 12))
    vocab = data.draw(st.integers(1, 9))
    logits = data.draw(hnp.arrays(np.float64, (n, vocab), elements=finite))
    labels = np.array(data.draw(st.lists(st.integers(0, vocab - 1), min_size=n, max_size=n)))
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    masked = np.where(keep, labels, L.IGNORE_INDEX)
    losses = L.token_loss(logits, masked)
    assert np.all(losses >= -1e-12) and np.all(losses[~keep] == 0)
    total, count = L.summed_loss(logits, masked)
    # masking == scoring only the kept positions; order of positions does not matter
    sub_total, sub_count = L.summed_loss(logits[keep], labels[keep])
    assert count == sub_count == int(keep.sum())
    assert total == pytest.approx(sub_total, abs=1e-9)
    perm = np.random.default_rng(n).permutation(n)
    assert L.summed_loss(logits[perm], masked[perm])[0] == pytest.approx(total, abs=1e-9)
    if count:
        assert L.perplexity(logits, masked) == pytest.approx(math.exp(total / count))
        assert L.perplexity(logits, masked) >= 1.0 - 1e-12


# -- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_logits_are_errors(bad):
    logits = np.zeros((2, 3, 4))
    logits[1, 2, 0] = bad
    with pytest.raises(InputError, match=r"NaN or inf at position \(1, 2\)"):
        L.cross_entropy(logits, np.zeros((2, 3), dtype=int))
    with pytest.raises(InputError, match="NaN or inf"):
        L.log_softmax(logits)


def test_shape_and_label_errors():
    logits = np.zeros((2, 3, 5))
    with pytest.raises(
        InputError, match=r"labels have shape \(2, 4\).*expected|must have the logits' shape"
    ):
        L.token_loss(logits, np.zeros((2, 4), dtype=int))
    with pytest.raises(
        InputError, match=r"label 5 at position \(0, 1\) is outside the vocabulary \[0, 5\)"
    ):
        L.token_loss(logits, np.array([[0, 5, 1], [0, 0, 0]]))
    with pytest.raises(InputError, match="label -3"):
        L.token_loss(logits, np.array([[0, -3, 1], [0, 0, 0]]))
    with pytest.raises(InputError, match="integer token ids"):
        L.token_loss(logits, np.zeros((2, 3)))
    with pytest.raises(InputError, match="shift_pairs needs"):
        L.shift_pairs(np.zeros(5), np.zeros(5, dtype=int))
    # an out-of-vocabulary id at a masked position is fine: it is never looked up
    assert L.token_loss(logits, np.array([[0, -100, 1], [0, 0, 0]]))[0, 1] == 0.0
    assert L.token_loss(logits, np.array([[0, 99, 1], [0, 0, 0]]), ignore_index=99)[0, 1] == 0.0


def test_no_tokens_is_an_error_for_means_but_zero_for_sums():
    logits = np.zeros((2, 4))
    labels = np.array([L.IGNORE_INDEX, L.IGNORE_INDEX])
    assert L.summed_loss(logits, labels) == (0.0, 0)
    assert L.summed_loss(np.zeros((0, 4)), np.zeros(0, dtype=int)) == (0.0, 0)
    with pytest.raises(InputError, match="zero tokens"):
        L.cross_entropy(logits, labels)
    with pytest.raises(InputError, match="zero tokens"):
        L.perplexity(np.zeros((0, 4)), np.zeros(0, dtype=int))
