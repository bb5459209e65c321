"""Empty reference lines: empty references by default (as sacrebleu, with a warning), or missing."""

from __future__ import annotations

import json

import pytest

sacrebleu = pytest.importorskip("sacrebleu")


@pytest.fixture
def files(tmp_path):
    hyp, r1, r2 = tmp_path / "hyp.txt", tmp_path / "r1.txt", tmp_path / "r2.txt"
    hyp.write_text("a b c d e f g\nx y z\n", encoding="utf-8")
    r1.write_text("a b c d e f g h i j k l m n o p\nx y z w\n", encoding="utf-8")
    r2.write_text("\nx y\n", encoding="utf-8")
    return str(hyp), str(r1), str(r2)


def score(run_cli, files, *extra):
    hyp, r1, r2 = files
    res = run_cli("score", "-r", r1, "-r", r2, "-i", hyp, "-m", "bleu", "ter", "-f", "json", *extra)
    assert res.exit_code == 0, res.stderr
    return {r["metric"]: r for r in json.loads(res.stdout)}, res.stderr


def test_default_is_sacrebleus_empty_reference_with_a_warning(run_cli, files) -> None:
    rows, err = score(run_cli, files)
    hyps = ["a b c d e f g", "x y z"]
    refs = [["a b c d e f g h i j k l m n o p", "x y z w"], ["", "x y"]]
    assert rows["bleu"]["score"] == sacrebleu.metrics.BLEU().corpus_score(hyps, refs).score
    assert rows["ter"]["score"] == sacrebleu.metrics.TER().corpus_score(hyps, refs).score
    assert "1 empty reference line(s) scored as empty references, as sacrebleu does" in err
    assert "--missing-ref empty-line" in err


def test_empty_line_marks_a_missing_reference(run_cli, files) -> None:
    rows, err = score(run_cli, files, "--missing-ref", "empty-line")
    hyps = ["a b c d e f g", "x y z"]
    refs = [["a b c d e f g h i j k l m n o p", "x y z w"], [None, "x y"]]
    bleu = sacrebleu.metrics.BLEU()
    assert rows["bleu"]["score"] == bleu.corpus_score(hyps, refs).score
    assert rows["bleu"]["bp"] == pytest.approx(bleu.corpus_score(hyps, refs).bp / 1)
    assert rows["bleu"]["signature"].startswith("bleu|nrefs:var|")
    assert rows["ter"]["score"] == sacrebleu.metrics.TER().corpus_score(hyps, refs).score
    assert "1 empty reference line(s) beyond the first file counted as missing" in err


def test_unknown_mode_is_refused(run_cli, files) -> None:
    hyp, r1, _ = files
    res = run_cli("score", "-r", r1, "-i", hyp, "--missing-ref", "blank")
    assert res.exit_code == 2 and "--missing-ref must be one of none, empty-line" in res.stderr
