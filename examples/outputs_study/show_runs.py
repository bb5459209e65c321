"""Print the stored runs of the outputs-demo study and their per-example data
(docs/ablation-outputs.md): ``python show_runs.py DB`` lists every ok run;
``python show_runs.py DB --folder ROW SEED`` prints that run's folder."""

from __future__ import annotations

import sys
from pathlib import Path

from evalab.ablation import RunStore, load_study
from evalab.ablation.store.per_example import load_example_stats

study = load_study(Path(__file__).with_name("study.toml"), check_entry=False)
with RunStore(sys.argv[1], create=False) as store:
    runs = sorted(store.runs(study.name).values(), key=lambda r: (r.rows, r.seed))
    if sys.argv[2:3] == ["--folder"]:
        row, seed = sys.argv[3], int(sys.argv[4])
        print(
            next(store.run_dir(study.name, r.key) for r in runs if row in r.rows and r.seed == seed)
        )
        raise SystemExit(0)
    for run in runs:
        stats = load_example_stats(store, study, run)
        cells = [
            f"{m} {run.metrics[m]:.4f} ({stats[m].n_examples} rows of {stats[m].rows.shape[1]})"
            for m in study.metrics
        ]
        print(f"{'/'.join(run.rows):<13} seed {run.seed}  " + "  ".join(cells))
