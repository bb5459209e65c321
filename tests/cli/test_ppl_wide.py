"""``evalab ppl --layout wide``: one row of the perplexity quantities, on WMT22 text."""

from __future__ import annotations

import importlib.util
import json

import pytest
from tests.conftest import REPO, wmt_file

from .refusal import assert_refused

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    spec = importlib.util.spec_from_file_location(
        "make_tiny_lm", REPO / "benchmarks" / "make_tiny_lm.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_tiny_lm(tmp_path_factory.mktemp("lm") / "tiny-gpt2", seed=0, positions=64)


@pytest.fixture(scope="module")
def text(tmp_path_factory):
    lines = wmt_file("ref", "en-de", "A").read_text(encoding="utf-8").splitlines()[:25]
    path = tmp_path_factory.mktemp("ppl-wide") / "news.de"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def args(tiny_lm, text, *extra):
    return [
        "ppl",
        "--model",
        tiny_lm,
        "-i",
        text,
        "--documents",
        "lines",
        "--threads",
        "1",
        "-q",
        *extra,
    ]


def test_the_wide_row_is_the_json_report(run_cli, tiny_lm, text):
    report = json.loads(run_cli(*args(tiny_lm, text, "--ci", "-n", "100", "-f", "json")).stdout)
    res = run_cli(*args(tiny_lm, text, "--ci", "-n", "100", "-f", "markdown", "--layout", "wide"))
    assert res.exit_code == 0, res.stderr
    head, _, row = (line for line in res.stdout.splitlines()[:3])
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert [c.strip() for c in head.strip("|").split("|")] == [
        "file",
        "perplexity ↓",
        "nats/token ↓",
        "bits/token ↓",
        "bits/byte ↓",
        "word perplexity ↓",
        "tokens",
    ]
    assert cells[0] == "news.de"
    assert cells[1] == f"{report['perplexity']:.4f} ± {report['half_width']:.4f}"
    assert cells[2:5] == [
        f"{report[k]:.4f}" for k in ("nats_per_token", "bits_per_token", "bits_per_byte")
    ]
    assert float(cells[5]) == pytest.approx(report["word_perplexity"], rel=1e-4)
    assert cells[6] == str(report["tokens"])
    assert report["signature"].replace("|", "\\|") in res.stdout and "**" not in res.stdout


def test_long_stays_the_default(run_cli, tiny_lm, text):
    table = run_cli(*args(tiny_lm, text))
    assert "tokens scored" in table.stdout and "perplexity ↓" not in table.stdout
    wide = run_cli(*args(tiny_lm, text, "--layout", "wide"))
    assert "perplexity ↓" in wide.stdout and "tokens scored" not in wide.stdout


@pytest.mark.parametrize("extra", [(), ("--latex-split",), ("--latex-fragment",)])
def test_wide_latex_compiles(run_cli, tiny_lm, text, tmp_path, extra):
    from tests.report.test_latex import NEEDS_PDFLATEX, compile_latex, in_float

    res = run_cli(*args(tiny_lm, text, "-f", "latex", "--layout", "wide", *extra))
    assert res.exit_code == 0 and r"perplexity $\downarrow$" in res.stdout and res.stdout.isascii()
    if NEEDS_PDFLATEX.args[0]:
        pytest.skip(NEEDS_PDFLATEX.kwargs["reason"])
    fragment = extra == ("--latex-fragment",)
    compile_latex(in_float(res.stdout) if fragment else res.stdout, tmp_path)


def test_layout_with_json_is_refused(tiny_lm, text):
    assert_refused(
        tuple(args(tiny_lm, text, "-f", "json", "--layout", "wide")),
        "--layout applies",
        watch=(text,),
    )
