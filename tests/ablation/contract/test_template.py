"""Command templates: every placeholder resolved, every brace accounted for, every value quoted."""

from __future__ import annotations

import shlex
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalab.ablation.contract.shellsyntax import Slot
from evalab.ablation.contract.template import (
    TemplateError,
    config_args,
    flat_keys,
    hydra_value,
    lookup,
    parse_template,
)

KEYS = st.text(alphabet="abcdefghij_", min_size=1, max_size=6)
SCALARS = st.one_of(
    st.booleans(),
    st.integers(-1000, 1000),
    st.floats(allow_nan=False, allow_infinity=False),
    # NUL and lone surrogates: no argument carries them (refused: tests/ablation/contract/test_shellsyntax.py)
    st.text(st.characters(exclude_characters="\0", exclude_categories=("Cs",)), max_size=8),
)
VALUES = st.one_of(SCALARS, st.lists(st.integers(-50, 50), max_size=3))


@st.composite
def configs_and_changes(draw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A configuration (with one nested table) and a variant changing some of its leaves."""
    base = draw(st.dictionaries(KEYS, VALUES, min_size=1, max_size=5))
    base["optim"] = draw(st.dictionaries(KEYS, VALUES, min_size=1, max_size=3))
    leaves = flat_keys(base)
    changed = draw(st.lists(st.sampled_from(leaves), unique=True, max_size=len(leaves)))
    changes = {}
    for key in changed:
        new = draw(VALUES)
        if new != lookup(base, key) and type(new) is type(lookup(base, key)):
            changes[key] = new
    return base, changes


def _apply(config: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = {**config, "optim": dict(config["optim"])}
    for key, value in changes.items():
        if key.startswith("optim.") and key not in config:
            out["optim"][key.split(".", 1)[1]] = value
        else:
            out[key] = value
    return out


def _argparse_options(words: list[str]) -> dict[str, tuple[str, ...]]:
    """``--key value ...`` words back to key -> the words given for it (the way argparse reads them)."""
    out: dict[str, tuple[str, ...]] = {}
    key = ""
    for w in words:
        if w.startswith("--"):
            name, eq, value = w[2:].partition("=")
            key = name[3:] if name.startswith("no-") and not eq else name
            out[key] = (value,) if eq else (("false",) if name != key else ())
            if eq or name != key:
                key = ""
        else:
            assert key, words
            out[key] += (w,)
    return out


@settings(max_examples=300, deadline=None)
@given(configs_and_changes(), st.sampled_from(["hydra", "argparse"]))
def test_a_variants_command_differs_from_the_bases_exactly_in_its_changed_keys(case, style):
    base, changes = case
    variant = _apply(base, changes)
    template = parse_template("python train.py {args} --seed {seed} > {out}", style)
    words = {
        name: template.render(config, 3, "c.json", "m.json").words()
        for name, config in (("base", base), ("variant", variant))
    }
    # the shell gives the script exactly the words config_args wrote, whatever the strings hold
    assert words["variant"] == [
        "python",
        "train.py",
        *config_args(variant, style),
        "--seed",
        "3",
        ">",
        "m.json",
    ]
    if style == "hydra":
        differ = set(words["variant"]) ^ set(words["base"])
        assert {w.split("=", 1)[0] for w in differ} == set(changes)
    else:
        b, v = (_argparse_options(words[n][2:-4]) for n in ("base", "variant"))
        assert b.keys() == v.keys()
        assert {k for k in b if b[k] != v[k]} == set(changes)


@settings(max_examples=200, deadline=None)
@given(configs_and_changes())
def test_key_placeholders_change_exactly_the_changed_keys_words(case):
    base, changes = case
    variant = _apply(base, changes)
    keys = [k for k in flat_keys(base) if not isinstance(lookup(base, k), dict)]
    template = parse_template(" ".join(f"--{k} {{{k}}}" for k in keys) + " {out}")
    b = template.render(base, 0, "c", "m").values
    v = template.render(variant, 0, "c", "m").values
    assert {name for (name, x), (_, y) in zip(b, v, strict=True) if x != y} == set(changes)


@pytest.mark.parametrize(
    ("text", "needle", "offset"),
    [
        ("awk '{print $1}' {out}", 'the brace at column 6: "{print $1}\' {out}" is neither', 5),
        ("python t.py {} {out}", "neither a placeholder nor escaped", 12),
        ("python t.py { hidden } {out}", "neither a placeholder nor escaped", 12),
        (
            "python t.py hidden} {out}",
            "the brace at column 19: '} {out}' closes no placeholder",
            18,
        ),
        ("python t.py {hidden {out}", "neither a placeholder nor escaped", 12),
    ],
)
def test_a_brace_that_is_neither_a_placeholder_nor_escaped_is_refused(text, needle, offset):
    with pytest.raises(TemplateError, match="brace") as info:
        parse_template(text)
    assert needle in str(info.value) and info.value.offset == offset


def test_escaped_braces_are_literal_and_placeholders_keep_their_quote():
    template = parse_template("""awk '{{print $1}}' "{name}" '{x}' {{out}} {out}""")
    assert [(p.name, p.slot) for p in template.placeholders] == [
        ("name", Slot(False, '"')),
        ("x", Slot(False, "'")),
        ("out", Slot(False, "")),
    ]
    line = template.render({"name": "adam", "x": 3}, 0, "c.json", "/tmp/a b/m.json")
    assert line.text == """awk '{print $1}' "adam" '3' {out} '/tmp/a b/m.json'"""
    assert line.values == (("name", "adam"), ("x", "3"), ("out", "'/tmp/a b/m.json'"))
    # one simple command: run as this argv, with no shell
    assert line.argv == ("awk", "{print $1}", "adam", "3", "{out}", "/tmp/a b/m.json")


def test_a_value_that_is_not_plain_inside_a_quoted_script_is_refused_with_the_safe_spelling():
    template = parse_template('sh -c "python t.py --name {name}" > {out}', "argparse")
    assert template.render({"name": "adam"}, 0, "c", "m").words() == [
        "sh",
        "-c",
        "python t.py --name adam",
        ">",
        "m",
    ]
    with pytest.raises(
        TemplateError,
        match=r"\{name\} stands in text a program reads as code .* its value 'a b' is not plain "
        r".* give it as an argument of its own: sh -c '... \"\$1\"' sh \{name\}$",
    ):
        template.render({"name": "a b"}, 0, "c", "m")


def test_unknown_keys_and_tables_are_refused_with_the_keys_there_are():
    config = {"hidden": 32, "optim": {"lr": 0.1, "betas": [0.9, 0.99]}}
    with pytest.raises(
        TemplateError,
        match=r"\{lr\} names no configuration key \(did you mean \{optim.lr\}\?\); "
        r"keys: hidden, optim.betas, optim.lr",
    ):
        parse_template("python t.py {lr} {out}").check_keys(config)
    with pytest.raises(
        TemplateError,
        match=r"\{optim\} names a table; name one of its keys \(\{optim.betas\}, "
        r"\{optim.lr\}\) or use \{args\}",
    ):
        parse_template("python t.py {optim} {out}").check_keys(config)
    parse_template("python t.py {optim.lr} {hidden} {args} {seed} {config} {out}").check_keys(
        config
    )


def test_how_each_kind_of_value_is_written():
    config = {
        "s": "a b",
        "n": "3",
        "t": "true",
        "f": 1e-5,
        "neg": "-x",
        "b": False,
        "l": [1, 2],
        "o": {"k": "v"},
    }
    assert config_args(config, "hydra") == [
        "s='a b'",
        "n='3'",
        "t='true'",
        "f=1e-05",
        "neg='-x'",
        "b=false",
        "l=[1,2]",
        "o.k=v",
    ]
    assert config_args(config, "argparse") == [
        "--s",
        "a b",
        "--n",
        "3",
        "--t",
        "true",
        "--f",
        "1e-05",
        "--neg=-x",
        "--no-b",
        "--l",
        "1",
        "2",
        "--o.k",
        "v",
    ]
    assert hydra_value("it's") == "'it\\'s'"
    line = parse_template("t {args} {l} {out}", "argparse").render({"l": [1, 2]}, 0, "c", "m")
    assert line.words() == ["t", "--l", "1", "2", "1", "2", "m"]
    with pytest.raises(TemplateError, match="argparse flags cannot write") as info:
        parse_template("t {args} {out}", "argparse").render({"l": [[1], [2]]}, 0, "c", "m")
    assert info.value.offset == 2
    assert shlex.split(
        parse_template("{args} {out}").render({"p": "$(rm -rf x)"}, 0, "c", "m").text
    ) == ["p='$(rm -rf x)'", "m"]


PIECES = st.one_of(
    st.text(alphabet="ab =-./$:;|&()<>\n\t", max_size=6),
    st.sampled_from(["{{", "}}", "{h}", "{o.lr}"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=12))
def test_escaped_braces_become_braces_and_placeholders_their_values_nothing_else_changes(pieces):
    text = "".join(pieces) + " {out}"
    expected = (
        "".join({"{{": "{", "}}": "}", "{h}": "32", "{o.lr}": "0.5"}.get(p, p) for p in pieces)
        + " m.json"
    )
    try:
        template = parse_template(text)
    except TemplateError as exc:  # text the shell cannot read: refused where it opens
        assert "is never closed" in str(exc) and text[exc.offset] in "$`'\""
        return
    assert template.render({"h": 32, "o": {"lr": 0.5}}, 0, "c.json", "m.json").text == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="{}{}ab.c_ -'\"\\", max_size=20))
def test_any_text_either_parses_or_is_refused_at_a_brace(text):
    try:
        template = parse_template(text)
    except TemplateError as exc:
        assert text[exc.offset] in "{}" or (
            "is never closed" in str(exc) and text[exc.offset] in "'\""
        )
        return
    # parsed: every brace was escaped or part of a placeholder, so writing it back gives the text
    back = "".join(
        p.replace("{", "{{").replace("}", "}}") if isinstance(p, str) else "{" + p.name + "}"
        for p in template.parts
    )
    assert back == text
