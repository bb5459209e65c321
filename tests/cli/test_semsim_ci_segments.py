"""``evalab semsim --ci`` and ``--segments`` give what ``evalab score -m bertscore`` gives with
the same model and settings (one set of flags for the semantic score)."""

from __future__ import annotations

import json

from tests.conftest import REPO

from .refusal import assert_refused

SEMSIM = REPO / "examples" / "semsim"
TABLE = SEMSIM / "vi_seed001_table.tsv"


def test_semsim_ci_and_segments_equal_score_bertscore(run_cli, tmp_path):
    ref, hyp = SEMSIM / "seed.ref.vi", SEMSIM / "seed.hyp.vi"
    semsim = run_cli(
        "semsim",
        "-r",
        ref,
        "-i",
        hyp,
        "--model",
        TABLE,
        "--ci",
        "-n",
        "200",
        "--seed",
        "7",
        "--segments",
        tmp_path / "a.jsonl",
        "-f",
        "json",
        "-q",
    )
    score = run_cli(
        "score",
        "-r",
        ref,
        "-i",
        hyp,
        "-m",
        "bertscore",
        "--model",
        TABLE,
        "--ci",
        "-n",
        "200",
        "--seed",
        "7",
        "--segments",
        tmp_path / "b.jsonl",
        "-f",
        "json",
        "-q",
    )
    assert semsim.exit_code == 0 and score.exit_code == 0, semsim.stderr + score.stderr
    ours, theirs = json.loads(semsim.stdout)[0], json.loads(score.stdout)[0]
    for key in ("score", "ci_low", "ci_high", "mean", "half_width", "signature"):
        assert ours[key] == theirs[key], key
    assert (tmp_path / "a.jsonl").read_text(encoding="utf-8") == (tmp_path / "b.jsonl").read_text(
        encoding="utf-8"
    )


def test_semsim_ci_refusals(tmp_path):
    ref, hyp = SEMSIM / "seed.ref.vi", SEMSIM / "seed.hyp.vi"
    assert_refused(
        ("semsim", "-r", ref, "-i", hyp, "--model", TABLE, "--ci", "-n", "0"),
        "--n-samples",
        watch=(tmp_path,),
        cwd=tmp_path,
    )
    assert_refused(
        ("semsim", "-r", ref, "-i", hyp, "--model", TABLE, "--segments", hyp),
        "--segments",
        watch=(tmp_path, SEMSIM),
        cwd=tmp_path,
    )


def test_semsim_segments_reuse_the_rows(run_cli, tmp_path, monkeypatch):
    """``--segments`` writes the rows the corpus score came from: one pass of the encoder
    per system, not a second one for the segment lines."""
    from evalab.metrics.semantic import BERTScore

    calls: list[int] = []
    stats = BERTScore.stats

    def counted(self, hypotheses, references):
        calls.append(len(hypotheses))
        return stats(self, hypotheses, references)

    monkeypatch.setattr(BERTScore, "stats", counted)
    ref, hyp = SEMSIM / "seed.ref.vi", SEMSIM / "seed.hyp.vi"
    out = tmp_path / "seg.jsonl"
    for name in ("a", "b"):
        (tmp_path / name).write_bytes(hyp.read_bytes())
    args = ("semsim", "-r", ref, "-i", tmp_path / "a", tmp_path / "b", "--model", TABLE)
    result = run_cli(*args, "--segments", out, "-f", "json", "-q")
    assert result.exit_code == 0, result.stderr
    n = len(ref.read_text(encoding="utf-8").splitlines())
    assert calls == [n, n]
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["system"], r["segment"]) for r in lines] == [
        (s, i) for s in ("a", "b") for i in range(1, n + 1)
    ]
    corpus = {r["system"]: r for r in json.loads(result.stdout)}
    assert sorted(corpus) == ["a", "b"]
    for s in ("a", "b"):
        mean = sum(r["score"] for r in lines if r["system"] == s) / n
        assert abs(mean - corpus[s]["score"]) < 1e-9
