"""The CLI's own error handling: usage errors are one message and exit code 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evalab.cli.app import expand_greedy


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
    proc = subprocess.run(
        [sys.executable, "-m", "evalab"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0
    assert "score" in proc.stdout and "compare" in proc.stdout


def test_expand_greedy_repeats_the_flag_for_each_value():
    argv = ["score", "-r", "ref", "-i", "a", "b", "-", "-m", "bleu", "chrf", "-f", "json"]
    assert expand_greedy(argv) == [
        "score",
        "-r",
        "ref",
        "-i",
        "a",
        "-i",
        "b",
        "-i",
        "-",
        "-m",
        "bleu",
        "-m",
        "chrf",
        "-f",
        "json",
    ]
    # commands without greedy options are left alone
    assert expand_greedy(["ppl", "--model", "m", "a", "b"]) == ["ppl", "--model", "m", "a", "b"]


def _segments(path, n: int, word: str) -> str:
    path.write_text(
        "".join(f"{word} {i} and more words in line {i}\n" for i in range(n)), encoding="utf-8"
    )
    return str(path)


def test_fast_exit_delivers_all_output_and_the_exit_code(tmp_path):
    """score/compare end with os._exit after flushing: nothing may be lost or changed."""
    ref = _segments(tmp_path / "ref.txt", 3000, "the")
    sys_a = _segments(tmp_path / "a.txt", 3000, "a")
    sys_b = _segments(tmp_path / "b.txt", 3000, "the")
    cmd = [
        sys.executable,
        "-m",
        "evalab",
        "compare",
        "-r",
        ref,
        "-i",
        sys_a,
        sys_b,
        "-m",
        "bleu",
        "chrf",
        "-f",
        "json",
        "-q",
        "--n-samples",
        "50",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    import json

    rows = json.loads(proc.stdout)  # complete, parseable JSON
    assert len(rows) == 4 and rows[-1]["system"].endswith("b.txt")
    short = _segments(tmp_path / "short.txt", 10, "a")
    proc = subprocess.run([*cmd[:7], short, *cmd[8:]], capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "line count" in proc.stderr and proc.stdout == ""


def test_fast_exit_into_a_closed_pipe_is_quiet(tmp_path):
    ref = _segments(tmp_path / "ref.txt", 20, "the")
    hyps = [_segments(tmp_path / f"s{i}.txt", 20, "the") for i in range(300)]
    # `evalab score ... | head -c 20`: the reader leaves after 20 bytes of ~250 KB, more
    # than a pipe holds, so the writer gets EPIPE
    score = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evalab",
            "score",
            "-r",
            ref,
            "-i",
            *hyps,
            "-m",
            "bleu",
            "chrf",
            "-f",
            "json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert score.stdout is not None and score.stderr is not None
    score.stdout.read(20)
    score.stdout.close()
    err = score.stderr.read().decode()
    assert score.wait(timeout=120) == 0
    assert "Traceback" not in err and "Exception ignored" not in err
