"""``evalab score --ci`` in a log (stderr redirected to a file): the bootstrap says it is alive
in plain lines at most every ``EVALAB_PROGRESS_INTERVAL`` seconds, and ``-q`` silences it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cli.refusal import SRC


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ci-progress")
    (root / "ref.txt").write_text(
        "".join(f"the cat sat on the mat {i % 7}\n" for i in range(60)), encoding="utf-8"
    )
    (root / "hyp.txt").write_text(
        "".join(f"a red car sat on a mat {i % 5}\n" for i in range(60)), encoding="utf-8"
    )
    return root


def run_to_log(root: Path, *args: object, interval: str) -> tuple[int, str, str]:
    log = root / "err.txt"
    env = {**os.environ, "PYTHONPATH": str(SRC), "EVALAB_PROGRESS_INTERVAL": interval}
    with open(log, "wb") as err:
        proc = subprocess.run(
            [sys.executable, "-m", "evalab", "score", "-r", "ref.txt", "-i", "hyp.txt", *args],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            timeout=300,
            check=False,
        )
    return proc.returncode, proc.stdout.decode("utf-8"), log.read_text(encoding="utf-8")


LINE = re.compile(r"^evalab: bootstrap \(--ci\): [\d,]+/4,000 resamples \(\d+%\), [\d,.]+/s")


def test_bootstrap_progress_lines_in_a_log(files):
    code, out, err = run_to_log(
        files, "-m", "bleu", "chrf", "--ci", "-n", "2000", interval="0"
    )  # fmt: skip
    assert code == 0, err
    lines = err.splitlines()
    assert lines and all(LINE.match(line) for line in lines), err
    assert lines[-1].startswith("evalab: bootstrap (--ci): 4,000/4,000 resamples (100%)")
    # the scores are those of a run without progress lines
    code_q, out_q, err_q = run_to_log(
        files, "-m", "bleu", "chrf", "--ci", "-n", "2000", "-q", interval="0"
    )
    assert code_q == 0 and err_q == "" and out_q == out


def test_no_line_within_the_interval_or_without_ci(files):
    code, _, err = run_to_log(files, "-m", "chrf", "--ci", "-n", "500", interval="600")
    assert code == 0 and err == ""
    code, _, err = run_to_log(files, "-m", "chrf", interval="0")
    assert code == 0 and err == ""
