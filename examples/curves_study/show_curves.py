"""Print each stored run of the curves study: its selected value, the step it was taken at,
where early stopping held, and the curve the store keeps (steps, first and last value).

    python examples/curves_study/show_curves.py RUNS.db
"""

import sys

from evalab.ablation import RunStore
from evalab.ablation.contract.curves import load_curves


def main(db: str) -> None:
    with RunStore(db, create=False) as store:
        runs = sorted(store.runs("curves-demo").values(), key=lambda r: (r.rows, r.seed))
        curves = load_curves(store.conn, "curves-demo", [r.key for r in runs])
    for run in runs:
        info = run.artifacts.curves  # a CurvesEntry (evalab.ablation.contract.curves)
        val = curves[run.key]["val_loss"]
        print(
            f"{run.rows[0]:5} seed {run.seed}  val_loss {run.metrics['val_loss']:.4f} at step {info.selected_step}"
            f"  stopped at {info.stopped_at}  stored: {len(val.steps)} steps, {val.values[0]:.3f} .. "
            f"{val.values[-1]:.3f}"
        )


if __name__ == "__main__":
    main(sys.argv[1])
