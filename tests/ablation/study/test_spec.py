"""Study-file validation: each bad file gives one clear error before anything runs."""

from __future__ import annotations

import pytest

from evalab.ablation import load_study
from evalab.errors import SettingsError

from ..synth import write_study

GOOD = """
[study]
name = "s"
entry = "synth_entry:run"
seeds = [0, 1]
metrics = ["acc", "loss"]
primary = "acc"

[base]
a = true
b = true
shift = 0.0
noise = 0.5
mode = "ok"
sleep = 0.0
"""


def load_text(tmp_path, text: str, **kw):
    write_study(tmp_path)  # the entry module
    p = tmp_path / "bad.toml"
    p.write_text(text, encoding="utf-8")
    return load_study(p, **kw)


def test_good_study_loads(tmp_path):
    s = load_study(
        write_study(tmp_path, variants=[("(A)", "no a", {"a": False})], grid={"a": [False, True]})
    )
    assert s.name == "synth" and s.seeds == (0, 1, 2, 3) and s.primary == "acc"
    assert s.higher_is_better == {"acc": True, "loss": False}
    assert s.variants[0].settings == {"a": False}
    assert s.grid == {"a": [False, True]}
    assert len(s.code_version) == 12


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            GOOD.replace('primary = "acc"', 'primary = "acc"\nfoo = 1'),
            r"bad\.toml:\d+: \[study\] key 'foo': unknown",
        ),
        (
            GOOD + '\n[[variant]]\nlabel = "(A)"\nset = { heads = 1 }\n',
            r"bad\.toml:\d+: \[\[variant\]\] '\(A\)' set\.heads: \[base\] has no key 'heads'",
        ),
        (GOOD.replace("seeds = [0, 1]", "seeds = []"), r"bad\.toml:\d+: \[study\] seeds: is empty"),
        (
            GOOD.replace('"synth_entry:run"', '"no_such_module:run"'),
            r"\[study\] entry: cannot import module 'no_such_module'",
        ),
        (
            GOOD.replace('"synth_entry:run"', '"synth_entry:nope"'),
            r"\[study\] entry: module 'synth_entry' has no function 'nope'",
        ),
        (
            GOOD.replace('primary = "acc"', 'primary = "bleu"'),
            r"\[study\] primary: 'bleu' is not one of metrics",
        ),
        (GOOD + "\n[extra]\nx = 1\n", r"top-level key 'extra': unknown"),
        (GOOD + "\n[grid]\nheads = [1, 2]\n", r"\[grid\] heads: \[base\] has no key 'heads'"),
        (
            GOOD + '\n[[variant]]\nlabel = "(A)"\ncolour = "red"\nset = { a = false }\n',
            r"\[\[variant\]\] #1 key 'colour': unknown",
        ),
        (
            GOOD + '\n[[variant]]\nlabel = "(A)"\nset = { a = 3 }\n',
            r"set\.a: is 3 \(number\) but \[base\] a is True \(bool\)",
        ),
        (
            GOOD + '\n[reference."BLEU"]\n"(Z)" = 1.0\n',
            r"\[reference\.'BLEU'\] '\(Z\)': is not a row of this study",
        ),
        (
            GOOD.replace('entry = "synth_entry:run"', 'command = "python t.py {config}"'),
            r"command: must contain \{out\}",
        ),
        (GOOD.replace('entry = "synth_entry:run"', ""), r"give exactly one of entry"),
        ("[study\nname=", r"not valid TOML"),
        (
            GOOD.replace('name = "s"', 'name = "../../x"'),
            r"\[study\] name: '\.\./\.\./x' is not a plain name",
        ),
        (
            GOOD.replace('name = "s"', 'name = "/abs/path"'),
            r"\[study\] name: '/abs/path' is not a plain name",
        ),
        (
            GOOD.replace('name = "s"', 'name = "runs/x"'),
            r"\[study\] name: 'runs/x' is not a plain name",
        ),
        (
            GOOD.replace('name = "s"', 'name = ".hidden"'),
            r"\[study\] name: '\.hidden' is not a plain name",
        ),
        (GOOD.replace('name = "s"', 'name = ".."'), r"\[study\] name: '\.\.' is not a plain name"),
    ],
)
def test_bad_study_files(tmp_path, text, expected):
    with pytest.raises(SettingsError, match=expected) as info:
        load_text(tmp_path, text)
    assert str(tmp_path / "bad.toml") in str(info.value)
    assert "\n" not in str(info.value)


def test_entry_that_fails_on_import_names_the_error(tmp_path):
    write_study(tmp_path, entry_source="import not_installed_package_xyz\n")
    with pytest.raises(
        SettingsError, match=r"cannot import module 'synth_entry': ModuleNotFoundError"
    ):
        load_study(tmp_path / "study.toml")


def test_missing_study_file(tmp_path):
    with pytest.raises(SettingsError, match="no such study file"):
        load_study(tmp_path / "nope.toml")


def test_error_line_number_points_at_the_key(tmp_path):
    text = GOOD.replace("seeds = [0, 1]", "seeds = []")
    line = text.splitlines().index("seeds = []") + 1
    with pytest.raises(SettingsError, match=rf"bad\.toml:{line}: "):
        load_text(tmp_path, text)


def test_code_version_same_with_and_without_import_check(tmp_path):
    path = write_study(tmp_path)
    assert load_study(path).code_version == load_study(path, check_entry=False).code_version
    v1 = load_study(path).code_version
    source = (tmp_path / "synth_entry.py").read_text()
    (tmp_path / "synth_entry.py").write_text('"""A docstring."""\n' + source + "\n# a comment\n")
    assert load_study(path).code_version == v1  # comments, docstrings and layout do not count
    (tmp_path / "synth_entry.py").write_text(source.replace("70.0 + 10.0", "70.0 + 11.0"))
    assert load_study(path).code_version != v1


def test_explicit_code_version(tmp_path):
    path = write_study(tmp_path, extra_study='code_version = "v7"')
    assert load_study(path).code_version == "v7"


def test_code_version_covers_sibling_modules_of_a_package_entry(tmp_path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text("WIDTH = 1\n")
    (pkg / "entry.py").write_text(
        "from mypkg.model import WIDTH\n\ndef run(config, seed):\n    return {'acc': WIDTH}\n"
    )
    study = tmp_path / "study.toml"
    study.write_text(
        '[study]\nname = "p"\nentry = "mypkg.entry:run"\nseeds = [0]\nmetrics = ["acc"]\n'
        'primary = "acc"\n\n[base]\nx = 1\n',
        encoding="utf-8",
    )
    v1 = load_study(study).code_version
    (pkg / "model.py").write_text("WIDTH = 2\n")
    assert load_study(study).code_version != v1


def test_study_file_that_is_not_utf8_gets_one_line(tmp_path):
    write_study(tmp_path)
    p = tmp_path / "latin1.toml"
    p.write_bytes(
        GOOD.replace('name = "s"', 'name = "s"\ndescription = "caf\u00e9"').encode("latin-1")
    )
    with pytest.raises(SettingsError) as info:
        load_study(p)
    line = GOOD.splitlines().index('name = "s"') + 2
    assert str(info.value) == (
        f"{p}: not valid UTF-8 (byte 0xe9 on line {line}); a study file is UTF-8 TOML: "
        "convert it with e.g. `iconv -f LATIN1 -t UTF-8`"
    )


@pytest.mark.parametrize("name", ["toy", "two_by_two", "sort-digits", "Table 3 v2.1"])
def test_plain_study_names_are_accepted(tmp_path, name):
    assert (
        load_text(tmp_path, GOOD.replace('name = "s"', f'name = "{name}"'), check_entry=False).name
        == name
    )


# ---------------------------------------------------------------- [metrics.NAME] tables, study options

TABLE = '\n[metrics.bleu]\nmetric = "bleu"\nsettings = { tokenize = "13a" }\noutputs = "hyp.txt"\nreferences = ["ref.txt"]\n'


def with_refs(tmp_path, text: str, **kw):
    (tmp_path / "ref.txt").write_text("a b c\nd e f\n", encoding="utf-8")
    (tmp_path / "ref2.txt").write_text("a b c\n", encoding="utf-8")
    (tmp_path / "src.txt").write_text("x\ny\n", encoding="utf-8")
    return load_text(tmp_path, text, **kw)


def test_computed_metric_table_loads(tmp_path):
    s = with_refs(tmp_path, GOOD + TABLE.replace('["ref.txt"]', '["ref.txt", "ref.txt"]'))
    assert s.metrics == ("acc", "loss", "bleu") and s.returned == ("acc", "loss")
    c = s.computed["bleu"]
    assert c.metric == "bleu" and c.settings == {"tokenize": "13a"} and c.outputs == "hyp.txt"
    assert c.references == (tmp_path / "ref.txt", tmp_path / "ref.txt")
    assert s.code_version.count("+m") == 1  # the metric's definition is part of the run keys
    plain = load_text(tmp_path, GOOD)
    assert plain.computed == {} and "+m" not in plain.code_version


def test_computed_metric_definition_changes_the_code_version(tmp_path):
    a = with_refs(tmp_path, GOOD + TABLE).code_version
    b = with_refs(tmp_path, GOOD + TABLE.replace('"13a"', '"intl"')).code_version
    (tmp_path / "ref.txt").write_text("a b c\nd e g\n", encoding="utf-8")
    c = load_text(tmp_path, GOOD + TABLE).code_version
    assert len({a, b, c}) == 3


def test_computed_metrics_alone_and_their_directions(tmp_path):
    text = (
        GOOD.replace('metrics = ["acc", "loss"]\nprimary = "acc"', 'primary = "bleu"')
        + TABLE
        + '\n[metrics.ter]\nmetric = "ter"\noutputs = "hyp.txt"\nreferences = ["ref.txt"]\n'
    )
    s = with_refs(tmp_path, text)
    assert s.metrics == ("bleu", "ter") and s.returned == ()
    assert s.higher_is_better == {"bleu": True, "ter": False}


def test_study_options(tmp_path):
    s = load_text(
        tmp_path,
        GOOD.replace(
            'primary = "acc"',
            'primary = "acc"\npaired_seeds = true\nbounds = { acc = [0, 100] }\nmin_effect = 0.5',
        ),
    )
    assert (
        s.paired_seeds is True
        and s.bounds == {"acc": (0.0, 100.0)}
        and s.min_effect == {"acc": 0.5}
    )
    s = load_text(
        tmp_path,
        GOOD.replace('primary = "acc"', 'primary = "acc"\nmin_effect = { loss = 0.01, acc = 1 }'),
    )
    assert s.min_effect == {"loss": 0.01, "acc": 1.0} and s.paired_seeds is False and s.bounds == {}


def table(**changes: str) -> str:
    keys = {
        "metric": '"bleu"',
        "settings": '{ tokenize = "13a" }',
        "outputs": '"hyp.txt"',
        "references": '["ref.txt"]',
    }
    keys.update(changes)
    return GOOD + "\n[metrics.bleu]\n" + "".join(f"{k} = {v}\n" for k, v in keys.items() if v)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            table(metric='"blue"'),
            r"\[metrics\.bleu\] metric: 'blue' is not an evalab metric; known: .*bleu",
        ),
        (
            table(settings='{ tokenise = "13a" }'),
            r"\[metrics\.bleu\] settings\.tokenise: bleu has no setting 'tokenise'; known: .*tokenize",
        ),
        (
            table(settings="{ lowercase = 1 }"),
            r"settings\.lowercase: is 1; bleu\.lowercase takes bool",
        ),
        (table(settings='{ tokenize = "nope" }'), r"\[metrics\.bleu\] settings: .*'nope'"),
        (
            table(references='["missing.ref"]'),
            r"\[metrics\.bleu\] references: .*missing\.ref: no such file",
        ),
        (
            table(references='["ref.txt", "ref2.txt"]'),
            r"references: reference streams of unequal length: .*ref\.txt: 2 lines, .*ref2\.txt: 1 lines",
        ),
        (table(references="[]"), r"references: must be a non-empty list of reference file paths"),
        (table(references=None), r"\[metrics\.bleu\] references: missing"),
        (
            table(outputs='"../hyp.txt"'),
            r"outputs: '\.\./hyp\.txt' is not a file name inside the run folder",
        ),
        (
            table(outputs='"/tmp/hyp.txt"'),
            r"outputs: '/tmp/hyp\.txt' is not a file name inside the run folder",
        ),
        (
            table(outputs='"config.json"'),
            r"outputs: 'config\.json' is a file evalab writes in every run folder",
        ),
        (
            table(source='"src.txt"'),
            r"\[metrics\.bleu\] source: is given but this metric does not read sources",
        ),
        (
            table(colour='"red"'),
            r"\[metrics\.bleu\] key 'colour': unknown; known keys: metric, settings, outputs",
        ),
        (
            GOOD + "\n[metrics]\nbleu = 3\n",
            r"\[metrics\.bleu\]: must be a table with metric, outputs and references",
        ),
        (
            GOOD.replace('metrics = ["acc", "loss"]', 'metrics = ["acc", "bleu"]') + TABLE,
            r"\[study\] metrics: 'bleu' is also a \[metrics\.bleu\] table",
        ),
        (
            GOOD.replace('metrics = ["acc", "loss"]\n', "").replace('primary = "acc"', ""),
            r"\[study\] metrics: missing",
        ),
        (
            GOOD.replace('primary = "acc"', 'primary = "acc"\npaired_seeds = "yes"'),
            r"\[study\] paired_seeds: must be true or false",
        ),
        (
            GOOD.replace('primary = "acc"', 'primary = "acc"\nbounds = { acc = [100, 0] }'),
            r"\[study\] bounds: acc must be \[low, high\] with finite numbers low < high",
        ),
        (
            GOOD.replace('primary = "acc"', 'primary = "acc"\nbounds = { bleu = [0, 100] }'),
            r"\[study\] bounds: names 'bleu', which is not in metrics",
        ),
        (
            GOOD.replace('primary = "acc"', 'primary = "acc"\nbounds = [0, 1]'),
            r"\[study\] bounds: must be a table",
        ),
        (
            GOOD.replace('primary = "acc"', 'primary = "acc"\nmin_effect = -1'),
            r"\[study\] min_effect: acc must be a positive number",
        ),
        (
            GOOD.replace('primary = "acc"', 'primary = "acc"\nmin_effect = { f1 = 1 }'),
            r"\[study\] min_effect: names 'f1'",
        ),
        (
            GOOD.replace('primary = "acc"', 'primary = "acc"\nmin_effect = "big"'),
            r"\[study\] min_effect: must be a number \(for the primary metric\)",
        ),
    ],
)
def test_bad_computed_metrics_and_options(tmp_path, text, expected):
    with pytest.raises(SettingsError, match=expected) as info:
        with_refs(tmp_path, text)
    assert str(tmp_path / "bad.toml") in str(info.value)
    assert "\n" not in str(info.value)


def test_a_study_file_with_a_byte_order_mark_reads_as_without(run_cli, tmp_path):
    # was: "not valid TOML: Invalid statement (at line 1, column 1)", the mark not named
    study = write_study(tmp_path, seeds=[0])
    assert run_cli("ablate", "run", study, "--db", tmp_path / "s.db", "-q").exit_code == 0
    plain = run_cli("ablate", "status", study, "--db", tmp_path / "s.db", "-f", "json")
    study.write_bytes(b"\xef\xbb\xbf" + study.read_bytes())
    marked = run_cli("ablate", "status", study, "--db", tmp_path / "s.db", "-f", "json")
    assert plain.exit_code == marked.exit_code == 0, marked.stderr
    assert marked.stdout == plain.stdout and load_study(study).name == "synth"


@pytest.mark.parametrize(
    ("key", "text", "needle"),
    [
        ("timeout", "1e400", "study.timeout: 'inf': not a finite number"),
        ("timeout", "nan", "study.timeout: 'nan': not a finite number"),
        ("retries", "9" * 400, "study.retries: '999999999999999999999999'... (400 characters)"),
    ],
)
def test_a_study_s_numbers_are_held_to_the_grammar_s_range(tmp_path, key, text, needle):
    """TOML reads 1e400 as inf and any digits as an int: refused with the key and its line,
    never an OverflowError or an endless timeout."""
    path = write_study(tmp_path)
    study = path.read_text(encoding="utf-8").replace(f"\n{key} = ", f"\n{key} = {text}\n# was: ")
    path.write_text(study, encoding="utf-8")
    with pytest.raises(SettingsError) as info:
        load_study(path)
    assert "study.toml:" in str(info.value) and needle in str(info.value), str(info.value)
