"""``evalab compare --test mcnemar``: discordant counts, p-values, refusal of graded metrics."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalab.stats.mcnemar import mcnemar_test

REF = ["Paris", "Berlin", "Rome", "Madrid", "Oslo", "Bern", "Vienna", "Prague"]
BASE = ["Paris", "Berlin", "x", "y", "Oslo", "z", "Vienna", "w"]
SYS = ["Paris", "q", "Rome", "Madrid", "Oslo", "Bern", "Vienna", "Prague"]


@pytest.fixture
def files(tmp_path):
    paths = []
    for name, lines in (("ref", REF), ("base", BASE), ("sys", SYS)):
        p = tmp_path / f"{name}.txt"
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(str(p))
    return paths


def test_json_has_discordant_counts_and_exact_p(run_cli, files) -> None:
    ref, base, other = files
    res = run_cli(
        "compare",
        "-r",
        ref,
        "-i",
        base,
        other,
        "-m",
        "exact_match",
        "--test",
        "mcnemar",
        "-f",
        "json",
    )
    assert res.exit_code == 0, res.stderr
    rows = json.loads(res.stdout)
    assert rows[0]["baseline"] and rows[0]["p_value"] is None
    expected = mcnemar_test(
        np.array([r == h for r, h in zip(REF, BASE, strict=True)]),
        np.array([r == h for r, h in zip(REF, SYS, strict=True)]),
    )
    assert (rows[1]["baseline_only"], rows[1]["system_only"]) == (1, 4)
    assert rows[1]["p_value"] == expected.p_value == pytest.approx(0.375)
    assert rows[1]["method"] == "exact"
    assert rows[1]["delta"] == pytest.approx(3 / 8)
    assert "test:mcnemar" in rows[1]["signature"]


def test_table_shows_the_counts(run_cli, files) -> None:
    ref, base, other = files
    res = run_cli(
        "compare",
        "-r",
        ref,
        "-i",
        base,
        other,
        "-m",
        "accuracy",
        "--test",
        "mcnemar",
        "--correct",
        "holm",
    )
    assert res.exit_code == 0, res.stderr
    assert "base only" in res.stdout and "system only" in res.stdout and "p (Holm)" in res.stdout


def test_graded_metric_is_refused_with_one_line(run_cli, files) -> None:
    ref, base, other = files
    res = run_cli("compare", "-r", ref, "-i", base, other, "-m", "bleu", "--test", "mcnemar")
    assert res.exit_code == 2
    assert res.stdout == ""
    assert (
        res.stderr.count("\n") == 1 and "--test mcnemar needs a right/wrong outcome" in res.stderr
    )


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        # dropped in silence: McNemar's test is exact, and only ar adds a separate bootstrap
        (
            ["--test", "mcnemar", "-m", "exact_match", "-n", "5"],
            "-n/--n-samples applies to --test bs and ar only, not --test mcnemar",
        ),
        (["--ci-n", "50"], "--ci-n applies to --test ar only, not --test bs"),
        (
            ["--test", "mcnemar", "-m", "exact_match", "--ci-n", "0"],
            "--ci-n applies to --test ar only",
        ),
    ],
)
def test_an_option_the_test_does_not_use_is_refused(tmp_path, extra, needle):
    from tests.cli.refusal import assert_refused

    for name, text in (
        ("ref.txt", "a\nb\nc\n"),
        ("base.txt", "a\nb\nx\n"),
        ("sys.txt", "a\ny\nc\n"),
    ):
        (tmp_path / name).write_text(text)
    assert_refused(
        ("compare", "-r", "ref.txt", "-i", "base.txt", "sys.txt", *extra),
        needle,
        watch=(tmp_path,),
        cwd=tmp_path,
    )
