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


def _chinese_meta_eval_files(tmp_path, n=60):
    """The first ``n`` WMT22 en-zh segments of three systems, with made-up human scores."""
    import numpy as np

    ref = tmp_path / "ref.zh"
    ref.write_text(
        "".join(wmt_file("ref", "en-zh", "A").read_text(encoding="utf-8").splitlines(True)[:n]),
        encoding="utf-8",
    )
    rng = np.random.default_rng(0)
    hyps, human = [], ["system\tsegment\tscore"]
    for name in ("AISP-SJTU", "DLUT", "GTCOM", "HuaweiTSC"):
        lines = wmt_file("hyp", "en-zh", name).read_text(encoding="utf-8").splitlines(True)[:n]
        path = tmp_path / f"{name}.txt"
        path.write_text("".join(lines), encoding="utf-8")
        hyps.append(path)
        human += [f"{name}\t{i + 1}\t{rng.normal():.4f}" for i in range(n)]
    (tmp_path / "human.tsv").write_text("\n".join(human) + "\n", encoding="utf-8")
    return ref, hyps, tmp_path / "human.tsv"


@pytest.mark.parametrize(("fix", "warns"), [((), 1), (("--set", "bleu.tokenize=zh"), 0)])
def test_meta_eval_warns_once_for_chinese_under_13a(run_cli, wmt22, tmp_path, fix, warns):
    ref, hyps, human = _chinese_meta_eval_files(tmp_path)
    run = run_cli(
        "meta-eval", "--human", human, "-r", ref, "-i", *hyps, "-m", "bleu", "chrf", *fix,
        "-n", "50", "--permutations", "0", "-q",
    )  # fmt: skip
    assert run.exit_code == 0, run.stderr
    warned = _warnings(run.stderr)
    assert len(warned) == warns, run.stderr
    if warns:
        assert "references are Chinese" in warned[0] and "tokenizer is 13a" in warned[0]
        assert "--set bleu.tokenize=zh" in warned[0]
    assert run.stdout  # the meta-evaluation is still printed
