"""Perplexity benchmark: evalab's batched sliding windows vs the Hugging Face guide's loop,
and the peak memory of the array path as the input grows.

    .venv/bin/python benchmarks/bench_ppl.py [--quick] [--threads N] [--device cpu|cuda]

Part 1 builds a tiny random GPT-2 (benchmarks/make_tiny_lm.py, seed 0) and scores the same
WMT22 text with (a) the loop of "Perplexity of fixed-length models" (one window per forward
pass, ``model(input_ids, labels=...)``) and (b) :class:`evalab.models.causal_lm.CausalLMScorer`
at several batch sizes, in one run, and prints tokens per second and the ratio. The numbers
must agree: the guide's loop is also run with exact token counts (it counts ``trg_len - 1``
tokens for windows whose loss averages ``trg_len`` tokens, a small bias in its perplexity;
shown as a separate line) and that value must equal evalab's within 1e-5 nats per token.

Part 2 measures, with tracemalloc, the extra memory (beyond the input) that
``evalab.nll.summed_loss`` and a whole-array numpy log-softmax take on logits of growing
length: the first stays flat (blocks of ``CHUNK_ELEMENTS``), the second grows with the input.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
WMT = REPO.parent / "shared" / "wmt22" / "references" / "generaltest2022.en-de.ref.A.de"


def load_builder():
    spec = importlib.util.spec_from_file_location(
        "make_tiny_lm", REPO / "benchmarks" / "make_tiny_lm.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hf_guide_loop(
    model, input_ids, max_length: int, stride: int, device: str
) -> tuple[float, float, int]:
    """The guide's loop; returns (nll as the guide counts, nll with exact counts, tokens)."""
    import torch

    seq_len = input_ids.size(1)
    nll_sum, n_tokens = 0.0, 0
    exact_sum, exact_tokens = 0.0, 0
    prev_end_loc = 0
    for begin_loc in range(0, seq_len, stride):
        end_loc = min(begin_loc + max_length, seq_len)
        trg_len = end_loc - prev_end_loc
        ids = input_ids[:, begin_loc:end_loc].to(device)
        target_ids = ids.clone()
        target_ids[:, :-trg_len] = -100
        with torch.no_grad():
            loss = model(ids, labels=target_ids).loss
        num_valid_tokens = (target_ids != -100).sum().item()
        num_loss_tokens = num_valid_tokens - target_ids.size(0)  # the guide's count
        nll_sum += loss.item() * num_loss_tokens
        n_tokens += num_loss_tokens
        scored = (target_ids[:, 1:] != -100).sum().item()  # what the loss actually averaged
        exact_sum += loss.item() * scored
        exact_tokens += scored
        prev_end_loc = end_loc
        if end_loc == seq_len:
            break
    return nll_sum / n_tokens, exact_sum / exact_tokens, exact_tokens


def bench_model(args) -> None:
    import torch

    from evalab.models.causal_lm import CausalLMScorer

    torch.set_num_threads(args.threads)
    lines = WMT.read_text(encoding="utf-8").split("\n")[: 40 if args.quick else 200]
    text = "\n".join(lines)
    max_length, stride = args.max_length, args.stride
    with tempfile.TemporaryDirectory() as tmp:
        path = load_builder().build_tiny_lm(
            Path(tmp) / "tiny-gpt2",
            seed=0,
            positions=max_length,
            layers=args.layers,
            width=args.width,
        )
        scorer = CausalLMScorer(
            path, max_length=max_length, stride=stride, batch_size=1, device=args.device
        )
        ids = scorer.encode(text)
        input_ids = torch.tensor([ids])
        model = scorer.model
        hf_guide_loop(
            model, input_ids[:, : 4 * max_length], max_length, stride, args.device
        )  # warm-up
        t0 = time.perf_counter()
        guide_nats, exact_nats, hf_tokens = hf_guide_loop(
            model, input_ids, max_length, stride, args.device
        )
        hf_time = time.perf_counter() - t0
        print(
            f"text: {len(lines)} WMT22 en-de reference lines, {len(ids)} tokens (byte-level); "
            f"window {max_length}, stride {stride}; model {args.layers} layers x {args.width}; "
            f"device {args.device}, torch threads {args.threads}\n"
        )
        header = f"{'implementation':34} {'seconds':>8} {'tokens/s':>10} {'vs HF loop':>10} {'nats/token':>12}"
        print(header)
        print("-" * len(header))
        print(
            f"{'HF guide loop (1 window/forward)':34} {hf_time:8.2f} {hf_tokens / hf_time:10.0f} {1.0:10.2f} {guide_nats:12.6f}"
        )
        print(f"{'  same loop, exact token counts':34} {'':8} {'':10} {'':10} {exact_nats:12.6f}")
        worst = 0.0
        for batch in args.batch_sizes:
            scorer.batch_size = batch
            t0 = time.perf_counter()
            doc = scorer.score_ids([ids])[0]
            elapsed = time.perf_counter() - t0
            nats = doc.nll / doc.tokens
            worst = max(worst, abs(nats - exact_nats))
            assert doc.tokens == hf_tokens, (doc.tokens, hf_tokens)
            label = f"evalab batch {batch}"
            print(
                f"{label:34} {elapsed:8.2f} {doc.tokens / elapsed:10.0f} {hf_time / elapsed:10.2f} {nats:12.6f}"
            )
        print(
            f"\nmax |evalab - HF loop (exact counts)| = {worst:.2e} nats/token; "
            f"the guide's own count differs by {abs(guide_nats - exact_nats):.2e} "
            f"(perplexity {math.exp(guide_nats):.4f} vs {math.exp(exact_nats):.4f})"
        )
        if worst > 1e-5:
            sys.exit("evalab and the HF loop disagree")


def naive_summed_loss(logits: np.ndarray, labels: np.ndarray) -> float:
    """Whole-array log-softmax in float64, the usual notebook code."""
    x = logits.astype(np.float64)
    lse = x.max(axis=-1, keepdims=True)
    lsm = x - lse - np.log(np.exp(x - lse).sum(axis=-1, keepdims=True))
    return float(-lsm[np.arange(labels.size), labels].sum())


def peak_extra(fn, *args) -> tuple[int, float]:
    tracemalloc.start()
    try:
        value = fn(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, value


def bench_memory(args) -> None:
    import evalab.nll as L

    vocab = 1024
    sizes = [1_000, 4_000, 16_000] if args.quick else [1_000, 4_000, 16_000, 32_000]
    print(
        f"\nextra peak memory beyond the input (tracemalloc), float32 logits [N, {vocab}], "
        f"CHUNK_ELEMENTS = {L.CHUNK_ELEMENTS}"
    )
    header = f"{'N positions':>12} {'input MB':>9} {'evalab MB':>10} {'whole-array MB':>15} {'|delta| nats':>13}"
    print(header)
    print("-" * len(header))
    rng = np.random.default_rng(0)
    for n in sizes:
        logits = rng.standard_normal((n, vocab), dtype=np.float32)
        labels = rng.integers(0, vocab, size=n)
        ours_peak, (ours, _) = peak_extra(L.summed_loss, logits, labels)
        naive_peak, naive = peak_extra(naive_summed_loss, logits, labels)
        print(
            f"{n:12d} {logits.nbytes / 1e6:9.1f} {ours_peak / 1e6:10.2f} {naive_peak / 1e6:15.1f} {abs(ours - naive) / n:13.2e}"
        )
        del logits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer lines and sizes")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads (default 1: stable on a shared machine)",
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--stride", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--skip-model", action="store_true", help="only the memory part")
    args = parser.parse_args()
    if not args.skip_model:
        bench_model(args)
    bench_memory(args)


if __name__ == "__main__":
    main()
