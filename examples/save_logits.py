"""Save a causal LM's logits for `evalab ppl --logits` (docs/perplexity.md, "saved logits").

    python examples/save_logits.py [MODEL_DIR] [TEXT_FILE] [OUT.npz]

Runs the first three lines of TEXT_FILE (default: examples/texts/news.de) through MODEL_DIR
(default: examples/tiny-lm-de), padded on the right with id 256, and writes OUT (default:
batch.npz) with the keys `evalab ppl --logits` reads: logits, labels, bytes, words.
"""

import sys

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

import evalab.nll as L

model_dir, text_file, out = (
    sys.argv[1:]
    + ["examples/tiny-lm-de", "examples/texts/news.de", "batch.npz"][len(sys.argv) - 1 :]
)[:3]
tok = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
with open(text_file, encoding="utf-8") as f:
    lines = f.read().split("\n")[:3]
ids = [tok(s, add_special_tokens=False)["input_ids"] for s in lines]
labels = np.full((len(ids), max(map(len, ids))), 256)  # right padding with id 256
for i, seq in enumerate(ids):
    labels[i, : len(seq)] = seq
with torch.no_grad():
    logits = model(input_ids=torch.from_numpy(labels)).logits.numpy()
np.savez(
    out,
    logits=logits,
    labels=labels,
    bytes=np.array([L.count_bytes(s) for s in lines]),
    words=np.array([L.count_words(s) for s in lines]),
)
print(f"{out}: logits {list(logits.shape)}, labels {list(labels.shape)}")
