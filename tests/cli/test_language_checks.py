"""The warning, once, when the text and a metric's tokenizer or encoder do not fit: CJK
references under BLEU's 13a, non-English references under the English-only encoder."""

from __future__ import annotations

import pytest
from tests.conftest import wmt_file


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("evalab: warning: ")]


def test_chinese_under_13a_warns_once_and_names_the_fix(run_cli, wmt22):
    ref, hyp = wmt_file("ref", "en-zh", "A"), wmt_file("hyp", "en-zh", "AISP-SJTU")
    hyp2 = wmt_file("hyp", "en-zh", "DLUT")
    run = run_cli("score", "-r", ref, "-i", hyp, hyp2, "-m", "bleu", "chrf", "-b")
    assert run.exit_code == 0
    warned = _warnings(run.stderr)
    assert len(warned) == 1, run.stderr  # once, not once per system or metric
    assert "references are Chinese" in warned[0] and "tokenizer is 13a" in warned[0]
    assert "-l SRC-zh or -tok zh" in warned[0]
    assert len(run.stdout.splitlines()) == 4  # the scores are still printed


@pytest.mark.parametrize("fix", [("-l", "en-zh"), ("-tok", "zh"), ("-tok", "char"), ("-m", "chrf")])
def test_no_warning_when_the_tokenizer_fits(run_cli, wmt22, fix):
    run = run_cli(
        "score", "-r", wmt_file("ref", "en-zh", "A"), "-i", wmt_file("hyp", "en-zh", "DLUT"), *fix
    )
    assert run.exit_code == 0 and _warnings(run.stderr) == []


def test_no_warning_for_latin_script_references(run_cli, wmt22):
    run = run_cli(
        "score", "-r", wmt_file("ref", "en-de", "A"), "-i", wmt_file("hyp", "en-de", "Lan-Bridge")
    )
    assert run.exit_code == 0 and _warnings(run.stderr) == []


def test_compare_names_its_own_spelling(run_cli, wmt22):
    ref = wmt_file("ref", "en-zh", "A")
    run = run_cli(
        "compare",
        "-r",
        ref,
        "-i",
        wmt_file("hyp", "en-zh", "AISP-SJTU"),
        wmt_file("hyp", "en-zh", "DLUT"),
        "-n",
        "10",
        "-q",
    )
    assert run.exit_code == 0
    assert len(_warnings(run.stderr)) == 1 and "--set bleu.tokenize=zh" in run.stderr


def test_german_under_the_english_encoder_warns(run_cli, wmt22, tmp_path):
    pytest.importorskip("torch")
    ref, hyp = tmp_path / "ref.de", tmp_path / "hyp.de"
    ref.write_text(
        "".join(wmt_file("ref", "en-de", "A").read_text(encoding="utf-8").splitlines(True)[:4]),
        encoding="utf-8",
    )
    hyp.write_text(
        "".join(
            wmt_file("hyp", "en-de", "Lan-Bridge").read_text(encoding="utf-8").splitlines(True)[:4]
        ),
        encoding="utf-8",
    )
    run = run_cli("semsim", "-r", ref, "-i", hyp, "-q", "-f", "json")
    assert run.exit_code == 0, run.stderr
    warned = _warnings(run.stderr)
    assert len(warned) == 1 and "trained on English only" in warned[0] and "--model" in warned[0]
