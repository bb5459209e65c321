"""Score with unbabel-comet's ``predict`` (run INSIDE the oracle venv).

Usage: python predict.py JOBS.json OUT.json. JOBS.json is a list of ``{"checkpoint":
PATH/checkpoints/model.ckpt, "batch_size": N, "samples": [{"src", "mt", "ref"?}, ...]}``
or, for several systems scored as ``comet-score`` scores them (one ``predict`` per system,
with ``"cache": true`` its sentence-embedding cache on), ``"systems": [samples, ...]``.
OUT.json gets one ``{"systems": [{"scores", "system_score"}, ...], "seconds": t}`` per job
(plus ``scores``/``system_score`` of the first system; ``error_spans`` too for a
model with a word-level head); ``seconds`` times the ``predict``
calls alone, for the benchmark.
"""

import json
import logging
import sys
import time
from pathlib import Path

from comet import load_from_checkpoint

logging.disable(logging.WARNING)


def run(model, job: dict) -> dict:
    if job.get("cache"):
        model.retrieve_sentence_embedding.cache_clear()  # each timed job starts cold
        model.set_embedding_cache()
    else:
        model.caching = False
    systems = job.get("systems") or [job["samples"]]
    start = time.perf_counter()
    outs = [
        model.predict(s, batch_size=job["batch_size"], gpus=0, progress_bar=False) for s in systems
    ]
    seconds = time.perf_counter() - start
    scored = [{"scores": list(o.scores), "system_score": o.system_score, **_spans(o)} for o in outs]
    return {**scored[0], "systems": scored, "seconds": seconds}


def _spans(output) -> dict:
    """The error spans of a word-level model (xCOMET), as ``predict`` returns them."""
    metadata = output.get("metadata") or {}
    return {"error_spans": metadata["error_spans"]} if "error_spans" in metadata else {}


def main() -> None:
    jobs = json.loads(Path(sys.argv[1]).read_text())
    models: dict = {}
    results = []
    for job in jobs:
        path = job["checkpoint"]
        if path not in models:
            models[path] = load_from_checkpoint(path)
        results.append(run(models[path], job))
    Path(sys.argv[2]).write_text(json.dumps(results))


if __name__ == "__main__":
    main()
