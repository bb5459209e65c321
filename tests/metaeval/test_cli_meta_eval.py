"""``evalab meta-eval`` through the real entry point: synthetic data, formats, bad inputs."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from tests.cli.refusal import assert_refused

N_SEG, SYSTEMS = 40, ["sysA", "sysB", "sysC", "sysD", "sysE"]


@pytest.fixture
def synth(tmp_path):
    """Five systems, 40 segments; --scores with an oracle, a noisy and a random metric."""
    rng = np.random.default_rng(0)
    quality = np.array([0.0, -1.0, -2.0, -3.0, -4.0])[:, None] + rng.normal(0, 1.5, (5, N_SEG))
    rated = rng.random((5, N_SEG)) < 0.9
    (tmp_path / "ref.txt").write_text("".join(f"ref {i}\n" for i in range(N_SEG)))
    (tmp_path / "src.txt").write_text("".join(f"src {i}\n" for i in range(N_SEG)))
    human, scores = [], []
    for s, name in enumerate(SYSTEMS):
        (tmp_path / f"{name}.txt").write_text("".join(f"hyp {s} {i}\n" for i in range(N_SEG)))
        for i in range(N_SEG):
            human.append(
                f"{name}\t{i + 1}\t{quality[s, i]:.6f}" if rated[s, i] else f"{name}\t{i + 1}\tNone"
            )
            scores.append(f"oracle\t{name}\t{i + 1}\t{quality[s, i] * 2 + 7:.6f}")
            scores.append(f"noisy\t{name}\t{i + 1}\t{quality[s, i] + rng.normal(0, 1.0):.6f}")
            scores.append(f"random\t{name}\t{i + 1}\t{rng.normal():.6f}")
    (tmp_path / "human.tsv").write_text("system\tsegment\tscore\n" + "\n".join(human) + "\n")
    (tmp_path / "scores.tsv").write_text("\n".join(scores) + "\n")
    return tmp_path


def base_args(d):
    return [
        "meta-eval",
        "--human",
        d / "human.tsv",
        "-r",
        d / "ref.txt",
        "-i",
        *(d / f"{s}.txt" for s in SYSTEMS),
        "--scores",
        d / "scores.tsv",
        "-n",
        "200",
        "--permutations",
        "200",
        "-q",
    ]


def stats_of(stdout):
    data = json.loads(stdout)
    return data, {(r["metric"], r["level"], r["statistic"]): r for r in data["statistics"]}


def test_known_correlations_and_clusters(run_cli, synth):
    # the oracle's system score over the rated segments is an affine map of the humans'
    res = run_cli(*base_args(synth), "-f", "json", "--metric-system", "rated-mean")
    assert res.exit_code == 0, res.stderr
    data, rows = stats_of(res.stdout)
    for stat in ("pearson", "kendall", "pearson_item", "kendall_item"):
        assert rows[("oracle", "segment", stat)]["value"] == pytest.approx(1.0, abs=1e-12)
        assert rows[("oracle", "segment", stat)]["rank"] == 1
    assert rows[("oracle", "segment", "acc_eq")]["value"] == pytest.approx(1.0, abs=1e-12)
    assert rows[("oracle", "system", "pearson")]["value"] == pytest.approx(1.0, abs=1e-12)
    # the random metric is significantly worse than the oracle at segment level
    random_row = rows[("random", "segment", "pearson")]
    assert random_row["rank"] > 1 and random_row["p_vs_best"] < 0.05
    assert abs(random_row["value"]) < 0.25
    assert data["metrics"]["oracle"]["system_mode"] == "rated-mean"


def test_precomputed_scores_alone_need_no_reference(run_cli, synth):
    """``--scores`` without ``-m`` reads no reference: ``-r`` may be left out (the same
    numbers); with a metric that reads one (the default bleu chrf) it is refused."""
    args = [str(a) for a in base_args(synth)]
    at = args.index("-r")
    without = [*args[:at], *args[at + 2 :]]
    res, given = run_cli(*without, "-f", "json"), run_cli(*args, "-f", "json")
    assert res.exit_code == 0 and given.exit_code == 0, res.stderr
    assert json.loads(res.stdout) == json.loads(given.stdout)
    refused = run_cli(*without, "-m", "bleu")
    assert refused.exit_code == 2
    assert (
        refused.stderr == "evalab: error: no reference given; pass -r REF (several: -r REF1 REF2)\n"
    )


def test_every_segment_statistic_has_an_interval_and_a_test(run_cli, synth):
    res = run_cli(*base_args(synth), "-f", "json")
    assert res.exit_code == 0, res.stderr
    _, rows = stats_of(res.stdout)
    for stat in ("pearson", "kendall", "pearson_item", "kendall_item", "acc_eq", "acc_eq_item"):
        for metric in ("oracle", "noisy", "random"):
            row = rows[(metric, "segment", stat)]
            assert row["ci_low"] <= row["value"] <= row["ci_high"], (metric, stat)
        # the oracle is best on every statistic; the random metric has a p-value against it
        assert rows[("random", "segment", stat)]["p_vs_best"] is not None, stat
    assert rows[("random", "segment", "acc_eq")]["p_vs_best"] < 0.05
    assert "not computed" not in res.stdout and "no interval or significance" not in res.stdout


def test_same_seed_same_numbers_and_formats(run_cli, synth, tmp_path):
    first = run_cli(*base_args(synth), "-f", "json")
    again = run_cli(*base_args(synth), "-f", "json")
    assert first.stdout == again.stdout
    for fmt, marker in (
        ("markdown", "| level |"),
        ("latex", r"\begin{tabular}"),
        ("table", "Pearson"),
    ):
        res = run_cli(*base_args(synth), "-f", fmt)
        assert res.exit_code == 0 and marker in res.stdout, res.stderr
        assert "soft pairwise accuracy" in res.stdout and "PairwiseConfidenceError" in res.stdout
        if fmt == "latex":
            assert r"$\tau_b$" in res.stdout and "τ" not in res.stdout and "–" not in res.stdout
    page = tmp_path / "page.html"
    res = run_cli(*base_args(synth), "-f", "html", "-o", page)
    assert res.exit_code == 0 and res.stdout == ""
    text = page.read_text(encoding="utf-8")
    assert "system: soft pairwise accuracy" in text
    assert (
        text.count("<svg") == 3 + 10 and "<script" not in text and "Content-Security-Policy" in text
    )


def test_source_is_checked_and_accepted(run_cli, synth):
    assert run_cli(*base_args(synth), "--source", synth / "src.txt", "-f", "json").exit_code == 0
    (synth / "short.txt").write_text("one line\n")
    res = run_cli(*base_args(synth), "--source", synth / "short.txt")
    assert res.exit_code == 2 and "short.txt" in res.stderr


def rewrite(path, old, new):
    path.write_text(path.read_text().replace(old, new))


@pytest.mark.parametrize(
    ("edit", "extra", "message"),
    [
        (
            lambda d: rewrite(d / "human.tsv", "sysC\t", "other\t"),
            [],
            "system 'sysC' has no scores in",
        ),
        (lambda d: None, ["--name-map", "Nemo=sysA"], "has no system 'Nemo'"),
        (lambda d: None, ["--name-map", "sysA=nosuch"], "'nosuch' is not one of the -i systems"),
        (
            lambda d: rewrite(d / "human.tsv", "sysB\t3\t", "sysB\t41\t"),
            [],
            "segment 41 is out of range",
        ),
        (
            lambda d: (d / "human.tsv").write_text(
                "".join(f"sysA\t{i}\tNone\n" for i in range(1, 41))
                + "".join(f"{s}\t1\t0.5\n" for s in SYSTEMS[1:])
            ),
            [],
            "no segment is rated",
        ),
        (lambda d: (d / "sysB.txt").write_text("too short\n"), [], "line count"),
        (
            lambda d: rewrite(d / "scores.tsv", "oracle\tsysA\t1\t", "oracle\tsysZ\t1\t"),
            [],
            "no score for system 'sysA', segment 1",
        ),
        (
            lambda d: rewrite(d / "scores.tsv", "oracle\tsysA\t1\t", "oracle\tsysA\t99\t"),
            [],
            "segment 99 is out of range",
        ),
        (lambda d: None, ["--confidence", "2"], "confidence"),
        (lambda d: None, ["-f", "pdf"], "unknown format"),
        # round 2: each of these crashed with a traceback or printed numbers that mean nothing
        (
            lambda d: d.joinpath("scores.tsv").open("a").write("oracle\tsysA\t01\t0.5\n"),
            [],
            "oracle has a second score for system 'sysA', segment 1",
        ),
        (lambda d: None, ["--name-map", "sysA=sysB"], "both take the scores of 'sysA'"),
        (
            lambda d: None,
            ["--human-format", "mqm"],
            "this is the TSV header: use --human-format tsv",
        ),
    ],
)
def test_bad_input_one_line_exit_2(run_cli, synth, edit, extra, message):
    edit(synth)
    out = synth / "out.json"
    res = run_cli(*base_args(synth), *extra, "-o", out)
    assert res.exit_code == 2
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("evalab: error:") and message in lines[0], (
        res.stderr
    )
    assert not out.exists()


def test_saved_scores_give_the_same_segment_statistics(run_cli, synth):
    saved = synth / "chrf.scores.tsv"
    args = [
        "meta-eval",
        "--human",
        synth / "human.tsv",
        "-r",
        synth / "ref.txt",
        "-i",
        *(synth / f"{s}.txt" for s in SYSTEMS),
        "-n",
        "50",
        "--permutations",
        "0",
        "-q",
        "-f",
        "json",
    ]
    first = run_cli(*args, "-m", "chrf", "--save-scores", saved)
    assert first.exit_code == 0, first.stderr
    again = run_cli(*args, "--scores", saved)
    assert again.exit_code == 0, again.stderr
    _, a = stats_of(first.stdout)
    _, b = stats_of(again.stdout)
    for key, row in a.items():
        if key[1] == "segment":
            assert b[key]["value"] == pytest.approx(row["value"], abs=1e-12)


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        (["-o", "ref.txt"], "--out ref.txt is the same file as -r"),
        (["-o", "human.tsv"], "--out human.tsv is the same file as --human"),
        (["--save-scores", "scores.tsv"], "--save-scores scores.tsv is the same file as --scores"),
        (
            ["-o", "x.json", "--save-scores", "x.json"],
            "--save-scores x.json is the same file as --out",
        ),
    ],
)
def test_outputs_never_overwrite_an_input(synth, outputs, message):
    """Through the real entry point: one line, exit 2, every input unchanged."""
    args = [str(a) for a in base_args(synth)]
    assert_refused((*args, *outputs), message, watch=(synth,), cwd=synth)


def test_segment_ids_with_leading_zeros_are_the_same_segments(run_cli, synth):
    # "01" used to be kept apart from "1": every segment counted missing, an AssertionError
    args = [*base_args(synth), "-f", "json", "--permutations", "0", "-n", "20"]
    plain = run_cli(*args)
    rewrite(synth / "scores.tsv", "\tsysA\t", "\tsysA\t0")
    padded = run_cli(*args)
    assert plain.exit_code == 0 and padded.exit_code == 0, padded.stderr
    assert stats_of(plain.stdout)[1] == stats_of(padded.stdout)[1]


@pytest.mark.parametrize("n_systems", [1, 2])
def test_fewer_than_three_systems_are_refused(synth, n_systems):
    """Two systems always correlate at +1 or -1: a printed Pearson of 1.0000 would be no finding."""
    args = [
        "meta-eval",
        "--human",
        "human.tsv",
        "-r",
        "ref.txt",
        "-i",
        *(f"{s}.txt" for s in SYSTEMS[:n_systems]),
        "-m",
        "chrf",
        "-q",
        "-n",
        "10",
        "--permutations",
        "0",
    ]
    assert_refused(tuple(args), "at least 3 systems", watch=(synth,), cwd=synth)


@pytest.mark.parametrize("again", ["sysA.txt", "./sysA.txt"])
def test_a_system_given_twice_is_refused(synth, again):
    # was a traceback (numpy broadcast error: 5 metric rows against 6 human rows)
    args = [
        "meta-eval",
        "--human",
        "human.tsv",
        "-r",
        "ref.txt",
        "-i",
        *(f"{s}.txt" for s in SYSTEMS),
        again,
        "-m",
        "chrf",
        "-q",
        "-n",
        "10",
        "--permutations",
        "0",
    ]
    assert_refused(tuple(args), "system file given twice: sysA.txt", watch=(synth,), cwd=synth)


def test_constant_human_scores_are_refused(synth):
    # every statistic was undefined or trivially 1.0 (acc_eq: every pair a tie), each ranked 1
    (synth / "human.tsv").write_text(
        "".join(f"{s}\t{i}\t0\n" for s in SYSTEMS for i in range(1, N_SEG + 1))
    )
    args = [str(a) for a in base_args(synth)]
    assert_refused(tuple(args), "every rated human score is 0", watch=(synth,), cwd=synth)


def test_an_undefined_statistic_has_no_rank(run_cli, synth):
    # a constant metric has no correlation: it used to be listed as rank 1 beside real values
    with (synth / "scores.tsv").open("a") as f:
        f.write("".join(f"flat\t{s}\t{i}\t0.5\n" for s in SYSTEMS for i in range(1, N_SEG + 1)))
    res = run_cli(*base_args(synth), "-f", "json", "-n", "20", "--permutations", "20")
    assert res.exit_code == 0, res.stderr
    _, rows = stats_of(res.stdout)
    for stat in ("pearson", "kendall"):
        assert rows[("flat", "segment", stat)]["value"] is None
        assert rows[("flat", "segment", stat)]["rank"] is None
        assert rows[("oracle", "segment", stat)]["rank"] == 1


@pytest.mark.parametrize("which", ["human.tsv", "scores.tsv", "mqm.tsv"])
def test_a_byte_order_mark_is_harmless(run_cli, synth, which):
    # was: "human.tsv:1: segment id 'segment' is not a whole number" (the mark stuck to the header)
    rows = [line.split("\t") for line in (synth / "human.tsv").read_text().splitlines()[1:]]
    (synth / "mqm.tsv").write_text(
        "system mqm_avg_score seg_id\n" + "".join(f"{s} {v} {k}\n" for s, k, v in rows)
    )
    args = base_args(synth)
    if which == "mqm.tsv":
        args[args.index(synth / "human.tsv")] = synth / "mqm.tsv"
    plain = run_cli(*args, "-f", "json")
    assert plain.exit_code == 0, plain.stderr
    (synth / which).write_bytes(b"\xef\xbb\xbf" + (synth / which).read_bytes())
    marked = run_cli(*args, "-f", "json")
    assert marked.exit_code == 0, marked.stderr
    assert json.loads(marked.stdout)["statistics"] == json.loads(plain.stdout)["statistics"]


# -- the wide layout: metrics x statistics ------------------------------------------------------
def wide_body(markdown: str) -> tuple[list[str], list[list[str]]]:
    lines = [line for line in markdown.splitlines() if line.startswith("| ")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    return cells[0], cells[1:]


def test_wide_layout_on_wmt21_is_the_json_values_with_their_clusters(run_cli, mqm, tmp_path):
    from tests.metaeval.conftest import mqm_args

    from evalab.metaeval.statistics import NAMES

    args = ["meta-eval", *mqm_args(mqm), "-m", "bleu", "chrf", "-n", "50", "--permutations", "50"]
    args += ["-q", "-w", "3"]
    data, rows = stats_of(run_cli(*args, "-f", "json").stdout)
    res = run_cli(*args, "-f", "markdown", "--layout", "wide")
    assert res.exit_code == 0, res.stderr
    header, body = wide_body(res.stdout)
    keys = list(dict.fromkeys((r["level"], r["statistic"]) for r in data["statistics"]))
    assert header == ["metric", *(f"{NAMES[k].short} ↑" for k in keys)] and len(keys) == 10
    assert [row[0] for row in body] == ["bleu", "chrf"]
    for j, key in enumerate(keys, start=1):
        shown = []
        for row in body:
            r = rows[(row[0], *key)]
            text = row[j].replace("**", "")  # the bold covers the value, the cluster follows it
            assert text == f"{r['value']:.3f} ({r['rank']})", (key, row)
            shown.append(float(text.split()[0]))
        best = max(shown)  # bold exactly where the value shown is the column's best
        assert [row[j].startswith("**") for row in body] == [v == best for v in shown]
    assert (
        "sys τ_b: system level, Kendall τ_b" in res.stdout
        and "bleu|nrefs:1" in res.stdout.replace("\\|", "|")
    )


@pytest.mark.parametrize(
    "extra",
    [(), ("--latex-split",), ("--latex-fragment",)],
    ids=["whole", "split", "fragment"],
)
def test_wide_latex_compiles_and_fits_the_page(run_cli, synth, tmp_path, extra):
    from tests.report.test_latex import NEEDS_PDFLATEX, compile_latex, in_float

    res = run_cli(*base_args(synth), "-f", "latex", "--layout", "wide", *extra)
    assert res.exit_code == 0, res.stderr
    assert res.stdout.isascii() and r"\textbf{" in res.stdout and "sys $\\tau_b$" in res.stdout
    # ten statistics: wider than both columns, split into table* parts by default, into
    # one-column parts with --latex-split, one tabular as a fragment
    parts = len(re.findall(r"\\begin\{tabular\}\{", res.stdout))
    assert parts == {(): 2, ("--latex-split",): 4, ("--latex-fragment",): 1}[extra], parts
    if NEEDS_PDFLATEX.args[0]:
        pytest.skip(NEEDS_PDFLATEX.kwargs["reason"])
    fragment = extra == ("--latex-fragment",)
    compile_latex(in_float(res.stdout) if fragment else res.stdout, tmp_path)


def test_the_default_layout_is_wide_only_where_it_fits(run_cli, synth):
    # ten statistics of "0.1234 (1)" are wider than an article's text: long by default
    long = run_cli(*base_args(synth), "-f", "markdown")
    assert long.stdout.startswith("| level | statistic | metric |")
    wide = run_cli(*base_args(synth), "-f", "table", "--layout", "wide")
    assert wide.exit_code == 0 and "sys r ↑" in wide.stdout and "oracle" in wide.stdout
    again = run_cli(*base_args(synth), "-f", "table", "--layout", "long")
    assert "pairwise accuracy" in again.stdout and "sys r ↑" not in again.stdout


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("-f", "json", "--layout", "wide"), "--layout applies to tables"),
        (("-f", "html", "--layout", "long"), "--layout applies to tables"),
        (("--layout", "tall"), "--layout must be wide or long, got 'tall'"),
    ],
)
def test_bad_layouts_are_refused(synth, extra, message):
    assert_refused((*base_args(synth), *extra), message, watch=(synth,))


# -- soft pairwise accuracy (system level, from segment scores) ------------------------------------
def test_soft_pairwise_accuracy_ranks_the_oracle_first(run_cli, synth):
    res = run_cli(*base_args(synth), "-f", "json")
    data, rows = stats_of(res.stdout)
    spa = {m: rows[(m, "system", "soft_accuracy")] for m in ("oracle", "noisy", "random")}
    assert spa["oracle"]["value"] == 1.0 and spa["oracle"]["rank"] == 1
    assert spa["random"]["value"] < spa["noisy"]["value"] < 1.0
    assert spa["random"]["rank"] > 1 and spa["random"]["p_vs_best"] < 0.05
    for r in spa.values():
        assert r["ci_low"] <= r["value"] <= r["ci_high"]
    # on the segments all five systems were rated on
    unrated = {line.split("\t")[1] for line in (synth / "human.tsv").read_text().splitlines()[1:]
               if line.endswith("None")}  # fmt: skip
    assert data["soft_pairwise"]["segments"] == N_SEG - len(unrated) == 21


def test_soft_pairwise_accuracy_needs_a_segment_rated_for_every_system(run_cli, synth):
    # each segment rated for one system only: no [systems, segments] matrix to test
    (synth / "human.tsv").write_text(
        "".join(f"{s}\t{i}\t{(i * 7 + k) % 5}\n" for i in range(1, N_SEG + 1) for k, s in
                [(i % 5, SYSTEMS[i % 5])])
    )  # fmt: skip
    res = run_cli(*base_args(synth), "-f", "json", "-n", "20", "--permutations", "0")
    assert res.exit_code == 0, res.stderr
    data, rows = stats_of(res.stdout)
    assert data["soft_pairwise"] is None and not any(k[2] == "soft_accuracy" for k in rows)
    res = run_cli(*base_args(synth), "-n", "20", "--permutations", "0")
    assert (
        "soft pairwise accuracy: not computed: no segment is rated for every system" in res.stdout
    )


def test_soft_pairwise_accuracy_needs_segment_scores(run_cli, synth):
    lines = [f"given\t{s}\t-\t{k}" for k, s in enumerate(SYSTEMS)]
    (synth / "given.tsv").write_text("\n".join(lines) + "\n")
    args = [a if a != synth / "scores.tsv" else synth / "given.tsv" for a in base_args(synth)]
    res = run_cli(*args, "-n", "20", "--permutations", "0")
    assert res.exit_code == 0, res.stderr
    assert "soft pairwise accuracy: not computed: it needs segment scores" in res.stdout
