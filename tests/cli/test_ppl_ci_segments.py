"""``evalab ppl --ci`` and ``--segments``: the interval of ``evalab.stats`` over the documents'
rows, one JSON line per document, and bad input (exit 2, one line, nothing written)."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

REPO = Path(__file__).resolve().parents[2]
LINES = [
    "Der schnelle braune Fuchs.",
    "Grüße aus Köln!",
    "",
    "Ein dritter Satz, etwas länger als die anderen.",
    "Und ein vierter.",
]


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory) -> Path:
    spec = importlib.util.spec_from_file_location(
        "make_tiny_lm", REPO / "benchmarks" / "make_tiny_lm.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_tiny_lm(tmp_path_factory.mktemp("lm") / "tiny-gpt2", seed=0, positions=64)


@pytest.fixture
def text_file(tmp_path) -> Path:
    path = tmp_path / "text.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def expected_rows(tiny_lm: Path):
    from evalab.metrics.loss import Perplexity
    from evalab.models.causal_lm import CausalLMScorer

    docs = CausalLMScorer(tiny_lm).score_texts(LINES)
    rows = Perplexity.stats_from_nll([d.nll for d in docs], [d.tokens for d in docs], texts=LINES)
    return Perplexity(model=str(tiny_lm)), rows, docs


def test_ci_is_the_bootstrap_of_the_documents(run_cli, tiny_lm, text_file):
    from evalab.stats.bootstrap import bootstrap_ci

    res = run_cli(
        "ppl", "--model", tiny_lm, "-i", text_file, "--documents", "lines", "--ci",
        "-n", 300, "--seed", 7, "-f", "json", "-q",
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    rep = json.loads(res.stdout)
    metric, rows, _ = expected_rows(tiny_lm)
    ci = bootstrap_ci(metric, rows, 300, 0.95, 7)
    assert rep["perplexity"] == pytest.approx(ci.score, rel=1e-9)
    for key, value in ci.to_dict().items():
        if key != "score":
            assert rep[key] == pytest.approx(value, rel=1e-9), key
    assert rep["ci_low"] <= rep["perplexity"] <= rep["ci_high"]
    assert rep["signature"].endswith("|docs:lines|version:0.1.0|bs:300|seed:7|conf:0.95")
    table = run_cli(
        "ppl", "--model", tiny_lm, "-i", text_file, "--documents", "lines", "--ci",
        "-n", 300, "--seed", 7, "-q",
    )  # fmt: skip
    assert f"({rep['mean']:.4f} ± {rep['half_width']:.4f})" in table.stdout


def test_ci_over_logits_sequences(run_cli, tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    path = tmp_path / "l.npz"
    np.savez(path, logits=rng.normal(size=(6, 5, 7)), labels=rng.integers(0, 7, size=(6, 5)))
    res = run_cli("ppl", "--logits", path, "--ci", "-n", 100, "-f", "json")
    assert res.exit_code == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["n_samples"] == 100 and rep["ci_low"] <= rep["perplexity"] <= rep["ci_high"]


def test_segments_to_stdout_through_the_real_cli(tiny_lm, text_file, tmp_path):
    out = tmp_path / "report.json"
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalab",
            "ppl",
            "--model",
            str(tiny_lm),
            "-i",
            str(text_file),
            "--documents",
            "lines",
            "--segments",
            "-",
            "-o",
            str(out),
            "-f",
            "json",
            "-q",
        ],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 0, res.stderr
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    _, _, docs = expected_rows(tiny_lm)
    assert [d["segment"] for d in lines] == [1, 2, 3, 4, 5]
    for line, doc in zip(lines, docs, strict=True):
        assert line["metric"] == "perplexity" and line["tokens"] == doc.tokens
        if doc.tokens:
            assert line["score"] == pytest.approx(math.exp(doc.nll / doc.tokens), rel=1e-9)
        else:  # the empty line: nothing scored, no number made up
            assert line["score"] is None and line["nats_per_token"] is None
    report = json.loads(out.read_text(encoding="utf-8"))
    assert lines[0]["signature"] == report["signature"]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (("--ci",), "--documents lines"),  # one document: nothing to resample
        (("--documents", "lines", "--ci", "-n", "0"), "n-samples"),
        (("--documents", "lines", "--ci", "--confidence", "1.5"), "confidence"),
        (("--documents", "lines", "--segments", "TEXT"), "--segments"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    run_cli, tiny_lm, text_file, tmp_path, extra, needle
):
    out = tmp_path / "out.json"
    before = text_file.read_bytes()
    args = [str(text_file) if a == "TEXT" else a for a in extra]
    res = run_cli("ppl", "--model", tiny_lm, "-i", text_file, *args, "-o", out, "-q")
    assert res.exit_code == 2
    assert res.stdout == "" and len(res.stderr.strip().splitlines()) == 1
    assert needle in res.stderr
    assert not out.exists() and text_file.read_bytes() == before


def test_ci_over_one_document_is_refused(run_cli, tiny_lm, tmp_path):
    one = tmp_path / "one.txt"
    one.write_text("Nur ein Satz.\n", encoding="utf-8")
    segs = tmp_path / "segs.jsonl"
    res = run_cli(
        "ppl", "--model", tiny_lm, "-i", one, "--documents", "lines", "--ci", "--segments", segs, "-q"
    )  # fmt: skip
    assert res.exit_code == 2 and res.stdout == ""
    assert "at least 2 segments" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not segs.exists()
