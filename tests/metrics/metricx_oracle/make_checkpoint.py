"""Build tiny MetricX checkpoints with the oracle's own ``MT5ForRegression`` (run INSIDE
the MetricX oracle venv, with ``shared/oracles/metricx`` on ``PYTHONPATH``).

Usage: python make_checkpoint.py SPEC.json, a list of ``{"out": FOLDER, "version": 23|24,
and the sizes of benchmarks/make_tiny_metricx.py's spec()}``. The tokenizer, the sizes and
the fitted score row are that script's (imported from it); the model class, its weights'
initialisation and ``save_pretrained`` are the oracle's and transformers 4.49's.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import make_tiny_metricx

if __name__ == "__main__":
    from metricx23 import models as m23
    from metricx24 import models as m24

    for spec in json.loads(Path(sys.argv[1]).read_text()):
        models = m23 if spec["version"] == 23 else m24
        make_tiny_metricx.build(Path(spec["out"]), spec, models.MT5ForRegression)
