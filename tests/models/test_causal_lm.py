"""Sliding-window perplexity of a causal LM against a direct token-by-token computation.

The model is a tiny random GPT-2 built from a config (benchmarks/make_tiny_lm.py, fixed
seed, byte-level tokenizer): no download. The reference scores every token separately: for
token p the context is derived here from the protocol's definition (the window that
scores p starts at the first multiple of the stride whose window reaches past p), the model
runs on that context alone, and the log-probability of token p is read off the last
position. The batched evaluation must agree within 1e-5 nats per token.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from evalab.errors import InputError, SettingsError  # noqa: E402
from evalab.models.causal_lm import CausalLMScorer, plan_windows  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TEXT = (
    "Der schnelle braune Fuchs springt über den faulen Hund. "
    "Perplexity is the exponential of the mean negative log-likelihood."
)


def load_builder():
    spec = importlib.util.spec_from_file_location(
        "make_tiny_lm", REPO / "benchmarks" / "make_tiny_lm.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def one_thread():
    # On a shared, loaded machine torch's intra-op thread pool spins against other
    # processes (a forward of this tiny model goes from ~5 ms to ~250 ms); one thread is
    # faster here and does not change any number the tests compare.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_lm(tmp_path_factory) -> Path:
    return load_builder().build_tiny_lm(
        tmp_path_factory.mktemp("lm") / "tiny-gpt2", seed=0, positions=64
    )


def window_start(p: int, n: int, max_length: int, stride: int) -> int:
    """Start of the window that scores position p (HF guide: windows start at k * stride,
    window k scores the positions between the previous window's end and its own end)."""
    k = 0
    while min(k * stride + max_length, n) <= p:
        k += 1
    return k * stride


def direct_nll(model, ids: list[int], max_length: int, stride: int) -> tuple[float, int]:
    total, count = 0.0, 0
    n = len(ids)
    with torch.no_grad():
        for p in range(1, n):
            begin = window_start(p, n, max_length, stride)
            if begin >= p:  # no context inside its window (stride == max_length): not scored
                continue
            context = torch.tensor([ids[begin:p]])
            logits = model(input_ids=context).logits[0, -1].double()
            total -= torch.log_softmax(logits, dim=-1)[ids[p]].item()
            count += 1
    return total, count


@pytest.mark.parametrize(
    ("max_length", "stride", "batch_size"),
    [(32, 16, 4), (32, 32, 3), (24, 7, 8), (64, 64, 1), (16, 5, 2)],
)
def test_matches_token_by_token(tiny_lm, max_length, stride, batch_size):
    scorer = CausalLMScorer(tiny_lm, max_length=max_length, stride=stride, batch_size=batch_size)
    docs = [TEXT, TEXT[:20], "ab"]  # long, shorter than one window, two tokens
    got = scorer.score_texts(docs)
    for text, doc in zip(docs, got, strict=True):
        ids = scorer.encode(text)
        total, count = direct_nll(scorer.model, ids, max_length, stride)
        assert doc.tokens == count
        assert abs(doc.nll / doc.tokens - total / count) < 1e-5
    # stride < max_length scores every token but the first once
    if stride < max_length:
        assert got[0].tokens == len(scorer.encode(TEXT)) - 1


def test_bos_scores_the_first_token(tiny_lm):
    plain = CausalLMScorer(tiny_lm, max_length=32, stride=16)
    with_bos = CausalLMScorer(tiny_lm, max_length=32, stride=16, bos=True)
    ids = with_bos.encode(TEXT)
    assert ids[0] == 256 and ids[1:] == plain.encode(TEXT)
    doc = with_bos.score_texts([TEXT])[0]
    total, count = direct_nll(with_bos.model, ids, 32, 16)
    assert doc.tokens == count == len(ids) - 1 == len(plain.encode(TEXT))
    assert abs(doc.nll - total) < 1e-5 * count
    assert ("bos", "yes") in with_bos.signature_fields()


def test_batching_does_not_change_numbers(tiny_lm):
    texts = [TEXT, TEXT[5:40], TEXT[::-1], "x"]
    one = CausalLMScorer(tiny_lm, max_length=32, stride=8, batch_size=1).score_texts(texts)
    many = CausalLMScorer(tiny_lm, max_length=32, stride=8, batch_size=16).score_texts(texts)
    assert one == many  # bit for bit: a window's batch holds windows of its length only
    assert many[-1].tokens == 0 and many[-1].nll == 0.0


@pytest.mark.parametrize(("max_length", "stride"), [(64, 32), (16, 5)])
def test_a_document_scores_the_same_whatever_else_is_in_the_call(tiny_lm, max_length, stride):
    """Shards of a corpus, any order, any batch size: each document's numbers bit for bit
    (the rows of --executor ray and -j N are those of one process)."""
    texts = [TEXT[i : i + 3 + 7 * i] for i in range(20)] + [TEXT, TEXT[::-1] * 2]
    scorer = CausalLMScorer(tiny_lm, max_length=max_length, stride=stride, batch_size=4)
    whole = scorer.score_texts(texts)
    halves = scorer.score_texts(texts[:7]) + scorer.score_texts(texts[7:])
    backwards = scorer.score_texts(texts[::-1])[::-1]
    alone = [scorer.score_texts([t])[0] for t in texts]
    assert whole == halves == backwards == alone
    assert all(d.tokens > 0 for d in whole)


def test_plan_windows_cover_each_position_once():
    for n in range(0, 40):
        for max_length in (2, 3, 8):
            for stride in range(1, max_length + 1):
                scored = [
                    p
                    for _, e, s in plan_windows(n, max_length=max_length, stride=stride)
                    for p in range(s, e)
                ]
                assert len(scored) == len(set(scored))
                for b, e, s in plan_windows(n, max_length=max_length, stride=stride):
                    assert 0 <= b < s <= e <= n and e - b <= max_length
                if stride < max_length:
                    assert scored == list(range(1, n))


def test_defaults_and_errors(tiny_lm, tmp_path):
    scorer = CausalLMScorer(tiny_lm)
    assert (scorer.max_length, scorer.stride) == (64, 32)  # context size and half of it
    with pytest.raises(SettingsError, match="exceeds the model's context size 64"):
        CausalLMScorer(tiny_lm, max_length=65)
    with pytest.raises(SettingsError, match="stride must be between 1 and max_length"):
        CausalLMScorer(tiny_lm, max_length=16, stride=17)
    with pytest.raises(InputError, match="no such model directory"):
        CausalLMScorer(tmp_path / "missing")
    with pytest.raises(InputError, match=r"no config\.json"):
        CausalLMScorer(tmp_path)
    from transformers import T5Config  # an encoder-decoder: no causal LM class

    T5Config(vocab_size=10, d_model=8, d_kv=4, d_ff=8, num_layers=1, num_heads=2).save_pretrained(
        tmp_path / "t5"
    )
    with pytest.raises(InputError, match="not a causal language model"):
        _ = CausalLMScorer(tmp_path / "t5", max_length=8).model


def test_config_checks_refuse_non_causal_models(tmp_path):
    from evalab.models.causal_lm import check_causal_config, check_device, check_tokenizer_files

    path = tmp_path / "m"
    for config, needle in [
        (
            {"model_type": "bert", "architectures": ["BertForMaskedLM"]},
            "architecture BertForMaskedLM",
        ),
        ({"model_type": "bert"}, "is an encoder unless its config sets is_decoder=true"),
        ({"model_type": "t5", "is_encoder_decoder": True}, "encoder-decoder"),
        ({"model_type": "no-such-type"}, "has no causal language-model class"),
    ]:
        with pytest.raises(InputError, match=needle):
            check_causal_config(path, config)
    check_causal_config(path, {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]})
    check_causal_config(
        path, {"model_type": "bert", "is_decoder": True, "architectures": ["BertLMHeadModel"]}
    )
    path.mkdir()
    with pytest.raises(InputError, match="no tokenizer files"):
        check_tokenizer_files(path)
    (path / "tokenizer.json").write_text("{}")
    check_tokenizer_files(path)
    check_device("cpu")
    for device, needle in (
        ("tpu9", "not a torch device"),
        ("meta", "not supported"),
        ("cuda:99", "cuda:99"),
    ):
        with pytest.raises(SettingsError, match=needle):
            check_device(device)
