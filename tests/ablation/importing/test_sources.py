"""``ablate import`` of W&B, MLflow and Hydra exports: matched by configuration, reported
like the same runs made by evalab.

The exports are built as each tool writes them (their documented layouts):
- W&B's runs table CSV (``Name``, ``State``, ``Notes``, ``User``, ``Tags``, ``Created``,
  ``Runtime``, ``Sweep``, then one flat column per configuration key and summary value,
  booleans as ``true``), and ``wandb.Api().runs`` flattened with ``pandas.json_normalize``
  (``name``, ``state``, ``config.KEY``, ``summary.KEY``);
- MLflow's ``mlflow.search_runs().to_csv()`` (pandas' index column first, ``run_id``,
  ``experiment_id``, ``status``, ``artifact_uri``, ``start_time``, ``end_time``,
  ``metrics.X``, ``params.X`` as text: ``True``, ``0.0``, ``tags.mlflow.runName``);
- Hydra's ``multirun/<date>/<time>/<n>/.hydra/{config,hydra,overrides}.yaml`` beside the
  metrics file the job wrote.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from tests.cli.refusal import assert_refused

from evalab.ablation import analyze, load_study
from evalab.ablation.store.run_store import RunStore
from evalab.report import render_markdown

from ..synth import write_study

VARIANTS = [("(A)", "no a", {"a": False}), ("(S)", "shifted", {"shift": 2.0})]


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """A study run by evalab: (study path, database, stored runs sorted by row and seed)."""
    from evalab.cli import main

    folder = tmp_path_factory.mktemp("local")
    study = write_study(folder, seeds=[0, 1], variants=VARIANTS)
    db = folder / "local.db"
    assert main(["ablate", "run", str(study), "--db", str(db), "-q"]) == 0
    with RunStore(db) as store:
        runs = sorted(store.runs("synth").values(), key=lambda r: (r.rows, r.seed))
    return study, db, runs


def csv_text(header: list[str], rows: list[list[object]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def wb(value: object) -> str:
    """A value as W&B's runs table writes it: JSON (true, 2, 0.5), integral floats without a point."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value) if not isinstance(value, str) else value


def mlflow_param(value: object) -> str:
    """MLflow keeps parameters as ``str(value)``."""
    return str(value)


def same_report(study: Path, db_a: Path, db_b: Path) -> None:
    s = load_study(study, check_entry=False)
    assert render_markdown(analyze(s, db_a)) == render_markdown(analyze(s, db_b))


KEYS = ["a", "b", "shift", "noise", "mode", "sleep"]


def wandb_table(runs) -> str:
    header = [
        "Name",
        "State",
        "Notes",
        "User",
        "Tags",
        "Created",
        "Runtime",
        "Sweep",
        *KEYS,
        "seed",
        "acc",
        "loss",
        "_runtime",
        "train_loss",
    ]
    rows = [
        [
            f"run-{i}",
            "finished",
            "-",
            "me",
            "",
            "2026-11-30T10:00:00",
            12,
            "",
            *(wb(r.config[k]) for k in KEYS),
            r.seed,
            repr(r.metrics["acc"]),
            repr(r.metrics["loss"]),
            12.5,
            0.3,
        ]
        for i, r in enumerate(runs)
    ]
    rows.append(
        [
            "crashed-run",
            "crashed",
            "-",
            "me",
            "",
            "2026-11-30T11:00:00",
            3,
            "",
            *(wb(runs[0].config[k]) for k in KEYS),
            0,
            "",
            "",
            3.0,
            0.9,
        ]
    )
    return csv_text(header, rows)


def test_wandb_runs_table_csv_reports_like_the_runs_evalab_made(tmp_path, local, run_cli):
    study, local_db, runs = local
    export = tmp_path / "wandb_export.csv"
    export.write_text(wandb_table(runs), encoding="utf-8")
    db = tmp_path / "imported.db"
    r = run_cli("ablate", "import", export, "--study", study, "--db", db)
    assert r.exit_code == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0] == f"skipped {export}:8 (crashed-run): not finished (W&B state 'crashed')"
    assert lines[1] == f"imported 6 runs of study 'synth' from {export} (wandb export) into {db}"
    assert lines[2].endswith(
        ": train_loss"
    )  # said, not silently dropped (W&B's own _runtime is left out)
    same_report(study, local_db, db)


def test_wandb_api_export_with_config_and_summary_columns(tmp_path, local, run_cli):
    study, local_db, runs = local
    header = [
        "name",
        "state",
        *(f"config.{k}" for k in KEYS),
        "config.seed",
        "config.epochs",
        "summary.acc",
        "summary.val/loss",
        "summary._step",
    ]
    rows = [
        [
            f"r{i}",
            "finished",
            *(r.config[k] for k in KEYS),
            float(r.seed),
            10,
            r.metrics["acc"],
            r.metrics["loss"],
            99,
        ]
        for i, r in enumerate(runs)
    ]  # pandas writes True, 2.0 and a float seed 0.0
    export = tmp_path / "runs.csv"
    export.write_text(csv_text(header, rows), encoding="utf-8")
    db = tmp_path / "imported.db"
    r = run_cli(
        "ablate", "import", export, "--study", study, "--db", db, "--map", "summary.val/loss=loss"
    )
    assert r.exit_code == 0, r.stderr
    assert "epochs" in r.stderr.splitlines()[-1]  # a constant key the study does not have: named
    same_report(study, local_db, db)


def mlflow_csv(runs, status_last: str = "FAILED") -> str:
    header = [
        "",
        "run_id",
        "experiment_id",
        "status",
        "artifact_uri",
        "start_time",
        "end_time",
        "metrics.acc",
        "metrics.loss",
        *(f"params.{k}" for k in KEYS),
        "params.seed",
        "tags.mlflow.runName",
        "tags.mlflow.user",
        "tags.mlflow.source.name",
    ]
    rows = [
        [
            i,
            f"{i:032x}",
            "1",
            "FINISHED",
            f"file:///m/1/{i:032x}/artifacts",
            "2026-11-30 10:00:00+00:00",
            "2026-11-30 10:01:00+00:00",
            r.metrics["acc"],
            r.metrics["loss"],
            *(mlflow_param(r.config[k]) for k in KEYS),
            str(r.seed),
            f"run-{i}",
            "me",
            "train.py",
        ]
        for i, r in enumerate(runs)
    ]
    rows.append(
        [
            len(runs),
            "f" * 32,
            "1",
            status_last,
            "",
            "",
            "",
            "",
            "",
            *(mlflow_param(runs[0].config[k]) for k in KEYS),
            "1",
            "broken",
            "me",
            "train.py",
        ]
    )
    return csv_text(header, rows)


def test_mlflow_search_runs_csv_reports_like_the_runs_evalab_made(tmp_path, local, run_cli):
    study, local_db, runs = local
    export = tmp_path / "mlflow.csv"
    export.write_text(mlflow_csv(runs), encoding="utf-8")
    db = tmp_path / "imported.db"
    r = run_cli("ablate", "import", export, "--study", study, "--db", db)
    assert r.exit_code == 0, r.stderr
    assert (
        r.stderr.splitlines()[0]
        == f"skipped {export}:8 (broken): not finished (MLflow status 'FAILED')"
    )
    same_report(study, local_db, db)


def write_hydra(root: Path, runs, extra: dict | None = None) -> Path:
    import yaml

    sweep = root / "multirun" / "2026-11-30" / "10-00-00"
    for n, r in enumerate(runs):
        job = sweep / str(n)
        (job / ".hydra").mkdir(parents=True)
        config = {**r.config, "seed": r.seed, "model": {"name": "tiny", **(extra or {}).get(n, {})}}
        (job / ".hydra" / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        overrides = [f"{k}={v}" for k, v in r.config.items() if k in ("a", "shift")] + [
            f"seed={r.seed}"
        ]
        (job / ".hydra" / "overrides.yaml").write_text(yaml.safe_dump(overrides), encoding="utf-8")
        (job / ".hydra" / "hydra.yaml").write_text("hydra:\n  mode: MULTIRUN\n", encoding="utf-8")
        (job / "result.json").write_text(
            json.dumps({"acc": r.metrics["acc"], "loss": r.metrics["loss"]}), encoding="utf-8"
        )
    (sweep / "multirun.yaml").write_text("hydra:\n  mode: MULTIRUN\n", encoding="utf-8")
    return root / "multirun"


def test_hydra_multirun_folder_reports_like_the_runs_evalab_made(tmp_path, local, run_cli):
    pytest.importorskip("yaml")
    study, local_db, runs = local
    folder = write_hydra(tmp_path, runs)
    db = tmp_path / "imported.db"
    r = run_cli(
        "ablate", "import", folder, "--study", study, "--db", db, "--metrics-file", "result.json"
    )
    assert r.exit_code == 0, r.stderr
    assert "(hydra export)" in r.stderr and r.stderr.splitlines()[-1].endswith(
        ": config.model.name"
    )
    same_report(study, local_db, db)


def test_a_key_the_study_lacks_that_differs_between_runs_is_refused(tmp_path, local):
    pytest.importorskip("yaml")
    study, _, runs = local
    folder = write_hydra(tmp_path, runs, extra={3: {"name": "big"}})
    assert_refused(
        (
            "ablate",
            "import",
            folder,
            "--study",
            study,
            "--db",
            tmp_path / "x.db",
            "--metrics-file",
            "result.json",
        ),
        "column 'config.model.name' is 'big' here but 'tiny' at",
        watch=(tmp_path,),
    )


def test_unmatched_records_are_refused_or_listed_never_dropped(tmp_path, local, run_cli):
    study, _, runs = local
    text = wandb_table(runs).splitlines()
    cells = next(csv.reader([text[1]]))
    cells[KEYS.index("shift") + 8] = "5"  # a shift no row has
    text[1] = csv_text(["x"], [cells]).splitlines()[1]
    export = tmp_path / "wandb.csv"
    export.write_text("\n".join(text) + "\n", encoding="utf-8")
    db = tmp_path / "imported.db"
    assert_refused(
        ("ablate", "import", export, "--study", study, "--db", db),
        f"{export}:2: config "
        + '{"a": "false", "b": "true", "mode": "ok", "noise": "0.5", "shift": "5", '
        '"sleep": "0"} is no row of this study',
        watch=(tmp_path,),
    )
    r = run_cli("ablate", "import", export, "--study", study, "--db", db, "--skip-unmatched")
    assert r.exit_code == 0, r.stderr
    assert (
        f"skipped {export}:2 (run-0): configuration" in r.stderr and "imported 5 runs" in r.stderr
    )


@pytest.mark.parametrize(
    ("cells", "needle"),
    [
        ({"shift": "2.5"}, "is no row of this study"),  # 2.5 is not 2.0
        ({"a": "1"}, "is no row of this study"),  # a boolean is true/false (True/False), not 1
    ],
)
def test_coercions_are_exact(tmp_path, local, cells, needle):
    study, _, runs = local
    header = ["Name", "State", *KEYS, "seed", "acc", "loss"]
    config = {k: wb(runs[0].config[k]) for k in KEYS} | cells
    export = tmp_path / "wandb.csv"
    export.write_text(
        csv_text(header, [["r", "finished", *config.values(), 0, 80.0, 0.2]]), encoding="utf-8"
    )
    assert_refused(
        ("ablate", "import", export, "--study", study, "--db", tmp_path / "x.db"),
        needle,
        watch=(tmp_path,),
    )


def test_map_and_seed_from_name_columns_that_exist(tmp_path, local):
    study, _, runs = local
    export = tmp_path / "mlflow.csv"
    export.write_text(mlflow_csv(runs), encoding="utf-8")
    assert_refused(
        (
            "ablate",
            "import",
            export,
            "--study",
            study,
            "--db",
            tmp_path / "x.db",
            "--map",
            "metrics.ac=acc",
        ),
        "--map metrics.ac=acc: the export has no column 'metrics.ac'",
        watch=(tmp_path,),
    )
    assert_refused(
        (
            "ablate",
            "import",
            export,
            "--study",
            study,
            "--db",
            tmp_path / "x.db",
            "--seed-from",
            "params.sd",
        ),
        "--seed-from params.sd: the export has no column 'params.sd'",
        watch=(tmp_path,),
    )


def test_hydra_jobs_with_a_per_step_log_import_their_curves(tmp_path, run_cli):
    pytest.importorskip("yaml")
    import shutil

    import yaml

    from evalab.ablation.analysis.curve_bands import study_curves
    from evalab.report import render_html

    from ..contract.test_curves import write_curve_study

    study = write_curve_study(tmp_path / "st", steps=200)
    local_db = tmp_path / "local.db"
    assert run_cli("ablate", "run", study, "--db", local_db, "-q").exit_code == 0
    with RunStore(local_db) as store:
        runs = sorted(store.runs("curves").values(), key=lambda r: (r.rows, r.seed))
    for n, r in enumerate(runs):  # the jobs wrote only their per-step log
        job = tmp_path / "multirun" / "2026-11-30" / "10-00-00" / str(n)
        (job / ".hydra").mkdir(parents=True)
        (job / ".hydra" / "config.yaml").write_text(
            yaml.safe_dump({**r.config, "seed": r.seed}), encoding="utf-8"
        )
        shutil.copy(Path(r.artifacts.dir) / "metrics.jsonl", job / "metrics.jsonl")
    # acc is returned, not logged: the jobs' metrics.jsonl lacks it, so an import of the log alone is refused
    assert_refused(
        ("ablate", "import", tmp_path / "multirun", "--study", study, "--db", tmp_path / "x.db"),
        "metric acc is missing",
        watch=(tmp_path / "multirun",),
    )
    for n, r in enumerate(runs):
        job = tmp_path / "multirun" / "2026-11-30" / "10-00-00" / str(n)
        (job / "metrics.json").write_text(json.dumps({"acc": r.metrics["acc"]}), encoding="utf-8")
    db = tmp_path / "hydra.db"
    r = run_cli("ablate", "import", tmp_path / "multirun", "--study", study, "--db", db)
    assert r.exit_code == 0, r.stderr
    s = load_study(study, check_entry=False)
    same_report(
        study, local_db, db
    )  # val_loss picked from the imported curves by select, as locally
    local, imported = study_curves(s, local_db), study_curves(s, db)
    assert render_html(analyze(s, db), curves=imported).count("<polyline") == 4
    for a, b in zip(local.rows, imported.rows, strict=True):
        assert a.labels == b.labels and a.selected_steps == b.selected_steps
        assert all((a.bands[m].mean == b.bands[m].mean).all() for m in ("loss", "val_loss"))


def test_wandb_run_dicts_as_json_lines_or_a_pandas_csv_of_their_reprs(tmp_path, local, run_cli):
    study, local_db, runs = local
    records = [
        {
            "name": f"r{i}",
            "state": "finished",
            "config": {**r.config, "seed": r.seed},
            "summary": {"acc": r.metrics["acc"], "loss": r.metrics["loss"], "_step": 3},
        }
        for i, r in enumerate(runs)
    ]
    jsonl = tmp_path / "runs.jsonl"
    jsonl.write_text("".join(json.dumps(x) + "\n" for x in records), encoding="utf-8")
    # W&B's export example: pandas.DataFrame({"summary": [...], "config": [...], "name": [...]}).to_csv()
    frame = tmp_path / "project.csv"
    frame.write_text(
        csv_text(
            ["", "summary", "config", "name"],
            [[i, repr(x["summary"]), repr(x["config"]), x["name"]] for i, x in enumerate(records)],
        ),
        encoding="utf-8",
    )
    for export in (jsonl, frame):
        db = tmp_path / f"{export.stem}.db"
        r = run_cli("ablate", "import", export, "--study", study, "--db", db)
        assert r.exit_code == 0 and "(wandb export)" in r.stderr, r.stderr
        assert (
            "columns not used" not in r.stderr
        )  # pandas' index column and W&B's _step are no columns of a run
        same_report(study, local_db, db)


def test_numbers_of_hydra_yaml_and_wandb_cells_follow_the_grammar(tmp_path, local):
    """YAML reads ``1_0`` as ten and ``.inf`` as a number, ``ast.literal_eval`` reads ``1_0``
    as ten and any digits as an int: each is refused with the file and key, as every number
    a user gives (evalab.numbers)."""
    pytest.importorskip("yaml")
    study, _, runs = local
    for n, (text, needle) in enumerate(
        [("1_0", "'1_0': not a decimal number"), (".inf", "'.inf': not a finite number")]
    ):
        folder = write_hydra(tmp_path / str(n), runs)
        config = next(folder.rglob("0/.hydra/config.yaml"))
        config.write_text(
            re.sub(r"(?m)^shift: .*$", f"shift: {text}", config.read_text(encoding="utf-8")),
            encoding="utf-8",
        )
        args = ("ablate", "import", folder, "--study", study, "--db", tmp_path / "x.db")
        assert_refused(
            (*args, "--metrics-file", "result.json"),
            f"{config}: shift: {needle}",
            watch=(tmp_path,),
        )
    for cell, needle in (
        ("{'acc': 1_0, 'loss': 0.5}", "'1_0': not a decimal number"),
        (
            "{'acc': " + "9" * 400 + ", 'loss': 0.5}",
            "'999999999999999999999999'... (400 characters): an integer beyond 2**53",
        ),
    ):
        r = runs[0]
        config = repr({**r.config, "seed": r.seed})
        export = tmp_path / "wandb.csv"
        export.write_text(
            csv_text(["name", "state", "config", "summary"], [["r0", "finished", config, cell]])
        )
        assert_refused(
            ("ablate", "import", export, "--study", study, "--db", tmp_path / "x.db"),
            f"{export}:2: column 'summary': {needle}",
            watch=(tmp_path,),
        )
