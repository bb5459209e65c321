"""BERTScore: evalab vs bert-score's BERTScorer on CPU, same model, same layer, same numbers.

Both tools at their defaults for the shipped model (WMT22 en-de, reference A,
all-MiniLM-L6-v2): evalab's ``BERTScore()`` (last layer, no IDF) and bert-score's
``BERTScorer(model_type=PATH, num_layers=6)`` with ``score()``'s defaults (batch_size=64;
bert-score has no default layer for a local path, 6 is the model's last).

Scenarios, one scoring call per system as a shared task is scored:
(b) single system: one system against the reference (nothing to share);
(c) three systems: bert-score embeds the reference again for every system, evalab embeds
    each distinct string once.

Both models are loaded and warmed up (one untimed pass over other strings) before timing;
then the tools alternate (bert-score first on even repeats, evalab first on odd ones),
each run from an empty embedding cache, and the medians of wall and CPU seconds are
compared (CPU seconds of this process are the steadier measure on a loaded machine).
Every run's P, R, F must agree with bert-score's to 1e-5.

The floor, timed in the same rotation: a bare ``transformers.AutoModel`` forward pass
(float32, same torch threads) over the same distinct sentences in evalab's own batches
(longest first, up to 4096 tokens each), each padded to its longest, tokenized
beforehand: evalab's CPU over the floor's is its overhead (tokenizing, matching,
bookkeeping); its packed forward, which pads nothing, can put it below 1. bert-score's
batches (64 sentences sorted by word count) hold 1.46x the real tokens on a full WMT22
system; the floor's about 1.01x.

    .venv/bin/python benchmarks/bench_semantic.py [--quick] [--segments N] [--repeats N] [--only single|three] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
WMT22 = REPO.parent / "shared" / "wmt22"
PAIR = "en-de"


def read(path: Path) -> list[str]:
    from evalab.io import read_segments

    return read_segments(path)


def load_data(n: int | None) -> tuple[list[str], dict[str, list[str]]]:
    ref = read(WMT22 / "references" / f"generaltest2022.{PAIR}.ref.A.de")
    prefix = f"generaltest2022.{PAIR}.hyp."
    systems = {
        p.name[len(prefix) : -3]: read(p)
        for p in sorted((WMT22 / "system-outputs").glob(f"{prefix}*.de"))
    }
    # bert-score's tokenizer call fails on empty lines with transformers 5 (no
    # build_inputs_with_special_tokens); keep segments where every side is non-empty
    keep = [
        i for i in range(len(ref)) if ref[i].strip() and all(s[i].strip() for s in systems.values())
    ]
    if n is not None:
        keep = keep[:n]
    return [ref[i] for i in keep], {k: [v[i] for i in keep] for k, v in systems.items()}


def alternate(tools: dict, repeats: int, check) -> dict:
    """Median wall and CPU seconds of each tool over repeats whose order rotates (each
    tool first as often as the others), and the worst difference ``check`` finds between
    the outputs of evalab ("ev") and bert-score ("bs") of every run."""
    names = list(tools)
    wall: dict[str, list[float]] = {k: [] for k in names}
    cpu: dict[str, list[float]] = {k: [] for k in names}
    worst = 0.0
    for k in range(repeats):
        out = {}
        for name in names[k % len(names) :] + names[: k % len(names)]:
            w, c = time.perf_counter(), time.process_time()
            out[name] = tools[name]()
            wall[name].append(time.perf_counter() - w)
            cpu[name].append(time.process_time() - c)
        worst = max(worst, check(out["ev"], out["bs"]))
    med = statistics.median
    return {
        "wall": {k: med(v) for k, v in wall.items()},
        "cpu": {k: med(v) for k, v in cpu.items()},
        "delta": worst,
    }


def bare_forward(path: str, embedder, sentences: list[str]):
    """The floor: a bare ``transformers`` forward pass (``AutoModel``, float32, eval mode,
    the same torch threads) over the distinct sentences, tokenized beforehand (untimed) and
    batched as evalab batches them, each batch padded to its longest: what any BERTScore
    must at least spend on the model with Hugging Face's forward pass. Also the padded
    tokens of these batches and of bert-score's over the real ones."""
    import torch
    import transformers

    model = transformers.AutoModel.from_pretrained(path).eval()
    distinct = list(dict.fromkeys(sentences))
    ids, _ = embedder.encode(distinct)
    batches = []
    for batch in embedder._batches(ids, packed=embedder._packed is not None):
        chunk = [ids[i] for i in batch]
        width = max(map(len, chunk))
        x = torch.zeros((len(chunk), width), dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for i, row in enumerate(chunk):
            x[i, : len(row)], mask[i, : len(row)] = torch.tensor(row), 1
        batches.append((x, mask))
    real = sum(map(len, ids))
    by_words = sorted(range(len(distinct)), key=lambda i: len(distinct[i].split(" ")), reverse=True)
    bs_padded = sum(
        len(b) * max(len(ids[i]) for i in b)
        for b in (by_words[a : a + 64] for a in range(0, len(by_words), 64))
    )
    padding = (sum(x.numel() for x, _ in batches) / real, bs_padded / real)

    def forward() -> int:
        with torch.inference_mode():
            return sum(
                int(model(input_ids=x, attention_mask=m).last_hidden_state.shape[1])
                for x, m in batches
            )

    forward()  # warm-up, untimed
    return forward, padding


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="50 segments, 2 repeats")
    ap.add_argument(
        "--segments", type=int, default=None, help="use the first N segments (default 100)"
    )
    ap.add_argument("--repeats", type=int, default=None, help="timed runs of each tool (default 3)")
    ap.add_argument(
        "--only", choices=("single", "three"), default=None, help="run one scenario only"
    )
    ap.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's default)"
    )
    args = ap.parse_args(argv)
    args.segments = args.segments or (50 if args.quick else 100)
    args.repeats = args.repeats or (2 if args.quick else 3)
    if not (WMT22 / "references").exists():
        print(f"WMT22 data not found at {WMT22}", file=sys.stderr)
        return 1

    import bert_score
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)

    from evalab.metrics.semantic import BERTScore
    from evalab.models.hf_encoder import default_model_path

    ref, systems = load_data(args.segments)
    path = str(default_model_path())
    print(
        f"data: WMT22 {PAIR}, {len(ref)} segments, {len(systems)} systems; model {path}; "
        f"torch threads {torch.get_num_threads()}"
    )
    t0 = time.perf_counter()
    scorer = bert_score.BERTScorer(model_type=path, num_layers=6)
    t_load_bs = time.perf_counter() - t0
    t0 = time.perf_counter()
    metric = BERTScore()
    emb = metric.embedder
    t_load_ev = time.perf_counter() - t0
    # one untimed pass each over other strings: torch's first passes pay one-off set-up costs
    warm = ["Guten Abend.", "Das ist ein etwas längerer Satz zum Aufwärmen des Modells."] * 8
    metric.stats(warm, [warm[::-1]])
    scorer.score(warm, warm[::-1])

    def ours(names):
        emb.clear_cache()
        return [metric.stats(systems[name], [ref]).rows[:, :3] for name in names]

    def peer(names):
        return [
            np.stack([t.numpy() for t in scorer.score(systems[name], ref)], axis=1)
            for name in names
        ]

    def check(a, b) -> float:
        return max(float(np.abs(x - y).max()) for x, y in zip(a, b, strict=True))

    rows = []
    for label, names in (
        ("(b) single system", ["Online-B"]),
        ("(c) three systems", list(systems)[:3]),
    ):
        if args.only and (args.only == "single") != label.startswith("(b)"):
            continue
        floor, padding = bare_forward(path, emb, ref + [x for n in names for x in systems[n]])
        emb.profile = dict.fromkeys(emb.profile, 0.0)
        res = alternate(
            {"bs": lambda n=names: peer(n), "ev": lambda n=names: ours(n), "floor": floor},
            args.repeats,
            check,
        )
        res["padding"] = padding
        res["profile"] = {k: v / args.repeats for k, v in emb.profile.items()}
        rows.append((label, len(names) * len(ref), res))
        print(
            f"  {label}: {res['wall']['bs'] / res['wall']['ev']:.2f}x wall vs bert-score, "
            f"{res['cpu']['ev'] / res['cpu']['floor']:.2f}x the floor's CPU",
            file=sys.stderr,
            flush=True,
        )

    print(
        f"model load: bert-score {t_load_bs:.1f} s, evalab {t_load_ev:.1f} s (not in the timings below)"
    )
    print()
    header = (
        f"{'scenario (defaults)':22} {'pairs':>6} {'bert-score s':>12} {'evalab s':>9} {'speed-up':>8}"
        f" {'CPU s bs/ev':>15} {'CPU speed-up':>12} {'floor CPU s':>11} {'ev/floor':>8}"
        f" {'max|dP,dR,dF|':>14}"
    )
    print(header)
    print("-" * len(header))
    for label, n_pairs, res in rows:
        wall, cpu = res["wall"], res["cpu"]
        print(
            f"{label:22} {n_pairs:>6} {wall['bs']:>12.1f} {wall['ev']:>9.1f} {wall['bs'] / wall['ev']:>7.2f}x"
            f" {cpu['bs']:>7.1f}/{cpu['ev']:<7.1f} {cpu['bs'] / cpu['ev']:>11.2f}x"
            f" {cpu['floor']:>11.1f} {cpu['ev'] / cpu['floor']:>7.2f}x {res['delta']:>14.2e}"
        )
    for label, _, res in rows:
        prof, (ours_pad, bs_pad) = res["profile"], res["padding"]
        print(
            f"{label}: evalab's wall s per run: "
            + ", ".join(f"{k} {v:.2f}" for k, v in prof.items())
            + f"; padded/real tokens: floor's batches {ours_pad:.3f}, bert-score's {bs_pad:.3f}"
        )
    print(
        f"medians of {args.repeats} runs in rotating order after a warm-up, torch threads "
        f"{torch.get_num_threads()}; the floor: a bare AutoModel forward over the same distinct "
        "sentences, pre-tokenized, in evalab's batches, padded "
        f"(load average {os.getloadavg()[0]:.1f})"
    )
    ok = all(r[2]["delta"] < 1e-5 for r in rows)
    print("numbers agree (max |delta| < 1e-5):", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
