"""Long model jobs in a log (stderr redirected to a file, as under Slurm or nohup): a line
when the model loads and when it is ready, and progress lines counted in segments or
tokens at most every interval; ``-q`` silences all of it. The interval is set low through
``EVALAB_PROGRESS_INTERVAL`` so the test takes seconds, not minutes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cli.refusal import SRC
from tests.models.broken_lms import tiny_lm_builder
from tests.models.semantic_helpers import make_tiny_bert

pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("progress")
    (root / "ref.txt").write_text(
        "".join(f"the cat sat on the mat {i % 7}\n" for i in range(40)), encoding="utf-8"
    )
    (root / "hyp.txt").write_text(
        "".join(f"a red car sat on a mat {i % 5}\n" for i in range(40)), encoding="utf-8"
    )
    return {
        "root": root,
        "bert": make_tiny_bert(root / "tiny-bert"),
        "lm": tiny_lm_builder().build_tiny_lm(root / "tiny-gpt2", seed=0, positions=64),
    }


def _run_to_log(files: dict[str, Path], *args: object, interval: str = "0") -> tuple[int, str]:
    log = files["root"] / "err.txt"
    env = {
        **os.environ,
        "PYTHONPATH": str(SRC),
        "EVALAB_PROGRESS_INTERVAL": interval,
        "OMP_NUM_THREADS": "1",
    }
    with open(log, "wb") as err:
        proc = subprocess.run(
            [sys.executable, "-m", "evalab", *map(str, args)],
            cwd=files["root"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
            timeout=300,
            check=False,
        )
    return proc.returncode, log.read_text(encoding="utf-8")


def test_semsim_in_a_log(files):
    code, log = _run_to_log(
        files,
        "semsim",
        "-r",
        "ref.txt",
        "-i",
        "hyp.txt",
        "--model",
        files["bert"],
        "--batch-size",
        "4",
    )
    assert code == 0, log
    lines = log.splitlines()
    assert lines[0] == f"evalab: loading encoder ({files['bert']}) ..."
    assert re.match(r"evalab: encoder \(.*\) ready \(\d+\.\d s\)", lines[1])
    progress = [
        line
        for line in lines
        if re.match(r"evalab: embedding \(tiny-bert\): \d+/\d+ segments \(\d+%\)", line)
    ]
    assert len(progress) >= 2, log  # interval 0: a line per batch of 4 segments
    assert "Traceback" not in log


def test_score_bertscore_and_ppl_in_a_log(files):
    code, log = _run_to_log(
        files,
        "score",
        "-r",
        "ref.txt",
        "-i",
        "hyp.txt",
        "-m",
        "bertscore",
        "--model",
        files["bert"],
        "--set",
        "bertscore.batch_size=4",
    )
    assert code == 0, log
    assert "evalab: loading bertscore model (" in log and " segments (" in log
    code, log = _run_to_log(
        files,
        "ppl",
        "--model",
        files["lm"],
        "-i",
        "ref.txt",
        "--documents",
        "lines",
        "--batch-size",
        "2",
    )
    assert code == 0, log
    assert "evalab: loading language model (" in log
    assert re.search(r"evalab: language model: \d+/\d+ tokens \(\d+%\)", log), log


def test_quiet_and_short_jobs_write_nothing(files):
    code, log = _run_to_log(
        files, "semsim", "-r", "ref.txt", "-i", "hyp.txt", "--model", files["bert"], "-q"
    )
    assert code == 0 and log == ""
    # the default interval (10 s): a job of a second or two gives at most the load lines
    code, log = _run_to_log(
        files, "semsim", "-r", "ref.txt", "-i", "hyp.txt", "--model", files["bert"], interval=""
    )
    assert code == 0 and [line.split(" (")[0] for line in log.splitlines()] in (
        [],
        ["evalab: loading encoder", "evalab: encoder"],
    )
