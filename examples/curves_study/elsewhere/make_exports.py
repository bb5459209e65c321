"""Write the runs of a store as W&B, MLflow and Hydra would have exported the same runs (the
example files beside this script were made by it from a local `ablate run` of the study).

    python examples/curves_study/elsewhere/make_exports.py RUNS.db OUT_FOLDER
"""

import csv
import json
import sys
from pathlib import Path

from evalab.ablation import RunStore

KEYS = ["hidden", "steps"]


def main(db: str, out: str) -> None:
    folder = Path(out)
    with RunStore(db, create=False) as store:
        runs = sorted(store.runs("curves-demo").values(), key=lambda r: (r.config["hidden"], r.seed))
    with open(folder / "wandb_export.csv", "w", newline="", encoding="utf-8") as fh:  # the runs table's CSV
        w = csv.writer(fh)
        w.writerow(["Name", "State", "Notes", "User", "Tags", "Created", "Runtime", "Sweep", *KEYS, "seed", "acc",
                    "val_loss", "loss", "_step"])
        for i, r in enumerate(runs):
            w.writerow([f"run-{i}", "finished", "-", "ana", "", "2026-11-30T10:00:00", 41, "", *(r.config[k] for k in KEYS),
                        r.seed, repr(r.metrics["acc"]), repr(r.metrics["val_loss"]), 0.1, 999])
        w.writerow(["run-x", "crashed", "-", "ana", "", "2026-11-30T11:00:00", 3, "", 32, 1000, 0, "", "", "", 12])
    with open(folder / "mlflow_runs.csv", "w", newline="", encoding="utf-8") as fh:  # mlflow.search_runs().to_csv()
        w = csv.writer(fh)
        w.writerow(["", "run_id", "experiment_id", "status", "artifact_uri", "start_time", "end_time", "metrics.acc",
                    "metrics.val_loss", "params.hidden", "params.steps", "params.seed", "tags.mlflow.runName"])
        for i, r in enumerate(runs):
            w.writerow([i, f"{i + 1:032x}", "1", "FINISHED", f"mlruns/1/{i + 1:032x}/artifacts", "2026-11-30 10:00:00",
                        "2026-11-30 10:01:00", repr(r.metrics["acc"]), repr(r.metrics["val_loss"]),
                        *(str(r.config[k]) for k in KEYS), str(r.seed), f"run-{i}"])
    sweep = folder / "multirun" / "2026-11-30" / "10-00-00"
    for n, r in enumerate(runs):
        job = sweep / str(n)
        (job / ".hydra").mkdir(parents=True, exist_ok=True)
        (job / ".hydra" / "config.yaml").write_text(
            f"model:\n  hidden: {r.config['hidden']}\nsteps: {r.config['steps']}\nseed: {r.seed}\n", encoding="utf-8")
        (job / ".hydra" / "overrides.yaml").write_text(
            f"- model.hidden={r.config['hidden']}\n- seed={r.seed}\n", encoding="utf-8")
        (job / "metrics.json").write_text(json.dumps({"acc": r.metrics["acc"], "val_loss": r.metrics["val_loss"]}) + "\n",
                                          encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
