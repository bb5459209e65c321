"""``--set`` through the real entry point: a setting given twice with two values is refused."""

from __future__ import annotations

import pytest
from tests.cli.refusal import assert_refused, evalab


@pytest.fixture
def work(tmp_path):
    (tmp_path / "ref.txt").write_text("The cat sat\na dog\n")
    (tmp_path / "hyp.txt").write_text("the cat sat\na dog\n")
    return tmp_path


@pytest.mark.parametrize(
    ("sets", "needle"),
    [
        # the last one used to win silently: the table said lowercase was off, the user asked for both
        (
            ["-s", "bleu.lowercase=true", "-s", "bleu.lowercase=false"],
            "bleu.lowercase is already set by --set 'bleu.lowercase=true'",
        ),
        (
            ["-s", "lowercase=true", "-s", "chrf.lowercase=false"],
            "chrf.lowercase is already set by --set 'lowercase=true'",
        ),
    ],
)
def test_a_setting_given_twice_with_two_values_is_refused(work, sets, needle):
    assert_refused(
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "-m", "bleu", "chrf", *sets),
        needle,
        watch=(work,),
        cwd=work,
    )


def test_the_same_value_twice_is_accepted(work):
    run = evalab(
        "score",
        "-r",
        "ref.txt",
        "-i",
        "hyp.txt",
        "-s",
        "bleu.lowercase=true",
        "-s",
        "lowercase=1",
        cwd=work,
    )
    assert run.returncode == 0, run.stderr
    assert "case:lc" in run.stdout
