"""COMET: evalab vs unbabel-comet 2.2.7, process against process, and evalab above its floor.

Workload: WMT22 (default en-zh, a CJK target), the first N segments (stripped, as
``comet-score`` strips them, so both read the same strings), 1 and 9 systems against
source and reference A, the tiny checkpoint (MiniLM-L6 encoder, layer mixing with layer
norm, random estimator; benchmarks/make_tiny_comet.py).

(1) Process against process: ``evalab score -m comet`` and unbabel-comet run as
    ``comet-score`` runs it (in its own venv, tests/metrics/comet_oracle: one ``predict``
    per system, embedding cache on; see PEER for the one difference), each a fresh
    process that imports, loads the checkpoint and scores, batch size 16. Wall and CPU
    seconds of the child process; the tools alternate (peer first on even rounds) after
    one untimed run of each; the system scores are checked equal (1e-5).
(2) The floor: the same model and the same tokenised, length-sorted batches evalab uses,
    just ``model(**batch)`` of Hugging Face's ``BertModel`` (the checkpoint's encoder
    weights) under ``torch.inference_mode``, against evalab's whole scoring
    (``Comet.stats_many``: tokenising, the encoder, layer mixing, pooling, estimator),
    alternating in one process; evalab's segment scores are checked against
    ``comet-score``'s (1e-5).

``--model xcomet`` runs (1) on the tiny xCOMET checkpoint (``make_tiny_comet.py --xcomet``:
hypothesis, source and reference as one sequence, three sequences per segment, a word-level
head tagging error spans) instead; the segment scores of both sides are checked equal
(1e-5) and so are their error spans (text, severity, offsets; confidence 1e-5). It has no
floor round: the floor above is the regression model's.

Both sides get the same thread count (``--threads``, default 1: on a shared machine
OpenMP threads spinning on each other inflate both sides' times).

    .venv/bin/python benchmarks/bench_comet.py [--pair en-zh] [--segments 200] [--repeats 2] [--threads 1]
        [--model regression|xcomet]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    pass

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
WMT22 = REPO.parent / "shared" / "wmt22"
#: ``comet-score`` without its ``model.half()``: 2.2.7's command casts the model to float16
#: even on CPU, so its scores move by ~5e-4 from ``predict``'s (the numbers evalab and the
#: parity tests match); otherwise the same: one ``predict`` per system, embedding cache on
PEER = """
import json, logging, sys
from comet import load_from_checkpoint
logging.disable(logging.WARNING)
ckpt, src, ref, out, *hyps = sys.argv[1:]
read = lambda p: [x.strip() for x in open(p, encoding="utf-8").readlines()]
model = load_from_checkpoint(ckpt)
model.eval()
model.set_embedding_cache()
s, r = read(src), read(ref)
scores = {h: model.predict([{"src": a, "mt": b, "ref": c} for a, b, c in zip(s, read(h), r)],
    batch_size=16, gpus=0, progress_bar=False, accelerator="cpu").scores for h in hyps}
json.dump(scores, open(out, "w"))
"""
#: the same for a unified model (xCOMET): one ``predict`` per system, its scores and spans
PEER_UNIFIED = """
import json, logging, sys
from comet import load_from_checkpoint
logging.disable(logging.WARNING)
ckpt, src, ref, out, *hyps = sys.argv[1:]
read = lambda p: [x.strip() for x in open(p, encoding="utf-8").readlines()]
model = load_from_checkpoint(ckpt)
model.eval()
s, r = read(src), read(ref)
outs = {h: model.predict([{"src": a, "mt": b, "ref": c} for a, b, c in zip(s, read(h), r)],
    batch_size=16, gpus=0, progress_bar=False, accelerator="cpu") for h in hyps}
json.dump({h: {"scores": o.scores, "spans": o.metadata.error_spans} for h, o in outs.items()},
    open(out, "w"))
"""


def write_data(pair: str, n: int, out: Path) -> tuple[Path, Path, list[Path]]:
    """Source, reference A and every system of ``pair``, first ``n`` lines, stripped."""
    src_lang, tgt = pair.split("-")

    def copy(path: Path, name: str) -> Path:
        lines = path.read_text(encoding="utf-8").split("\n")[:n]
        target = out / name
        target.write_text("".join(x.strip() + "\n" for x in lines), encoding="utf-8")
        return target

    src = copy(WMT22 / "sources" / f"generaltest2022.{pair}.src.{src_lang}", "src.txt")
    ref = copy(WMT22 / "references" / f"generaltest2022.{pair}.ref.A.{tgt}", "ref.txt")
    hyps = sorted((WMT22 / "system-outputs").glob(f"generaltest2022.{pair}.hyp.*.{tgt}"))
    return src, ref, [copy(p, p.name.split(".hyp.")[1]) for p in hyps]


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed:\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def processes(
    ckpt: Path, src: Path, ref: Path, hyps: list[Path], tmp: Path, unified: bool = False
) -> dict:
    """The two command lines and how to read each one's system scores (and, for a unified
    model, segment scores and spans: evalab's from its ``--segments`` file)."""
    ours_json, peer_json, seg = tmp / "evalab.json", tmp / "peer.json", tmp / "segments.jsonl"
    ours = [sys.executable, "-m", "evalab", "score", "-m", "comet", "--set"]
    ours += [f"comet.model={ckpt}", "--source", str(src), "-r", str(ref), "-i", *map(str, hyps)]
    ours += [
        "-q",
        "-f",
        "json",
        "-o",
        str(ours_json),
        *(["--segments", str(seg)] if unified else []),
    ]
    python = str(comet_oracle().oracle_python())
    script = PEER_UNIFIED if unified else PEER
    peer = [python, "-c", script, str(ckpt / "checkpoints" / "model.ckpt"), str(src), str(ref)]
    peer += [str(peer_json), *map(str, hyps)]

    def read_ours() -> list[float]:
        return [row["score"] for row in json.loads(ours_json.read_text())]

    def read_peer() -> list[list[float]]:
        data = json.loads(peer_json.read_text())
        return [data[str(h)]["scores"] if unified else data[str(h)] for h in hyps]

    def check_segments() -> None:
        rows = [json.loads(line) for line in seg.read_text(encoding="utf-8").splitlines()]
        data = json.loads(peer_json.read_text())
        theirs = [
            (s, sp)
            for h in hyps
            for s, sp in zip(data[str(h)]["scores"], data[str(h)]["spans"], strict=True)
        ]
        for row, (score, spans) in zip(rows, theirs, strict=True):
            key = ("text", "severity", "start", "end")
            ours_spans = row["error_spans"]
            same = [[a[k] for k in key] for a in ours_spans] == [[b[k] for k in key] for b in spans]
            if not same or abs(row["score"] - score) > 1e-5:
                raise SystemExit(f"segment {row['segment']} of {row['system']} differs")
            for a, b in zip(ours_spans, spans, strict=True):
                if abs(a["confidence"] - b["confidence"]) > 1e-5:
                    raise SystemExit(f"segment {row['segment']} of {row['system']}: confidence")

    return {
        "ours": ours,
        "peer": peer,
        "read_ours": read_ours,
        "read_peer": read_peer,
        "check": check_segments if unified else None,
    }


def comet_oracle():  # the oracle venv helpers of the tests
    from metrics import comet_oracle as module

    return module


def process_round(job: dict, env: dict[str, str], repeats: int) -> dict[str, dict[str, float]]:
    """Median wall and CPU seconds of each tool over alternating runs (after a warm-up)."""
    times: dict[str, list[tuple[float, float]]] = {"ours": [], "peer": []}
    timed(job["peer"], env), timed(job["ours"], env)  # warm-up: page cache, .pyc files
    for k in range(repeats):
        for name in ("peer", "ours") if k % 2 == 0 else ("ours", "peer"):
            times[name].append(timed(job[name], env))
        peer_systems = [float(np.mean(s)) for s in job["read_peer"]()]
        diff = float(np.max(np.abs(np.array(job["read_ours"]()) - peer_systems)))
        if diff > 1e-5:
            raise SystemExit(f"system scores differ from unbabel-comet's by {diff:.2e}")
        if job["check"] is not None:
            job["check"]()
    med = statistics.median
    return {
        name: {"wall": med(t[0] for t in ts), "cpu": med(t[1] for t in ts)}
        for name, ts in times.items()
    }


def hf_encoder(metric) -> object:
    """Hugging Face's ``BertModel`` holding the checkpoint's encoder weights."""
    import transformers

    model = metric.model()
    config = transformers.AutoConfig.from_pretrained(model.tokenizer.name_or_path)
    bert = transformers.BertModel(config, add_pooling_layer=False).eval()
    prefix = "encoder.model."
    state = {k[len(prefix) :]: v for k, v in model.info.state_dict.items() if k.startswith(prefix)}
    state.pop("embeddings.position_ids", None)
    bert.load_state_dict(state, strict=True)
    return bert


def floor_round(metric, src, ref, systems, batch_size: int, repeats: int) -> dict:
    """Seconds of evalab's scoring and of the bare forward pass over the same batches."""
    import torch

    from evalab.models.hf_encoder import padded_batch

    model = metric.model()
    bert = hf_encoder(metric)
    strings = list(dict.fromkeys([*src, *ref, *(h for hyps in systems for h in hyps)]))
    ids = model.tokenizer(strings, truncation=True, max_length=model.max_length)["input_ids"]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    batches = []
    for a in range(0, len(order), batch_size):
        input_ids, mask = padded_batch(torch, [ids[i] for i in order[a : a + batch_size]], 0)
        batches.append({"input_ids": input_ids, "attention_mask": mask})

    def floor() -> None:
        with torch.inference_mode():
            for batch in batches:
                bert(**batch)

    def ours() -> list:
        return metric.stats_many(systems, [ref])

    ours(), floor()  # warm-up
    times: dict[str, list[float]] = {"ours": [], "floor": []}
    rows = []
    for k in range(repeats):
        for name, fn in (("floor", floor), ("ours", ours))[:: 1 if k % 2 == 0 else -1]:
            start = time.process_time()
            out = fn()
            times[name].append(time.process_time() - start)
            rows = out if name == "ours" else rows
    return {"cpu": {k: statistics.median(v) for k, v in times.items()}, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", default="en-zh")
    parser.add_argument("--segments", type=int, default=200)
    parser.add_argument("--systems", type=int, nargs="+", default=[1, 9])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--skip-floor", action="store_true")
    parser.add_argument("--model", choices=["regression", "xcomet"], default="regression")
    args = parser.parse_args(argv)
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "TOKENIZERS_PARALLELISM": "false"}
    os.environ.update({k: env[k] for k in ("OMP_NUM_THREADS", "TOKENIZERS_PARALLELISM")})
    import torch

    torch.set_num_threads(args.threads)
    from evalab.metrics.comet import Comet

    tmp = Path(tempfile.mkdtemp(prefix="bench-comet-"))
    unified = args.model == "xcomet"
    ckpt = comet_oracle().make_tiny_checkpoint(
        tmp / "tiny-comet", *(["--xcomet"] if unified else [])
    )
    src, ref, hyps = write_data(args.pair, args.segments, tmp)
    print(
        f"WMT22 {args.pair}, tiny {args.model} checkpoint: {args.segments} segments, batch size 16, {args.threads} thread(s) "
        f"each, {args.repeats} alternating rounds; load: {os.getloadavg()[0]:.1f} "
        "(machine-dependent: ratios, not absolute times)"
    )
    for n in args.systems:
        job = processes(ckpt, src, ref, hyps[:n], tmp, unified)
        res = process_round(job, env, args.repeats)
        o, p = res["ours"], res["peer"]
        print(
            f"process, {n} system(s): unbabel-comet {p['wall']:.1f} s wall / {p['cpu']:.1f} s CPU, "
            f"evalab {o['wall']:.1f} / {o['cpu']:.1f}: {p['wall'] / o['wall']:.2f}x wall, "
            f"{p['cpu'] / o['cpu']:.2f}x CPU (medians; "
            + ("segment scores and error spans" if unified else "system scores")
            + " equal within 1e-5)"
        )
        if args.skip_floor or unified:
            continue
        read = [p.read_text(encoding="utf-8").split("\n")[:-1] for p in (src, ref, *hyps[:n])]
        metric = Comet(model=str(ckpt), progress=False).with_sources(read[0])
        fl = floor_round(metric, read[0], read[1], read[2:], 16, args.repeats)
        for stats, peer in zip(fl["rows"], job["read_peer"](), strict=True):
            diff = float(np.max(np.abs(stats.rows[:, 0] - np.asarray(peer))))
            if diff > 1e-5:
                raise SystemExit(f"segment scores differ from unbabel-comet's by {diff:.2e}")
        c = fl["cpu"]
        print(
            f"floor, {n} system(s): bare BertModel forward {c['floor']:.2f} s CPU, evalab scoring "
            f"{c['ours']:.2f} s: {c['ours'] / c['floor']:.2f}x the floor "
            "(medians; segment scores equal unbabel-comet's within 1e-5)"
        )
    print(f"load at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
