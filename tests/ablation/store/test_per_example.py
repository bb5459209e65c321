"""Per-example data of runs: metrics computed from run outputs, per-example values runs
return, the examples file in each run folder and :func:`load_example_stats`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalab.ablation import load_study
from evalab.ablation.plan.jobs import ExamplesEntry
from evalab.ablation.store.per_example import (
    EXAMPLES_FILE,
    StoredRows,
    check_per_example,
    load_example_stats,
    mean_of_rows,
    read_examples,
    write_examples,
)
from evalab.ablation.store.run_store import RunStore
from evalab.errors import InputError, RunError

from ..outsynth import N_LINES, write_outputs_study
from ..synth import write_study


@pytest.fixture
def study_dir(tmp_path, wmt22):
    return tmp_path


def stored(db, study_path):
    study = load_study(study_path, check_entry=False)
    with RunStore(db) as store:
        runs = store.runs(study.name)
        return study, {
            k: (r, load_example_stats(store, study, r) if r.status == "ok" else None)
            for k, r in runs.items()
        }


def test_computed_metrics_equal_evalab_score_on_the_same_file(study_dir, run_cli):
    """The stored value of a [metrics.NAME] metric is `evalab score` on the run's outputs file."""
    path = write_outputs_study(study_dir, variants=[("(A) drop", {"drop": 0.3})])
    db = study_dir / "s.db"
    res = run_cli("ablate", "run", path, "--db", db, "-q")
    assert res.exit_code == 0, res.stderr
    study, runs = stored(db, path)
    assert len(runs) == 4
    with RunStore(db) as store:
        folders = {k: store.run_dir(study.name, k) for k in runs}
    values = set()
    for key, (run, stats) in runs.items():
        hyp = folders[key] / "hyp.txt"
        res = run_cli(
            "score",
            "-r",
            study_dir / "data/ref.txt",
            "-r",
            study_dir / "data/ref2.txt",
            "-i",
            hyp,
            "-m",
            "bleu",
            "-s",
            "tokenize=13a",
            "--format",
            "json",
        )
        assert res.exit_code == 0, res.stderr
        assert run.metrics["bleu"] == json.loads(res.stdout)[0]["score"]
        res = run_cli(
            "score", "-r", study_dir / "data/ref.txt", "-i", hyp, "-m", "ter", "--format", "json"
        )
        assert run.metrics["ter"] == json.loads(res.stdout)[0]["score"]
        assert set(stats) == {"bleu", "ter", "acc"}
        assert stats["bleu"].n_examples == stats["ter"].n_examples == N_LINES
        assert stats["acc"].n_examples == 40 and stats["acc"].scores_from_sums is mean_of_rows
        for name in ("bleu", "ter", "acc"):
            assert stats[name].value() == pytest.approx(run.metrics[name], rel=1e-12)
        values.add(run.metrics["bleu"])
    assert len(values) == 4  # the runs really differ
    # a resample of the test set: all-ones counts give the full value back
    s = next(iter(runs.values()))[1]["bleu"]
    assert s.resampled(np.ones((2, N_LINES)))[0] == pytest.approx(s.value())
    assert study.higher_is_better["ter"] is False and study.higher_is_better["bleu"] is True


def test_rows_survive_resume_and_are_found_again(study_dir, run_cli):
    path = write_outputs_study(study_dir, seeds=(0,))
    db = study_dir / "s.db"
    assert run_cli("ablate", "run", path, "--db", db, "-q").exit_code == 0
    _, first = stored(db, path)
    res = run_cli("ablate", "run", path, "--db", db, "-q")
    assert res.exit_code == 0 and "1 already finished" in res.stderr
    _, again = stored(db, path)
    for key, (_, stats) in first.items():
        assert np.array_equal(stats["bleu"].rows, again[key][1]["bleu"].rows)


def test_output_file_with_wrong_line_count_fails_the_run(study_dir, run_cli):
    path = write_outputs_study(study_dir, seeds=(0,), variants=[("(S) short", {"short": True})])
    db = study_dir / "s.db"
    res = run_cli("ablate", "run", path, "--db", db, "-q")
    assert res.exit_code == 1
    _, runs = stored(db, path)
    failed = [r for r, _ in runs.values() if r.status == "failed"]
    assert len(failed) == 1 and not failed[0].metrics
    assert f"hyp.txt has {N_LINES - 1} lines but the references" in failed[0].error
    assert "one output segment per reference line" in failed[0].error


def test_per_example_on_another_scale_than_the_value_fails_the_run(study_dir, run_cli):
    path = write_outputs_study(
        study_dir, seeds=(0,), variants=[("(P) percent", {"acc_scale": 100.0})]
    )
    db = study_dir / "s.db"
    assert run_cli("ablate", "run", path, "--db", db, "-q").exit_code == 1
    _, runs = stored(db, path)
    (failed,) = [r for r, _ in runs.values() if r.status == "failed"]
    assert "per_example 'acc': the mean of its 40 values is" in failed.error
    assert "on the scale of the returned value" in failed.error


def test_per_example_count_must_be_the_same_in_every_run(study_dir, run_cli):
    path = write_outputs_study(study_dir, seeds=(0,), variants=[("(N) fewer", {"n_acc": 39})])
    db = study_dir / "s.db"
    assert run_cli("ablate", "run", path, "--db", db, "-q").exit_code == 1
    _, runs = stored(db, path)
    (failed,) = [r for r, _ in runs.values() if r.status == "failed"]
    assert failed.rows == ("(N) fewer",)
    assert "acc has 39 per-example values but run base seed 0 has 40" in failed.error


def test_missing_or_foreign_examples_file_is_refused(study_dir, run_cli):
    path = write_outputs_study(study_dir, seeds=(0,))
    db = study_dir / "s.db"
    assert run_cli("ablate", "run", path, "--db", db, "-q").exit_code == 0
    study = load_study(path, check_entry=False)
    with RunStore(db) as store:
        (run,) = store.runs(study.name).values()
        file = store.run_dir(study.name, run.key) / EXAMPLES_FILE
        rows = read_examples(file)
        rows["acc"] = StoredRows(rows["acc"].rows * [0.5, 1.0], "mean")  # rows of something else
        write_examples(file.parent, rows)
        with pytest.raises(InputError, match=r"the rows of acc give .* but the run stored acc"):
            load_example_stats(store, study, run)
        file.unlink()
        with pytest.raises(
            InputError, match=r"examples\.npz: the run's per-example file is missing"
        ):
            load_example_stats(store, study, run)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ([1, 0], r"per_example is list; expected a dict"),
        ({"f1": [1.0]}, r"per_example names 'f1', which the run did not return"),
        ({"acc": []}, r"'acc' must be a non-empty list of finite numbers"),
        ({"acc": [1.0, float("nan")]}, r"'acc' must be a non-empty list of finite numbers"),
        ({"acc": [1.0, "x"]}, r"'acc' must be a non-empty list of finite numbers"),
        ({"acc": [True, False]}, r"'acc' must be a non-empty list of finite numbers"),
        ({"acc": [1.0, 1.0]}, r"the mean of its 2 values is 1\.0 but the run returned acc = 0\.5"),
    ],
)
def test_bad_per_example_values(raw, expected):
    with pytest.raises(RunError, match=expected):
        check_per_example(raw, {"acc": 0.5})


def test_good_per_example_values_become_mean_rows():
    rows = check_per_example({"acc": [1, 0, 1, 0]}, {"acc": 0.5})
    assert rows["acc"].rows.tolist() == [[1, 1], [0, 1], [1, 1], [0, 1]]


def test_examples_file_round_trip(tmp_path):
    rows = {
        "bleu": StoredRows(np.arange(12.0).reshape(3, 4), "computed", "bleu", "nrefs:1|tok:13a"),
        "chrf++": StoredRows(np.ones((3, 2)), "mean"),
    }
    info = write_examples(tmp_path, rows)
    assert info == ExamplesEntry(EXAMPLES_FILE, {"bleu": 3, "chrf++": 3})
    back = read_examples(tmp_path / EXAMPLES_FILE)
    assert back["bleu"].signature == "nrefs:1|tok:13a" and np.array_equal(
        back["bleu"].rows, rows["bleu"].rows
    )
    assert [p.name for p in tmp_path.iterdir()] == [EXAMPLES_FILE]  # no temporary file left
    (tmp_path / EXAMPLES_FILE).write_bytes(b"not a zip")
    with pytest.raises(InputError, match="not a readable evalab examples file"):
        read_examples(tmp_path / EXAMPLES_FILE)


def test_a_command_template_run_gives_per_example_values_and_outputs_too(study_dir, run_cli):
    """A command writes its outputs beside its {out} file and per_example into it."""
    path = write_outputs_study(study_dir, seeds=(0,))
    script = study_dir / "cmd.py"
    script.write_text(
        "import json, os, sys\n"
        "out = sys.argv[1]\n"
        "hyps = open('data/sys.txt', encoding='utf-8').read()\n"
        "open(os.path.join(os.path.dirname(out), 'hyp.txt'), 'w', encoding='utf-8').write(hyps)\n"
        "json.dump({'acc': 0.25, 'per_example': {'acc': [1, 0, 0, 0]}}, open(out, 'w'))\n",
        encoding="utf-8",
    )
    text = path.read_text(encoding="utf-8").replace(
        'entry = "out_entry:run"', "command = 'python cmd.py {out}'"
    )
    path.write_text(text, encoding="utf-8")
    db = study_dir / "s.db"
    r = run_cli("ablate", "run", path, "--db", db, "-q")
    assert r.exit_code == 0, r.stderr
    _, runs = stored(db, path)
    ((run, stats),) = runs.values()
    assert (
        stats["acc"].rows.tolist() == [[1, 1], [0, 1], [0, 1], [0, 1]]
        and run.metrics["acc"] == 0.25
    )
    assert stats["bleu"].n_examples == N_LINES and stats["bleu"].value() == pytest.approx(
        run.metrics["bleu"]
    )


def test_a_run_may_not_return_a_metric_the_study_computes(study_dir, run_cli):
    path = write_outputs_study(study_dir, seeds=(0,))
    entry = study_dir / "out_entry.py"
    entry.write_text(
        entry.read_text(encoding="utf-8").replace('return {"acc"', 'return {"bleu": 99.0, "acc"'),
        encoding="utf-8",
    )
    db = study_dir / "s.db"
    assert run_cli("ablate", "run", path, "--db", db, "-q").exit_code == 1
    _, runs = stored(db, path)
    ((run, _),) = runs.values()
    assert (
        run.status == "failed"
        and "the run returned 'bleu', which the study computes from its outputs" in run.error
    )


def test_eval_stage_rows_write_their_outputs_into_their_own_run_folder(study_dir, run_cli):
    path = write_outputs_study(study_dir, seeds=(0, 1))
    text = path.read_text(encoding="utf-8").replace(
        'entry = "out_entry:run"', 'entry = "out_entry:run"\nevaluate = "out_entry:evaluate"'
    )
    text += '\n[evaluation]\nblank = 0\n\n[[variant]]\nlabel = "(E) blank 20"\nstage = "eval"\nset = { blank = 20 }\n'
    path.write_text(text, encoding="utf-8")
    db = study_dir / "s.db"
    r = run_cli("ablate", "run", path, "--db", db, "-q")
    assert r.exit_code == 0, r.stderr
    _, runs = stored(db, path)
    by = {(run.rows[0], run.seed): (run, stats) for run, stats in runs.values()}
    for seed in (0, 1):
        trained, evaluated = by[("base", seed)], by[("(E) blank 20", seed)]
        assert evaluated[1]["bleu"].n_examples == N_LINES
        assert evaluated[0].metrics["bleu"] < trained[0].metrics["bleu"]
        # the first 20 segments are blank at evaluation: their rows change, the others not
        assert np.array_equal(evaluated[1]["bleu"].rows[20:], trained[1]["bleu"].rows[20:])
        assert not np.array_equal(evaluated[1]["bleu"].rows[:20], trained[1]["bleu"].rows[:20])


def test_per_example_values_outside_bounds_declared_after_the_run_are_refused(tmp_path):
    """A run stored before ``bounds`` were declared: its per-example values outside them
    would let the test-set interval leave the bounds, so they are refused (one line)."""
    from evalab.ablation import RunStore, load_study, run_study
    from evalab.ablation.store.per_example import load_example_stats
    from evalab.errors import InputError

    (tmp_path / "pe_entry.py").write_text(
        'def run(config, seed):\n    return {"acc": 0.5, "per_example": {"acc": [2.0, -1.0]}}\n',
        encoding="utf-8",
    )
    path = tmp_path / "study.toml"
    text = '[study]\nname = "pe"\nentry = "pe_entry:run"\nseeds = [0]\nmetrics = ["acc"]\n{}\n[base]\na = 1\n'
    path.write_text(text.format(""), encoding="utf-8")
    db = tmp_path / "s.db"
    assert run_study(load_study(path), db, progress=False).ok == 1
    path.write_text(text.format("bounds = { acc = [0, 1] }"), encoding="utf-8")
    study = load_study(path)
    with RunStore(db) as store:
        (run,) = store.runs("pe").values()
        with pytest.raises(
            InputError,
            match=r"per_example 'acc' value 1 is 2\.0, outside the declared bounds \[0, 1\]",
        ):
            load_example_stats(store, study, run)


PER_EXAMPLE_ENTRY = """
import random


def run(config, seed, out_dir=None):
    rng = random.Random(seed * 10 + config["a"])
    acc = [float(rng.random() < 0.7) for _ in range(40)]
    mean = sum(acc) / len(acc)
    return {"acc": mean, "loss": 1 - mean, "per_example": {"acc": acc}}
"""


def _cut(file, rows):
    """The examples file cut in the middle of its bytes."""
    file.write_bytes(file.read_bytes()[: len(file.read_bytes()) // 2])


def _doubled(file, rows):
    """The same mean over twice the rows: only the recorded count tells it is not the run's."""
    write_examples(file.parent, {"acc": StoredRows(np.vstack([rows.rows, rows.rows]), "mean")})


def _flipped(file, rows):
    """One byte of a zip header flipped (Python's zipfile raises NotImplementedError)."""
    data = bytearray(file.read_bytes())
    data[data.index(b"PK\x01\x02") + 10] ^= 0xFF  # the first member's compression method
    file.write_bytes(bytes(data))


def _no_acc(file, rows):
    write_examples(file.parent, {"other": rows})


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (_cut, "not a readable evalab examples file: truncated or not a zip archive"),
        (_doubled, "holds 80 rows of acc but the run recorded 40 examples; the file is truncated"),
        (_flipped, "not a readable evalab examples file: damaged"),
        (_no_acc, "holds no rows of acc, which the run recorded for 40 examples"),
    ],
)
def test_a_cut_or_foreign_examples_file_is_never_used_and_status_and_report_say_so(
    tmp_path, run_cli, damage, why
):
    path = write_study(tmp_path, seeds=[0, 1, 2], base={"a": 1}, entry_source=PER_EXAMPLE_ENTRY)
    db = tmp_path / "s.db"
    assert run_cli("ablate", "run", path, "--db", db, "-q").exit_code == 0
    study = load_study(path, check_entry=False)
    with RunStore(db) as store:
        run = next(r for r in store.runs(study.name).values() if r.seed == 1)
        file = store.run_dir(study.name, run.key) / EXAMPLES_FILE
    damage(file, read_examples(file)["acc"])
    status = run_cli("ablate", "status", path, "--db", db)
    assert status.exit_code == 0
    (line,) = [ln for ln in status.stdout.splitlines() if ln.startswith("per-example data")]
    assert line.startswith("per-example data of base seed 1 not used (no test-set interval): ")
    assert why in line
    report = json.loads(run_cli("ablate", "report", path, "--db", db, "-f", "json").stdout)
    notes = json.dumps(report)
    assert why in notes and "unreadable_examples" in notes
