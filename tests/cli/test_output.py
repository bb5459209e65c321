"""``--out`` of every command: never one of the command's inputs, refused before any work
when it cannot be written, and written files get the mode ``open()`` would give them.

Every command runs in a subprocess (``python -m evalab``) as a user would run it.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from evalab.cli.output import check_out
from evalab.errors import SettingsError

from .refusal import assert_refused, evalab

TABLE = Path(__file__).resolve().parents[1] / "data" / "vi_seed001_table.tsv"
ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False


@pytest.fixture
def work(tmp_path) -> Path:
    """A folder with a reference, two systems, links to one of them, a study and logits."""
    (tmp_path / "ref.txt").write_text("the cat sat on the mat\nhello world\n", encoding="utf-8")
    (tmp_path / "hyp.txt").write_text("the cat sat on a mat\nhello there world\n", encoding="utf-8")
    (tmp_path / "sys2.txt").write_text("a cat sat\nhello world\n", encoding="utf-8")
    os.link(tmp_path / "hyp.txt", tmp_path / "hard.txt")
    os.symlink("hyp.txt", tmp_path / "soft.txt")
    (tmp_path / "pairs.tsv").write_text(
        "a cat\tthe world\nhello there\tsat on it\n", encoding="utf-8"
    )
    (tmp_path / "study.toml").write_text("[study]\nname = 'x'\n", encoding="utf-8")
    (tmp_path / "runs.db").write_bytes(b"")
    np.savez(tmp_path / "logits.npz", logits=np.zeros((2, 3)), labels=np.array([0, 1]))
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}", encoding="utf-8")
    return tmp_path


INPUT_AS_OUTPUT = [
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "-o", "hyp.txt"), "same file as -i hyp.txt"),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "-o", "ref.txt"), "same file as -r ref.txt"),
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "-o", "sub/../hyp.txt"),
        "same file as -i hyp.txt",
    ),
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "-o", "hard.txt"),
        "same file as -i hyp.txt",
    ),  # hard link
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "-o", "soft.txt"),
        "same file as -i hyp.txt",
    ),  # symlink
    (("score", "-r", "ref.txt", "-i", "soft.txt", "-o", "hyp.txt"), "same file as -i soft.txt"),
    (
        ("compare", "-r", "ref.txt", "-i", "hyp.txt", "sys2.txt", "-o", "ref.txt"),
        "same file as -r ref.txt",
    ),
    (
        ("compare", "-r", "ref.txt", "-i", "hyp.txt", "sys2.txt", "-o", "sys2.txt"),
        "same file as -i sys2.txt",
    ),
    (
        ("semsim", "-r", "ref.txt", "-i", "hyp.txt", "--model", TABLE, "-o", "hyp.txt"),
        "same file as -i hyp.txt",
    ),
    (
        ("semsim", "-r", "ref.txt", "-i", "hyp.txt", "--model", TABLE, "--explain-html", "ref.txt"),
        "--explain-html ref.txt is the same file as -r ref.txt",
    ),
    (
        (
            "semsim",
            "-r",
            "ref.txt",
            "-i",
            "hyp.txt",
            "--model",
            TABLE,
            "-o",
            "a.html",
            "--explain-html",
            "a.html",
        ),
        "same file as --out a.html",
    ),
    (
        ("semsim", "baseline", "--pairs", "pairs.tsv", "--model", TABLE, "-o", "pairs.tsv"),
        "same file as --pairs",
    ),
    (("ppl", "--logits", "logits.npz", "-o", "logits.npz"), "same file as --logits logits.npz"),
    (("ppl", "--model", "model", "-i", "hyp.txt", "-o", "hyp.txt"), "same file as -i hyp.txt"),
    (
        ("ppl", "--model", "model", "-i", "hyp.txt", "-o", "model/config.json"),
        "is a file inside --model model",
    ),
    (
        ("ablate", "report", "study.toml", "--db", "runs.db", "-o", "study.toml"),
        "same file as STUDY_FILE",
    ),
    (
        ("ablate", "report", "study.toml", "--db", "runs.db", "-o", "runs.db"),
        "same file as --db runs.db",
    ),
]


@pytest.mark.parametrize(
    ("args", "needle"),
    INPUT_AS_OUTPUT,
    ids=[" ".join(map(str, a[:1] + a[-2:])) for a, _ in INPUT_AS_OUTPUT],
)
def test_out_that_names_an_input_is_refused_before_reading(work, args, needle):
    assert_refused(args, needle, watch=(work,), cwd=work)


UNWRITABLE = [
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "-o", "/proc/evalab-report.txt"),
        "the folder /proc is not writable",
    ),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "-o", "/proc/self/x/y.txt"), "is not writable"),
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "-o", "ref.txt/report.txt"),
        "ref.txt is a file, not a folder",
    ),
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "-o", "model"),
        "--out model is a folder; give a file name",
    ),
    (("compare", "-r", "ref.txt", "-i", "hyp.txt", "sys2.txt", "-o", "model"), "is a folder"),
    (("ppl", "--logits", "logits.npz", "-o", "/proc/ppl.json"), "not writable"),
    (("ppl", "--logits", "logits.npz", "-o", ""), "--out is empty"),
    (
        ("semsim", "-r", "ref.txt", "-i", "hyp.txt", "--model", TABLE, "--explain-html", "model"),
        "is a folder",
    ),
    (("ablate", "report", "study.toml", "-o", "hyp.txt/x"), "is a file, not a folder"),
    (("demo", "--quick", "--out-dir", "hyp.txt"), "exists and is not a folder"),
    (("demo", "--quick", "--out-dir", "/proc/evalab-demo"), "not writable"),
]


@pytest.mark.parametrize(
    ("args", "needle"), UNWRITABLE, ids=[" ".join(map(str, a[:1] + a[-2:])) for a, _ in UNWRITABLE]
)
def test_unwritable_out_is_one_line(work, args, needle):
    assert_refused(args, needle, watch=(work,), cwd=work)


@pytest.mark.skipif(ROOT, reason="root writes into read-only folders")
def test_read_only_folder(work):
    ro = work / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        assert_refused(
            ("score", "-r", "ref.txt", "-i", "hyp.txt", "-o", "ro/out.txt"),
            "is not writable",
            watch=(work,),
            cwd=work,
        )
    finally:
        ro.chmod(0o755)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("umask", "expected"), [(0o022, 0o644), (0o007, 0o660)])
def test_new_outputs_get_the_umask_mode(work, umask, expected):
    commands = [
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "-o", "new/score.txt"),
        (
            "compare",
            "-r",
            "ref.txt",
            "-i",
            "hyp.txt",
            "sys2.txt",
            "-n",
            "50",
            "-f",
            "json",
            "-o",
            "compare.json",
        ),
        ("ppl", "--logits", "logits.npz", "-f", "json", "-o", "ppl.json"),
        (
            "semsim",
            "-r",
            "ref.txt",
            "-i",
            "hyp.txt",
            "--model",
            TABLE,
            "-q",
            "-o",
            "semsim.txt",
            "--explain-html",
            "align.html",
        ),
        (
            "semsim",
            "baseline",
            "--pairs",
            "pairs.tsv",
            "--model",
            TABLE,
            "-q",
            "-o",
            "baseline.tsv",
        ),
    ]
    inputs = {p: p.read_bytes() for p in work.iterdir() if p.is_file()}
    for args in commands:
        run = evalab(*args, cwd=work, umask=umask)
        assert run.returncode == 0, (args, run.stderr)
    for name in (
        "new/score.txt",
        "compare.json",
        "ppl.json",
        "semsim.txt",
        "align.html",
        "baseline.tsv",
    ):
        assert mode(work / name) == expected, name
    assert {p: p.read_bytes() for p in inputs} == inputs


def test_replaced_output_keeps_its_mode_and_link(work):
    target = work / "report.txt"
    target.write_text("old\n")
    target.chmod(0o640)
    os.symlink("report.txt", work / "link.txt")
    for out in ("report.txt", "link.txt"):
        run = evalab("score", "-r", "ref.txt", "-i", "hyp.txt", "-o", out, cwd=work, umask=0o077)
        assert run.returncode == 0, run.stderr
        assert mode(target) == 0o640
    assert (work / "link.txt").is_symlink()  # written through the link, not replaced by a file
    assert "bleu" in target.read_text().lower()
    assert (
        sorted(p.name for p in work.iterdir() if p.name.startswith(".")) == []
    )  # no temporary left


def test_check_out_in_process(tmp_path):
    (tmp_path / "in.txt").write_text("x\n")
    check_out(None, [("-i", str(tmp_path / "in.txt"))])
    check_out(
        str(tmp_path / "new" / "deeper" / "out.txt"),
        [("-i", str(tmp_path / "in.txt")), ("-r", "-")],
    )
    with pytest.raises(SettingsError, match="same file as -i"):
        check_out(str(tmp_path / "in.txt"), [("-i", str(tmp_path / "in.txt"))])
    check_out(str(tmp_path), [], folder=True)
    with pytest.raises(SettingsError, match="exists and is not a folder"):
        check_out(str(tmp_path / "in.txt"), [], folder=True)


def test_markdown_table_escapes_pipes_and_keeps_footer_lines():
    from evalab.report.markdown import markdown_table
    from evalab.report.table import Number, Table

    # the one Markdown writer (report.markdown) escapes the footer lines too: a system named
    # *bold* in a signature would otherwise print in italics
    text = markdown_table(
        Table(["system", "BLEU"], [["a|b", Number(31.2, 1)]], ["*bold*: nrefs:1|case:mixed"])
    )
    assert text.splitlines()[:3] == ["| system | BLEU |", "|:--|--:|", "| a\\|b | 31.2 |"]
    assert text.splitlines()[-1] == "\\*bold\\*: nrefs:1\\|case:mixed  "


def test_json_objects_lead_with_system_metric_score():
    from evalab.cli.output import ordered_row

    row = ordered_row({"metric": "bleu", "p_value": 0.1, "score": 3.0, "system": "a"})
    assert list(row) == ["system", "metric", "score", "p_value"]


def test_score_and_compare_json_share_the_key_order(run_cli, tmp_path):
    import json

    for name, text in (
        ("ref.txt", "a b c\nd e f\n"),
        ("x.txt", "a b c\nd e\n"),
        ("y.txt", "a b\nd e f\n"),
    ):
        (tmp_path / name).write_text(text, encoding="utf-8")
    score = run_cli(
        "score", "-r", tmp_path / "ref.txt", "-i", tmp_path / "x.txt", "-m", "chrf", "-f", "json"
    )
    compare = run_cli(
        "compare",
        "-r",
        tmp_path / "ref.txt",
        "-i",
        tmp_path / "x.txt",
        tmp_path / "y.txt",
        "-m",
        "chrf",
        "-n",
        "20",
        "-q",
        "-f",
        "json",
    )
    assert score.exit_code == 0 and compare.exit_code == 0, score.stderr + compare.stderr
    for rows in (json.loads(score.stdout), json.loads(compare.stdout)):
        assert [list(r)[:3] for r in rows] == [["system", "metric", "score"]] * len(rows)


# ---------------------------------------------------------------- streams, devices, folders
SCORE = ("score", "-r", "ref.txt", "-i", "hyp.txt")
NOT_A_FILE = [
    ((*SCORE, "-o", "fifo"), "--out fifo is a FIFO (named pipe), not a regular file"),
    ((*SCORE, "--segments", "fifo"), "--segments fifo is a FIFO (named pipe)"),
    ((*SCORE, "-o", "/dev/null"), "--out /dev/null is a character device, not a regular file"),
    ((*SCORE, "-o", "sock"), "--out sock is a socket, not a regular file"),
    ((*SCORE, "-o", "fifo-link"), "--out fifo-link is a FIFO"),  # a symbolic link to the FIFO
    (("compare", "-r", "ref.txt", "-i", "hyp.txt", "sys2.txt", "-o", "fifo"), "is a FIFO"),
    (
        (
            "meta-eval",
            "--human",
            "ref.txt",
            "-r",
            "ref.txt",
            "-i",
            "hyp.txt",
            "--save-scores",
            "fifo",
        ),
        "is a FIFO",
    ),
    (
        ("semsim", "-r", "ref.txt", "-i", "hyp.txt", "--model", TABLE, "--explain-html", "fifo"),
        "is a FIFO",
    ),
    (("ppl", "--logits", "logits.npz", "-o", "fifo"), "is a FIFO"),
    (("ablate", "report", "study.toml", "--db", "runs.db", "-o", "fifo"), "is a FIFO"),
    ((*SCORE, "-o", "newdir/"), "--out newdir/ ends in '/', which names a folder"),
    ((*SCORE, "--segments", "newdir/"), "--segments newdir/ ends in '/'"),
    (("compare", "-r", "ref.txt", "-i", "hyp.txt", "sys2.txt", "-o", "newdir/"), "ends in '/'"),
    (("ppl", "--logits", "logits.npz", "-o", "newdir/"), "ends in '/'"),
    (("ablate", "status", "study.toml", "--db", "runs.db", "-o", "newdir/"), "ends in '/'"),
    ((*SCORE, "--segments", "-"), "--segments - writes to stdout, and so does the output of --out"),
    (
        (*SCORE, "-o", "-", "--segments", "/dev/stdout"),
        "--segments /dev/stdout writes to stdout, and so does --out -",
    ),
    (
        (
            "meta-eval",
            "--human",
            "ref.txt",
            "-r",
            "ref.txt",
            "-i",
            "hyp.txt",
            "--save-scores",
            "/dev/stdout",
        ),
        "writes to stdout",
    ),
    (("demo", "--quick", "--out-dir", "-"), "--out-dir - names the stdout stream; give a folder"),
]


@pytest.fixture
def special(work) -> Path:
    import socket

    os.mkfifo(work / "fifo")
    os.symlink("fifo", work / "fifo-link")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(work / "sock"))
    yield work
    sock.close()


@pytest.mark.parametrize(
    ("args", "needle"), NOT_A_FILE, ids=[" ".join(map(str, a[:1] + a[-2:])) for a, _ in NOT_A_FILE]
)
def test_an_output_that_is_no_regular_file_is_refused(special, args, needle):
    # was: the FIFO or device replaced by a regular file; `newdir/` written as a file `newdir`
    assert_refused(args, needle, watch=(special,), cwd=special)
    assert not (special / "newdir").exists()


@pytest.mark.parametrize("out", ["-", "/dev/stdout"])
@pytest.mark.parametrize(
    "args",
    [
        SCORE,
        ("compare", "-r", "ref.txt", "-i", "hyp.txt", "sys2.txt", "-n", "20"),
        ("ppl", "--logits", "logits.npz"),
        ("semsim", "-r", "ref.txt", "-i", "hyp.txt", "--model", TABLE, "-q"),
        (
            "meta-eval",
            "--human",
            "human.tsv",
            "-r",
            "ref.txt",
            "-i",
            "hyp.txt",
            "sys2.txt",
            "ref.txt",
            "-n",
            "20",
            "--permutations",
            "0",
        ),
    ],
    ids=lambda a: a[0] if isinstance(a, tuple) else a,
)
def test_dash_and_dev_stdout_write_to_stdout(work, args, out):
    # was: "/dev/stdout: No such file or directory" (the rename onto /proc/self/fd/1)
    rows = [
        f"{name}\t{k}\t{0.1 * k + i}"
        for i, name in enumerate(["hyp.txt", "sys2.txt", "ref.txt"])
        for k in (1, 2)
    ]
    (work / "human.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    before = sorted(p.name for p in work.iterdir())
    run = evalab(*args, "-f", "json", "-o", out, cwd=work)
    assert run.returncode == 0, run.stderr
    json.loads(run.stdout)
    assert sorted(p.name for p in work.iterdir()) == before


def test_segments_to_a_stream_beside_a_file(work):
    run = evalab(*SCORE, "-o", "score.json", "-f", "json", "--segments", "-", cwd=work)
    assert run.returncode == 0, run.stderr
    assert [json.loads(line)["segment"] for line in run.stdout.splitlines()] == [1, 2]
    assert json.loads((work / "score.json").read_text())[0]["metric"] == "bleu"
    run = evalab(*SCORE, "-f", "json", "-o", "/dev/stderr", cwd=work)
    assert (
        run.returncode == 0 and run.stdout == "" and json.loads(run.stderr)[0]["metric"] == "bleu"
    )


# ---------------------------------------------------------------- a property over input trees
def _tree(root: Path) -> None:
    """Inputs with every way to name them twice: symbolic links (to files and folders), hard
    links, ``..`` and a model folder nested in folders."""
    (root / "ref.txt").write_text("the cat sat on the mat\nhello world\n", encoding="utf-8")
    (root / "hyp.txt").write_text("the cat sat on a mat\nhello there world\n", encoding="utf-8")
    lm = root / "models" / "a" / "b" / "lm"
    lm.mkdir(parents=True)
    (lm / "config.json").write_text("{}", encoding="utf-8")
    (lm / "weights.bin").write_bytes(b"weights")
    (root / "sub").mkdir()
    os.symlink("ref.txt", root / "link-ref.txt")
    os.symlink("../hyp.txt", root / "sub" / "up-hyp.txt")
    os.symlink("a/b/lm", root / "models" / "lm-link")
    os.link(lm / "weights.bin", root / "hard.bin")
    os.link(root / "hyp.txt", root / "sub" / "hard-hyp.txt")
    # a word-vector table scores in a blink: a command reading it runs to the end and writes
    (root / "models" / "a" / "b" / "table.tsv").write_bytes(TABLE.read_bytes())
    os.symlink("a/b/table.tsv", root / "models" / "table-link.tsv")
    os.link(root / "models" / "a" / "b" / "table.tsv", root / "hard-table.tsv")


#: how an output may be spelled: every input by another name, and new files
OUT_NAMES = [
    "ref.txt",
    "hyp.txt",
    "./hyp.txt",
    "sub/../ref.txt",
    "link-ref.txt",
    "sub/up-hyp.txt",
    "sub/hard-hyp.txt",
    "hard.bin",
    "models/a/b/lm/config.json",
    "models/lm-link/weights.bin",
    "models/a/../a/b/lm/config.json",
    "models/a/b/table.tsv",
    "models/table-link.tsv",
    "hard-table.tsv",
    "sub/../models/a/b/table.tsv",
    "new.json",
    "sub/new.txt",
    "models/new.txt",
]
REFS = ["ref.txt", "link-ref.txt", "sub/../ref.txt"]
HYPS = ["hyp.txt", "sub/up-hyp.txt", "sub/hard-hyp.txt", "./hyp.txt"]
MODELS = ["models/a/b/lm", "models/lm-link", "models/a/../a/b/lm"]
TABLES = [
    "models/a/b/table.tsv",
    "models/table-link.tsv",
    "hard-table.tsv",
    "sub/../models/a/b/table.tsv",
]


def _digests(root: Path, paths: list[str]) -> dict[str, str]:
    import hashlib

    files = [
        p
        for name in paths
        for p in ([root / name] if (root / name).is_file() else sorted((root / name).rglob("*")))
    ]
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files if p.is_file()}


def _command(data) -> tuple[list[str], list[str]]:
    """A command line of score or ppl reading some spelling of the inputs, and what it reads."""
    from hypothesis import strategies as st

    ref, hyp, model = (
        data.draw(st.sampled_from(REFS)),
        data.draw(st.sampled_from(HYPS)),
        data.draw(st.sampled_from(MODELS)),
    )
    table = data.draw(st.sampled_from(TABLES))
    kind = data.draw(st.sampled_from(["score", "score-model", "score-table", "ppl", "semsim"]))
    if kind == "ppl":
        return ["ppl", "--model", model, "-i", hyp], [hyp, model]
    if kind == "semsim":
        return ["semsim", "-r", ref, "-i", hyp, "--model", table, "-q"], [ref, hyp, table]
    args = ["score", "-r", ref, "-i", hyp]
    if kind == "score-model":
        return [*args, "-m", "perplexity", "--set", f"perplexity.model={model}"], [ref, hyp, model]
    if kind == "score-table":
        return [*args, "-m", "bleu", "bertscore", "--set", f"bertscore.model={table}"], [
            ref,
            hyp,
            table,
        ]
    return args, [ref, hyp]


def test_no_command_writes_onto_a_path_it_read():
    import contextlib
    import io
    import tempfile

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from evalab.cli import main

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def check(data) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            _tree(root)
            args, read = _command(data)
            out = data.draw(st.sampled_from(OUT_NAMES))
            segments = (
                data.draw(st.sampled_from([None, *OUT_NAMES])) if args[0] == "score" else None
            )
            args += ["-o", out, *(["--segments", segments] if segments else [])]
            before = _digests(root, read)
            with (
                contextlib.chdir(root),
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                code = main(args)
            assert code in (0, 2), (args, code)
            assert _digests(root, read) == before, args
            assert not list(root.rglob(".*tmp*")), args  # no temporary left behind

    check()
