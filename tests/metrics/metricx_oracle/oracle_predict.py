"""Score with Google's MetricX ``predict`` (run INSIDE the MetricX oracle venv, with
``shared/oracles/metricx`` on ``PYTHONPATH``).

Usage: python predict.py JOBS.json OUT.json. JOBS.json is a list of ``{"checkpoint":
FOLDER (model + tokenizer), "version": 23|24, "qe": bool, "max_input_length": N,
"batch_size": N, "samples": [{"source", "hypothesis", "reference"}, ...]}`` or, for several
systems (one ``predict`` run each, as its command line scores them), ``"systems": [samples,
...]``. Each system runs through the version's ``predict.main`` itself (its command line,
its ``get_dataset``, its Trainer); the texts and token ids are read from its
``get_dataset``. OUT.json gets one ``{"systems": [{"predictions", "inputs", "input_ids"},
...], "seconds": t}`` per job, ``seconds`` timing the ``main`` calls alone.
"""

import importlib
import json
import logging
import sys
import tempfile
import time
from pathlib import Path

import transformers

logging.disable(logging.WARNING)
transformers.logging.set_verbosity_error()


def run_main(predict, job: dict, samples: list, tmp: Path) -> list:
    src, out = tmp / "input.jsonl", tmp / "output.jsonl"
    src.write_text("".join(json.dumps(s) + "\n" for s in samples))
    argv = ["predict", "--tokenizer", job["checkpoint"], "--model_name_or_path", job["checkpoint"]]
    argv += ["--max_input_length", str(job["max_input_length"])]
    argv += ["--batch_size", str(job["batch_size"]), "--input_file", str(src)]
    argv += ["--output_file", str(out)]
    argv += ["--qe"] if job["qe"] else []
    sys.argv = argv
    predict.main()
    return [json.loads(line)["prediction"] for line in out.read_text().splitlines()]


def inputs(predict, job: dict, samples: list, tmp: Path) -> dict:
    src = tmp / "texts.jsonl"
    src.write_text("".join(json.dumps(s) + "\n" for s in samples))
    tok = transformers.AutoTokenizer.from_pretrained(job["checkpoint"])
    ds = predict.get_dataset(str(src), tok, job["max_input_length"], "cpu", job["qe"])["test"]
    return {"inputs": list(ds["input"]), "input_ids": [list(map(int, x)) for x in ds["input_ids"]]}


def run(job: dict) -> dict:
    predict = importlib.import_module(f"metricx{job['version']}.predict")
    systems = job.get("systems") or [job["samples"]]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        scores = [run_main(predict, job, s, Path(tmp)) for s in systems]
        seconds = time.perf_counter() - start
        texts = (
            [inputs(predict, job, s, Path(tmp)) for s in systems]
            if job.get("texts", True)
            else [{}] * len(systems)
        )
    return {
        "systems": [{"predictions": p, **t} for p, t in zip(scores, texts, strict=True)],
        "seconds": seconds,
    }


if __name__ == "__main__":
    jobs = json.loads(Path(sys.argv[1]).read_text())
    Path(sys.argv[2]).write_text(json.dumps([run(job) for job in jobs]))
