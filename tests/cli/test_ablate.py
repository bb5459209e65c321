"""``evalab ablate run|status|report`` end to end on a synthetic study."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ablation.synth import write_study

from .refusal import assert_refused


def test_run_status_report(run_cli, tmp_path):
    base = {"a": True, "b": True, "shift": 0.0, "noise": 0.0, "mode": "ok", "sleep": 0.0}
    study = write_study(
        tmp_path,
        seeds=[0, 1],
        base=base,
        grid={"a": [False, True], "b": [False, True]},
        variants=[("(R)", "raises", {"mode": "raise"})],
    )
    db = tmp_path / "runs.db"
    r = run_cli("ablate", "run", study, "--db", db, "-j", "2")
    assert r.exit_code == 1, r.stderr  # runs failed
    assert "10 runs planned, 0 already finished, 8 ok, 2 failed" in r.stderr
    r = run_cli("ablate", "run", study, "--db", db, "--quiet")
    assert r.exit_code == 1 and "run 1/" not in r.stderr
    assert "10 runs planned, 8 already finished, 0 ok, 2 failed" in r.stderr
    r = run_cli("ablate", "status", study, "--db", db)
    assert r.exit_code == 0 and "8/10 ok, 2 failed, 0 pending" in r.stdout
    assert "failed: (R) seed 0: RuntimeError: boom" in r.stdout
    check_status_formats(run_cli, study, db, tmp_path)
    r = run_cli("ablate", "report", study, "--db", db)
    assert r.exit_code == 0
    assert (
        "80 - 80 - 80 + 70 = -10" in r.stdout
        and "80 - 70 = +10" in r.stdout
        and "80 - 80 = 0" in r.stdout
    )
    r = run_cli("ablate", "report", study, "--db", db, "--format", "json")
    data = json.loads(r.stdout)
    assert [c["arithmetic"] for c in data["contrasts"]["acc"] if c["kind"] == "interaction"] == [
        "80 - 80 - 80 + 70 = -10"
    ]
    for fmt, marker in [
        ("markdown", "## Ablation study"),
        ("latex", r"\begin{tabular}"),
        ("html", "<!DOCTYPE html>"),
        ("table", "Grid effects on acc"),
    ]:
        out = tmp_path / f"report.{fmt}"
        r = run_cli("ablate", "report", study, "--db", db, "-f", fmt, "-o", out)
        assert r.exit_code == 0 and r.stdout == "" and marker in out.read_text(encoding="utf-8")
    r = run_cli("ablate", "report", study, "--db", db, "--aso", "-f", "markdown")
    assert "ASO ε_min" in r.stdout


def test_bad_study_file_fails_before_anything_runs(run_cli, tmp_path):
    study = write_study(tmp_path, variants=[("(A)", "bad", {"heads": 1})])
    db = tmp_path / "runs.db"
    r = run_cli("ablate", "run", study, "--db", db)
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and "[base] has no key 'heads'" in r.stderr
    assert not db.exists()


def test_report_without_database(run_cli, tmp_path):
    study = write_study(tmp_path)
    r = run_cli("ablate", "report", study, "--db", tmp_path / "none.db")
    assert r.exit_code == 2 and "no run database here" in r.stderr
    assert not (tmp_path / "none.db").exists()
    r = run_cli("ablate", "report", study, "--db", tmp_path / "none.db", "-f", "pdf")
    assert r.exit_code == 2 and "unknown format 'pdf'" in r.stderr


def test_unknown_executor(run_cli, tmp_path):
    study = write_study(tmp_path, seeds=[0])
    r = run_cli("ablate", "run", study, "--db", tmp_path / "x.db", "--executor", "slurm")
    # the spelling of score and compare (one check of the shared Ray options)
    assert r.exit_code == 2 and "--executor must be local or ray, got 'slurm'" in r.stderr
    assert not (tmp_path / "x.db").exists()


def test_jobs_below_one_is_refused_with_the_option_s_name(run_cli, tmp_path):
    study = write_study(tmp_path, seeds=[0])
    r = run_cli("ablate", "run", study, "--db", tmp_path / "x.db", "-j", "0")
    assert r.exit_code == 2 and "--jobs must be >= 1, got 0" in r.stderr
    assert not (tmp_path / "x.db").exists()


def test_plain_progress_lines_without_a_terminal(run_cli, tmp_path):
    study = write_study(tmp_path, seeds=[0, 1], variants=[("(R)", "raises", {"mode": "raise"})])
    r = run_cli("ablate", "run", study, "--db", tmp_path / "runs.db")
    assert r.exit_code == 1
    lines = r.stderr.splitlines()
    assert (
        sum(
            ln.startswith("run ")
            and " ok: base seed " in ln
            and "acc=" in ln
            and ln.endswith(" s)")
            for ln in lines
        )
        == 2
    )
    assert (
        sum(
            ln.startswith("run ") and " FAILED: (R) seed " in ln and "RuntimeError: boom" in ln
            for ln in lines
        )
        == 2
    )


def test_status_and_run_announce_superseded_runs_and_gc_removes_them(run_cli, tmp_path):
    study = write_study(tmp_path, seeds=[0, 1])
    db = tmp_path / "runs.db"
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 0
    entry = tmp_path / "synth_entry.py"
    entry.write_text(entry.read_text().replace("70.0 + 10.0", "69.0 + 10.0"))
    r = run_cli("ablate", "run", study, "--db", db, "-q")
    assert r.exit_code == 0
    assert (
        "2 stored runs belong to an older code version (" in r.stderr
        and "changed: synth_entry.py)" in r.stderr
    )
    r = run_cli("ablate", "status", study, "--db", db)
    assert (
        "2/2 ok" in r.stdout
        and "changed: synth_entry.py" in r.stdout
        and "code version " in r.stdout
    )
    r = run_cli("ablate", "gc", study, "--db", db, "--dry-run")
    assert r.exit_code == 0 and r.stderr.startswith("would remove 2 superseded runs")
    r = run_cli("ablate", "gc", study, "--db", db)
    assert r.exit_code == 0 and r.stderr.startswith("removed 2 superseded runs")
    r = run_cli("ablate", "status", study, "--db", db)
    assert "older code version" not in r.stdout and "2/2 ok" in r.stdout


def test_a_db_that_is_not_an_evalab_store_gets_one_line(run_cli, tmp_path):
    import sqlite3

    study = write_study(tmp_path, seeds=[0])
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE runs (id INTEGER)")
    con.commit()
    con.close()
    for cmd in ("run", "status", "report"):
        r = run_cli("ablate", cmd, study, "--db", db)
        assert r.exit_code == 2 and r.stderr.count("\n") == 1, (cmd, r.stderr)
        assert "other.db: an SQLite database but not an evalab run store" in r.stderr
    assert not (tmp_path / "runs").exists()


def test_a_study_file_that_is_not_utf8_gets_one_line(run_cli, tmp_path):
    study = write_study(tmp_path, seeds=[0])
    study.write_bytes(
        study.read_bytes().replace(b'name = "synth"', b'name = "synth"\ndescription = "caf\xe9"')
    )
    r = run_cli("ablate", "run", study, "--db", tmp_path / "x.db")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert "not valid UTF-8 (byte 0xe9 on line 3)" in r.stderr and not (tmp_path / "x.db").exists()


def check_status_formats(run_cli, study, db, tmp_path):
    """``ablate status`` speaks the shared formats: JSON counts, Markdown and LaTeX tables, a file."""
    data = json.loads(run_cli("ablate", "status", study, "--db", db, "-f", "json").stdout)
    assert (data["planned"], data["ok"], data["failed"], data["pending"]) == (10, 8, 2, 0)
    assert {"row": "(R)", "planned": 2, "ok": 0, "failed": 2, "pending": 0} in data["rows"]
    assert data["errors"][0]["error"].startswith("RuntimeError: boom")
    md = run_cli("ablate", "status", study, "--db", db, "-f", "markdown").stdout
    assert (
        md.startswith("| Row | Planned | OK | Failed | Pending |")
        and "| (R) | 2 | 0 | 2 | 0 |" in md
    )
    assert (
        r"\begin{tabular}" in run_cli("ablate", "status", study, "--db", db, "-f", "latex").stdout
    )
    out = tmp_path / "status.txt"
    r = run_cli("ablate", "status", study, "--db", db, "-o", out)
    assert (
        r.exit_code == 0
        and r.stdout == ""
        and out.read_text(encoding="utf-8").startswith("Row\tPlanned")
    )
    r = run_cli("ablate", "status", study, "--db", db, "-f", "pdf")
    assert r.exit_code == 2 and "unknown format 'pdf'" in r.stderr


def test_import_through_the_installed_entry_point(tmp_path):
    """`evalab ablate import` as a user runs it: a subprocess of the console script."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    exe = shutil.which("evalab", path=str(Path(sys.executable).parent)) or shutil.which("evalab")
    assert exe is not None
    study = write_study(tmp_path, seeds=[0], variants=[("(A)", "no a", {"a": False})])
    runs = tmp_path / "runs.csv"
    runs.write_text("row,seed,acc,loss\nbase,0,80.5,0.195\n(A),0,79.0,0.21\n", encoding="utf-8")
    db = tmp_path / "s.db"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p
            for p in (str(Path(__file__).parents[2] / "src"), os.environ.get("PYTHONPATH", ""))
            if p
        ),
    }

    def evalab(*args):
        return subprocess.run(
            [exe, *map(str, args)],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )

    r = evalab("ablate", "import", runs, "--study", study, "--db", db)
    assert r.returncode == 0 and r.stderr.endswith(
        f"imported 2 runs of study 'synth' from {runs} into {db}\n"
    )
    r = evalab("ablate", "report", study, "--db", db, "-f", "json")
    rows = {row["label"]: row for row in json.loads(r.stdout)["rows"]}
    assert (
        rows["base"]["metrics"]["acc"]["mean"] == 80.5
        and rows["(A)"]["metrics"]["acc"]["mean"] == 79.0
    )
    r = evalab("ablate", "import", runs, "--study", study, "--db", db)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "row base seed 0 is already stored as ok" in r.stderr and "Traceback" not in r.stderr


# ---------------------------------------------------------------- hostile inputs (round 2)
# Each case met a gap of the ablation data side: it was accepted, crashed later, or gave a
# number that may be wrong. A refusal is one line, exit 2, no file changed (assert_refused).

REF_LINES = ["the cat sat on the mat", "a dog ran in the park", "hello world"]

OUTPUTS_ENTRY = """
import os


def run(config, seed, out_dir=None):
    {body}
"""


def outputs_study(
    folder,
    body: str,
    *,
    extra_study: str = "",
    tables: str | None = None,
    seeds=(0, 1),
    base: str = 'mode = "ok"\n',
) -> Path:
    """A study whose entry ``run`` has ``body`` and whose ``[metrics.bleu]`` scores hyp.txt
    against data/ref.txt (3 lines)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data").mkdir(exist_ok=True)
    (folder / "data" / "ref.txt").write_text("\n".join(REF_LINES) + "\n", encoding="utf-8")
    (folder / "out_entry.py").write_text(
        OUTPUTS_ENTRY.format(body=body.replace("\n", "\n    ")), encoding="utf-8"
    )
    if tables is None:
        tables = (
            '[metrics.bleu]\nmetric = "bleu"\noutputs = "hyp.txt"\nreferences = ["data/ref.txt"]\n'
        )
    study = folder / "study.toml"
    study.write_text(
        f'[study]\nname = "outs"\nentry = "out_entry:run"\nseeds = {list(seeds)}\nmetrics = ["acc"]\n'
        f"{extra_study}\n\n{tables}\n[base]\n{base}",
        encoding="utf-8",
    )
    return study


WRITE_HYP = (
    'open(os.path.join(out_dir, "hyp.txt"), "w").write("the cat sat\\na dog ran\\nhello world\\n")'
)


def with_study_lines(study, old: str, new: str) -> None:
    text = study.read_text(encoding="utf-8")
    assert old in text
    study.write_text(text.replace(old, new), encoding="utf-8")


@pytest.mark.parametrize(
    ("derived", "needle"),
    [
        (
            '"noise / 1.2.3"',
            "'noise / 1.2.3' is not KEY op KEY",
        ),  # was a traceback in `ablate report`
        (
            '"noise / shift"',
            "'noise / shift' is not a finite number in row 'base' (noise = 0.5, shift = 0.0)",
        ),
        (
            '"noise * mode"',
            "'noise * mode' is not a finite number in row 'base' (noise = 0.5, mode = 'ok')",
        ),
    ],
)
def test_a_derived_column_that_is_not_a_number_in_some_row_is_refused(tmp_path, derived, needle):
    study = write_study(tmp_path, seeds=[0], variants=[("(A)", "shifted", {"shift": 1.0})])
    with_study_lines(study, "[base]", f"[display]\nderived = {{ d = {derived} }}\n\n[base]")
    assert_refused(("ablate", "run", study, "--db", tmp_path / "s.db"), needle, watch=(tmp_path,))


def test_two_configuration_columns_with_one_name_are_refused(tmp_path):
    study = write_study(tmp_path, seeds=[0])
    with_study_lines(study, "[base]", '[display]\ncolumns = { a = "X", b = "X" }\n\n[base]')
    assert_refused(
        ("ablate", "status", study, "--db", tmp_path / "s.db"),
        "[display] columns b: is shown as 'X', the name of column 'a' too",
        watch=(tmp_path,),
    )


def test_values_outside_declared_bounds_fail_the_run_and_the_import(run_cli, tmp_path):
    # synth's acc is about 80 (percent): bounds [0, 1] would clip its intervals away from it
    study = write_study(tmp_path, seeds=[0], extra_study="bounds = { acc = [0, 1] }")
    db = tmp_path / "s.db"
    r = run_cli("ablate", "run", study, "--db", db, "-q")
    assert r.exit_code == 1, r.stderr
    r = run_cli("ablate", "status", study, "--db", db)
    assert "is outside its declared bounds [0, 1]" in r.stdout and "0/1 ok, 1 failed" in r.stdout
    (tmp_path / "in").mkdir()
    runs = tmp_path / "in" / "runs.csv"
    runs.write_text("row,seed,acc,loss\nbase,0,80.5,0.195\n", encoding="utf-8")
    assert_refused(
        ("ablate", "import", runs, "--study", study, "--db", tmp_path / "new.db"),
        "runs.csv:2: acc = 80.5 is outside its declared bounds [0, 1]",
        watch=(tmp_path,),
    )


def test_per_example_values_outside_bounds_fail_the_run(run_cli, tmp_path):
    # mean 0.5 is inside [0, 1], the values 2 and -1 are not: a percentile interval could leave them
    study = outputs_study(
        tmp_path,
        f'{WRITE_HYP}\nreturn {{"acc": 0.5, "per_example": {{"acc": [2.0, -1.0]}}}}',
        extra_study="bounds = { acc = [0, 1] }",
        seeds=(0,),
    )
    db = tmp_path / "s.db"
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 1
    r = run_cli("ablate", "status", study, "--db", db)
    assert "per_example 'acc' value 1 is 2.0, outside the declared bounds [0, 1] of acc" in r.stdout


def test_a_report_refuses_stored_values_outside_bounds_declared_later(run_cli, tmp_path):
    study = write_study(tmp_path / "study", seeds=[0, 1])
    db = tmp_path / "db" / "s.db"
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 0
    with_study_lines(study, "retries = 0", "retries = 0\nbounds = { acc = [0, 1] }")
    for fmt in ("table", "json"):
        line = assert_refused(
            ("ablate", "report", study, "--db", db, "-f", fmt, "-o", tmp_path / "study" / "r.out"),
            "outside its declared bounds [0, 1]",
            watch=(tmp_path / "study",),
        )
        assert line.startswith(f"evalab: error: {db}: run base seed ") and "acc = 8" in line


@pytest.mark.parametrize("name", ["per_example", "artifacts", "seed", "config.a"])
def test_a_metric_named_like_a_result_key_or_an_import_column_is_refused(tmp_path, name):
    # `artifacts` and `per_example` are taken out of a run's result: every run failed after it ran
    study = write_study(tmp_path, seeds=[0])
    with_study_lines(study, 'metrics = ["acc", "loss"]', f'metrics = ["acc", "loss", "{name}"]')
    assert_refused(
        ("ablate", "run", study, "--db", tmp_path / "s.db"),
        f"'{name}' cannot name a metric",
        watch=(tmp_path,),
    )


def test_a_computed_perplexity_without_a_model_is_refused_before_any_run(tmp_path):
    tables = (
        '[metrics.ppl]\nmetric = "perplexity"\noutputs = "hyp.txt"\nreferences = ["data/ref.txt"]\n'
    )
    study = outputs_study(tmp_path, f'{WRITE_HYP}\nreturn {{"acc": 0.5}}', tables=tables)
    assert_refused(
        ("ablate", "run", study, "--db", tmp_path / "s.db"),
        "[metrics.ppl] settings: perplexity scores a run's outputs with a causal LM",
        watch=(tmp_path,),
    )


@pytest.mark.parametrize("outputs", [".", "./.", "imported-examples.npz"])
def test_outputs_naming_the_run_folder_or_an_evalab_file_are_refused(tmp_path, outputs):
    tables = (
        f'[metrics.bleu]\nmetric = "bleu"\noutputs = "{outputs}"\nreferences = ["data/ref.txt"]\n'
    )
    study = outputs_study(tmp_path, 'return {"acc": 0.5}', tables=tables)
    assert_refused(
        ("ablate", "run", study, "--db", tmp_path / "s.db"),
        "[metrics.bleu] outputs:",
        watch=(tmp_path,),
    )


def test_an_attempt_is_never_scored_on_the_outputs_an_earlier_attempt_wrote(run_cli, tmp_path):
    # attempt 1 writes hyp.txt then fails; attempt 2 writes nothing: it must not get attempt 1's score
    body = (
        'path = os.path.join(out_dir, "hyp.txt")\nif os.path.exists(path):\n    return {"acc": 0.5}\n'
        f'{WRITE_HYP}\nraise RuntimeError("crashed after writing its outputs")'
    )
    study = outputs_study(tmp_path, body, extra_study="retries = 1", seeds=(0,))
    db = tmp_path / "s.db"
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 1
    r = run_cli("ablate", "status", study, "--db", db)
    assert "0/1 ok, 1 failed" in r.stdout and "crashed after writing its outputs" in r.stdout


def test_references_edited_during_a_study_never_score_a_run(run_cli, tmp_path):
    # seed 1's run edits the references: scoring it against them under the old code version
    # would serve its number again once the file is restored
    body = (
        f'{WRITE_HYP}\nif seed == 1:\n    open("data/ref.txt", "w").write("edited\\nreferences\\nhere\\n")\n'
        'return {"acc": 0.5}'
    )
    study = outputs_study(tmp_path, body)
    db = tmp_path / "s.db"
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 1
    (tmp_path / "data" / "ref.txt").write_text("\n".join(REF_LINES) + "\n", encoding="utf-8")
    r = run_cli("ablate", "status", study, "--db", db)
    assert "1/2 ok, 1 failed" in r.stdout
    assert (
        "failed: base seed 1: bleu: the reference files" in r.stdout
        and "changed since the study was loaded" in r.stdout
    )


def test_status_names_the_computed_metric_whose_references_changed(run_cli, tmp_path):
    study = outputs_study(tmp_path, f'{WRITE_HYP}\nreturn {{"acc": 0.5}}', seeds=(0,))
    db = tmp_path / "s.db"
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 0
    (tmp_path / "data" / "ref.txt").write_text("other\nreferences\nnow\n", encoding="utf-8")
    r = run_cli("ablate", "status", study, "--db", db)
    assert (
        "1 stored run belongs to an older code version" in r.stdout
        and "changed: [metrics.bleu])" in r.stdout
    )


def test_per_example_refusals_name_the_bad_value(run_cli, tmp_path):
    study = outputs_study(
        tmp_path,
        f'{WRITE_HYP}\nreturn {{"acc": 0.5, "per_example": {{"acc": [True, False]}}}}',
        seeds=(0,),
    )
    db = tmp_path / "s.db"
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 1
    r = run_cli("ablate", "status", study, "--db", db)
    assert "value 1 is True (bool) (give 1.0/0.0 for True/False)" in r.stdout


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        (
            "runs.jsonl",
            '{"row": "base", "seed": 0, "acc": 80.5, "acc": 70.0, "loss": 0.2}\n',
            "runs.jsonl:1: not valid JSON (key 'acc' appears twice in one object",
        ),
        (
            "runs.csv",
            "row,seed,acc,loss\nbase,0,80.5\n",
            "runs.csv:2: has 3 cells but the header has 4 columns",
        ),
        ("runs.csv", "row,seed,acc\nbase,0,80.5\n", "runs.csv:2: metric loss is missing"),
    ],
)
def test_import_refuses_ambiguous_or_short_records_naming_them(tmp_path, name, content, needle):
    study = write_study(tmp_path / "study", seeds=[0])
    runs = tmp_path / name
    runs.write_text(content, encoding="utf-8")
    assert_refused(
        ("ablate", "import", runs, "--study", study, "--db", tmp_path / "s.db"),
        needle,
        watch=(tmp_path,),
    )


def test_import_reads_json_lines_with_a_byte_order_mark(run_cli, tmp_path):
    study = write_study(tmp_path, seeds=[0])
    runs = tmp_path / "runs.jsonl"
    runs.write_bytes(
        '\ufeff{"row": "base", "seed": 0, "acc": 80.5, "loss": 0.195}\n'.encode()
    )  # as CSV's is read
    r = run_cli("ablate", "import", runs, "--study", study, "--db", tmp_path / "s.db")
    assert r.exit_code == 0, r.stderr


def test_import_refuses_a_run_another_runner_is_running(tmp_path):
    from evalab.ablation import load_study
    from evalab.ablation.plan.runs import plan_runs
    from evalab.ablation.store.leases import Owner
    from evalab.ablation.store.run_store import RunStore

    study = write_study(tmp_path / "study", seeds=[0])
    db = tmp_path / "db" / "s.db"
    s = load_study(study, check_entry=False)
    with RunStore(db) as store:  # this live process holds the run's lease, as `ablate run` does
        store.claim(s.name, plan_runs(s)[0].key, Owner.here())
        (tmp_path / "in").mkdir()
        runs = tmp_path / "in" / "runs.csv"
        runs.write_text("row,seed,acc,loss\nbase,0,80.5,0.195\n", encoding="utf-8")
        assert_refused(
            ("ablate", "import", runs, "--study", study, "--db", db),
            "runs.csv:2: row base seed 0 is being run by a runner on",
            watch=(tmp_path / "in", tmp_path / "study"),
        )
        assert store.runs(s.name) == {}


def test_a_value_label_for_a_value_no_row_has_is_refused(tmp_path):
    # a typo ("okk") labelled nothing, silently
    study = write_study(tmp_path, seeds=[0], variants=[("(A)", "shifted", {"shift": 1.0})])
    with_study_lines(study, "[base]", '[display]\nvalues = { mode = { okk = "fine" } }\n\n[base]')
    assert_refused(
        ("ablate", "run", study, "--db", tmp_path / "s.db"),
        "[display] values mode: labels 'okk', which is no value of mode in any row (values: ok)",
        watch=(tmp_path,),
    )


@pytest.mark.parametrize("name", ['""', '" "', '"a\\nb"'])
def test_a_computed_metric_without_a_printable_name_is_refused(tmp_path, name):
    # it named a report column with no header, or broke one-line status and CSV output
    tables = (
        f'[metrics.{name}]\nmetric = "bleu"\noutputs = "hyp.txt"\nreferences = ["data/ref.txt"]\n'
    )
    study = outputs_study(tmp_path, f'{WRITE_HYP}\nreturn {{"acc": 0.5}}', tables=tables)
    assert_refused(
        ("ablate", "run", study, "--db", tmp_path / "s.db"),
        "is no metric name: give printable text",
        watch=(tmp_path,),
    )


@pytest.mark.parametrize("directions", ["true", "{ acc = true, ter = true }"])
def test_a_direction_that_contradicts_a_computed_metric_is_refused(tmp_path, directions):
    # `higher_is_better = true` made TER higher-is-better: every worse row read as better
    tables = '[metrics.ter]\nmetric = "ter"\noutputs = "hyp.txt"\nreferences = ["data/ref.txt"]\n'
    study = outputs_study(
        tmp_path,
        f'{WRITE_HYP}\nreturn {{"acc": 0.5}}',
        tables=tables,
        extra_study=f"higher_is_better = {directions}",
    )
    assert_refused(
        ("ablate", "run", study, "--db", tmp_path / "s.db"),
        "makes ter (ter) higher-is-better, but ter is lower-is-better",
        watch=(tmp_path,),
    )


@pytest.mark.parametrize(
    ("metric", "bounds", "needle"),
    [
        ("bleu", "[0, 1]", "bleu must contain [0, 100]"),
        ("ter", "[0, 100]", "ter must contain [0, inf]"),
    ],
)
def test_bounds_that_cut_a_computed_metrics_scores_are_refused(tmp_path, metric, bounds, needle):
    # BLEU is on 0-100 and TER has no upper bound: every run was trained, then failed the bounds
    tables = f'[metrics.{metric}]\nmetric = "{metric}"\noutputs = "hyp.txt"\nreferences = ["data/ref.txt"]\n'
    study = outputs_study(
        tmp_path,
        f'{WRITE_HYP}\nreturn {{"acc": 0.5}}',
        tables=tables,
        extra_study=f"bounds = {{ {metric} = {bounds} }}",
    )
    assert_refused(("ablate", "run", study, "--db", tmp_path / "s.db"), needle, watch=(tmp_path,))
