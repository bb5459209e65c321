"""``--figures DIR`` on ``compare`` (the ranking's forest plots) and ``meta-eval`` (its
scatters and rankings): the page's figures as PDF, SVG and PNG, refused where they cannot be
written (``ablate report --figures``: tests/cli/test_ablate_figures.py)."""

from __future__ import annotations

import pytest
from tests.cli.test_ablate_figures import svg_texts
from tests.report.test_html import LONG_SYSTEMS, meta_eval_page

from .refusal import assert_refused

pytest.importorskip("matplotlib")

REF = ["the cat sat on the mat", "a dog barked", "it rains in the north", "we meet next week"] * 5
SYSTEMS = {
    "good": REF,
    "fair": [s.replace("the ", "a ") for s in REF],
    "poor": [s.split()[0] for s in REF],
}


def compare_args(folder):
    (folder / "ref.txt").write_text("\n".join(REF) + "\n", encoding="utf-8")
    inputs = []
    for name, lines in SYSTEMS.items():
        (folder / f"{name}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        inputs.append(f"{name}={folder / f'{name}.txt'}")
    return ["compare", "-r", folder / "ref.txt", "-i", *inputs, "-m", "chrf", "bleu", "-n", "100"]


def test_compare_writes_the_ranking_of_every_metric(run_cli, tmp_path):
    figs = tmp_path / "figs"
    res = run_cli(*compare_args(tmp_path), "--rank", "-q", "--figures", figs)
    assert res.exit_code == 0, res.stderr
    assert sorted(p.name for p in figs.iterdir()) == [
        f"ranking-{m}{s}" for m in ("bleu", "chrf") for s in (".pdf", ".png", ".svg")
    ]
    texts = svg_texts(figs / "ranking-chrf.svg")
    assert {"1. good", "2. fair", "3. poor"} <= set(texts), texts
    assert any(t.startswith("chrf: score and 95% CI of every system") for t in texts)


def test_compare_figures_need_the_ranking(tmp_path):
    assert_refused(
        (*compare_args(tmp_path), "--figures", tmp_path / "figs"),
        "--figures writes the ranking's forest plots: give --rank",
        watch=(tmp_path,),
    )


def test_meta_eval_writes_its_scatters_and_rankings(run_cli, tmp_path):
    page = meta_eval_page(run_cli, tmp_path)
    figs = tmp_path / "figs"
    res = run_cli(
        "meta-eval", "--human", tmp_path / "human.tsv", "-r", tmp_path / "ref.txt",
        "-i", *(f"{n}={tmp_path / f'{s}.txt'}" for s, n in enumerate(LONG_SYSTEMS)),
        "--scores", tmp_path / "scores.tsv", "-n", "100", "-q", "-f", "json", "--figures", figs,
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    names = {p.name for p in figs.iterdir()}
    assert {"scatter-oracle.pdf", "scatter-noisy.svg", "ranking-system-pearson.pdf"} <= names
    # as many figures as the page draws, each as PDF, SVG and PNG
    assert len(names) == 3 * page.read_text(encoding="utf-8").count("<svg")
    texts = svg_texts(figs / "scatter-noisy.svg")
    assert "human system score" in texts and any(t.startswith("Pearson r = ") for t in texts)


def test_meta_eval_draws_ter_on_its_own_scale(run_cli, tmp_path):
    # TER enters the statistics negated (higher = better); its scatter is drawn with the
    # scores TER gives, on an axis that says lower is better, and its ranking rows say
    # negated (the page's figures are the --figures files' values)
    import html
    import re

    meta_eval_page(run_cli, tmp_path)
    page = tmp_path / "ter.html"
    res = run_cli(
        "meta-eval", "--human", tmp_path / "human.tsv", "-r", tmp_path / "ref.txt",
        "-i", *(f"{n}={tmp_path / f'{s}.txt'}" for s, n in enumerate(LONG_SYSTEMS)),
        "-m", "ter", "chrf", "-n", "100", "-q", "-f", "html", "-o", page,
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    text = html.unescape(page.read_text(encoding="utf-8"))
    ter = re.findall(r"human system score \S+, ter ↓ \(lower is better\) (\S+)</title>", text)
    assert len(ter) == len(LONG_SYSTEMS) and all(float(v) > 0 for v in ter), ter
    lines = " ".join(re.findall(r"<tspan [^>]*>([^<]*)</tspan>", text))  # wrapped labels joined
    assert "ter (negated: lower is better)" in lines and "chrf (negated" not in lines, lines


@pytest.mark.parametrize("width", ["wide", "1_0"])  # float("1_0") would be 10 inches
def test_a_figure_width_that_is_no_width_is_refused(tmp_path, width):
    assert_refused(
        (
            *compare_args(tmp_path),
            "--rank",
            "--figures",
            tmp_path / "figs",
            "--figure-width",
            width,
        ),
        f"--figure-width must be single (3.3 in), double (6.9 in) or inches from 2 to 20, got {width!r}",
        watch=(tmp_path,),
    )
