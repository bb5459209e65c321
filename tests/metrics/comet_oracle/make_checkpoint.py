"""Build tiny COMET checkpoints with unbabel-comet's own classes (run INSIDE the oracle venv).

Usage: python make_checkpoint.py SPEC.json, where SPEC.json is a list of
``{"out": FOLDER, "class": "regression_metric" | "referenceless_regression_metric" |
"unified_metric" | "xcomet_metric",
"seed": N, "hparams": {...}}``. Each FOLDER gets ``checkpoints/model.ckpt`` (saved by a
Lightning trainer, as unbabel-comet's training does) and ``hparams.yaml``. The encoder
keeps its pretrained weights; the estimator and the layer-mixing weights are random.
"""

import json
import sys
from pathlib import Path

import pytorch_lightning as ptl
import torch
from comet.models import ReferencelessRegression, RegressionMetric, UnifiedMetric, XCOMETMetric
from pytorch_lightning.core.saving import save_hparams_to_yaml

CLASSES = {
    "regression_metric": RegressionMetric,
    "referenceless_regression_metric": ReferencelessRegression,
    "unified_metric": UnifiedMetric,
    "xcomet_metric": XCOMETMetric,
}


def build(spec: dict) -> None:
    torch.manual_seed(spec["seed"])
    model = CLASSES[spec["class"]](**spec["hparams"])
    with torch.no_grad():
        # random estimator weights large enough that scores spread out
        for p in model.estimator.parameters():
            p.normal_(0.0, 0.2)
        if model.layerwise_attention is not None:
            for p in model.layerwise_attention.scalar_parameters:
                p.normal_(0.0, 1.0)
            model.layerwise_attention.gamma.fill_(0.5 + torch.rand(1).item())
        if getattr(model, "hidden2tag", None) is not None:  # word-level tagging head
            for p in model.hidden2tag.parameters():
                p.normal_(0.0, 0.5)
    out = Path(spec["out"])
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    trainer = ptl.Trainer(logger=False, enable_checkpointing=False, accelerator="cpu", devices=1)
    trainer.strategy.connect(model)
    trainer.save_checkpoint(str(out / "checkpoints" / "model.ckpt"))
    save_hparams_to_yaml(out / "hparams.yaml", dict(model.hparams))


if __name__ == "__main__":
    for item in json.loads(Path(sys.argv[1]).read_text()):
        build(item)
