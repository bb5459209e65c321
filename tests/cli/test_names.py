"""System names: ``-i NAME=PATH``, and one table name per system in score, compare and meta-eval."""

from __future__ import annotations

import json

import pytest
from tests.cli.refusal import assert_refused

from evalab.cli.names import named_inputs

REF = ["the cat sat on the mat", "a dog barked", "it rains today"]
HYPS = {
    "gt.en-de.hyp.Sys-A.de": ["the cat sat on a mat", "a dog barked", "it rained today"],
    "gt.en-de.hyp.Sys-B.de": ["a cat sat on the mat", "the dog barks", "it rains today"],
    "gt.en-de.hyp.Sys-C.de": ["cat on mat", "dog", "rain"],
}


@pytest.fixture
def data(tmp_path):
    (tmp_path / "ref.de").write_text("\n".join(REF) + "\n", encoding="utf-8")
    paths = []
    for name, lines in HYPS.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(str(tmp_path / name))
    return str(tmp_path / "ref.de"), paths


def _table_names(stdout: str) -> list[str]:
    return [line.split("│")[1].strip() for line in stdout.splitlines() if line.startswith("│")]


def test_score_and_compare_tables_show_the_same_short_names(run_cli, data):
    ref, paths = data
    scored = run_cli("score", "-r", ref, "-i", *paths, "-m", "chrf")
    compared = run_cli("compare", "-r", ref, "-i", *paths, "-m", "chrf", "-n", "50", "-q")
    ranked = run_cli(
        "compare",
        "-r",
        ref,
        "-i",
        *paths,
        "-m",
        "chrf",
        "-n",
        "50",
        "-q",
        "--rank",
        "--correct",
        "none",
    )
    for res in (scored, compared, ranked):
        assert res.exit_code == 0, res.stderr
    assert (
        _table_names(scored.stdout) == _table_names(compared.stdout) == ["Sys-A", "Sys-B", "Sys-C"]
    )
    assert sorted(_table_names(ranked.stdout)) == ["Sys-A", "Sys-B", "Sys-C"]


def test_name_equals_path_names_the_system_everywhere(run_cli, data, tmp_path):
    ref, paths = data
    args = ["-i", f"base={paths[0]}", f"B v2={paths[1]}", paths[2]]
    scored = run_cli("score", "-r", ref, *args, "-m", "chrf")
    assert _table_names(scored.stdout) == ["base", "B v2", "Sys-C"]
    rows = json.loads(run_cli("score", "-r", ref, *args, "-m", "chrf", "-f", "json").stdout)
    assert [r["system"] for r in rows] == ["base", "B v2", "gt.en-de.hyp.Sys-C.de"]
    compared = json.loads(
        run_cli("compare", "-r", ref, *args, "-m", "chrf", "-n", "50", "-q", "-f", "json").stdout
    )
    assert [r["system"] for r in compared] == ["base", "B v2", "gt.en-de.hyp.Sys-C.de"]
    table = run_cli("compare", "-r", ref, *args, "-m", "chrf", "-n", "50", "-q")
    assert _table_names(table.stdout) == ["base", "B v2", "Sys-C"]


def test_meta_eval_uses_the_given_names(run_cli, tmp_path):
    n = 12
    (tmp_path / "ref.txt").write_text("".join(f"ref {i} a b\n" for i in range(n)))
    human, args = [], []
    for s, name in enumerate(["alpha", "beta", "gamma"]):
        path = tmp_path / f"out{s}.txt"
        path.write_text(
            "".join(f"ref {i} {'a' if s < 2 else 'x'} {'b' if s < 1 else 'y'}\n" for i in range(n))
        )
        args.append(f"{name}={path}")
        human += [f"{name}\t{i + 1}\t{-s + 0.1 * (i % 3)}" for i in range(n)]
    (tmp_path / "human.tsv").write_text("system\tsegment\tscore\n" + "\n".join(human) + "\n")
    res = run_cli(
        "meta-eval",
        "--human",
        tmp_path / "human.tsv",
        "-r",
        tmp_path / "ref.txt",
        "-i",
        *args,
        "-m",
        "chrf",
        "-n",
        "50",
        "--permutations",
        "0",
        "-q",
        "-f",
        "json",
    )
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["systems"] == ["alpha", "beta", "gamma"]


def test_a_file_whose_name_has_an_equals_sign_is_a_path(tmp_path):
    odd = tmp_path / "a=b.txt"
    odd.write_text("x\n")
    named = named_inputs([str(odd), f"nick={odd}"])
    assert named.paths == [str(odd), str(odd)]
    assert named_inputs(["out/a=b.txt"]).paths == ["out/a=b.txt"]  # a '/' before '=': a path


def test_bad_names_are_refused(data, tmp_path):
    ref, paths = data
    watch = (tmp_path,)
    assert_refused(("score", "-r", ref, "-i", f"={paths[0]}"), "no name before '='", watch=watch)
    assert_refused(("compare", "-r", ref, "-i", paths[0], "x="), "no file after '='", watch=watch)
    assert_refused(
        ("compare", "-r", ref, "-i", f"same={paths[0]}", f"same={paths[1]}"),
        "two systems are called 'same'",
        watch=watch,
    )
    assert_refused(
        ("score", "-r", ref, "-i", f"Sys-B={paths[0]}", paths[1]),
        "two systems are called 'Sys-B'",
        watch=watch,
    )


def test_a_glob_that_matches_nothing_says_so(run_cli, tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("a b c\n")
    pattern = str(tmp_path / "runs" / "*.txt")
    res = run_cli("compare", "-r", ref, "-i", pattern)
    assert res.exit_code == 2 and res.stderr.count("\n") == 1
    assert f"-i '{pattern}': no file matches this pattern" in res.stderr
    assert "baseline" not in res.stderr
