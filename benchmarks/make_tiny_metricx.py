"""Build a tiny random MetricX checkpoint (mT5 regression) with its own small tokenizer,
offline: for the docs' runnable examples, the contract test and the benchmark.

Usage: python benchmarks/make_tiny_metricx.py OUT [--seed N] [--d-model N] [--layers N]

OUT gets ``config.json`` + ``model.safetensors`` (the state dict of Google's
``MT5ForRegression``, which is ``MT5ForConditionalGeneration``'s) and an mT5-style
tokenizer: ``spiece.model`` trained here by sentencepiece on generated words, with
``tokenizer_config.json`` and ``special_tokens_map.json`` as ``google/mt5-*`` ship them (no
``tokenizer.json``). The weights are random except the score row (``lm_head`` row 250089):
fitted so that generated inputs score over [-2, 27], mostly inside MetricX's [0, 25].

The MetricX oracle (tests/metrics/metricx_oracle/make_checkpoint.py) builds its
checkpoints with these same functions around Google's own ``MT5ForRegression``.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

SCORE_ROW = 250089
SYLLABLES = [
    "ka",
    "to",
    "ri",
    "mu",
    "ne",
    "sa",
    "lo",
    "vi",
    "de",
    "pa",
    "gu",
    "zo",
    "fe",
    "hi",
    "ba",
    "ny",
    "qu",
    "ex",
    "ol",
    "ar",
]


def words(rng: random.Random, n: int) -> str:
    """``n`` generated words."""
    return " ".join(
        "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(n)
    )


def spec(seed: int = 0, d_model: int = 32, layers: int = 1, sp_vocab: int = 400) -> dict[str, Any]:
    """The sizes of a tiny checkpoint."""
    return {
        "seed": seed,
        "d_model": d_model,
        "d_ff": 2 * d_model,
        "num_heads": 2,
        "d_kv": max(4, d_model // 2),
        "num_layers": layers,
        "num_decoder_layers": layers,
        "sp_vocab": sp_vocab,
    }


def write_tokenizer(out: Path, vocab: int, seed: int) -> None:
    """A unigram sentencepiece model (pad 0, eos 1, unk 2, as mT5's) and mT5's tokenizer files."""
    import sentencepiece as spm

    rng = random.Random(seed)
    corpus = [words(rng, rng.randint(3, 30)) + rng.choice(".!?,") for _ in range(1000)]
    corpus += ["source: candidate: reference:"] * 50
    out.mkdir(parents=True, exist_ok=True)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus),
        model_prefix=str(out / "spiece"),
        vocab_size=vocab,
        model_type="unigram",
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        character_coverage=1.0,
        num_threads=1,
        minloglevel=2,
    )
    (out / "spiece.vocab").unlink()
    special = {"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}
    (out / "special_tokens_map.json").write_text(json.dumps(special))
    (out / "tokenizer_config.json").write_text(json.dumps({**special, "extra_ids": 0}))


def mt5_config(transformers: Any, sizes: dict[str, Any]) -> Any:
    """An ``MT5Config`` of MetricX's layout (250112 tokens, an output layer of its own)."""
    return transformers.MT5Config(
        vocab_size=250112,
        d_model=sizes["d_model"],
        d_ff=sizes["d_ff"],
        d_kv=sizes["d_kv"],
        num_heads=sizes["num_heads"],
        num_layers=sizes["num_layers"],
        num_decoder_layers=sizes["num_decoder_layers"],
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
        dropout_rate=0.0,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
    )


def spread(encoder: Any, decoder: Any, tokenizer: Any, seed: int) -> Any:
    """The score row that spreads generated inputs over [-2, 27] (some clipped at each end)."""
    import torch

    rng = random.Random(seed + 1)
    texts = [
        f"source: {words(rng, rng.randint(2, 40))} candidate: {words(rng, rng.randint(2, 40))}"
        + (f" reference: {words(rng, rng.randint(2, 40))}" if rng.random() < 0.7 else "")
        for _ in range(256)
    ]
    ids = [tokenizer(text)["input_ids"][:-1] for text in texts]
    width = max(len(x) for x in ids)
    input_ids = torch.tensor([x + [0] * (width - len(x)) for x in ids])
    mask = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x in ids])
    with torch.no_grad():
        enc = encoder(input_ids=input_ids, attention_mask=mask).last_hidden_state
        start = torch.zeros((len(ids), 1), dtype=torch.long)
        dec = decoder(input_ids=start, encoder_hidden_states=enc, encoder_attention_mask=mask)
        hidden = dec.last_hidden_state[:, 0]
    # the row along the inputs' first principal direction: the smallest row for the spread,
    # so float32 rounding moves the scores least
    h = hidden.double()
    direction = torch.linalg.svd(h - h.mean(0), full_matrices=False).Vh[0]
    projected = h @ direction
    target = 12.5 + 10.0 * (projected - projected.mean()) / projected.std()
    return torch.linalg.lstsq(h, target[:, None]).solution[:, 0].float()


def build(out: Path, sizes: dict[str, Any], regression_class: Any = None) -> Path:
    """A checkpoint of ``sizes`` in ``out``: with ``regression_class`` (Google's
    ``MT5ForRegression``, in the oracle's venv) saved by it; else an ``MT5Model`` with the
    output layer added (transformers 5 would tie it to the embeddings)."""
    import torch
    import transformers

    write_tokenizer(out, sizes["sp_vocab"], sizes["seed"])
    (out / "config.json").write_text(json.dumps({"model_type": "mt5"}))  # the tokenizer's type
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(out))
    torch.manual_seed(sizes["seed"])
    config = mt5_config(transformers, sizes)
    model = (regression_class or transformers.MT5Model)(config).eval()
    with torch.no_grad():
        # the decoder's start token (0, also the padding) embedded as zeros: the decoder's
        # state is then all the input's, not mostly a constant (a better-conditioned row)
        model.shared.weight[0] = 0.0
    row = spread(model.encoder, model.decoder, tokenizer, sizes["seed"])
    if regression_class is not None:
        with torch.no_grad():
            model.lm_head.weight[SCORE_ROW] = row
        # its tied embeddings are not declared: transformers 4.49 saves them as a .bin only
        model.save_pretrained(str(out), safe_serialization=False)
        return out
    from safetensors.torch import save_file

    state = {k: v for k, v in model.state_dict().items() if not k.endswith("embed_tokens.weight")}
    state["lm_head.weight"] = torch.zeros_like(state["shared.weight"])
    state["lm_head.weight"][SCORE_ROW] = row
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    saved = {
        **config.to_dict(),
        "architectures": ["MT5ForRegression"],
        "tie_word_embeddings": False,
    }
    (out / "config.json").write_text(json.dumps(saved, indent=2))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--d-model", type=int, default=32)
    parser.add_argument("--layers", type=int, default=1)
    args = parser.parse_args(argv)
    build(args.out, spec(args.seed, args.d_model, args.layers))
    print(f"{args.out}: tiny MetricX checkpoint (mT5, d_model {args.d_model}, seed {args.seed})")


if __name__ == "__main__":
    main()
