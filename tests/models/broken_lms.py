"""Model folders that ``evalab ppl --model`` must refuse, built from configs (no download).

Each builder writes a folder next to a working tiny GPT-2 (``benchmarks/make_tiny_lm.py``)
and returns it with the words the refusal must contain.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def tiny_lm_builder():
    spec = importlib.util.spec_from_file_location(
        "make_tiny_lm", REPO / "benchmarks" / "make_tiny_lm.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bert_config():
    from transformers import BertConfig

    return BertConfig(
        vocab_size=257,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=64,
    )


def build_broken_lms(root: Path) -> dict[str, tuple[Path, str]]:
    """name -> (folder, needle) for every kind of model folder that must be refused."""
    import torch
    from transformers import (
        BertForMaskedLM,
        BertModel,
        GPT2Config,
        GPT2LMHeadModel,
        GPT2Model,
        T5Config,
    )

    builder = tiny_lm_builder()
    good = builder.build_tiny_lm(root / "good", seed=0, positions=64, layers=1, width=16, heads=2)
    tokenizer = builder.build_tokenizer()
    out: dict[str, tuple[Path, str]] = {}

    torch.manual_seed(0)
    BertForMaskedLM(_bert_config()).save_pretrained(root / "bert-mlm")
    tokenizer.save_pretrained(root / "bert-mlm")
    out["encoder"] = (
        root / "bert-mlm",
        "architecture BertForMaskedLM has no causal language-model head",
    )

    BertModel(_bert_config()).save_pretrained(root / "bert-base")
    tokenizer.save_pretrained(root / "bert-base")
    cfg = json.loads((root / "bert-base" / "config.json").read_text())
    del cfg["architectures"]  # no architectures: the model type and is_decoder decide
    (root / "bert-base" / "config.json").write_text(json.dumps(cfg))
    out["encoder-type"] = (
        root / "bert-base",
        "model type 'bert' is an encoder unless its config sets is_decoder=true",
    )

    T5Config(vocab_size=257, d_model=8, d_kv=4, d_ff=8, num_layers=1, num_heads=2).save_pretrained(
        root / "t5"
    )
    tokenizer.save_pretrained(root / "t5")
    out["encoder-decoder"] = (root / "t5", "encoder-decoder")

    # untied head saved without it: the base model's weights under a causal architecture
    config = GPT2Config(
        vocab_size=257,
        n_positions=64,
        n_embd=16,
        n_layer=1,
        n_head=2,
        tie_word_embeddings=False,
        bos_token_id=256,
        eos_token_id=256,
    )
    GPT2Model(config).save_pretrained(root / "no-head")
    tokenizer.save_pretrained(root / "no-head")
    cfg = json.loads((root / "no-head" / "config.json").read_text())
    cfg["architectures"] = ["GPT2LMHeadModel"]
    (root / "no-head" / "config.json").write_text(json.dumps(cfg))
    out["missing-head"] = (root / "no-head", "missing from the weight files (lm_head.weight)")

    shutil.copytree(good, root / "truncated")
    weights = root / "truncated" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    out["truncated"] = (root / "truncated", "damaged or truncated")

    shutil.copytree(good, root / "no-tokenizer")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (root / "no-tokenizer" / name).unlink(missing_ok=True)
    out["no-tokenizer"] = (root / "no-tokenizer", "no tokenizer files")

    class Code:  # an object torch's weights-only unpickler refuses
        def __reduce__(self):
            return (print, ("pickled code ran",))

    shutil.copytree(good, root / "pickle")
    (root / "pickle" / "model.safetensors").unlink()
    state = GPT2LMHeadModel.from_pretrained(good).state_dict()
    torch.save({**state, "extra": Code()}, root / "pickle" / "pytorch_model.bin")
    out["pickle"] = (root / "pickle", "safe loader refused the pickle weight file")

    shutil.copytree(good, root / "no-weights")
    (root / "no-weights" / "model.safetensors").unlink()
    out["no-weights"] = (root / "no-weights", "cannot load the model weights")
    return out
