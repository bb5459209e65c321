"""``evalab ablate import``: runs made elsewhere into the store, all or nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalab.ablation import load_study
from evalab.ablation.store.per_example import load_example_stats
from evalab.ablation.store.run_store import RunStore

from ..outsynth import N_LINES, write_outputs_study
from ..synth import write_study

VARIANTS = [("(A)", "no a", {"a": False})]
HEADER = "row,seed,acc,loss,per_example\n"


def acc_values(seed: int, n: int = 6) -> list[float]:
    rng = np.random.default_rng(seed)
    return [float(x) for x in rng.integers(0, 2, n)]


def write_runs(tmp_path, rows=("base", "(A)"), seeds=(0, 1), n=6) -> str:
    """A CSV of finished runs with per-example files; returns its text."""
    lines = [HEADER]
    for i, row in enumerate(rows):
        for seed in seeds:
            values = acc_values(10 * i + seed, n)
            name = f"pe-{i}-{seed}.json"
            (tmp_path / name).write_text(json.dumps({"acc": values}), encoding="utf-8")
            acc = sum(values) / len(values)
            lines.append(f"{row},{seed},{acc!r},{1 - acc!r},{name}\n")
    return "".join(lines)


@pytest.fixture
def study(tmp_path):
    return write_study(tmp_path, seeds=[0, 1], variants=VARIANTS)


def test_import_csv_then_report_like_local_runs(tmp_path, study, run_cli):
    runs = tmp_path / "runs.csv"
    runs.write_text(write_runs(tmp_path), encoding="utf-8")
    db = tmp_path / "s.db"
    r = run_cli("ablate", "import", runs, "--study", study, "--db", db)
    assert r.exit_code == 0, r.stderr
    assert r.stderr == f"imported 4 runs of study 'synth' from {runs} into {db}\n"
    r = run_cli("ablate", "status", study, "--db", db)
    assert "4/4 ok, 0 failed, 0 pending" in r.stdout
    r = run_cli("ablate", "run", study, "--db", db, "-q")
    assert (
        r.exit_code == 0 and "4 already finished, 0 ok" in r.stderr
    )  # imported runs are not rerun
    r = run_cli("ablate", "report", study, "--db", db, "-f", "json")
    assert r.exit_code == 0
    data = json.loads(r.stdout)
    assert [row["label"] for row in data["rows"]][:2] == ["base", "(A)"]
    s = load_study(study, check_entry=False)
    with RunStore(db) as store:
        stored = store.runs(s.name)
        for run in stored.values():
            stats = load_example_stats(store, s, run)
            assert set(stats) == {"acc"} and stats["acc"].n_examples == 6
            assert stats["acc"].value() == pytest.approx(run.metrics["acc"], rel=1e-12)
            assert run.host == "imported" and run.artifacts.imported_from.startswith(f"{runs}:")
    base0 = next(r for r in stored.values() if r.rows[0] == "base" and r.seed == 0)
    assert base0.metrics["acc"] == sum(acc_values(0)) / 6


def test_import_jsonl_by_config_and_csv_config_columns(tmp_path, study, run_cli):
    runs = tmp_path / "runs.jsonl"
    recs = [
        {
            "config": {"a": False},
            "seed": 0,
            "acc": 0.5,
            "loss": 0.5,
            "per_example": {"acc": [1, 0]},
        },
        {"config": {}, "seed": 1, "acc": 0.7, "loss": 0.3},
    ]
    runs.write_text("\n".join(json.dumps(r) for r in recs) + "\n\n", encoding="utf-8")
    db = tmp_path / "s.db"
    assert run_cli("ablate", "import", runs, "--study", study, "--db", db).exit_code == 0
    csv_runs = tmp_path / "more.csv"
    csv_runs.write_text(
        "config.a,config.shift,seed,acc,loss\nfalse,0.0,1,0.25,0.75\n", encoding="utf-8"
    )
    r = run_cli("ablate", "import", csv_runs, "--study", study, "--db", db)
    assert r.exit_code == 0, r.stderr
    with RunStore(db) as store:
        got = {(run.rows[0], run.seed): run.metrics["acc"] for run in store.runs("synth").values()}
    assert got == {("(A)", 0): 0.5, ("base", 1): 0.7, ("(A)", 1): 0.25}


def test_a_failed_run_may_be_replaced_but_an_ok_run_is_never_imported_twice(tmp_path, run_cli):
    study = write_study(tmp_path, seeds=[0, 1], variants=[("(R)", "raises", {"mode": "raise"})])
    db = tmp_path / "s.db"
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 1  # (R) fails
    runs = tmp_path / "runs.csv"
    runs.write_text("row,seed,acc,loss\n(R),0,60.0,0.4\n", encoding="utf-8")
    assert run_cli("ablate", "import", runs, "--study", study, "--db", db).exit_code == 0
    runs.write_text("row,seed,acc,loss\n(R),1,61.0,0.39\nbase,0,80.0,0.2\n", encoding="utf-8")
    r = run_cli("ablate", "import", runs, "--study", study, "--db", db)
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert f"{runs}:3: row base seed 0 is already stored as ok in {db}" in r.stderr
    with RunStore(db) as store:
        stored = store.runs("synth")
    assert sorted((r.rows[0], r.seed, r.status) for r in stored.values()) == [
        ("(R)", 0, "ok"),
        ("(R)", 1, "failed"),
        ("base", 0, "ok"),
        ("base", 1, "ok"),
    ]  # (R) seed 1 not imported


def test_import_scores_outputs_of_computed_metrics_like_a_local_run(tmp_path, wmt22, run_cli):
    study = write_outputs_study(tmp_path / "st", seeds=(0,))
    folder = tmp_path / "elsewhere" / "base-0"
    folder.mkdir(parents=True)
    lines = (tmp_path / "st/data/sys.txt").read_text(encoding="utf-8").split("\n")[:N_LINES]
    lines[3] = ""
    (folder / "hyp.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    runs = tmp_path / "runs.jsonl"
    runs.write_text(
        json.dumps(
            {
                "row": "base",
                "seed": 0,
                "acc": 0.5,
                "outputs": "elsewhere/base-0",
                "per_example": {"acc": [1, 0]},
            }
        )
        + "\n",
        encoding="utf-8",
    )
    db = tmp_path / "s.db"
    r = run_cli("ablate", "import", runs, "--study", study, "--db", db)
    assert r.exit_code == 0, r.stderr
    score = run_cli(
        "score",
        "-r",
        tmp_path / "st/data/ref.txt",
        "-r",
        tmp_path / "st/data/ref2.txt",
        "-i",
        folder / "hyp.txt",
        "-m",
        "bleu",
        "-s",
        "tokenize=13a",
        "--format",
        "json",
    )
    s = load_study(study, check_entry=False)
    with RunStore(db) as store:
        (run,) = store.runs(s.name).values()
        stats = load_example_stats(store, s, run)
    assert run.metrics["bleu"] == json.loads(score.stdout)[0]["score"]
    assert stats["bleu"].n_examples == N_LINES and stats["ter"].value() == pytest.approx(
        run.metrics["ter"]
    )


def bad_cases():
    h = "row,seed,acc,loss\n"
    return [
        (
            "runs.csv",
            h + "base,0,0.5,0.5,extra\n",
            r"runs\.csv:2: has 5 cells but the header has 4 columns",
        ),
        (
            "runs.csv",
            "row,seed,acc,los\nbase,0,0.5,0.5\n",
            r"runs\.csv:2: unknown column 'los'; known: row or config",
        ),
        (
            "runs.csv",
            "row,seed,acc,acc,loss\nbase,0,0.5,0.6,0.5\n",
            r"runs\.csv:1: column 'acc' appears twice in the header",
        ),
        (
            "runs.csv",
            "row,seed,acc\nbase,0,0.5\n",
            r"runs\.csv:2: metric loss is missing; every run needs a value of each metric",
        ),
        ("runs.csv", h + "base,0,nan,0.5\n", r"column acc: 'nan': not a finite number"),
        ("runs.csv", h + "base,0,high,0.5\n", r"metric acc is 'high'"),
        (
            "runs.csv",
            h + "base,7,0.5,0.5\n",
            r"runs\.csv:2: seed '7' is not one of the study's seeds \[0, 1\]",
        ),
        (
            "runs.csv",
            h + "(Z),0,0.5,0.5\n",
            r"row '\(Z\)' is not a row of this study; rows: \(A\), base",
        ),
        (
            "runs.csv",
            "row,config,seed,acc,loss\nbase,{},0,0.5,0.5\n",
            r"give exactly one of row \(a row label\) or config",
        ),
        (
            "runs.csv",
            "seed,acc,loss\n0,0.5,0.5\n",
            r"give exactly one of row \(a row label\) or config",
        ),
        (
            "runs.jsonl",
            '{"config": {"heads": 1}, "seed": 0, "acc": 1, "loss": 0}\n',
            r"runs\.jsonl:1: config key 'heads' is not a key of \[base\]",
        ),
        (
            "runs.jsonl",
            '{"config": {"shift": 5.0}, "seed": 0, "acc": 1, "loss": 0}\n',
            r"config \{\"shift\": 5\.0\} is no row of this study",
        ),
        (
            "runs.jsonl",
            '{"config": [1], "seed": 0, "acc": 1, "loss": 0}\n',
            r"config must be a JSON object",
        ),
        (
            "runs.csv",
            h + "base,0,0.5,0.5\n(A),1,0.5,0.5\nbase,0,0.6,0.4\n",
            r"runs\.csv:4: the same run \(row base, seed 0\) as .*runs\.csv:2",
        ),
        (
            "runs.jsonl",
            '{"row": "base", "seed": 0, "acc": 0.5, "loss": 0.5, "per_example": {"acc": [1, 1]}}\n',
            r"runs\.jsonl:1: per_example 'acc': the mean of its 2 values is 1\.0 but the run returned acc = 0\.5",
        ),
        (
            "runs.jsonl",
            '{"row": "base", "seed": 0, "acc": 0.5, "loss": 0.5, "per_example": {"acc": [1, 0]}}\n'
            '{"row": "base", "seed": 1, "acc": 0.5, "loss": 0.5, "per_example": {"acc": [1, 0, 1, 0]}}\n',
            r"runs\.jsonl:2: acc has 4 per-example values but .*runs\.jsonl:1 has 2",
        ),
        (
            "runs.csv",
            "row,seed,acc,loss,per_example\nbase,0,0.5,0.5,missing.json\n",
            r"per_example file .*missing\.json: cannot read",
        ),
        (
            "runs.jsonl",
            '{"row": "base", "seed": 0, "acc": 0.5, "loss": 0.5, "outputs": "x"}\n',
            r"outputs is given but the study declares no \[metrics\.NAME\] tables",
        ),
        ("runs.jsonl", '{"row": "base", "seed": 0, "acc": 0.5\n', r"runs\.jsonl:1: not valid JSON"),
        ("runs.jsonl", "[1, 2]\n", r"runs\.jsonl:1: expected a JSON object"),
        ("runs.jsonl", "\n", r"runs\.jsonl: no runs in the file"),
        ("runs.tsv", "row\tseed\n", r"runs\.tsv: unknown format '\.tsv'; import a \.csv"),
        (
            "runs.csv",
            b"row,seed,acc,loss\nbase,0,0.5,0.5 \xff\n",
            r"runs\.csv: not valid UTF-8 \(byte 0xff on line 2\)",
        ),
    ]


@pytest.mark.parametrize(("name", "text", "expected"), bad_cases())
def test_bad_imports_write_nothing(tmp_path, study, run_cli, name, text, expected):
    runs = tmp_path / name
    runs.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    db = tmp_path / "s.db"
    r = run_cli("ablate", "import", runs, "--study", study, "--db", db)
    assert r.exit_code == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert __import__("re").search(expected, r.stderr), r.stderr
    assert not db.exists() and not (tmp_path / "runs").exists()


def test_a_refused_import_leaves_an_existing_store_unchanged(tmp_path, study, run_cli):
    runs = tmp_path / "runs.csv"
    runs.write_text(write_runs(tmp_path, rows=("base",), seeds=(0,)), encoding="utf-8")
    db = tmp_path / "s.db"
    assert run_cli("ablate", "import", runs, "--study", study, "--db", db).exit_code == 0
    with RunStore(db) as store:
        before = store.runs("synth")
    files_before = sorted(p for p in (tmp_path / "runs").rglob("*") if p.is_file())
    # the first record is good, the second is not: neither is stored
    runs.write_text(HEADER + "(A),0,0.5,0.5,\n(A),1,0.5,0.5,nothere.json\n", encoding="utf-8")
    r = run_cli("ablate", "import", runs, "--study", study, "--db", db)
    assert r.exit_code == 2 and "nothere.json" in r.stderr
    with RunStore(db) as store:
        assert store.runs("synth") == before
    assert sorted(p for p in (tmp_path / "runs").rglob("*") if p.is_file()) == files_before


def test_import_needs_a_study_and_an_existing_file(tmp_path, study, run_cli):
    r = run_cli(
        "ablate", "import", tmp_path / "none.csv", "--study", study, "--db", tmp_path / "s.db"
    )
    assert r.exit_code == 2 and "none.csv: no such file" in r.stderr
    r = run_cli("ablate", "import", tmp_path / "none.csv", "--study", tmp_path / "nostudy.toml")
    assert r.exit_code == 2 and "nostudy.toml: no such study file" in r.stderr


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        (
            "runs.csv",
            "row,seed,acc,loss\nbase,0,7_5,0.5\n",
            "runs.csv:2: metric acc is '7_5', not a decimal number",
        ),  # float() would give 75.0
        (
            "runs.csv",
            "row,seed,acc,loss\nbase,0,0x10,0.5\n",
            "runs.csv:2: metric acc is '0x10', not a decimal number",
        ),
        (
            "runs.csv",
            "row,seed,acc,loss\nbase,0,1e400,0.5\n",
            "runs.csv:2: column acc: '1e400': beyond the range of a float",
        ),
        (
            "runs.csv",
            f"row,seed,acc,loss\nbase,0,{2**53 + 1},0.5\n",
            "runs.csv:2: column acc: '9007199254740993': an integer beyond 2**53",
        ),
        (
            "runs.csv",
            "row,seed,acc,loss\nbase,1_0,0.5,0.5\n",
            "runs.csv:2: seed '1_0' is not one of the study's seeds",
        ),
        (
            "runs.csv",
            "config.shift,seed,acc,loss\n1_0,0,0.5,0.5\n",
            "runs.csv:2: config key shift: '1_0': not a decimal number",
        ),
        (
            "runs.jsonl",
            '{"row": "base", "seed": 0, "acc": ' + "9" * 400 + ', "loss": 0.5}\n',
            "runs.jsonl:1: column acc: '"
            + "9" * 24
            + "'... (400 characters): an integer beyond 2**53",
        ),  # OverflowError before
        (
            "runs.jsonl",
            '{"row": "base", "seed": 0, "acc": 1e400, "loss": 0.5}\n',
            "runs.jsonl:1: column acc: '1e400': beyond",
        ),
        (
            "runs.jsonl",
            '{"row": "base", "seed": 0, "acc": NaN, "loss": 0.5}\n',
            "runs.jsonl:1: column acc: 'NaN': not a finite",
        ),
        (
            "runs.csv",
            "row,seed,acc,loss\nbase,0,1e-400,0.5\n",
            "runs.csv:2: column acc: '1e-400': beyond the range",
        ),
        (
            "runs.jsonl",
            '{"row": "base", "seed": 0, "acc": 0.5, "loss": 0.5, "per_example": {"acc": [1, 1e999]}}\n',
            "runs.jsonl:1: column per_example.acc[1]: '1e999': beyond the range of a float",
        ),
    ],
)
def test_numbers_are_read_strictly(tmp_path, study, name, text, needle):
    from tests.cli.refusal import assert_refused

    runs = tmp_path / name
    runs.write_text(text, encoding="utf-8")
    assert_refused(
        ("ablate", "import", runs, "--study", study, "--db", tmp_path / "s.db"),
        needle,
        watch=(tmp_path,),
    )
