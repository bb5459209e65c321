"""Code version = the code the run imports: helper modules count, comments do not."""

from __future__ import annotations

import subprocess

from evalab.ablation import analyze, load_study, run_study, study_status
from evalab.ablation.contract.codeversion import (
    derive_code_version,
    local_imports,
    search_roots,
    tree_hash,
)
from evalab.report.notes import note_lines

from ..synth import ENTRY, write_study

# the usual layout: entry.py beside model.py, which it imports
HELPER_ENTRY = ENTRY.replace("import os\n", "import os\nfrom helper import OFFSET\n", 1).replace(
    "70.0 + 10.0", "OFFSET + 10.0"
)


def _with_helper(tmp_path, offset="70.0", **kw):
    path = write_study(tmp_path, seeds=[0, 1], entry_source=HELPER_ENTRY, **kw)
    (tmp_path / "helper.py").write_text(f'"""Constants."""\nOFFSET = {offset}\n', encoding="utf-8")
    return path


def test_editing_a_helper_module_reruns_the_study_and_status_names_the_file(tmp_path):
    path = _with_helper(tmp_path)
    db = tmp_path / "s.db"
    assert run_study(load_study(path), db, progress=False).ok == 2
    (tmp_path / "helper.py").write_text("OFFSET = 60.0\n", encoding="utf-8")
    study = load_study(path)
    assert "helper.py" in study.code.files
    summary = run_study(study, db, progress=False)
    assert (summary.skipped, summary.ok) == (0, 2)
    assert [(s.runs, s.changed) for s in summary.superseded] == [(2, ["helper.py"])]
    st = study_status(study, db)
    assert st.ok == 2 and [(s.runs, s.changed) for s in st.superseded] == [(2, ["helper.py"])]


def test_comment_docstring_and_layout_edits_rerun_nothing(tmp_path):
    path = _with_helper(tmp_path)
    db = tmp_path / "s.db"
    run_study(load_study(path), db, progress=False)
    (tmp_path / "helper.py").write_text(
        "# constants of the toy model\nOFFSET = (70.0)   # the floor\n", encoding="utf-8"
    )
    entry = tmp_path / "synth_entry.py"
    entry.write_text(
        '"""The entry, now documented."""\n'
        + entry.read_text().replace(
            "def run(config, seed, out_dir=None):",
            "def run(config, seed, out_dir=None):\n    '''One run.'''\n    # comment",
        ),
        encoding="utf-8",
    )
    summary = run_study(load_study(path), db, progress=False)
    assert (summary.skipped, summary.ok, summary.superseded) == (2, 0, [])


def test_code_version_in_the_study_file_pins_the_runs(tmp_path):
    path = _with_helper(tmp_path, extra_study='code_version = "pinned-1"')
    db = tmp_path / "s.db"
    run_study(load_study(path), db, progress=False)
    (tmp_path / "helper.py").write_text("OFFSET = 60.0\n", encoding="utf-8")
    study = load_study(path)
    assert study.code_version == "pinned-1" and study.code.pinned
    assert run_study(study, db, progress=False).skipped == 2


def test_import_graph_resolves_relative_and_absolute_imports_in_a_package(tmp_path):
    pkg = tmp_path / "proj"
    (pkg / "nets").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "nets" / "__init__.py").write_text("from .layers import Dense\n")
    (pkg / "nets" / "layers.py").write_text("import numpy\nclass Dense: pass\n")
    (pkg / "data.py").write_text("ROWS = 3\n")
    (pkg / "unused.py").write_text("X = 1\n")
    (pkg / "study").mkdir()
    (pkg / "study" / "__init__.py").write_text("")
    (pkg / "study" / "entry.py").write_text("from ..nets import Dense\nfrom proj import data\n")
    roots = search_roots(pkg / "study")
    assert roots == [pkg / "study", tmp_path]
    names = {
        p.relative_to(tmp_path).as_posix()
        for p in local_imports([pkg / "study" / "entry.py"], roots)
    }
    assert names == {
        "proj/__init__.py",
        "proj/data.py",
        "proj/nets/__init__.py",
        "proj/nets/layers.py",
        "proj/study/entry.py",
    }


def test_a_command_template_covers_its_script_and_the_script_s_imports(tmp_path):
    (tmp_path / "train.py").write_text("import model\n")
    (tmp_path / "model.py").write_text("W = 1\n")
    v1 = derive_code_version(tmp_path, None, "python train.py --cfg {config} > {out}", None)
    assert set(v1.files) == {"train.py", "model.py"}
    (tmp_path / "model.py").write_text("W = 2\n")
    assert (
        derive_code_version(tmp_path, None, "python train.py --cfg {config} > {out}", None).version
        != v1.version
    )


def test_syntax_trees_ignore_formatting_but_not_behaviour(tmp_path):
    a, b, c = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"
    a.write_text("def f(x):\n    return x + 1\n")
    b.write_text("def f( x ):\n    '''Adds one.'''\n    return (x+1)  # plus one\n")
    c.write_text("def f(x):\n    return x + 2\n")
    assert tree_hash(a) == tree_hash(b) != tree_hash(c)


def test_git_commit_and_dirty_flag_are_recorded(tmp_path):
    path = _with_helper(tmp_path)
    git = ["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    study = load_study(path)
    assert (study.code.git.commit, study.code.git.dirty) == (head, False)
    db = tmp_path / "s.db"
    run_study(study, db, progress=False)
    from evalab.ablation import analyze

    notes = note_lines(
        analyze(study, db)
    )  # (once helper.py changes, the runs that read it are stale)
    (tmp_path / "helper.py").write_text("OFFSET = 70.0\nX = 1\n", encoding="utf-8")
    assert load_study(path).code.git.dirty
    from evalab.ablation import RunStore

    with RunStore(db) as store:
        assert {(r.git_commit, r.git_dirty) for r in store.runs("synth").values()} == {
            (head, False)
        }
    assert f"Code version {study.code_version} (hash of the code the entry imports)." in notes
    assert f"Runs used: 2 at git {head[:10]}." in notes


EVAL_MODULE = """
from synth_entry import evaluate as _evaluate

SHIFT = {shift}


def evaluate(config, seed, checkpoint_dir):
    out = _evaluate(config, seed, checkpoint_dir)
    return {{"acc": out["acc"] + SHIFT, "loss": out["loss"]}}
"""


def _calls(folder):
    lines = (folder / "calls.log").read_text(encoding="utf-8").splitlines()
    return sum(x.startswith("train") for x in lines), sum(x.startswith("eval") for x in lines)


def test_an_edit_of_evaluation_code_reruns_the_eval_runs_only(tmp_path):
    from ..evalsynth import write_eval_study

    path = write_eval_study(
        tmp_path,
        seeds=[0, 1],
        evaluate="synth_eval:evaluate",
        rows=[
            {"label": "(X)", "set": {"shift": -1.0}},
            {"label": "(X') at eval", "stage": "eval", "from": "base", "set": {"drop": 1}},
        ],
    )
    (tmp_path / "synth_eval.py").write_text(EVAL_MODULE.format(shift="0.0"), encoding="utf-8")
    db = tmp_path / "s.db"
    assert run_study(load_study(path), db, progress=False).ok == 6
    assert _calls(tmp_path) == (4, 2)
    # evaluation code only (a module the training entry does not import): 2 eval runs, no training
    (tmp_path / "synth_eval.py").write_text(EVAL_MODULE.format(shift="0.5"), encoding="utf-8")
    study = load_study(path)
    assert study.stage_version("train") != study.stage_version("eval")
    summary = run_study(study, db, progress=False)
    assert (summary.skipped, summary.ok) == (4, 2) and _calls(tmp_path) == (4, 4)
    assert [s.runs for s in summary.superseded] == [
        2
    ]  # the old eval runs; the training runs are still used
    a = analyze(study, db)
    assert a.row("(X') at eval").metrics["acc"].n == 2 and a.row("(X)").metrics["acc"].n == 2
    # training code (imported by both entry points): everything reruns
    entry = tmp_path / "synth_entry.py"
    entry.write_text(
        entry.read_text(encoding="utf-8").replace("70.0 + 10.0", "71.0 + 10.0"), encoding="utf-8"
    )
    summary = run_study(load_study(path), db, progress=False)
    assert (summary.skipped, summary.ok) == (0, 6) and _calls(tmp_path) == (8, 6)
