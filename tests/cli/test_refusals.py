"""Bad input across every command ends in one line on stderr and exit 2 (never a traceback,
never a number): typed options with bad values, text in UTF-16/32, bad ``--logits`` files,
and the cases found by trying bad input on each command. Run through ``python -m evalab``:
the table of bad options, which covers every command, in a fresh interpreter each, the rest
in children of the fork server (``refusal.py``).
"""

from __future__ import annotations

import codecs
from pathlib import Path

import numpy as np
import pytest

from .refusal import assert_refused, evalab

TABLE = Path(__file__).resolve().parents[1] / "data" / "vi_seed001_table.tsv"


@pytest.fixture
def work(tmp_path) -> Path:
    (tmp_path / "ref.txt").write_text("the cat sat on the mat\nhello world\n", encoding="utf-8")
    (tmp_path / "hyp.txt").write_text("the cat sat on a mat\nhello there world\n", encoding="utf-8")
    (tmp_path / "sys2.txt").write_text("a cat sat\nhello world\n", encoding="utf-8")
    (tmp_path / "study.toml").write_text("[study]\nname = 'x'\n", encoding="utf-8")
    (tmp_path / "folder").mkdir()
    return tmp_path


BAD_TYPED_OPTIONS = [
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "--seed", "abc"),
        "Invalid value for '--seed': 'abc' is not a valid integer",
    ),
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "-w", "1.5"),
        "Invalid value for '-w' / '--width'",
    ),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "--confidence", "high"), "'--confidence'"),
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "--confidence", "0_95"),
        "'0_95' is not a valid float: not a decimal number",
    ),
    (
        ("compare", "-r", "ref.txt", "-i", "hyp.txt", "hyp.txt", "-n", "1e400"),
        "'1e400' is not a valid integer",
    ),
    (("score", "-r", "ref.txt"), "Missing option '-i' / '--input'"),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "--bogus"), "No such option '--bogus'"),
    (
        ("compare", "-r", "ref.txt", "-i", "hyp.txt", "sys2.txt", "-n", "many"),
        "'-n' / '--n-samples'",
    ),
    (("compare", "-r", "ref.txt", "-i", "hyp.txt", "sys2.txt", "--alpha", "x"), "'--alpha'"),
    (("ppl", "--logits", "x.npz", "--batch-size", "eight"), "'--batch-size'"),
    (("ppl", "--logits", "x.npz", "--pad-id", "pad"), "'--pad-id'"),
    (("semsim", "-r", "ref.txt", "-i", "hyp.txt", "--layer", "last"), "'--layer'"),
    (("semsim", "baseline", "-o", "b.tsv", "--batch-size", "x"), "'--batch-size'"),
    (("semsim", "baseline"), "Missing option '-o' / '--out'"),
    (("ablate", "report", "study.toml", "--alpha", "x"), "'--alpha'"),
    (("ablate", "run", "study.toml", "-j", "x"), "'-j' / '--jobs'"),
    (("ablate", "report"), "Missing argument 'STUDY_FILE'"),
    (("demo", "-j", "x"), "'-j' / '--jobs'"),
    (("metrics", "-f"), "requires an argument"),
    (("no-such-command",), "No such command"),
]


@pytest.mark.parametrize(
    ("args", "needle"),
    BAD_TYPED_OPTIONS,
    ids=[" ".join(a[:1] + a[-2:]) for a, _ in BAD_TYPED_OPTIONS],
)
def test_bad_typed_option_is_one_line(work, args, needle):
    line = assert_refused(args, needle, watch=(work,), cwd=work, fresh=True)
    if args[0] != "no-such-command" and "requires an argument" not in needle:
        assert "--help`)" in line  # says where the right values are described


@pytest.mark.parametrize(
    ("codec", "name"),
    [
        ("utf-16", "UTF-16"),
        ("utf-16-be", "UTF-16 (big-endian)"),
        ("utf-32", "UTF-32"),
        ("utf-32-be", "UTF-32 (big-endian)"),
    ],
)
def test_utf16_and_utf32_get_the_right_hint(work, codec, name):
    data = "the cat sat\nhello\n".encode(codec)
    if codec.endswith("-be"):
        data = (codecs.BOM_UTF16_BE if "16" in codec else codecs.BOM_UTF32_BE) + data
    (work / "wide.txt").write_bytes(data)
    iconv = "UTF-16" if "16" in codec else "UTF-32"
    line = assert_refused(
        ("score", "-r", "ref.txt", "-i", "wide.txt"),
        f"`iconv -f {iconv} -t UTF-8`",
        watch=(work,),
        cwd=work,
    )
    assert name in line and "LATIN1" not in line


def test_latin1_keeps_the_latin1_hint(work):
    (work / "l1.txt").write_bytes("caf\u00e9\nx\n".encode("latin-1"))
    assert_refused(
        ("score", "-r", "ref.txt", "-i", "l1.txt"), "iconv -f LATIN1", watch=(work,), cwd=work
    )


def npz(folder: Path, name: str, **arrays) -> str:
    np.savez(folder / name, **arrays)
    return name


def test_bad_logits_files(work):
    (work / "text.npz").write_text("logits,labels\n1,2\n")
    np.save(work / "plain.npy", np.zeros((2, 3)))
    (work / "cut.npz").write_bytes(
        (
            work / npz(work, "whole.npz", logits=np.zeros((2, 3)), labels=np.array([0, 1]))
        ).read_bytes()[:90]
    )
    ok = {"logits": np.zeros((2, 3)), "labels": np.array([0, 1])}
    cases = [
        ("text.npz", "not a .npz archive"),
        ("plain.npy", "not a .npz archive"),
        ("cut.npz", "not a readable .npz archive"),
        ("folder", "is a directory"),
        (npz(work, "negb.npz", **ok, bytes=np.array(-5)), "'bytes' must be whole numbers >= 0"),
        (
            npz(work, "negw.npz", **ok, words=np.array([3, -1])),
            "'words' must be whole numbers >= 0",
        ),
        (npz(work, "nanb.npz", **ok, bytes=np.array(np.nan)), "'bytes' must be whole numbers >= 0"),
        (npz(work, "fracw.npz", **ok, words=np.array(2.5)), "'words' must be whole numbers >= 0"),
        (
            npz(work, "flab.npz", logits=np.zeros((2, 3)), labels=np.array([0.0, 1.0])),
            "'labels' integers",
        ),
        (
            npz(work, "obj.npz", logits=np.array([[0.0, 1.0]], dtype=object), labels=np.array([1])),
            "not a readable .npz",
        ),
    ]
    for name, needle in cases:
        assert_refused(
            ("ppl", "--logits", name, "-o", "never.json"), needle, watch=(work,), cwd=work
        )


def test_hunted_cases(work):
    """Found by trying bad input on each command; each was a traceback or a silent no-op."""
    (work / "base.csv").write_bytes(b"LAYER,P,R,F\n0,0.5,0.5,\xff0.5\n")
    (work / "link.txt").symlink_to("hyp.txt")
    cases = [
        # a baseline file that is not UTF-8 was a UnicodeDecodeError traceback
        (
            (
                "semsim",
                "-r",
                "ref.txt",
                "-i",
                "hyp.txt",
                "--model",
                TABLE,
                "--baseline",
                "base.csv",
            ),
            "not valid UTF-8",
        ),
        # --stopwords without --drop-function-words was silently ignored
        (
            (
                "semsim",
                "-r",
                "ref.txt",
                "-i",
                "hyp.txt",
                "--model",
                TABLE,
                "--stopwords",
                "missing.txt",
            ),
            "no such file",
        ),
        # one system named twice through a path or a link was compared with itself
        (("compare", "-r", "ref.txt", "-i", "hyp.txt", "./hyp.txt"), "system file given twice"),
        (("compare", "-r", "ref.txt", "-i", "hyp.txt", "link.txt"), "system file given twice"),
        (("score", "-r", "-", "-i", "-"), "stdin ('-') can be used for only one file"),
        (("score", "-r", "folder", "-i", "hyp.txt"), "is a directory"),
        (
            ("score", "-r", "ref.txt", "-i", "hyp.txt", "-w", "100000"),
            "--width must be between 0 and 16",
        ),
        (
            ("compare", "-r", "ref.txt", "-i", "hyp.txt", "sys2.txt", "-n", "-1"),
            "must be at least 1",
        ),
        (("score", "-r", "ref.txt", "-i", "hyp.txt", "-s", "bleu.=3"), "unknown setting ''"),
        # a trained metric without its checkpoint, or on a device torch has no name for
        (
            ("score", "-r", "ref.txt", "-i", "hyp.txt", "-m", "comet"),
            "comet needs a checkpoint: --set comet.model=PATH (a COMET checkpoint folder)",
        ),
        (
            (
                "score",
                "-r",
                "ref.txt",
                "-i",
                "hyp.txt",
                "-m",
                "metricx",
                "-s",
                "model=folder",
                "-s",
                "device=tpu",
            ),
            "metricx device 'tpu': expected cpu, cuda or cuda:N",
        ),
        # unbounded sizes hung (orders) or ran for days (resamples); inf smoothing was accepted
        (
            (
                "score",
                "-r",
                "ref.txt",
                "-i",
                "hyp.txt",
                "-m",
                "bleu",
                "-s",
                "max_ngram_order=1000000000",
            ),
            "at most 100",
        ),
        (
            ("score", "-r", "ref.txt", "-i", "hyp.txt", "-m", "chrf", "-s", "char_order=100000000"),
            "at most 100",
        ),
        (
            (
                "score",
                "-r",
                "ref.txt",
                "-i",
                "hyp.txt",
                "-m",
                "bleu",
                "-s",
                "smooth_method=floor",
                "-s",
                "smooth_value=inf",
            ),
            "finite number",
        ),
        (
            ("score", "-r", "ref.txt", "-i", "hyp.txt", "--ci", "--n-samples", "100000000000"),
            "at most 10,000,000",
        ),
    ]
    for args, needle in cases:
        assert_refused(args, needle, watch=(work,), cwd=work)


def test_stopwords_now_drop_function_words(work):
    (work / "stop.txt").write_text("the\na\non\n", encoding="utf-8")
    base = ("semsim", "-r", "ref.txt", "-i", "hyp.txt", "--model", TABLE, "-q", "-f", "json")
    plain, implied, explicit = (
        evalab(*base, *extra, cwd=work)
        for extra in (
            (),
            ("--stopwords", "stop.txt"),
            ("--stopwords", "stop.txt", "--drop-function-words"),
        )
    )
    assert plain.returncode == implied.returncode == explicit.returncode == 0, implied.stderr
    assert implied.stdout == explicit.stdout != plain.stdout
