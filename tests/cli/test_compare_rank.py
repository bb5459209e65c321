"""``evalab compare --rank`` and ``--all-pairs``: parity with ``compare`` of each pair alone,
the formats, the settings in the signature, refusals."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from tests.cli.refusal import assert_refused
from tests.conftest import read_lines, wmt_systems, write_wmt_subset

SYSTEMS = ["Online-B", "Online-A", "Lan-Bridge", "OpenNMT"]
N = 200


@pytest.fixture
def files(wmt22, tmp_path):
    """Reference A and four en-de systems, first 200 segments."""
    return write_wmt_subset(tmp_path, "en-de", SYSTEMS, N)


def run_json(run_cli, *args):
    res = run_cli("compare", *args, "-f", "json", "-q")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


@pytest.mark.parametrize(("test", "n"), [("bs", "300"), ("ar", "300")])
def test_every_pair_p_value_equals_compare_of_the_pair_alone(run_cli, files, test, n):
    ref, paths = files
    out = (
        run_json(
            run_cli,
            "-r",
            ref,
            "-i",
            *paths,
            "-m",
            "bleu",
            "chrf",
            "--all-pairs",
            "-t",
            test,
            "-n",
            n,
            "--seed",
            "5",
            "--ci-n",
            "100",
        )
        if test == "ar"
        else run_json(
            run_cli,
            "-r",
            ref,
            "-i",
            *paths,
            "-m",
            "bleu",
            "chrf",
            "--all-pairs",
            "-n",
            n,
            "--seed",
            "5",
        )
    )
    pairs = {(r["metric"], r["system"], r["other"]): r for r in out["pairs"]}
    assert len(pairs) == 2 * 6
    for metric, matrix in out["matrix"].items():  # the same pairs as matrices, in ranking order
        names = matrix["systems"]
        assert names == [r["system"] for r in out["ranking"] if r["metric"] == metric]
        for i, a in enumerate(names):
            assert matrix["p_value"][i][i] is None and matrix["delta"][i][i] == 0.0
            for j, b in enumerate(names[i + 1 :], start=i + 1):
                row = pairs[(metric, a, b)]
                assert matrix["p_value"][i][j] == matrix["p_value"][j][i] == row["p_value"]
                assert matrix["p_adjusted"][j][i] == row["p_adjusted"]
                assert (
                    matrix["delta"][i][j]
                    == pytest.approx(-matrix["delta"][j][i])
                    == pytest.approx(row["delta"])
                )
    for a, b in itertools.combinations(paths, 2):
        extra = ["--ci-n", "100"] if test == "ar" else []
        alone = run_json(
            run_cli,
            "-r",
            ref,
            "-i",
            a,
            b,
            "-m",
            "bleu",
            "chrf",
            "-t",
            test,
            "-n",
            n,
            "--seed",
            "5",
            *extra,
        )
        for row in alone[1::2]:
            key = next(
                k
                for k in pairs
                if k[0] == row["metric"] and {k[1], k[2]} == {a.split("/")[-1], b.split("/")[-1]}
            )
            assert pairs[key]["p_value"] == row["p_value"], key
            base = next(r for r in alone if r["metric"] == row["metric"] and r["baseline"])
            sign = 1 if key[1] == base["system"] else -1
            assert pairs[key]["delta"] == pytest.approx(-sign * row["delta"], abs=1e-12)


def test_mcnemar_pairs_equal_compare_of_the_pair_alone(run_cli, files):
    ref, paths = files
    out = run_json(
        run_cli, "-r", ref, "-i", *paths, "-m", "exact_match", "-t", "mcnemar", "--all-pairs"
    )
    for a, b in itertools.combinations(paths, 2):
        alone = run_json(run_cli, "-r", ref, "-i", a, b, "-m", "exact_match", "-t", "mcnemar")
        names = {a.split("/")[-1], b.split("/")[-1]}
        pair = next(r for r in out["pairs"] if {r["system"], r["other"]} == names)
        assert pair["p_value"] == alone[1]["p_value"]
        assert pair["wins"] + pair["losses"] == alone[1]["baseline_only"] + alone[1]["system_only"]
    assert all(r["cluster"] == 1 and r["n_samples"] is None for r in out["ranking"])
    assert out["ranking"][0]["signature"].endswith(
        "|test:mcnemar|exact:<=25|else:mid-p|correct:holm|alpha:0.05|cluster:separated"
    )


def test_ranking_json_is_sorted_with_ranks_clusters_and_settings(run_cli, files):
    ref, paths = files
    out = run_json(run_cli, "-r", ref, "-i", *paths, "-m", "chrf", "ter", "--rank", "-n", "400")
    assert set(out) == {"ranking", "unsettled"}
    for metric, higher in (("chrf", True), ("ter", False)):
        rows = [r for r in out["ranking"] if r["metric"] == metric]
        scores = [r["score"] for r in rows]
        assert scores == sorted(scores, reverse=higher)
        assert [r["rank"] for r in rows] == [1, 2, 3, 4]
        clusters = [r["cluster"] for r in rows]
        assert clusters[0] == 1 and clusters == sorted(clusters)
        assert all(
            r["correction"] == "holm"
            and r["clustering"] == "separated"
            and r["ci_low"] <= r["ci_high"]
            for r in rows
        )
        assert rows[0]["signature"].endswith(
            "|test:bs|n:400|seed:12345|conf:0.95|p:centered|correct:holm|alpha:0.05|cluster:separated"
        )
    # OpenNMT is far below Online-B on chrF in these segments: a cluster of its own
    chrf = {r["system"]: r["cluster"] for r in out["ranking"] if r["metric"] == "chrf"}
    assert chrf["OpenNMT.de"] > chrf["Online-B.de"]


def test_correct_none_leaves_p_values_and_is_signed(run_cli, files):
    ref, paths = files
    out = run_json(
        run_cli, "-r", ref, "-i", *paths, "--all-pairs", "--correct", "none", "-n", "200"
    )
    assert all(r["p_adjusted"] == r["p_value"] for r in out["pairs"])
    assert "|correct:none|" in out["ranking"][0]["signature"]
    holm = run_json(run_cli, "-r", ref, "-i", *paths, "--all-pairs", "-n", "200")
    assert all(h["p_adjusted"] >= h["p_value"] for h in holm["pairs"])
    assert any(h["p_adjusted"] > h["p_value"] for h in holm["pairs"])


def test_pair_rows_count_segments_won_tied_and_lost(run_cli, files):
    ref, paths = files
    out = run_json(
        run_cli,
        "-r",
        ref,
        "-i",
        paths[0],
        paths[0].replace("Online-B", "Online-A"),
        "-m",
        "chrf",
        "--all-pairs",
        "-n",
        "100",
    )
    (pair,) = out["pairs"]
    assert pair["wins"] + pair["ties"] + pair["losses"] == N
    from evalab.metrics.chrf import CHRF

    refs = [read_lines(ref)]
    first = [
        s.score
        for s in CHRF().segment_scores(
            read_lines(f"{ref.rsplit('/', 1)[0]}/{pair['system']}"), refs
        )
    ]
    second = [
        s.score
        for s in CHRF().segment_scores(read_lines(f"{ref.rsplit('/', 1)[0]}/{pair['other']}"), refs)
    ]
    assert pair["wins"] == sum(a > b for a, b in zip(first, second, strict=True))
    assert pair["ties"] == sum(a == b for a, b in zip(first, second, strict=True))


@pytest.mark.parametrize("fmt", ["table", "markdown", "latex"])
def test_every_format_holds_both_tables(run_cli, files, tmp_path, fmt):
    ref, paths = files
    out = tmp_path / f"pairs.{fmt}"
    res = run_cli(
        "compare",
        "-r",
        ref,
        "-i",
        *paths,
        "--all-pairs",
        "-n",
        "200",
        "-q",
        "-f",
        fmt,
        "-o",
        str(out),
    )
    assert res.exit_code == 0, res.stderr
    text = out.read_text(encoding="utf-8")
    assert (
        text.count("cluster") >= 2 and "wins" in text and "Online-B" in text and "OpenNMT" in text
    )
    if fmt == "latex":
        floats = re.findall(r"\\begin\{table\*?\}", text)
        assert len(floats) >= 2 and len(re.findall(r"\\end\{table\*?\}", text)) == len(floats)
        # every float captioned (the notation explained) and labelled, metric names as in papers
        assert text.count(r"\caption{") == text.count(r"\label{tab:evalab-") == len(floats)
        assert "cluster: a new cluster starts" in text and "BLEU" in text
    if fmt == "markdown":
        assert sum(line.startswith("|:--|") for line in text.splitlines()) == 2


def test_terminal_table_shows_short_names_and_the_rule(run_cli, files):
    ref, paths = files
    res = run_cli("compare", "-r", ref, "-i", *paths, "--rank", "-n", "200", "-q")
    assert res.exit_code == 0, res.stderr
    assert "OpenNMT " in res.stdout and "OpenNMT.de" not in res.stdout
    assert "every system above is significantly better than every system below" in res.stdout
    assert "Holm-adjusted p < 0.05 over the 6 pairs" in res.stdout


def test_too_few_resamples_for_holm_warn(run_cli, files):
    ref, paths = files
    res = run_cli("compare", "-r", ref, "-i", *paths, "--rank", "-n", "50", "-q")
    assert res.exit_code == 0
    assert (
        "cannot bring it below --alpha 0.05: no two systems can be separated; use -n 120 or more"
        in res.stderr
    )


def test_refusals(files, tmp_path):
    ref, paths = files
    watch = (tmp_path,)
    assert_refused(
        ("compare", "-r", ref, "-i", *paths, "--rank", "--correct", "bonferroni"),
        "--correct",
        watch=watch,
    )
    assert_refused(
        ("compare", "-r", ref, "-i", *paths, "--rank", "-t", "mcnemar", "-m", "bleu"),
        "--test mcnemar needs a right/wrong outcome",
        watch=watch,
    )
    assert_refused(
        ("compare", "-r", ref, "-i", paths[0], "--rank"), "at least one system", watch=watch
    )


def test_html_page_refusals_and_source(run_cli, files, tmp_path):
    ref, paths = files
    short = tmp_path / "short.en"
    short.write_text("one line\n", encoding="utf-8")
    assert_refused(
        (
            "compare",
            "-r",
            ref,
            "-i",
            *paths,
            "--source",
            short,
            "-f",
            "html",
            "-o",
            tmp_path / "p.html",
        ),
        "short.en",
        watch=(tmp_path,),
    )
    assert_refused(
        ("compare", "-r", ref, "-i", *paths, "--train", ref),
        "--train applies to -f html only",
        watch=(tmp_path,),
    )
    # without -f html a source no metric reads is refused, as before
    assert_refused(
        ("compare", "-r", ref, "-i", *paths, "--source", ref),
        "no selected metric reads sources",
        watch=(tmp_path,),
    )
    page = tmp_path / "page.html"
    res = run_cli(
        "compare",
        "-r",
        ref,
        "-i",
        *paths,
        "--source",
        ref,
        "-n",
        "200",
        "-q",
        "-f",
        "html",
        "-o",
        page,
    )
    assert res.exit_code == 0, res.stderr
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and '"src":[' in text and "Online-B" in text


def test_the_default_resamples_of_a_ranking_reach_well_below_alpha(run_cli, files):
    # four systems, six pairs: Holm's smallest reachable p is 6 / (n + 1) <= 0.005 at n = 2000
    ref, paths = files
    out = run_json(run_cli, "-r", ref, "-i", *paths, "-m", "chrf", "--rank")
    assert {r["n_samples"] for r in out["ranking"]} == {2000}
    assert "|n:2000|seed:12345|" in out["ranking"][0]["signature"]
    # an explicit -n is kept, and so is compare's own default without a ranking
    assert (
        run_json(run_cli, "-r", ref, "-i", *paths, "-m", "chrf", "--rank", "-n", "300")["ranking"][
            0
        ]["n_samples"]
        == 300
    )
    assert run_json(run_cli, "-r", ref, "-i", *paths[:2], "-m", "chrf")[1]["n_samples"] == 1000


def test_ten_systems_separate_at_the_default_and_more_resamples_are_suggested_at_1000(
    run_cli, wmt22, tmp_path
):
    """The issue's case: ten WMT22 uk-en systems on BLEU. At 1000 resamples nine of them
    share one cluster and the output says which clusters more resamples could split; the
    default (9000 for 45 pairs) separates the top two from the next."""
    systems = wmt_systems("uk-en")
    assert len(systems) == 10
    ref, paths = write_wmt_subset(tmp_path, "uk-en", systems, 2018)
    args = ("compare", "-r", ref, "-i", *paths, "-m", "bleu", "--rank", "-q")
    few = run_cli(*args, "-n", "1000")
    assert few.exit_code == 0, few.stderr
    assert "bleu: more resamples could split cluster 1 between Online-B and GTCOM" in few.stdout
    assert "try -n 10000" in few.stdout
    default = json.loads(run_cli(*args, "-f", "json").stdout)
    clusters = [r["cluster"] for r in default["ranking"]]
    assert default["ranking"][0]["n_samples"] == 9000 and clusters[:3] == [1, 1, 2]
