"""Refusals of segments no metric should be run on, through the real entry point.

Before these checks a UTF-16 file without byte-order mark was scored as NUL-laden garbage,
and one very long line made TER exhaust memory (a MemoryError traceback) and WER or CER
run for hours.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli.refusal import assert_refused


@pytest.fixture
def work(tmp_path) -> Path:
    (tmp_path / "ref.txt").write_text("the cat sat on the mat\na dog\n")
    (tmp_path / "hyp.txt").write_text("the cat sat on a mat\na dog\n")
    return tmp_path


@pytest.mark.parametrize("which", ["-r", "-i"])
@pytest.mark.parametrize("command", ["score", "compare"])
def test_utf16_without_bom_is_refused_not_scored(work, which, command):
    text = "the cat sat on the mat\na dog\n".encode(
        "utf-16-le"
    )  # valid UTF-8: a NUL after every letter
    (work / "wide.txt").write_bytes(text)
    ref, hyp = ("wide.txt", "hyp.txt") if which == "-r" else ("ref.txt", "wide.txt")
    extra = ["ref.txt"] if command == "compare" else []
    assert_refused(
        (command, "-r", ref, "-i", hyp, *extra),
        "wide.txt: line 1 contains a NUL byte",
        watch=(work,),
        cwd=work,
    )


def _long_pair(folder: Path, words: int) -> None:
    (folder / "long.ref").write_text(" ".join(["word"] * words) + "\na short one\n")
    (folder / "long.hyp").write_text(" ".join(["other"] * words) + "\na short one\n")


@pytest.mark.parametrize(
    ("metric", "words", "needle"),
    [
        ("ter", 6_000, "ter's edit distance would fill 36,000,000 cells"),  # was ~15 s and ~0.5 GB
        ("wer", 200_000, "wer's edit distance would fill 40,000,000,000 cells"),  # was ~30 s
        (
            "cer",
            40_000,
            "cer's edit distance would fill 47,999,560,001 cells",
        ),  # 200 kB lines: was ~40 s
    ],
)
def test_a_segment_too_long_for_an_edit_distance_is_refused(work, metric, words, needle):
    _long_pair(work, words)
    assert_refused(
        ("score", "-r", "long.ref", "-i", "long.hyp", "-m", "bleu", metric),
        needle,
        watch=(work,),
        cwd=work,
    )
    assert_refused(
        ("compare", "-r", "long.ref", "-i", "long.hyp", "long.ref", "-m", metric),
        needle,
        watch=(work,),
        cwd=work,
    )


def test_other_metrics_still_score_a_long_segment(work):
    from tests.cli.refusal import evalab

    _long_pair(work, 200_000)
    run = evalab(
        "score", "-r", "long.ref", "-i", "long.hyp", "-m", "bleu", "chrf", "-f", "json", cwd=work
    )
    assert run.returncode == 0, run.stderr
    assert '"metric": "chrf"' in run.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("score", "-r", "one.ref", "-i", "one.hyp", "--ci"), "--ci needs at least 2 segments"),
        (
            ("compare", "-r", "one.ref", "-i", "one.ref", "one.hyp"),
            "--test bs needs at least 2 segments",
        ),
        (
            ("compare", "-r", "one.ref", "-i", "one.ref", "one.hyp", "--test", "ar"),
            "--test ar needs at least 2 segments",
        ),
    ],
)
def test_resampling_one_segment_is_refused(work, args, needle):
    # was: a warning, then "0.0 ± 0.0", a [x, x] interval and p = 1.00000 printed as findings
    (work / "one.ref").write_text("the cat sat on the mat\n")
    (work / "one.hyp").write_text("the cat sat on a mat\n")
    assert_refused(args, needle, watch=(work,), cwd=work)


def test_one_segment_still_scores_and_mcnemar_stays_exact(work):
    from tests.cli.refusal import evalab

    (work / "one.ref").write_text("a\n")
    (work / "one.hyp").write_text("b\n")
    assert evalab("score", "-r", "one.ref", "-i", "one.hyp", cwd=work).returncode == 0
    run = evalab(
        "compare",
        "-r",
        "one.ref",
        "-i",
        "one.ref",
        "one.hyp",
        "-m",
        "exact_match",
        "--test",
        "mcnemar",
        cwd=work,
    )
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize(
    ("line", "settings", "needle"),
    [
        # one whitespace word each: the old bound counted 1 x 1 and TER ended in MemoryError
        (
            "漢字" * 15_000,
            ["--set", "normalized=true", "--set", "asian_support=true"],
            "line 1 has 30,000 TER tokens against a reference of 30,000: ter's edit distance would fill",
        ),
        (
            "a," * 20_000,
            ["--set", "normalized=true"],
            "line 1 has 40,000 TER tokens against a reference of 40,000",
        ),
    ],
)
@pytest.mark.parametrize("command", ["score", "compare", "meta-eval"])
def test_ter_counts_its_own_tokens(work, line, settings, needle, command):
    (work / "long.ref").write_text(line + "\na b\nc d\n", encoding="utf-8")
    (work / "long.hyp").write_text(line[::-1] + "\na b\nc d\n", encoding="utf-8")
    args = {
        "score": ("score", "-r", "long.ref", "-i", "long.hyp"),
        "compare": ("compare", "-r", "long.ref", "-i", "long.ref", "long.hyp"),
        "meta-eval": (
            "meta-eval",
            "--human",
            "ref.txt",
            "-r",
            "long.ref",
            "-i",
            "long.hyp",
            "long.ref",
        ),
    }[command]
    line = assert_refused((*args, "-m", "ter", *settings), needle, watch=(work,), cwd=work)
    assert line.startswith("evalab: error: long.")  # the system is named


def test_a_computed_ter_in_a_study_refuses_by_the_same_rule(run_cli, tmp_path):
    from tests.cli.test_ablate import outputs_study

    line = "a," * 20_000
    body = f'open(os.path.join(out_dir, "hyp.txt"), "w").write("{line}\\nx\\ny\\n")\nreturn {{"acc": 0.5}}'
    tables = '[metrics.ter]\nmetric = "ter"\noutputs = "hyp.txt"\nreferences = ["data/ref.txt"]\nsettings = { normalized = true }\n'
    study = outputs_study(tmp_path, body, tables=tables, seeds=(0,))
    (tmp_path / "data" / "ref.txt").write_text(f"{line}\nx\ny\n", encoding="utf-8")
    assert run_cli("ablate", "run", study, "--db", tmp_path / "s.db", "-q").exit_code == 1
    status = run_cli("ablate", "status", study, "--db", tmp_path / "s.db").stdout
    assert "40,000 TER tokens against a reference of 40,000" in status, status
