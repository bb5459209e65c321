"""Build a tiny GPT-2 with a byte-level tokenizer in a directory (no download).

    .venv/bin/python benchmarks/make_tiny_lm.py /tmp/tiny-gpt2 [--seed 0] [--positions 128]
    .venv/bin/python benchmarks/make_tiny_lm.py /tmp/tiny-gpt2-de --train FILE --steps 300

The tokenizer maps every UTF-8 byte to one token (GPT-2's byte-to-unicode alphabet, no
merges) plus ``<|endoftext|>`` (id 256) as BOS/EOS, so any text tokenizes offline. The
weights are random from a fixed seed; ``--train FILE`` then fits them for ``--steps`` AdamW
steps on random blocks of the file (the loss is ``evalab.nll.cross_entropy`` on
``shift_pairs``), on one CPU thread so the result is repeatable. Used by the perplexity
tests (untrained), the benchmark and the examples in README.md (perplexity section).
"""

from __future__ import annotations

import argparse
from pathlib import Path

EOT = "<|endoftext|>"


def byte_alphabet() -> list[str]:
    """GPT-2's printable stand-in character for each byte 0..255, in byte order."""
    keep = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    chars = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def build_tokenizer():
    """A byte-level BPE tokenizer without merges, wrapped for ``save_pretrained``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(byte_alphabet())}
    vocab[EOT] = 256
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([EOT])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=EOT, eos_token=EOT)


def build_tiny_lm(
    path: str | Path,
    *,
    seed: int = 0,
    positions: int = 128,
    layers: int = 2,
    width: int = 64,
    heads: int = 4,
    train: str | Path | None = None,
    steps: int = 300,
    batch: int = 16,
    lr: float = 3e-3,
) -> Path:
    """Write a GPT-2 (``positions`` context) and its tokenizer to ``path``: random weights
    from ``seed``, trained on the text file ``train`` for ``steps`` steps if given."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    out = Path(path)
    config = GPT2Config(
        vocab_size=257,
        n_positions=positions,
        n_embd=width,
        n_layer=layers,
        n_head=heads,
        bos_token_id=256,
        eos_token_id=256,
    )
    tokenizer = build_tokenizer()
    # fork_rng: the seed fixes the weights (and the training batches and dropout) without
    # changing the caller's global RNG state
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(config)
        if train is not None:
            fit(
                model,
                tokenizer,
                Path(train).read_text(encoding="utf-8"),
                steps=steps,
                batch=batch,
                block=positions,
                lr=lr,
            )
    model.eval()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def fit(model, tokenizer, text: str, *, steps: int, batch: int, block: int, lr: float) -> None:
    """AdamW on random ``block``-byte windows of ``text``; prints the loss every 50 steps."""
    import torch

    from evalab.nll import cross_entropy, shift_pairs

    data = torch.tensor(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: the same floating-point sums on every run
    try:
        opt = torch.optim.AdamW(model.parameters(), lr=lr)
        model.train()
        for step in range(1, steps + 1):
            starts = torch.randint(0, len(data) - block, (batch,))
            x = torch.stack([data[int(i) : int(i) + block] for i in starts])
            loss = cross_entropy(*shift_pairs(model(input_ids=x).logits, x))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 50 == 0 or step == steps:
                print(f"step {step}: {loss.item():.4f} nats/token")
    finally:
        torch.set_num_threads(threads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--positions", type=int, default=128)
    parser.add_argument(
        "--train", help="text file to fit the weights on (default: keep them random)"
    )
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    print(
        build_tiny_lm(
            args.path, seed=args.seed, positions=args.positions, train=args.train, steps=args.steps
        )
    )


if __name__ == "__main__":
    main()
