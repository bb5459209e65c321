"""The peers' flags through the real CLI: accepted where they mean the same thing here,
refused in one line naming evalab's spelling where they mean something else (or where
click would misread them), and never help text with exit 0 when other arguments are given.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import read_lines, wmt_file

from .refusal import assert_refused, evalab

PAIR = "en-zh"


@pytest.fixture
def work(tmp_path) -> Path:
    (tmp_path / "ref.txt").write_text(
        "the cat sat on the mat\nhello world\nit is raining\n", encoding="utf-8"
    )
    (tmp_path / "ref2.txt").write_text(
        "a cat sat on the mat\nhello , world\nit rains\n", encoding="utf-8"
    )
    (tmp_path / "hyp.txt").write_text(
        "the cat sat on a mat\nhello there world\nit is raining\n", encoding="utf-8"
    )
    (tmp_path / "sys2.txt").write_text("a cat sat\nhello world\nrain\n", encoding="utf-8")
    return tmp_path


def _json(run) -> list[dict]:
    assert run.exit_code == 0, run.stderr
    return json.loads(run.stdout)


# -- refused: a peer flag that means something else here ---------------------------------

REFUSED = [
    # jiwer's -h HYP: help with exit 0 into a redirected stdout before
    (
        ("score", "-r", "ref.txt", "-h", "hyp.txt", "-m", "wer"),
        "jiwer's -h/--hypothesis HYP is -i HYP",
    ),
    (("score", "-h", "hyp.txt", "-r", "ref.txt"), "-i HYP"),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "-h"), "-h is short for --help here"),
    (("compare", "-r", "ref.txt", "-i", "hyp.txt", "sys2.txt", "-h"), "`evalab compare --help`"),
    # sacrebleu's --confidence switch
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "--confidence", "-q"),
        "sacrebleu's --confidence switch is --ci",
    ),
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "--confidence"),
        "sacrebleu's --confidence switch is --ci",
    ),
    (
        ("compare", "-r", "ref.txt", "-i", "hyp.txt", "sys2.txt", "--confidence"),
        "always on in `evalab compare`",
    ),
    # sacrebleu's -sl would be -s l
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "-sl"), "--segments FILE"),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "--sentence-level"), "--segments FILE"),
    # jiwer's -c/--cer switch, bert-score's -c FILE
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "-c"), "jiwer's -c/--cer switch is -m cer"),
    (("score", "-r", "ref.txt", "-c", "-m", "wer"), "-m cer"),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "--cer"), "-m cer"),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "-t", "wmt20"), "evalab downloads nothing"),
    (
        ("compare", "-r", "ref.txt", "-i", "hyp.txt", "sys2.txt", "--paired-bs"),
        "`evalab compare -t bs`",
    ),
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "sys2.txt", "--paired-bs", "--paired-ar"),
        "give one",
    ),
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "sys2.txt", "--paired-bs", "-b"),
        "-b/--score-only is not available",
    ),
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "-b", "-f", "json"),
        "does not combine with -f json",
    ),
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "-m", "chrf", "-tok", "zh"),
        "bleu is not among -m chrf",
    ),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "-l", "english"), "expected SRC-TGT"),
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "--num-refs", "2"),
        "line 1 has 1 tab-separated reference(s), expected 2",
    ),
    (
        ("score", "-r", "ref.txt", "ref2.txt", "-i", "hyp.txt", "--num-refs", "2"),
        "give one -r file",
    ),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "-m", "bleu,,chrf"), "an empty metric name"),
    # comet-score's habits
    (("score", "-s", "hyp.txt", "-t", "hyp.txt", "-r", "ref.txt"), "-s SOURCES is --source FILE"),
    (("score", "-r", "ref.txt", "-t", "hyp.txt"), "-t TRANSLATIONS is -i FILE"),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "--batch_size", "8"), "--set comet.batch_size=N"),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "--gpus", "1"), "--set comet.device=cuda"),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "--to_json", "o.json"), "-f json -o FILE"),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "--only_system"), "prints by default"),
    # sacrebleu's positional reference, piped hypotheses, chrF options, -sh, -f text
    (("score", "ref.txt"), "positional reference is -r ref.txt here"),
    (("score", "-r", "ref.txt"), "-i - reads them from stdin"),
    (
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "--chrf-word-order", "2"),
        "--set chrf.word_order=N",
    ),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "-cw", "2"), "--set chrf.word_order=N"),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "-sh"), "-sh/--short signature"),
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "-f", "text"), "-f table here"),
    # jiwer's -g
    (("score", "-r", "ref.txt", "-i", "hyp.txt", "-m", "wer", "-g"), "-g/--global is the default"),
]


#: the spellings the hints above name, which must work (no circular hints)
HINTED = [
    (
        "score",
        "-r",
        "ref.txt",
        "-i",
        "hyp.txt",
        "-m",
        "bertscore",
        "--set",
        "bertscore.batch_size=8",
    ),
    ("score", "-r", "ref.txt", "-i", "hyp.txt", "-f", "json", "-o", "o.json"),
    ("score", "-r", "ref.txt", "-i", "hyp.txt", "-m", "chrf", "--set", "chrf.word_order=2"),
    ("score", "-r", "ref.txt", "-i", "hyp.txt", "-f", "table"),
    ("score", "-r", "ref.txt", "-i", "hyp.txt", "--segments", "seg.jsonl"),
    ("semsim", "-r", "ref.txt", "-i", "hyp.txt", "--batch-size", "8"),
]


@pytest.mark.parametrize("args", HINTED, ids=[" ".join(a[-2:]) for a in HINTED])
def test_the_spelling_a_hint_names_works(run_cli, work, monkeypatch, args):
    monkeypatch.chdir(work)
    res = run_cli(*args)
    assert res.exit_code == 0, res.stderr


def test_the_source_option_a_comet_hint_names_exists(run_cli, work, monkeypatch):
    monkeypatch.chdir(work)  # COMET's model is not in the default suite: the option parses
    res = run_cli("score", "--source", "hyp.txt", "-r", "ref.txt", "-i", "hyp.txt", "-m", "chrf")
    assert "no selected metric reads sources (comet does)" in res.stderr


def test_piped_hypotheses_with_dash(run_cli, work):
    hyp = (work / "hyp.txt").read_text()
    piped = run_cli("score", "-r", work / "ref.txt", "-i", "-", "-b", stdin=hyp)
    assert (
        piped.exit_code == 0
        and piped.stdout
        == run_cli("score", "-r", work / "ref.txt", "-i", work / "hyp.txt", "-b").stdout
    )


@pytest.mark.parametrize(("args", "needle"), REFUSED, ids=[" ".join(a[-2:]) for a, _ in REFUSED])
def test_peer_flag_meaning_something_else_is_one_line(work, args, needle):
    assert_refused(args, needle, watch=(work,), cwd=work)


def test_help_alone_is_still_help(work):
    for args in (("score", "-h"), ("-h",), ("ablate", "run", "-h"), ("score", "--help")):
        run = evalab(*args, cwd=work)
        assert run.returncode == 0 and "Usage: evalab" in run.stdout, args


@pytest.mark.parametrize(
    ("option", "wanted"),
    [("--metirc", "'--metrics'"), ("--bogus", None), ("--paired-bss", "'--paired-bs'")],
)
def test_unknown_option_suggestions_are_close_ones(work, option, wanted):
    line = assert_refused(
        ("score", "-r", "ref.txt", "-i", "hyp.txt", option),
        "No such option",
        watch=(work,),
        cwd=work,
    )
    if wanted:
        assert f"Did you mean {wanted}" in line
    else:
        assert "Did you mean" not in line


# -- accepted: the same meaning as the peer ---------------------------------------------


def test_langpair_picks_sacrebleu_tokenizer_and_matches_sacrebleu(run_cli, wmt22):
    sacrebleu = pytest.importorskip("sacrebleu")
    ref, hyp = wmt_file("ref", PAIR, "A"), wmt_file("hyp", PAIR, "AISP-SJTU")
    rows = _json(run_cli("score", "-r", ref, "-i", hyp, "-l", PAIR, "-f", "json"))
    expected = sacrebleu.BLEU(trg_lang="zh").corpus_score(read_lines(hyp), [read_lines(ref)]).score
    assert rows[0]["score"] == pytest.approx(expected, abs=1e-9)
    assert "|tok:zh|" in rows[0]["signature"]
    explicit = _json(
        run_cli("score", "-r", ref, "-i", hyp, "-l", PAIR, "-tok", "13a", "-f", "json")
    )
    assert "|tok:13a|" in explicit[0]["signature"]  # -tok wins over -l, as in sacrebleu


@pytest.mark.parametrize(
    ("peer", "plain"),
    [
        (("-tok", "char", "-lc"), ("--set", "bleu.tokenize=char", "--set", "bleu.lowercase=true")),
        (("--tokenize", "none"), ("--set", "bleu.tokenize=none")),
        (("-l", "de-en"), ()),
        (("-m", "BLEU,chrF", "TER"), ("-m", "bleu", "chrf", "ter")),
        (("-m", "RougeL"), ("-m", "rougeL")),
        (("-ci", "-cin", "50"), ("--ci", "-n", "50")),
    ],
)
def test_peer_spelling_scores_like_evalab_spelling(run_cli, work, peer, plain):
    base = ("score", "-r", work / "ref.txt", "-i", work / "hyp.txt", "-f", "json")
    assert _json(run_cli(*base, *peer)) == _json(run_cli(*base, *plain))


def test_several_references_after_one_flag_and_candidate_spellings(run_cli, work):
    r1, r2, hyp = work / "ref.txt", work / "ref2.txt", work / "hyp.txt"
    plain = _json(
        run_cli("score", "-r", r1, "-r", r2, "-i", hyp, "-m", "bleu", "chrf", "-f", "json")
    )
    for spelling in ("-c", "--cand", "--candidate", "--hypothesis"):
        assert (
            _json(run_cli("score", "-r", r1, r2, spelling, hyp, "-m", "bleu", "chrf", "-f", "json"))
            == plain
        )
    assert plain[0]["signature"].startswith("bleu|nrefs:2|")


def test_num_refs_splits_tab_separated_references(run_cli, work):
    r1, r2, hyp = work / "ref.txt", work / "ref2.txt", work / "hyp.txt"
    (work / "both.tsv").write_text(
        "".join(f"{a}\t{b}\n" for a, b in zip(read_lines(r1), read_lines(r2), strict=True)),
        encoding="utf-8",
    )
    plain = _json(
        run_cli("score", "-r", r1, r2, "-i", hyp, "-m", "bleu", "chrf", "ter", "-f", "json")
    )
    tabbed = _json(
        run_cli(
            "score",
            "-r",
            work / "both.tsv",
            "--num-refs",
            "2",
            "-i",
            hyp,
            "-m",
            "bleu",
            "chrf",
            "ter",
            "-f",
            "json",
        )
    )
    assert tabbed == plain


def test_score_only_prints_bare_scores(run_cli, work):
    full = _json(
        run_cli(
            "score",
            "-r",
            work / "ref.txt",
            "-i",
            work / "hyp.txt",
            work / "sys2.txt",
            "-m",
            "bleu",
            "ter",
            "-f",
            "json",
        )
    )
    run = run_cli(
        "score",
        "-r",
        work / "ref.txt",
        "-i",
        work / "hyp.txt",
        work / "sys2.txt",
        "-m",
        "bleu",
        "ter",
        "-b",
        "-w",
        "3",
    )
    assert run.exit_code == 0
    # several systems: each number labelled with its system (and metric), tab-separated
    short = {"hyp.txt": "hyp", "sys2.txt": "sys2"}
    assert run.stdout.splitlines() == [
        f"{short[row['system']]}\t{row['metric']}\t{row['score']:.3f}" for row in full
    ]
    one = run_cli(
        "score", "-r", work / "ref.txt", "-i", work / "hyp.txt", "-m", "bleu", "ter", "-b"
    )
    assert one.stdout.splitlines() == [f"{row['score']:.1f}" for row in full[:2]]
    two = run_cli("score", "-r", work / "ref.txt", "-i", work / "hyp.txt", work / "sys2.txt", "-b")
    assert two.stdout.splitlines() == [
        f"hyp\t{full[0]['score']:.1f}",
        f"sys2\t{full[2]['score']:.1f}",
    ]


@pytest.mark.parametrize(
    ("flag", "test"), [("--paired-bs", "bs"), ("--paired-ar", "ar"), ("-pbs", "bs")]
)
def test_paired_flags_on_score_run_compare(run_cli, work, flag, test):
    files = (
        "-r",
        work / "ref.txt",
        "-i",
        work / "hyp.txt",
        work / "sys2.txt",
        "-n",
        "200",
        "-f",
        "json",
    )
    paired = run_cli("score", *files, flag)
    assert paired.exit_code == 0, paired.stderr
    assert paired.stdout == run_cli("compare", *files, "-t", test).stdout
