"""Study-file validation: each bad file gives one clear error before anything runs."""

from __future__ import annotations

import pytest

from evalab.ablation import load_study
from evalab.errors import SettingsError

from .synth import write_study

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
    s = load_study(write_study(tmp_path, variants=[("(A)", "no a", {"a": False})], grid={"a": [False, True]}))
    assert s.name == "synth" and s.seeds == (0, 1, 2, 3) and s.primary == "acc"
    assert s.higher_is_better == {"acc": True, "loss": False}
    assert s.variants[0].settings == {"a": False}
    assert s.grid == {"a": [False, True]}
    assert len(s.code_version) == 12


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD.replace('primary = "acc"', 'primary = "acc"\nfoo = 1'), r"bad\.toml:\d+: \[study\] key 'foo': unknown"),
        (GOOD + '\n[[variant]]\nlabel = "(A)"\nset = { heads = 1 }\n', r"bad\.toml:\d+: \[\[variant\]\] '\(A\)' set\.heads: \[base\] has no key 'heads'"),
        (GOOD.replace("seeds = [0, 1]", "seeds = []"), r"bad\.toml:\d+: \[study\] seeds: is empty"),
        (GOOD.replace('"synth_entry:run"', '"no_such_module:run"'), r"\[study\] entry: cannot import module 'no_such_module'"),
        (GOOD.replace('"synth_entry:run"', '"synth_entry:nope"'), r"\[study\] entry: module 'synth_entry' has no function 'nope'"),
        (GOOD.replace('primary = "acc"', 'primary = "bleu"'), r"\[study\] primary: 'bleu' is not one of metrics"),
        (GOOD + "\n[extra]\nx = 1\n", r"top-level key 'extra': unknown"),
        (GOOD + "\n[grid]\nheads = [1, 2]\n", r"\[grid\] heads: \[base\] has no key 'heads'"),
        (GOOD + '\n[[variant]]\nlabel = "(A)"\ncolour = "red"\nset = { a = false }\n', r"\[\[variant\]\] #1 key 'colour': unknown"),
        (GOOD + '\n[[variant]]\nlabel = "(A)"\nset = { a = 3 }\n', r"set\.a: is 3 \(number\) but \[base\] a is True \(bool\)"),
        (GOOD + '\n[reference."BLEU"]\n"(Z)" = 1.0\n', r"\[reference\.'BLEU'\] '\(Z\)': is not a row of this study"),
        (GOOD.replace('entry = "synth_entry:run"', 'command = "python t.py {config}"'), r"command: must contain \{out\}"),
        (GOOD.replace('entry = "synth_entry:run"', ""), r"give exactly one of entry"),
        ("[study\nname=", r"not valid TOML"),
        (GOOD.replace('name = "s"', 'name = "../../x"'), r"\[study\] name: '\.\./\.\./x' is not a plain name"),
        (GOOD.replace('name = "s"', 'name = "/abs/path"'), r"\[study\] name: '/abs/path' is not a plain name"),
        (GOOD.replace('name = "s"', 'name = "runs/x"'), r"\[study\] name: 'runs/x' is not a plain name"),
        (GOOD.replace('name = "s"', 'name = ".hidden"'), r"\[study\] name: '\.hidden' is not a plain name"),
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
    with pytest.raises(SettingsError, match=r"cannot import module 'synth_entry': ModuleNotFoundError"):
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
    (pkg / "entry.py").write_text("from mypkg.model import WIDTH\n\ndef run(config, seed):\n    return {'acc': WIDTH}\n")
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
    p.write_bytes(GOOD.replace('name = "s"', 'name = "s"\ndescription = "caf\u00e9"').encode("latin-1"))
    with pytest.raises(SettingsError) as info:
        load_study(p)
    line = GOOD.splitlines().index('name = "s"') + 2
    assert str(info.value) == (f"{p}: not valid UTF-8 (byte 0xe9 on line {line}); a study file is UTF-8 TOML: "
                               "convert it with e.g. `iconv -f LATIN1 -t UTF-8`")


@pytest.mark.parametrize("name", ["toy", "two_by_two", "sort-digits", "Table 3 v2.1"])
def test_plain_study_names_are_accepted(tmp_path, name):
    assert load_text(tmp_path, GOOD.replace('name = "s"', f'name = "{name}"'), check_entry=False).name == name
