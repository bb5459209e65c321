"""The packed BERT forward pass equals Hugging Face's BertModel on every real token."""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from evalab.models.hf_encoder import PACKED_BATCH_TOKENS, TransformerEmbedder
from evalab.models.packed_bert import PackedBertEncoder, packed_encoder
from models.semantic_helpers import TINY_WORDS, make_tiny_bert


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert-packed"), layers=3)


def _hf_hidden(model, batch):
    import torch

    width = max(map(len, batch))
    ids = torch.zeros((len(batch), width), dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for i, x in enumerate(batch):
        ids[i, : len(x)] = torch.tensor(x)
        mask[i, : len(x)] = 1
    with torch.inference_mode():
        out = model(input_ids=ids, attention_mask=mask).last_hidden_state
    return [out[i, : len(x)].numpy() for i, x in enumerate(batch)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_packed_equals_hugging_face_with_padding(tiny_bert, seed):
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(tiny_bert), local_files_only=True).eval()
    rng = random.Random(seed)
    # very different lengths in one batch: most of Hugging Face's tensor is padding
    batch = [
        [2, *(rng.randrange(5, len(TINY_WORDS)) for _ in range(rng.randrange(0, 40))), 3]
        for _ in range(7)
    ]
    encoder = packed_encoder(model, model.config)
    assert isinstance(encoder, PackedBertEncoder)
    packed = encoder(batch, "cpu").numpy()
    got = np.split(packed, np.cumsum([len(x) for x in batch])[:-1])
    for ours, theirs in zip(got, _hf_hidden(model, batch), strict=True):
        assert ours.shape == theirs.shape
        assert np.abs(ours - theirs).max() < 1e-5


def test_runs_of_equal_lengths_equal_hugging_face(tiny_bert):
    from transformers import AutoModel

    from evalab.models.packed_bert import _runs

    model = AutoModel.from_pretrained(str(tiny_bert), local_files_only=True).eval()
    rng = random.Random(7)
    # lengths repeat, in runs and scattered: each run is attended to as one block
    lengths = [9, 9, 9, 4, 4, 9, 12, 3, 3, 3, 3, 12]
    batch = [[2, *(rng.randrange(5, len(TINY_WORDS)) for _ in range(n - 2)), 3] for n in lengths]
    assert _runs(lengths) == [
        (0, 3, 9),
        (27, 2, 4),
        (35, 1, 9),
        (44, 1, 12),
        (56, 4, 3),
        (68, 1, 12),
    ]
    encoder = packed_encoder(model, model.config)
    assert isinstance(encoder, PackedBertEncoder)
    got = np.split(encoder(batch, "cpu").numpy(), np.cumsum(lengths)[:-1])
    for ours, theirs in zip(got, _hf_hidden(model, batch), strict=True):
        assert np.abs(ours - theirs).max() < 1e-5


def test_other_architectures_keep_the_hugging_face_pass(tiny_bert):
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(tiny_bert), local_files_only=True).eval()
    model.config.hidden_act = "relu"
    assert packed_encoder(model, model.config) is None


def test_embedder_uses_packed_pass_and_token_budget_batches(tiny_bert):
    emb = TransformerEmbedder(tiny_bert)
    assert emb._packed is not None
    ids = [[2] + [5] * n + [3] for n in (60, 3, 10, 1)]
    assert emb._batches(ids, packed=True) == [[0, 2, 1, 3]]  # 4 x 62 tokens fit one pass
    many = [[2, 5, 3]] * (PACKED_BATCH_TOKENS // 3 + 1)
    assert [len(b) for b in emb._batches(many, packed=True)] == [PACKED_BATCH_TOKENS // 3, 1]
    assert [
        len(b) for b in TransformerEmbedder(tiny_bert, batch_size=3)._batches(ids, packed=True)
    ] == [3, 1]
