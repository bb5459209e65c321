"""``evalab ablate`` with command-template studies: templates run for real, failures shown,
dry runs, subsets and overrides."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from .refusal import assert_refused, snapshot

# A Hydra-style script: every argument is key=value (a value in Hydra's override grammar).
HYDRA_TRAIN = """
import json, sys
from pathlib import Path


def value(text):
    if text.startswith("'") and text.endswith("'"):
        return text[1:-1].replace("\\\\'", "'")
    if text in ("true", "false"):
        return text == "true"
    if text.startswith("["):
        return [value(x) for x in text[1:-1].split(",") if x]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


args = {}
for word in sys.argv[1:]:
    key, sep, text = word.partition("=")
    if not sep:
        raise SystemExit(f"not a key=value override: {word!r}")
    args[key] = value(text)
out = Path(args.pop("out"))
seed = args.pop("seed")
if args.get("mode") == "raise":
    raise ValueError(f"hidden={args['hidden']} is not supported by this model")
acc = 50 + args["hidden"] / 2 + 0.25 * seed + 100 * args.get("optim.lr", 0) + 3 * args.get("relu", False)
out.write_text(json.dumps({"acc": acc}))
out.with_name("argv.json").write_text(json.dumps(sys.argv[1:]))
"""


def write(
    folder: Path, command: str, body: str, *, script: str = HYDRA_TRAIN, extra: str = ""
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.py").write_text(script, encoding="utf-8")
    study = folder / "study.toml"
    study.write_text(
        f'[study]\nname = "tpl"\ncommand = """{command}"""\nseeds = [0, 1, 2]\nmetrics = ["acc"]\n'
        f"{extra}\n" + textwrap.dedent(body),
        encoding="utf-8",
    )
    return study


HIDDEN = """
[base]
hidden = 32

[[variant]]
label = "(A)"
set = { hidden = 8 }
"""


def argvs(db: Path) -> dict[tuple[str, int], list[str]]:
    """The arguments each stored run's script received, by (row, seed)."""
    from evalab.ablation.store.run_store import RunStore

    with RunStore(db, create=False) as store:
        runs = store.runs("tpl").values()
        return {
            (r.rows[0], r.seed): json.loads((Path(r.artifacts.dir) / "argv.json").read_text())
            for r in runs
        }


def test_a_hydra_style_template_runs_each_row_with_its_own_values(run_cli, tmp_path):
    study = write(tmp_path, "python train.py hidden={hidden} seed={seed} out={out}", HIDDEN)
    db = tmp_path / "runs.db"
    r = run_cli("ablate", "run", study, "--db", db, "-q")
    assert r.exit_code == 0, r.stderr
    for (row, seed), argv in argvs(db).items():
        hidden = {"base": 32, "(A)": 8}[row]
        assert argv[:2] == [f"hidden={hidden}", f"seed={seed}"] and argv[2].startswith("out=/")
    report = json.loads(run_cli("ablate", "report", study, "--db", db, "-f", "json").stdout)
    acc = {row["label"]: row["metrics"]["acc"] for row in report["rows"]}
    direct = (
        sum(50 + 8 / 2 + 0.25 * s for s in (0, 1, 2)) / 3
        - sum(50 + 32 / 2 + 0.25 * s for s in (0, 1, 2)) / 3
    )
    assert direct == -12.0 and acc["(A)"]["delta"] == pytest.approx(direct, abs=1e-12)


def test_args_writes_the_whole_configuration_as_overrides_nested_keys_dotted(run_cli, tmp_path):
    body = """
    [base]
    hidden = 32
    relu = false
    name = "two words"

    [base.optim]
    lr = 0.01

    [[variant]]
    label = "(B)"
    set = { optim = { lr = 0.02 }, relu = true }
    """
    study = write(tmp_path, "python train.py {args} seed={seed} out={out}", body)
    db = tmp_path / "runs.db"
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 0
    got = argvs(db)
    assert got[("base", 1)][:4] == ["hidden=32", "relu=false", "name='two words'", "optim.lr=0.01"]
    assert got[("(B)", 1)][:4] == ["hidden=32", "relu=true", "name='two words'", "optim.lr=0.02"]
    report = json.loads(run_cli("ablate", "report", study, "--db", db, "-f", "json").stdout)
    delta = {row["label"]: row["metrics"]["acc"]["delta"] for row in report["rows"]}
    assert delta["(B)"] == pytest.approx(100 * 0.01 + 3)


ARGPARSE_TRAIN = """
import argparse, json
from pathlib import Path

p = argparse.ArgumentParser()
p.add_argument("--hidden", type=int, required=True)
p.add_argument("--layers", type=int, nargs="+", required=True)
p.add_argument("--optim.lr", type=float, required=True)
p.add_argument("--relu", action=argparse.BooleanOptionalAction, required=True)
p.add_argument("--seed", type=int, required=True)
p.add_argument("--out", required=True)
a = p.parse_args()
acc = a.hidden + sum(a.layers) + 100 * getattr(a, "optim.lr") + 3 * a.relu + 0.5 * a.seed
Path(a.out).write_text(json.dumps({"acc": acc}))
Path(a.out).with_name("argv.json").write_text(json.dumps([]))
"""


def test_argparse_style_args_reach_a_real_argparse_parser(run_cli, tmp_path):
    body = """
    [base]
    hidden = 4
    layers = [1, 2]
    relu = true
    optim = { lr = 0.5 }

    [[variant]]
    label = "(C)"
    set = { relu = false, layers = [1, 2, 3] }
    """
    study = write(
        tmp_path,
        "python train.py {args} --seed {seed} --out {out}",
        body,
        script=ARGPARSE_TRAIN,
        extra='args_style = "argparse"',
    )
    db = tmp_path / "runs.db"
    r = run_cli("ablate", "run", study, "--db", db, "-q")
    assert r.exit_code == 0, r.stderr
    report = json.loads(run_cli("ablate", "report", study, "--db", db, "-f", "json").stdout)
    delta = {row["label"]: row["metrics"]["acc"]["delta"] for row in report["rows"]}
    assert delta["(C)"] == pytest.approx(3 - 3)  # one more layer (+3), no relu (-3)
    assert report["rows"][0]["metrics"]["acc"]["mean"] == pytest.approx(4 + 3 + 50 + 3 + 0.5)


@pytest.mark.parametrize(
    ("command", "extra", "needle"),
    [
        (
            "python train.py hidden={hiden} seed={seed} out={out}",
            "",
            "study.toml:3: [study] command: {hiden} names no configuration key (did you mean {hidden}?); keys: hidden",
        ),
        (
            "awk '{print $1}' {config} > {out}",
            "",
            'study.toml:3: [study] command: the brace at column 6: "{print $1}\' {config}..." is neither a placeholder',
        ),
        (
            "python train.py\n  hidden={hidden}} {out}",
            "",
            "study.toml:4: [study] command: the brace at column 18: '} {out}' closes no placeholder",
        ),
        (
            "python train.py {args} {out}",
            'args_style = "click"',
            'study.toml:6: [study] args_style: is \'click\'; expected "hydra" (key=value) or "argparse" (--key value)',
        ),
        (
            "sh -c 'python train.py name={name}' {out}",
            "",
            "[study] command: {name} stands in text a program reads as code",
        ),
        ("python train.py hidden={hidden} seed={seed}", "", "[study] command: must contain {out}"),
    ],
)
def test_a_template_that_could_run_the_wrong_configuration_is_refused_before_anything_runs(
    tmp_path, command, extra, needle
):
    study = write(
        tmp_path,
        command,
        HIDDEN.replace("hidden = 32", 'hidden = 32\nname = "ab"')
        + '\n[[variant]]\nlabel = "(N)"\nset = { name = "a b" }\n',
        extra=extra,
    )
    assert_refused(
        ("ablate", "run", study, "--db", tmp_path / "runs.db"), needle, watch=(tmp_path,)
    )


def test_the_refusal_names_the_line_of_a_multi_line_command(tmp_path):
    command = "\npython train.py\n    --hidden {hidden}\n    --lr {lr} {out}"
    line = assert_refused(
        ("ablate", "run", write(tmp_path, command, HIDDEN), "--db", tmp_path / "x.db"),
        "{lr} names no configuration key",
        watch=(tmp_path,),
    )
    assert "study.toml:6: [study] command:" in line
    assert snapshot(
        tmp_path
    )  # the study folder is still there, unchanged (checked by assert_refused)


RAISES = (
    HIDDEN.replace("hidden = 32", 'hidden = 32\nmode = "ok"')
    + '\n[[variant]]\nlabel = "(R)"\nset = { mode = "raise" }\n'
)
MESSAGE = "ValueError: hidden=32 is not supported by this model"


def test_a_script_that_raises_is_shown_by_run_status_and_report_with_its_message(
    run_cli, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    study = write(
        tmp_path, "python train.py hidden={hidden} mode={mode} seed={seed} out={out}", RAISES
    )
    r = run_cli("ablate", "run", study, "--db", "runs.db", "-q")
    assert r.exit_code == 1
    blocks = r.stderr.split("failed: ")[1:]
    assert len(blocks) == 3
    for block in blocks:
        lines = block.splitlines()
        assert lines[0].endswith(
            f"seed {lines[0].split(' seed ')[1][0]}: command exited with code 1: {MESSAGE}"
        )
        assert (
            "  |     raise ValueError(f\"hidden={args['hidden']} is not supported by this model\")"
            in lines
        )
        assert lines[-2] == f"  | {MESSAGE}" and lines[-1].startswith("  log: runs/")
        log = tmp_path / lines[-1].removeprefix("  log: ")
        assert log.name == "log.txt" and MESSAGE in log.read_text()
    r = run_cli("ablate", "status", study, "--db", "runs.db")
    assert f"failed: (R) seed 0: command exited with code 1: {MESSAGE}" in r.stdout
    assert f"  | {MESSAGE}" in r.stdout and "  log: runs/" in r.stdout
    data = json.loads(run_cli("ablate", "status", study, "--db", "runs.db", "-f", "json").stdout)
    assert [e["seed"] for e in data["errors"]] == [0, 1, 2]
    for e in data["errors"]:
        assert e["rows"] == "(R)" and e["error"] == f"command exited with code 1: {MESSAGE}"
        assert e["tail"][0] == "Traceback (most recent call last):" and e["tail"][-1] == MESSAGE
        assert Path(e["log"]).is_file() and Path(e["log"]).parent.name == e["key"]
    md = run_cli("ablate", "report", study, "--db", "runs.db", "-f", "markdown").stdout
    assert f"(R) seed 1: failed after 1 attempt(s): command exited with code 1: {MESSAGE}" in md


def test_an_entry_point_that_raises_shows_its_traceback_tail(run_cli, tmp_path):
    from ablation.synth import write_study

    study = write_study(tmp_path, seeds=[0], variants=[("(R)", "raises", {"mode": "raise"})])
    r = run_cli("ablate", "run", study, "--db", tmp_path / "runs.db", "-q")
    assert r.exit_code == 1
    lines = r.stderr.splitlines()
    at = lines.index("failed: (R) seed 0: RuntimeError: boom: synthetic failure")
    assert lines[at + 1] == "  | Traceback (most recent call last):" and lines[at - 1].startswith(
        "study 'synth'"
    )
    assert (
        lines[-2] == "  | RuntimeError: boom: synthetic failure"
        and lines[-1].startswith("  log: /")
        and lines[-1].endswith("/log.txt")
    )


def test_a_dry_run_shows_each_run_with_its_command_and_state_and_writes_nothing(
    run_cli, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    study = write(
        tmp_path, "python train.py hidden={hidden} mode={mode} seed={seed} out={out}", RAISES
    )
    r = run_cli("ablate", "run", study, "--db", "none.db", "--dry-run")
    assert (
        r.exit_code == 0
        and not (tmp_path / "none.db").exists()
        and not (tmp_path / "runs").exists()
    )
    assert r.stdout.startswith(
        "dry run of study 'tpl': nothing is run or written. 9 runs planned: 0 stored (skipped), "
        "9 to run (9 new, 0 failed before), 0 held by another runner; database none.db (does "
        "not exist yet: every run is new)\n"
    )
    assert (
        f"(A) seed 2 [to run]\n  $ python train.py hidden=8 mode=ok seed=2 out='{tmp_path}/runs/(new store)/tpl/"
        in r.stdout
    )
    assert run_cli("ablate", "run", study, "--db", "runs.db", "-q").exit_code == 1
    (tmp_path / "train.py").write_text(
        HYDRA_TRAIN.replace("50 + args", "51 + args"), encoding="utf-8"
    )
    before = snapshot(tmp_path)
    r = run_cli("ablate", "run", study, "--db", "runs.db", "--dry-run", "--seed", "1")
    assert snapshot(tmp_path) == before  # the store, its run folders, the study: byte for byte
    lines = r.stdout.splitlines()
    assert lines[0].startswith(
        "dry run of study 'tpl': nothing is run or written. 3 runs planned (a subset of the "
        "study's 9): 0 stored (skipped), 3 to run (3 new, 0 failed before)"
    )
    assert lines[1] == "base seed 1 [to run]" and lines[2].startswith(
        "  $ python train.py hidden=32 mode=ok seed=1 out=/"
    )
    assert lines[3].startswith("  folder runs/") and lines[2].endswith(
        lines[3].removeprefix("  folder ") + "/metrics.json"
    )
    assert (
        lines[-1].startswith("9 stored runs belong to an older code version (")
        and "changed: train.py" in lines[-1]
    )
    (tmp_path / "train.py").write_text(HYDRA_TRAIN, encoding="utf-8")
    before = snapshot(tmp_path)
    r = run_cli(
        "ablate",
        "run",
        study,
        "--db",
        "runs.db",
        "--dry-run",
        "--row",
        "(R)",
        "--row",
        "base",
        "--seed",
        "0",
    )
    assert snapshot(tmp_path) == before
    assert r.stdout.splitlines()[1:] == [
        "base seed 0 [stored, skipped]",
        *r.stdout.splitlines()[2:4],
        f"(R) seed 0 [to run again: failed before: command exited with code 1: {MESSAGE}]",
        *r.stdout.splitlines()[5:],
    ]
    assert len(r.stdout.splitlines()) == 7


def test_row_and_seed_run_a_subset(run_cli, tmp_path):
    study = write(tmp_path, "python train.py hidden={hidden} seed={seed} out={out}", HIDDEN)
    db = tmp_path / "runs.db"
    r = run_cli("ablate", "run", study, "--db", db, "-q", "--row", "(A)", "--seed", "1")
    assert (
        r.exit_code == 0
        and "1 runs planned (a subset of the study's 6), 0 already finished, 1 ok" in r.stderr
    )
    assert sorted(argvs(db)) == [("(A)", 1)]
    r = run_cli("ablate", "run", study, "--db", db, "-q", "--seed", "1", "--seed", "2")
    assert "4 runs planned (a subset of the study's 6), 1 already finished, 3 ok" in r.stderr
    assert sorted(argvs(db)) == [("(A)", 1), ("(A)", 2), ("base", 1), ("base", 2)]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            ("--row", "(B)"),
            "--row '(B)': the study 'tpl' has no such row; rows: base, set hidden=8",
        ),
        (("--seed", "7"), "--seed 7: not a seed of the study 'tpl'; seeds: 0, 1, 2"),
        (
            ("--set", "hiden=3"),
            "--set 'hiden=3': [base] has no key 'hiden'; the keys of [base] are hidden, optim.lr",
        ),
        (("--set", "hidden=16.5"), "--set 'hidden=16.5': the base value is 32; give an integer"),
        (("--set", "hidden"), "--set 'hidden': expected key=value, e.g. hidden=16"),
        (
            ("--set", "optim=1"),
            "--set 'optim=1': 'optim' is a table; set one of its keys: optim.lr",
        ),
        (("--set", "hidden=8", "--dry-run"), "--set: the study already has a row labelled"),
    ],
)
def test_unknown_rows_seeds_and_overrides_are_refused_in_one_line(tmp_path, args, needle):
    body = HIDDEN.replace("hidden = 32", "hidden = 32\noptim = { lr = 0.1 }").replace(
        '"(A)"', '"set hidden=8"'
    )
    study = write(tmp_path, "python train.py hidden={hidden} seed={seed} out={out}", body)
    for extra in ((), ("--dry-run",)):
        assert_refused(
            ("ablate", "run", study, "--db", tmp_path / "runs.db", *args, *extra),
            needle,
            watch=(tmp_path,),
        )


def test_set_adds_a_row_and_leaves_the_base_as_it_is(run_cli, tmp_path):
    body = HIDDEN.replace("hidden = 32", 'hidden = 32\noptim = { lr = 0.1, name = "sgd" }')
    study = write(tmp_path, "python train.py {args} seed={seed} out={out}", body)
    db = tmp_path / "runs.db"
    assert run_cli("ablate", "run", study, "--db", db, "-q").exit_code == 0
    r = run_cli(
        "ablate", "run", study, "--db", db, "-q", "--set", "optim.lr=0.2", "--set", "hidden=16"
    )
    assert (
        r.exit_code == 0
        and "3 runs planned (a subset of the study's 9), 0 already finished, 3 ok, 0 failed"
        in r.stderr
    )
    assert (
        "row 'set optim.lr=0.2, hidden=16' is not in " in r.stderr
        and 'as a [[variant]] with set = { optim = { lr = 0.2, name = "sgd" }, hidden = 16 }'
        in r.stderr
    )
    got = argvs(db)
    assert got[("set optim.lr=0.2, hidden=16", 0)][:3] == [
        "hidden=16",
        "optim.lr=0.2",
        "optim.name=sgd",
    ]
    assert got[("base", 0)][:3] == ["hidden=32", "optim.lr=0.1", "optim.name=sgd"]
    from evalab.ablation.store.run_store import RunStore

    with RunStore(db, create=False) as store:
        configs = {r.rows[0]: r.config for r in store.runs("tpl").values()}
    assert configs["set optim.lr=0.2, hidden=16"] == {
        "hidden": 16,
        "optim": {"lr": 0.2, "name": "sgd"},
    }
    assert configs["base"] == {"hidden": 32, "optim": {"lr": 0.1, "name": "sgd"}}
    report = run_cli("ablate", "report", study, "--db", db, "-f", "json")
    assert [row["label"] for row in json.loads(report.stdout)["rows"]] == ["base", "(A)"]


def test_help_texts_and_the_shipped_study_name_no_project_history(run_cli):
    """Help, metric settings and the built-in study's labels speak of random seeds only."""
    import re

    from evalab.ablation import load_study
    from evalab.ablation.plan.runs import study_rows
    from evalab.cli._reference import render_reference
    from evalab.examples.sort_digits import study_path

    history = re.compile(r"\bseed \d{3}\b|\bseeds'|\bseed's\b", re.IGNORECASE)
    assert not history.findall(render_reference())
    assert not history.findall(run_cli("metrics").stdout)
    study = load_study(study_path(), check_entry=False)
    notes = [f"{r.label}: {r.description}" for r in study_rows(study)]  # the report's row notes
    assert notes[0] == "base: h=4 (d_k=8), P_drop 0.1, eps_ls 0.1, sinusoids"
    assert not [n for n in notes if n.startswith(f"{n.split(':')[0]}: {n.split(':')[0]}:")]
    shown = [study.description, *study.reference, *notes]
    assert not [text for text in shown if history.search(text)]


def test_a_dry_run_of_an_entry_point_study_shows_configurations_and_imports_nothing(
    run_cli, tmp_path
):
    from ablation.synth import write_study

    study = write_study(tmp_path, seeds=[0, 1], variants=[("(R)", "raises", {"mode": "raise"})])
    before = snapshot(tmp_path)
    r = run_cli("ablate", "run", study, "--db", tmp_path / "runs.db", "--dry-run", "--row", "(R)")
    assert (
        r.exit_code == 0 and snapshot(tmp_path) == before
    )  # no database, no __pycache__ of the entry
    lines = r.stdout.splitlines()
    assert [lines[1], lines[3]] == ["(R) seed 0 [to run]", "(R) seed 1 [to run]"] and len(
        lines
    ) == 5
    assert (
        lines[2].startswith("  config {") and '"mode":"raise"' in lines[2] and lines[4] == lines[2]
    )


def test_set_reads_each_value_as_the_type_of_the_bases_value(tmp_path):
    from evalab.ablation import load_study, with_overrides
    from evalab.errors import SettingsError

    body = '[base]\nn = 3\nlr = 0.1\nname = "sgd"\nrelu = false\nlayers = [1, 2]\n'
    study = load_study(write(tmp_path, "python train.py {args} seed={seed} out={out}", body))
    row = with_overrides(
        study, ["n=4", "lr=.5", "name=adam w", "relu=true", "layers=[3, 4, 5]"]
    ).variants[-1]
    assert row.settings == {"n": 4, "lr": 0.5, "name": "adam w", "relu": True, "layers": [3, 4, 5]}
    assert type(row.settings["lr"]) is float and with_overrides(study, ["lr=1"]).variants[
        -1
    ].settings == {"lr": 1.0}
    assert study.variants == ()  # the study itself is left as it was
    for bad, needle in (
        ("n=4.5", "give an integer"),
        ("lr=fast", "give a number"),
        ("relu=yes", "give true or false"),
        ("layers=3", "give a JSON list"),
        ("n=1_0", "give an integer"),
        ("lr=1_0", "give a number .'1_0': not a decimal number"),
        ("lr=1e400", "beyond the range of a float"),
        ("lr=nan", "not a finite number"),
        ("n=" + "9" * 400, "an integer beyond 2"),
        ("layers=[1, 1e999]", "'1e999': beyond the range"),
    ):
        with pytest.raises(SettingsError, match=needle):
            with_overrides(study, [bad])
