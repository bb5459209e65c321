"""The CLI's own error handling: usage errors are one message and exit code 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evalab.cli import expand_greedy


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["score", "--bogus"], "No such option"),
        (["nope"], "No such command"),
        (["score", "-r"], "requires an argument"),
    ],
)
def test_usage_errors_exit_2_without_traceback(args, needle):
    proc = subprocess.run(
        [sys.executable, "-m", "evalab", *args], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr


def test_no_arguments_prints_help():
    proc = subprocess.run([sys.executable, "-m", "evalab"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0
    assert "score" in proc.stdout and "compare" in proc.stdout


def test_expand_greedy_repeats_the_flag_for_each_value():
    argv = ["score", "-r", "ref", "-i", "a", "b", "-", "-m", "bleu", "chrf", "-f", "json"]
    assert expand_greedy(argv) == [
        "score", "-r", "ref", "-i", "a", "-i", "b", "-i", "-", "-m", "bleu", "-m", "chrf", "-f", "json",
    ]
    # commands without greedy options are left alone
    assert expand_greedy(["ppl", "--model", "m", "a", "b"]) == ["ppl", "--model", "m", "a", "b"]
